"""The blocks of the pages under docs/ that need a deployment run on the session's e2e
deployment, and the named ones are checked for what they did, so a
documented call that does nothing fails here.

The deployment is the one tests/e2e/conftest.py starts with scripts/deployment.py,
the script getting-started.md documents (its start and stop blocks run as written on a
deployment of their own: tests/e2e/test_deployment_blocks.py). A block runs as a user
pastes it into a shell after the page's ``run: deployment-token`` block (which sets
``$AIRFLOW`` and ``$TOKEN``), from the checkout, with the deployment's settings in the environment.
Documented placeholders become the deployment's: ``127.0.0.1:8080`` its address,
``/tmp/rayorch-landing`` its landing folder; ``rayorch_default`` becomes
``rayorch_doc_test`` (the other e2e tests run on the embedded Ray that no
``rayorch_default`` means), and connections a block adds are deleted after it.

The by-hand block unpauses ``rayorch_ingest``: its test pauses it again, so no hourly
run starts beside the modules after it.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))

from doc_blocks import ROOT, Block, blocks_of, one_block, run_block
from e2e_runs import finish_run

from airflow_provider_rayorch.runs.store import read_summary_outputs

if TYPE_CHECKING:
    import subprocess

    from deployment import Deployment
    from rest import AirflowRest

pytestmark = [pytest.mark.slow]

TEST_CONN_ID = "rayorch_doc_test"
DOC_DAG = "rayorch_doc_blocks"


def substitute(deployment: Deployment, text: str) -> str:
    port = deployment.url.rsplit(":", 1)[1]
    return (
        text.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
        .replace("--port 8080", f"--port {port}")
        .replace("/tmp/rayorch-landing", str(deployment.landing))
        .replace("rayorch_default", TEST_CONN_ID)
    )


def run_on_deployment(
    deployment: Deployment,
    rest: AirflowRest,
    block: Block,
    text: str | None = None,
    *,
    timeout: float = 300,
    **variables: str,
) -> subprocess.CompletedProcess[str]:
    """``block`` (or ``text``, a variant of it) after the token block, in one bash."""
    token = one_block("deployment-token")
    script_text = substitute(deployment, token.text + (text or block.text))
    before = _connection_ids(rest)
    try:
        return run_block(
            block,
            script_text,
            # $RAY_AUTH_TOKEN: the documented placeholder of a cluster's token
            env={**deployment.env, "RAY_AUTH_TOKEN": secrets.token_hex(24), **variables},
            cwd=ROOT,
            timeout=timeout,
        )
    finally:
        for conn_id in _connection_ids(rest) - before:
            rest.call("DELETE", f"connections/{conn_id}")


def last_json(out: str) -> Any:
    """The last JSON document a block printed (the token block prints one before)."""
    decoder, found, i = json.JSONDecoder(), None, 0
    while (start := out.find("{", i)) != -1:
        try:
            found, i = decoder.raw_decode(out, start)
        except ValueError:
            i = start + 1
    assert found is not None, f"no JSON in the output:\n{out[-2000:]}"
    return found


def _connection_ids(rest: AirflowRest) -> set[str]:
    page = rest.get("connections", limit=1000)
    return {c["connection_id"] for c in page["connections"]}


@pytest.mark.timeout(900)  # includes starting the deployment when this module runs alone
@pytest.mark.parametrize("block", blocks_of("deployment"), ids=lambda b: b.id)
def test_deployment_blocks_run(airflow_deployment, airflow_rest, block: Block) -> None:
    run_on_deployment(airflow_deployment, airflow_rest, block)


@pytest.mark.timeout(900)
def test_the_token_block_reaches_the_api_and_lists_the_examples(
    airflow_deployment, airflow_rest
) -> None:
    block = one_block("deployment-token")
    got = run_block(
        block, substitute(airflow_deployment, block.text), env=airflow_deployment.env, cwd=ROOT
    )
    dag_ids = set(got.stdout.split())
    assert {"rayorch_ingest", "rayorch_minimal"} <= dag_ids, got.stdout[-2000:]


def _task_instances(rest: AirflowRest, dag_id: str, run_id: str) -> dict[Any, dict[str, Any]]:
    return rest.task_instances(dag_id, run_id)


def clear_as_repair_md_says(
    deployment: Deployment, rest: AirflowRest, text: str | None = None
) -> dict[str, Any]:
    """Run ``rayorch_doc_blocks`` to the end, then repair.md's clear on its
    ``docs.microbatch[0]``; returns that task instance once it ran again."""
    rest.wait_for_dag(DOC_DAG)
    run_id = rest.trigger(DOC_DAG)["dag_run_id"]
    rest.unpause(DOC_DAG)
    finish_run(rest, DOC_DAG, run_id, timeout=240)
    block = one_block("repair-clear")
    got = run_on_deployment(deployment, rest, block, text, DAG=DOC_DAG, RUN=run_id)
    cleared = {(t["task_id"], t["map_index"]) for t in last_json(got.stdout)["task_instances"]}
    assert ("docs.microbatch", 0) in cleared, got.stdout[-2000:]

    def ran_again() -> dict[str, Any] | None:
        ti = _task_instances(rest, DOC_DAG, run_id)[("docs.microbatch", 0)]
        return ti if ti["try_number"] == 2 and ti["state"] == "success" else None

    try:
        ti = rest.wait(ran_again, 120, "docs.microbatch[0] to run again after the clear")
    finally:
        rest.call("PATCH", f"dags/{DOC_DAG}", json={"is_paused": True})
    others = _task_instances(rest, DOC_DAG, run_id)
    assert others[("docs.microbatch", 1)]["try_number"] == 1
    assert others[("docs.run", -1)]["try_number"] == 2  # include_downstream
    return ti


@pytest.mark.timeout(900)
def test_repair_md_clear_really_clears(airflow_deployment, airflow_rest) -> None:
    """Airflow 3.3's clearTaskInstances is a dry run unless told otherwise: the
    documented call must clear (the task instance runs again), not only list."""
    clear_as_repair_md_says(airflow_deployment, airflow_rest)


def _run_id_of(out: str) -> str:
    found = re.findall(r'"dag_run_id"\s*:\s*"([^"]+)"', out)
    assert found, f"the trigger answered no dag_run_id:\n{out[-2000:]}"
    return found[-1]


@pytest.mark.timeout(900)
def test_a_manual_ingest_run_prepares_a_file_that_just_arrived(
    airflow_deployment, airflow_rest
) -> None:
    """getting-started.md's "Try rayorch_ingest by hand": a file lands, a manual run
    with ``{"logical_date": null}`` (the REST default) is triggered; it succeeds (no
    template needs a logical date) and prepares that file."""
    block = one_block("ingest-by-hand")
    try:
        got = run_on_deployment(airflow_deployment, airflow_rest, block)
        run_id = _run_id_of(got.stdout)
        run = airflow_rest.run("rayorch_ingest", run_id)
        assert run["logical_date"] is None, run
        finish_run(airflow_rest, "rayorch_ingest", run_id, timeout=600)
    finally:  # the block unpaused it, as a user does; a paused DAG runs no more tasks
        airflow_rest.pause("rayorch_ingest")
    summary = airflow_rest.xcom("rayorch_ingest", run_id, "ingest.run")
    rows = read_summary_outputs(summary)
    texts = [str(r["value"]["markdown"]) for r in rows if r["outcome"] == "present"]
    assert any("hello from a manual run" in t for t in texts), (summary["sources"], texts)
