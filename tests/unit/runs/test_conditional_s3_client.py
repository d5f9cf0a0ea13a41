"""The S3 conditional writes and the sources listing reuse one boto3 client per
endpoint, region, addressing style and credentials within a process, and never share
one across them."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("boto3")

import boto3

from airflow_provider_rayorch.runs import conditional, s3_clients
from airflow_provider_rayorch.runs.conditional import conditional_writes
from airflow_provider_rayorch.runs.store import RunStore

OPTIONS = {"endpoint_override": "127.0.0.1:9", "scheme": "http", "region": "us-east-1"}


class FakeClient:
    def __init__(self, endpoint: str) -> None:
        self.meta = SimpleNamespace(endpoint_url=endpoint)
        self.puts: list[dict[str, Any]] = []

    def put_object(self, **kwargs: Any) -> dict[str, str]:
        self.puts.append(kwargs)
        return {"ETag": f'"{len(self.puts)}"'}


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of every boto3 client made (the cache starts empty)."""
    calls: list[dict[str, Any]] = []

    def client(service: str, **kwargs: Any) -> FakeClient:
        assert service == "s3"
        calls.append(kwargs)
        return FakeClient(str(kwargs.get("endpoint_url")))

    monkeypatch.setattr(boto3, "client", client)
    monkeypatch.setattr(s3_clients, "_CLIENTS", {})
    monkeypatch.setattr(conditional, "_ENFORCED", {("http://127.0.0.1:9", "bucket")})
    return calls


def test_two_conditional_writes_on_one_store_make_one_client(made: list[dict[str, Any]]) -> None:
    store = RunStore("s3://bucket/runs", OPTIONS)
    first = conditional_writes(store)
    assert first.create_if_absent("bucket/runs/a", b"1") is not None
    second = conditional_writes(RunStore("s3://bucket/other", dict(OPTIONS)))
    assert second.replace_if_unchanged("bucket/other/b", b"2", '"1"') is not None
    assert len(made) == 1
    assert first.client is second.client  # type: ignore[attr-defined]
    assert [p["Key"] for p in first.client.puts] == ["runs/a", "other/b"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({**OPTIONS, "endpoint_override": "127.0.0.2:9"}, id="endpoint"),
        pytest.param({**OPTIONS, "region": "eu-west-1"}, id="region"),
        pytest.param({**OPTIONS, "access_key": "AK", "secret_key": "one"}, id="credentials"),
        pytest.param({**OPTIONS, "force_virtual_addressing": "true"}, id="addressing"),
    ],
)
def test_stores_that_differ_in_endpoint_region_credentials_or_addressing_get_their_own_clients(
    made: list[dict[str, Any]], other: dict[str, str]
) -> None:
    a = conditional_writes(RunStore("s3://bucket/runs", OPTIONS))
    b = conditional_writes(RunStore("s3://bucket/runs", other))
    assert len(made) == 2
    assert a.client is not b.client  # type: ignore[attr-defined]


def test_a_rotated_secret_gets_a_new_client_and_the_cache_key_holds_no_secret(
    made: list[dict[str, Any]],
) -> None:
    one = {**OPTIONS, "access_key": "AK", "secret_key": "secret-one"}
    two = {**OPTIONS, "access_key": "AK", "secret_key": "secret-two"}
    conditional_writes(RunStore("s3://bucket/runs", one))
    conditional_writes(RunStore("s3://bucket/runs", two))
    assert len(made) == 2
    keys = repr(list(s3_clients._CLIENTS))
    assert "secret-one" not in keys
    assert "secret-two" not in keys


def test_threads_that_start_writes_at_once_share_one_client(made: list[dict[str, Any]]) -> None:
    barrier = threading.Barrier(8)
    clients: list[Any] = []

    def write() -> None:
        barrier.wait()
        clients.append(conditional_writes(RunStore("s3://bucket/runs", OPTIONS)).client)  # type: ignore[attr-defined]

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1
    assert len({id(c) for c in clients}) == 1


def test_a_sources_listing_and_the_conditional_writes_share_one_client(
    made: list[dict[str, Any]],
) -> None:
    from airflow_provider_rayorch.runs.s3_listing import s3_pages

    writes = conditional_writes(RunStore("s3://bucket/runs", OPTIONS))
    listings = [s3_pages("bucket/in", OPTIONS) for _ in range(3)]
    assert all(listing is not None for listing in listings)
    assert len(made) == 1
    assert writes.client is s3_clients.s3_client(OPTIONS)  # type: ignore[attr-defined]


def test_an_anonymous_listing_gets_its_own_unsigned_client(made: list[dict[str, Any]]) -> None:
    signed = s3_clients.s3_client(OPTIONS)
    anonymous = s3_clients.s3_client({**OPTIONS, "anonymous": "true"})
    assert signed is not anonymous
    assert len(made) == 2
    assert made[1]["config"].signature_version is not None
