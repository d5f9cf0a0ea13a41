"""Sources globs and run stores on an S3-compatible server (moto on loopback).

A sources glob reaches such a server through its URI's query string
(``?endpoint_override=host:port&scheme=http&region=...``) with the keys from the
credential chain; every listed file keeps that query, so it opens at the same
endpoint. A run store reached without its endpoint fails naming the fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.assets.listing import ListedFile, list_files
from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs import uris
from airflow_provider_rayorch.runs.globbing import SourcesNotFound, glob_base, glob_uris
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.runs.uris import open_filesystem
from tests.unit.moto_s3 import BUCKET, credential_chain, endpoint_query, moto_s3_fixture  # noqa: F401 (a fixture)

if TYPE_CHECKING:
    from tests.unit.moto_s3 import S3Server

pytestmark = pytest.mark.timeout(120)


def _landing(server: S3Server, prefix: str) -> dict[str, bytes]:
    files = {
        f"{prefix}/a.txt": b"first",
        f"{prefix}/b.txt": b"second!",
        f"{prefix}/sub/c.txt": b"deeper",
        f"{prefix}/x.pdf": b"%PDF",
    }
    client = server.client()
    for key, body in files.items():
        client.put_object(Bucket=BUCKET, Key=key, Body=body)
    return files


def test_a_glob_base_keeps_the_query_string_out_of_the_pattern() -> None:
    query = "endpoint_override=127.0.0.1:9000&scheme=http&region=us-east-1"
    assert glob_base(f"s3://b/landing/*.txt?{query}") == f"s3://b/landing/?{query}"
    assert glob_base(f"s3://b/landing/a.txt?{query}") == f"s3://b/landing/a.txt?{query}"
    assert glob_base("/data/in/x?.pdf") == "/data/in/"  # a local '?' is a wildcard


def test_a_sources_glob_lists_an_s3_compatible_bucket_through_its_query(
    moto_s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    credential_chain(monkeypatch, moto_s3)
    files = _landing(moto_s3, "glob")
    q = endpoint_query(moto_s3)
    found = glob_uris(f"s3://{BUCKET}/glob/*.txt?{q}", missing_ok=False)
    assert found == [f"s3://{BUCKET}/glob/a.txt?{q}", f"s3://{BUCKET}/glob/b.txt?{q}"]
    deep = glob_uris(f"s3://{BUCKET}/glob/**/*.txt?{q}")
    assert deep[-1] == f"s3://{BUCKET}/glob/sub/c.txt?{q}"
    for uri in deep:  # each listed source opens at the same endpoint
        fs, path = open_filesystem(uri, setting="sources")
        with fs.open_input_stream(path) as f:
            assert f.read() == files[path.removeprefix(f"{BUCKET}/")]
    assert glob_uris(f"s3://{BUCKET}/glob/a.txt?{q}") == [f"s3://{BUCKET}/glob/a.txt?{q}"]
    with pytest.raises(SourcesNotFound, match="does not exist"):
        glob_uris(f"s3://{BUCKET}/nothing/*.txt?{q}", missing_ok=False)


def test_the_new_sources_lister_lists_an_s3_compatible_bucket_like_the_glob(
    moto_s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    credential_chain(monkeypatch, moto_s3)
    _landing(moto_s3, "listing")
    q = endpoint_query(moto_s3)
    pattern = f"s3://{BUCKET}/listing/*.txt?{q}"
    assert list_files(pattern) == [
        ListedFile(f"s3://{BUCKET}/listing/a.txt?{q}", 5),
        ListedFile(f"s3://{BUCKET}/listing/b.txt?{q}", 7),
    ]
    assert [f.uri for f in list_files(pattern)] == glob_uris(pattern)
    single = f"s3://{BUCKET}/listing/x.pdf?{q}"
    assert list_files(single) == [ListedFile(single, 4)]


def test_a_run_store_opened_with_the_connections_options_reads_on_the_server(
    moto_s3: S3Server,
) -> None:
    store = RunStore(f"s3://{BUCKET}/runs-options", moto_s3.options())
    uri = store.write_outputs("r", 0, "out", 0, [("present", None, {"n": 1})])
    store.commit_microbatch("r", 0, {"attempt": 1, "files": {"out": uri}})
    assert [r["value"] for r in store.read_outputs("r")] == [{"n": 1}]


def test_an_s3_store_that_cannot_be_reached_says_how_to_give_its_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without an endpoint pyarrow asks AWS for the bucket's region (here: refused)."""

    def no_aws(uri: str) -> None:
        raise OSError(
            "When resolving region for bucket 'rayorch': AWS Error NETWORK_CONNECTION during "
            "HeadBucket operation: Could not resolve host: rayorch.s3.us-east-1.amazonaws.com"
        )

    monkeypatch.setattr(uris, "_from_uri", no_aws)
    with pytest.raises(StoreError) as err:
        RunStore("s3://rayorch/runs")
    text = str(err.value)
    assert "cannot open the run store s3://rayorch/runs" in text
    assert "Could not resolve host" in text
    assert "run_store_options" in text
    assert "endpoint_override" in text
    assert isinstance(err.value, OSError)  # callers that catch OSError still do
    with pytest.raises(StoreError, match=r"cannot open sources s3://rayorch/in/: .*query string"):
        glob_uris("s3://rayorch/in/*.txt")


def test_a_sources_glob_lists_an_s3_prefix_page_by_page_in_uri_order(
    moto_s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_rayorch.runs import globbing

    credential_chain(monkeypatch, moto_s3)
    client = moto_s3.client()
    keys = [f"paged/{i:04d}.txt" for i in range(1003)] + ["paged/sub/z.txt", "paged/0010-.txt"]
    for key in keys:
        client.put_object(Bucket=BUCKET, Key=key, Body=b"x")

    def no_folder_listing(*_: object) -> None:
        raise AssertionError("an S3 glob is listed by pages, not a folder at a time")

    monkeypatch.setattr(globbing, "_walk", no_folder_listing)
    q = endpoint_query(moto_s3)
    found = list(globbing.iter_glob_uris(f"s3://{BUCKET}/paged/**/*.txt?{q}"))

    assert found == sorted(f"s3://{BUCKET}/{key}?{q}" for key in keys)
