"""The driver gets its run-store and ray.init() options from its environment (never
argv, never the plan record); the rules that decide what is secret."""

from __future__ import annotations

import json

import pytest

from airflow_provider_rayorch.runs import driver, pipeline_load
from airflow_provider_rayorch.runs.secrets import (
    RAY_INIT_KWARGS_ENV,
    RUN_STORE_OPTIONS_ENV,
    driver_env,
    is_secret_key,
    ray_init_kwargs_from_env,
    ray_init_secrets,
    run_store_options_from_env,
    secret_option_values,
)
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore
from tests.unit.runs.store_options import OPTIONS

pytestmark = pytest.mark.timeout(30)


def test_the_driver_opens_its_store_with_the_options_it_was_handed(tmp_path, monkeypatch) -> None:
    opened: list[tuple[str, object]] = []

    class Recording(RunStore):
        def __init__(self, uri: str, options: object = None) -> None:
            opened.append((uri, options))
            super().__init__(uri, None)

    monkeypatch.setattr(driver, "RunStore", Recording)
    monkeypatch.setenv(RUN_STORE_OPTIONS_ENV, json.dumps(OPTIONS))
    code = driver.main(["--run-store", str(tmp_path), "--run-id", "nope"])
    assert code != 0  # no plan: what matters is how the store was opened
    assert opened == [(str(tmp_path), OPTIONS)]


def test_the_driver_starts_ray_with_the_handed_options_not_the_stored_ones(
    tmp_path, fake_engine, monkeypatch
) -> None:
    seen: list[object] = []

    class Executor(fake_engine.FakeExecutor):
        def __init__(self, pipeline, address=None, backend="ray", ray_init_kwargs=None) -> None:
            seen.append(ray_init_kwargs)
            super().__init__(pipeline, address, backend, ray_init_kwargs)

    engine = fake_engine.fake_engine()
    engine.Executor = Executor
    monkeypatch.setattr(pipeline_load, "_engine", lambda: engine)
    store = RunStore(str(tmp_path))
    fingerprint = fake_engine.Square().compile().fingerprint
    plan = PlanRecord(
        run_id="run", pipeline="fake_pipelines:Square", fingerprint=fingerprint, sources=[1, 2]
    )
    store.write_plan(plan)
    handed = {"num_cpus": 1, "runtime_env": {"env_vars": {"API_KEY": "k"}}}
    monkeypatch.setenv(RAY_INIT_KWARGS_ENV, json.dumps(handed))
    driver.run_plan(store, "run")
    assert seen == [handed]
    assert "API_KEY" not in (tmp_path / "run" / "plan.json").read_text()


def test_handed_options_round_trip_and_absent_ones_fall_back() -> None:
    env = driver_env(OPTIONS, {"num_cpus": 2})
    assert run_store_options_from_env(env) == OPTIONS
    assert ray_init_kwargs_from_env({"old": 1}, env) == {"num_cpus": 2}
    assert run_store_options_from_env({}) == {}
    assert ray_init_kwargs_from_env({"old": 1}, {}) == {"old": 1}  # a record from before
    assert driver_env({}, {}) == {}


def test_a_handed_value_that_is_not_json_names_the_variable_not_the_value() -> None:
    with pytest.raises(ValueError, match=RUN_STORE_OPTIONS_ENV) as info:
        run_store_options_from_env({RUN_STORE_OPTIONS_ENV: "secret_key=s3-secret-value"})
    assert "s3-secret-value" not in str(info.value)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("secret_key", True),
        ("session_token", True),
        ("access_key", True),
        ("_redis_password", True),
        ("access_token", True),
        ("region", False),
        ("endpoint_override", False),
        ("num_cpus", False),
    ],
)
def test_is_secret_key(name: str, secret: bool) -> None:
    assert is_secret_key(name) is secret


def test_secret_values_of_options_and_ray_settings() -> None:
    assert secret_option_values({**OPTIONS, "nested": {"token": "t-123456"}}) == [
        "s3-secret-value",
        "t-123456",
    ]
    kwargs = {
        "_redis_password": "r-123456",
        "num_cpus": 2,
        "runtime_env": {"env_vars": {"A": "v-1"}},
    }
    assert ray_init_secrets(kwargs, {"env_vars": {"B": "v-2"}}) == ["r-123456", "v-1", "v-2"]
