"""How a driver gets its run store's options: an embedded driver from its environment,
a Ray job's driver from the cluster's key-value store (the job's runtime_env names
the entry only); either way the variables leave the driver's environment once read,
so no process it starts inherits them."""

from __future__ import annotations

import json
import os
import re

import pytest

from airflow_provider_rayorch.runs import handoff
from airflow_provider_rayorch.runs.secrets import (
    RUN_STORE_OPTIONS_ENV,
    RUN_STORE_OPTIONS_KEY_ENV,
    RunStoreSettingError,
    run_store_options_from_env,
)
from tests.unit.runs.store_options import OPTIONS

pytestmark = pytest.mark.timeout(30)

KEY = handoff.key_of(handoff.deposit_name("sid"))


class FakeKv:
    """The cluster connection and key-value calls ``take`` makes, on a dict."""

    def __init__(self) -> None:
        self.entries: dict[str, bytes] = {}
        self.inits: list[str] = []

    def init(self, address: str) -> None:
        self.inits.append(address)

    def get(self, key: str) -> bytes | None:
        assert self.inits, "read before connecting"
        return self.entries.get(key)

    def delete(self, key: str) -> int:
        return int(self.entries.pop(key, None) is not None)


@pytest.fixture
def gcs(monkeypatch: pytest.MonkeyPatch) -> FakeKv:
    import ray
    from ray.experimental import internal_kv

    kv = FakeKv()
    monkeypatch.setattr(ray, "is_initialized", lambda: bool(kv.inits))
    monkeypatch.setattr(ray, "init", lambda address: kv.init(address))
    monkeypatch.setattr(internal_kv, "_internal_kv_get", kv.get)
    monkeypatch.setattr(internal_kv, "_internal_kv_del", kv.delete)
    return kv


def test_an_embedded_driver_reads_its_options_and_drops_the_variable(monkeypatch) -> None:
    monkeypatch.setenv(RUN_STORE_OPTIONS_ENV, json.dumps(OPTIONS))
    assert run_store_options_from_env() == OPTIONS
    assert RUN_STORE_OPTIONS_ENV not in os.environ


def test_a_job_driver_takes_its_options_from_the_key_value_store(monkeypatch, gcs) -> None:
    gcs.entries[KEY] = json.dumps(OPTIONS).encode()
    monkeypatch.setenv(RUN_STORE_OPTIONS_KEY_ENV, KEY)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert run_store_options_from_env() == OPTIONS
    assert gcs.inits == ["10.0.0.1:6379"]  # connected once: the engine reuses it
    assert gcs.entries == {}  # taken: read once, then deleted
    assert RUN_STORE_OPTIONS_KEY_ENV not in os.environ


def test_an_entry_already_taken_says_to_submit_again(gcs) -> None:
    env = {RUN_STORE_OPTIONS_KEY_ENV: KEY, "RAY_ADDRESS": "10.0.0.1:6379"}
    with pytest.raises(handoff.DepositMissing, match="Submit the run's job again"):
        run_store_options_from_env(env)


def test_a_key_that_is_not_an_options_entry_is_refused_unread(gcs) -> None:
    env = {RUN_STORE_OPTIONS_KEY_ENV: "gcs://_ray_pkg_abc.zip", "RAY_ADDRESS": "h:1"}
    with pytest.raises(handoff.DepositMissing, match="not a run store options entry"):
        run_store_options_from_env(env)
    assert gcs.inits == []


def test_a_key_without_a_cluster_address_names_both_variables(monkeypatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(RunStoreSettingError, match=f"{RUN_STORE_OPTIONS_KEY_ENV}.*RAY_ADDRESS"):
        run_store_options_from_env({RUN_STORE_OPTIONS_KEY_ENV: KEY})


def test_an_entry_that_is_not_json_names_the_entry_not_its_value(gcs) -> None:
    gcs.entries[KEY] = b"secret_key=s3-secret-value"
    env = {RUN_STORE_OPTIONS_KEY_ENV: KEY, "RAY_ADDRESS": "h:1"}
    with pytest.raises(ValueError, match="entry") as info:
        run_store_options_from_env(env)
    assert "s3-secret-value" not in str(info.value)


def test_one_entry_name_per_submission_id_fit_for_a_url_path() -> None:
    name = handoff.deposit_name("run/a b?c")
    assert name == handoff.deposit_name("run/a b?c")
    assert name != handoff.deposit_name("run/a b?c-2")
    assert re.fullmatch(r"_rayorch_run_store_options_[0-9a-f]{32}", name)
