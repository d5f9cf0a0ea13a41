"""Secrets of a rayorch connection (token, run-store options, runtime_env env_vars,
secret ray.init() options) are masked and never reach plan.json, XCom, a command
line or an error message; run-store options reach an embedded driver by environment
and a Ray job's driver through the cluster's key-value store."""

from __future__ import annotations

import json
import logging
import traceback
from unittest import mock

import pytest

from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.hooks.settings import RayOrchSettings
from airflow_provider_rayorch.operators import _embedded as embedded
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.runs.handoff import deposit_name, key_of
from airflow_provider_rayorch.runs.secrets import (
    RAY_INIT_KWARGS_ENV,
    RUN_STORE_OPTIONS_ENV,
    RUN_STORE_OPTIONS_KEY_ENV,
    RunStoreSettingError,
)

pytestmark = pytest.mark.timeout(60)

API_KEY = "sk-live-0123456789abcdef"
REDIS = "redis-pass-9876543210"
S3_SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
TOKEN = "ray-token-abcdef012345"
SECRETS = (API_KEY, REDIS, S3_SECRET, TOKEN)
OPTIONS = {
    "endpoint_override": "127.0.0.1:9",
    "scheme": "http",
    "region": "us-east-1",
    "access_key": "AKIDEXAMPLE",
    "secret_key": S3_SECRET,
}


def _no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def _context():
    ti = mock.MagicMock(dag_id="dag", run_id="manual__1", task_id="task", map_index=-1)
    ti.try_number = 1
    pushed: dict[str, object] = {}
    ti.xcom_push.side_effect = lambda key, value: pushed.__setitem__(key, value)
    return {"ti": ti, "task_state_store": None, "outlet_events": mock.MagicMock()}, pushed


def _embedded_op(tmp_path, **kw) -> RayOrchOperator:
    settings = RayOrchSettings(
        run_store=str(tmp_path),
        run_store_options=OPTIONS,
        runtime_env={"env_vars": {"OPENAI_API_KEY": API_KEY, "MODE": "fast"}},
        ray_init_kwargs={"_redis_password": REDIS, "num_cpus": 2},
        token=TOKEN,
    )
    hook = RayOrchHook()
    hook.__dict__["settings"] = settings
    op = RayOrchOperator(task_id="task", pipeline="fake_pipelines:Square", sources=[1, 2], **kw)
    op.__dict__["hook"] = hook
    return op


def test_plan_json_and_xcom_hold_no_env_vars_nor_secret_ray_options(tmp_path) -> None:
    op = _embedded_op(tmp_path, runtime_env={"env_vars": {"HF_TOKEN": "hf_" + API_KEY}})
    context, pushed = _context()
    plan = op.prepare(context)
    stored = (tmp_path / plan.run_id / "plan.json").read_text()
    _no_secret(stored)
    assert "hf_" not in stored
    _no_secret(json.dumps(pushed, default=str))
    assert pushed["rayorch_run_store"] == str(tmp_path)
    assert pushed["rayorch_conn_id"] == "rayorch_default"  # the report pages use its options


def test_the_embedded_driver_gets_secrets_by_environment_never_argv(tmp_path) -> None:
    op = _embedded_op(tmp_path)
    context, _ = _context()
    plan = op.prepare(context)
    seen: dict[str, object] = {}

    class Stop(Exception):
        pass

    def popen(cmd, *, env, **kw):
        seen.update(cmd=cmd, env=env)
        raise Stop

    with mock.patch.object(embedded.subprocess, "Popen", popen), pytest.raises(Stop):
        op._run_embedded(plan)
    _no_secret(" ".join(seen["cmd"]))
    env = seen["env"]
    assert json.loads(env[RUN_STORE_OPTIONS_ENV]) == OPTIONS
    ray_init = json.loads(env[RAY_INIT_KWARGS_ENV])
    assert ray_init["_redis_password"] == REDIS
    assert ray_init["runtime_env"]["env_vars"]["OPENAI_API_KEY"] == API_KEY


def test_settings_register_every_secret_with_the_masker(monkeypatch) -> None:
    conn = {
        "conn_type": "rayorch",
        "host": "http://head:8265",
        "password": TOKEN,
        "extra": {
            "run_store": "s3://bucket/runs",
            "run_store_options": OPTIONS,
            "runtime_env": {"env_vars": {"OPENAI_API_KEY": API_KEY}},
            "ray_init_kwargs": {"_redis_password": REDIS},
        },
    }
    monkeypatch.setenv("AIRFLOW_CONN_RO_SECRETS", json.dumps(conn))
    masked: list[object] = []
    monkeypatch.setattr("airflow.sdk.log.mask_secret", lambda s, *a, **k: masked.append(s))
    settings = RayOrchHook("ro_secrets").settings
    assert all(s in masked for s in (*SECRETS, "AKIDEXAMPLE"))
    assert "us-east-1" not in masked  # only secrets: a masked region would hide every log line
    _no_secret(repr(settings))


def test_the_hook_opens_the_run_store_with_the_connection_options() -> None:
    hook = RayOrchHook()
    hook.__dict__["settings"] = RayOrchSettings(
        run_store="s3://bucket/runs", run_store_options=OPTIONS
    )
    store = hook.run_store()
    assert store.fs.region == "us-east-1"
    assert store.root == "bucket/runs"
    assert hook.run_store("s3://other/runs").root == "other/runs"


def _submit_api() -> mock.MagicMock:
    """A stand-in JobsApi whose submit POST (one try, run by ``retrying``) answers."""
    api = mock.MagicMock()
    api.retrying.side_effect = lambda attempt, what: attempt()
    api.send.return_value.json.return_value = {"submission_id": "sid"}
    return api


def test_a_ray_job_gets_the_key_of_its_store_options_never_the_options(monkeypatch) -> None:
    """The options go to the cluster's key-value store (the package route's PUT); the
    job's runtime_env and entrypoint, which Ray shows to every worker and its logs,
    name the entry only."""
    hook = RayOrchHook()
    hook.__dict__["settings"] = RayOrchSettings(
        address="http://head:8265", run_store="s3://bucket/runs", run_store_options=OPTIONS
    )
    api = _submit_api()
    monkeypatch.setattr(RayOrchHook, "api", property(lambda self: api))
    monkeypatch.setattr(
        "airflow_provider_rayorch.hooks.packages.prepare_runtime_env", lambda api, env: env
    )
    masked: list[object] = []
    monkeypatch.setattr("airflow.sdk.log.mask_secret", lambda s, *a, **k: masked.append(s))
    entrypoint = "python -m airflow_provider_rayorch.job --run-store s3://bucket/runs --run-id r"
    hook.submit_job(
        entrypoint, submission_id="sid", runtime_env={"env_vars": {"HF_TOKEN": API_KEY}}
    )
    body = api.send.call_args.kwargs["json"]
    _no_secret(json.dumps({**body, "runtime_env": {}}))
    env_vars = body["runtime_env"]["env_vars"]
    key = env_vars[RUN_STORE_OPTIONS_KEY_ENV]
    assert key == key_of(deposit_name("sid"))
    assert RUN_STORE_OPTIONS_ENV not in env_vars
    assert S3_SECRET not in json.dumps(body["runtime_env"])
    (put,) = [c for c in api.request.call_args_list if c.args[0] == "PUT"]
    assert put.args[1] == "/api/packages/gcs/" + deposit_name("sid")
    assert json.loads(put.kwargs["content"]) == OPTIONS
    assert env_vars["HF_TOKEN"] == API_KEY  # a user's env_vars ride as given (masked)
    assert API_KEY in masked


def test_a_ray_job_without_store_options_stores_nothing(monkeypatch) -> None:
    hook = RayOrchHook()
    hook.__dict__["settings"] = RayOrchSettings(address="http://head:8265")
    api = _submit_api()
    monkeypatch.setattr(RayOrchHook, "api", property(lambda self: api))
    hook.submit_job("python -m x", submission_id="sid")
    assert api.request.call_args_list == []
    assert api.send.call_args.kwargs["json"]["runtime_env"] is None


def test_a_connection_whose_run_store_uri_holds_credentials_is_refused(monkeypatch, caplog) -> None:
    uri = f"s3://AKIDEXAMPLE:{S3_SECRET}@bucket/runs?endpoint_override=127.0.0.1:9"
    conn = {"conn_type": "rayorch", "host": "http://head:8265", "extra": {"run_store": uri}}
    monkeypatch.setenv("AIRFLOW_CONN_RO_LEAKY", json.dumps(conn))
    caplog.set_level(logging.DEBUG)
    with pytest.raises(RunStoreSettingError, match="run_store_options") as info:
        _ = RayOrchHook("ro_leaky").settings
    _no_secret(str(info.value))
    _no_secret("".join(traceback.format_exception(info.value)))
    _no_secret(caplog.text)


def test_an_operator_run_store_with_credentials_fails_at_dag_parse() -> None:
    with pytest.raises(RunStoreSettingError, match="run_store_options") as info:
        RayOrchOperator(
            task_id="t",
            pipeline="fake_pipelines:Square",
            sources=[1],
            run_store=f"s3://bucket/runs?secret_key={S3_SECRET}",
        )
    _no_secret(str(info.value))


def test_the_test_button_says_why_a_credential_uri_is_refused(monkeypatch) -> None:
    uri = f"s3://bucket/runs?secret_key={S3_SECRET}"
    conn = {"conn_type": "rayorch", "extra": {"run_store": uri}}
    monkeypatch.setenv("AIRFLOW_CONN_RO_FORM", json.dumps(conn))
    ok, message = RayOrchHook("ro_form").test_connection()
    assert not ok
    assert "run_store_options" in message
    _no_secret(message)


def test_a_registered_secret_is_redacted_by_airflows_masker(monkeypatch) -> None:
    """Not a stand-in: Airflow's own masker hides the values the settings registered."""
    from airflow.sdk._shared.secrets_masker import redact

    conn = {
        "conn_type": "rayorch",
        "extra": {
            "run_store": "s3://bucket/runs",
            "run_store_options": {"region": "us-east-1", "secret_key": S3_SECRET},
            "runtime_env": {"env_vars": {"OPENAI_API_KEY": API_KEY}},
        },
    }
    monkeypatch.setenv("AIRFLOW_CONN_RO_MASKED", json.dumps(conn))
    _ = RayOrchHook("ro_masked").settings
    line = f"opening s3 with {S3_SECRET}, calling the model with {API_KEY} in us-east-1"
    redacted = redact(line)
    _no_secret(redacted)
    assert "us-east-1" in redacted


def test_an_embedded_run_completes_with_its_options_handed_by_environment(tmp_path) -> None:
    """The real child driver (backend="local": no Ray) reads the handed options."""
    op = _embedded_op(tmp_path, backend="local")
    op.pipeline = "engine_pipelines:TwoOutputs"
    op.sources = [1, 2, 3]
    context, _ = _context()
    summary = op.execute(context)
    assert summary["state"] == "success"
    _no_secret(json.dumps(summary))
    for record in tmp_path.rglob("*.json"):
        _no_secret(record.read_text())
