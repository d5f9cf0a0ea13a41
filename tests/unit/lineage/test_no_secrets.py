"""No secret reaches a lineage event, an Asset event or the parent-run variables."""

from __future__ import annotations

import json

import pytest

from airflow_provider_rayorch.exceptions import RayOrchFailedRatioExceeded
from airflow_provider_rayorch.lineage.parent import PARENT_ENV_VARS
from airflow_provider_rayorch.operators.microbatch import RayOrchSubmitOperator
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor, RayOrchRunSensor

from .conftest import SECRETS, SPEC, context_for, landing, secret_hook, ti_for, with_hook
from .events import build_event, check_event

pytest.importorskip("airflow.providers.openlineage")
pytestmark = pytest.mark.timeout(120)


def _texts(tmp_path, store_root, openlineage_on) -> list[str]:
    """Every event and payload the provider builds for one failing run, as text."""
    files = landing(tmp_path, {"a": 4})
    secret_env = {"env_vars": {"RUN_TOKEN": SECRETS["env_var"] + "-op"}}
    kw = {"pipeline": SPEC, "sources": files, "input_batch_size": 2, "poll_interval": 0.01}
    kw |= {"pipeline_kwargs": {"poison": [files[0]]}, "runtime_env": secret_env}
    op = with_hook(
        RayOrchOperator(task_id="task", outputs_asset_alias="out", **kw), secret_hook(store_root)
    )
    ti = ti_for()
    ctx = context_for(ti)
    with pytest.raises(RayOrchFailedRatioExceeded):
        op.execute(ctx)
    texts = [json.dumps(op.hook.submitted_runtime_env["env_vars"][k]) for k in PARENT_ENV_VARS]
    texts.append(json.dumps(ti.pushed, default=str))
    add = ctx["outlet_events"].__getitem__.return_value.add
    texts.append(repr(add.call_args))
    lineages = [
        ("start", op.get_openlineage_facets_on_start()),
        ("complete", op.get_openlineage_facets_on_complete(ti)),
        ("fail", op.get_openlineage_facets_on_failure(ti)),
    ]
    submit = with_hook(
        RayOrchSubmitOperator(task_id="submit", **kw), secret_hook(store_root, runs_driver=False)
    )
    submit_ti = ti_for("submit")
    submit.execute(context_for(submit_ti))
    lineages.append(("complete", submit.get_openlineage_facets_on_complete(submit_ti)))
    run_id = ti.pushed["rayorch_run_id"]
    common = {"run_id": run_id, "run_store": store_root, "job_id": "j"}
    mb = RunStore(store_root).read_plan(run_id).microbatches()[0]
    for sensor in (
        RayOrchMicrobatchSensor(task_id="microbatch", microbatch=mb, **common),
        RayOrchRunSensor(task_id="run", **common),
    ):
        sensor._store = lambda: RunStore(store_root)
        lineages += [
            ("start", sensor.get_openlineage_facets_on_start()),
            ("complete", sensor.get_openlineage_facets_on_complete(ti)),
            ("fail", sensor.get_openlineage_facets_on_failure(ti)),
        ]
    for kind, lineage in lineages:
        event = build_event(lineage, kind)
        check_event(event)
        texts.append(json.dumps(event))
    return texts


def test_no_secret_in_any_event(tmp_path, store_root, fake_engine, openlineage_on) -> None:
    texts = _texts(tmp_path, store_root, openlineage_on)
    assert len(texts) >= 12
    for secret in SECRETS.values():
        for text in texts:
            assert secret not in text


def test_the_parent_run_variables_keep_the_users_own(
    store_root, fake_engine, openlineage_on
) -> None:
    """The parent variables join the Ray job's env_vars; the user's secrets stay as given
    (Ray hands them to the job), and a variable the user set wins."""
    from airflow_provider_rayorch.lineage.parent import with_parent_run

    mine = {"env_vars": {"API_KEY": SECRETS["env_var"], "OPENLINEAGE_PARENT_ID": "x/y/z"}}
    env = with_parent_run(mine, ti_for())
    assert env["env_vars"]["API_KEY"] == SECRETS["env_var"]
    assert env["env_vars"]["OPENLINEAGE_PARENT_ID"] == "x/y/z"
    assert set(PARENT_ENV_VARS) <= set(env["env_vars"])
    assert mine["env_vars"] == {"API_KEY": SECRETS["env_var"], "OPENLINEAGE_PARENT_ID": "x/y/z"}
