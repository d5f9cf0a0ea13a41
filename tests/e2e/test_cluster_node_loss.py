"""The provider on a real 2-node cluster loses the worker node mid-run.

A head and a worker node are started by docs/airflow/real-cluster.md's own blocks in
token mode on loopback (tests/e2e/real_cluster.py); the worker also gets the custom
resource ``accel``, which the DAG's model stage needs, so that stage runs only there
(cluster_dags/rayorch_node_loss.py, node_loss_pipelines.py). Once one microbatch is
committed and others are held in flight on the worker node, the test SIGKILLs the
node's process group and starts a replacement with the same command. The run must
end in success with every source exactly once in the run store's outputs, and the
run's report must name the actors lost with the node.

Every wait has a deadline (``DEADLINE_S``); the cluster is stopped by process group,
never with ``ray stop``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest
from doc_blocks import one_block
from e2e_helpers import ROOT, live_members, wait_for
from e2e_runs import assert_no_secret, failure_digest, start_runs
from real_cluster import PYTHON, node_environment, run_bash_argv, start_token_cluster, start_worker

from airflow_provider_rayorch.reports.writer import read_report_data
from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from real_cluster import Node, TokenCluster
    from rest import AirflowRest

pytestmark = [pytest.mark.slow]

DAG_ID = "rayorch_node_loss"
CONN_ID = "rayorch_node_loss"
CLUSTER_DAGS = ROOT / "tests" / "e2e" / "cluster_dags"
SOURCES = 8
#: Bound on each wait: a hang fails here instead of at the test's timeout.
DEADLINE_S = 300
#: The documented worker command, plus the custom resource only worker nodes have.
WORKER_START = "ray start --address=<head>:6379"
ACCEL = """ --resources='{"accel": 2}'"""


def _accel_worker_block():
    block = one_block("cluster-worker")
    assert WORKER_START in block.text, block.text
    return dataclasses.replace(block, text=block.text.replace(WORKER_START, WORKER_START + ACCEL))


@pytest.fixture(scope="module")
def accel_cluster(tmp_path_factory) -> Iterator[TokenCluster]:
    """A head and one worker node with ``accel``; stopped by process groups."""
    cluster = start_token_cluster(
        tmp_path_factory.mktemp("node-loss-cluster"), worker_block=_accel_worker_block()
    )
    try:
        yield cluster
    finally:
        cluster.stop()


def _cluster_state(cluster: TokenCluster) -> dict[str, Any]:
    """The head's nodes (state, resources, end time) and its live actors, asked as a
    token-mode client in a process of its own."""
    code = (
        "import json, sys, ray\n"
        "from ray.util.state import list_actors, list_nodes\n"
        "ray.init(address=sys.argv[1], logging_level='ERROR')\n"
        "api = sys.argv[2]  # this cluster's dashboard: other Rays may run on the machine\n"
        "nodes = [{'id': n.node_id, 'state': n.state, 'resources': n.resources_total,\n"
        "          'end_ms': n.end_time_ms} for n in list_nodes(address=api, detail=True)]\n"
        "actors = [{'class': a.class_name, 'job': a.job_id} for a in list_actors(\n"
        "          address=api, filters=[('state', '=', 'ALIVE')], detail=True)]\n"
        "print(json.dumps({'nodes': nodes, 'actors': actors}))\n"
    )
    env = node_environment(
        cluster.root / "client-home", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=cluster.token
    )
    argv = [PYTHON, "-c", code, f"127.0.0.1:{cluster.gcs_port}", cluster.address]
    out = run_bash_argv(argv, env=env, timeout=120)
    return dict(json.loads(out.strip().splitlines()[-1]))


def _sigkill_node(node: Node) -> float:
    """SIGKILL the node's whole process group; returns when (wall clock) it was sent."""
    killed_at = time.time()
    os.killpg(node.pgid, signal.SIGKILL)
    assert live_members(node.pgid, wait_s=10) == [], f"{node.name} survived SIGKILL"
    return killed_at


@pytest.mark.timeout(1200)  # includes starting the deployment and the cluster
def test_worker_node_killed_mid_run_then_replaced(
    airflow_rest: AirflowRest, accel_cluster: TokenCluster, tmp_path: Path
) -> None:
    rest, cluster = airflow_rest, accel_cluster
    store_dir, state_dir = tmp_path / "runs", tmp_path / "state"
    state_dir.mkdir()
    rest.put_connection(
        {
            "connection_id": CONN_ID,
            "conn_type": "rayorch",
            "host": cluster.address,
            "password": cluster.token,
            "extra": json.dumps(
                {"run_store": str(store_dir), "runtime_env": {"working_dir": str(CLUSTER_DAGS)}}
            ),
        }
    )
    triggered_at = time.time()
    run_id = start_runs(rest, {DAG_ID: {"conf": {"state_dir": str(state_dir)}}})[DAG_ID]
    started = time.monotonic()

    def committed_and_held() -> Path | None:
        runs = [p for p in store_dir.glob(f"{DAG_ID}.docs.*") if (p / "manifests").is_dir()]
        held = list(state_dir.glob("held-*"))
        if runs and list((runs[0] / "manifests").glob("mb-*.json")) and len(held) >= 4:
            return runs[0]
        if rest.run(DAG_ID, run_id)["state"] in ("success", "failed"):
            raise AssertionError(failure_digest(rest, DAG_ID, run_id))
        return None

    run_dir = wait_for(
        committed_and_held, DEADLINE_S, "a committed microbatch and two held in flight", 1.0
    )
    [worker] = [n for n in cluster.nodes if n.name != "head"]
    killed_at = _sigkill_node(worker)
    for held in state_dir.glob("held-*"):
        held.unlink()
    # the replacement: the same documented command on a new "machine"
    start_worker(cluster, _accel_worker_block())
    (state_dir / "open").touch()

    run = rest.wait_for_run(DAG_ID, run_id, max(DEADLINE_S - (time.monotonic() - started), 60))
    assert run["state"] == "success", failure_digest(rest, DAG_ID, run_id)

    # every source exactly once, present, with its value
    store = RunStore(str(store_dir))
    rows = store.read_outputs(run_dir.name)
    assert [int(r["source"]) for r in rows] == list(range(SOURCES))
    assert {r["outcome"] for r in rows} == {"present"}, rows
    assert [r["value"] for r in rows] == [n * 10 for n in range(SOURCES)]
    files = sorted(p.relative_to(run_dir) for p in (run_dir / "outputs").rglob("*.parquet"))
    assert len(files) == SOURCES // 2, files  # one committed file per microbatch
    summary = rest.xcom(DAG_ID, run_id, "docs.run")
    assert summary["state"] == "success"
    assert summary["sources"]["present"] == SOURCES
    # the batches held on the worker node ran again after the kill
    assert sorted(int(p.name.split("-")[1]) for p in state_dir.glob("held-*")) == list(
        range(2, SOURCES)
    )

    # the report names the actors lost with the node (their batches ran again)
    # the driver writes its last report just after the run manifest: wait for the one
    # that has every commit (bounded), then judge it
    def final_report() -> Any:
        found = read_report_data(store, run_dir.name)
        return found if found is not None and len(found.timings or []) == SOURCES // 2 else None

    data = wait_for(final_report, 60, "the report with every microbatch's commit", 1.0)
    assert data.lost_actors, data.timeline
    html = (run_dir / "report.html").read_text()
    assert 'id="lost-actors"' in html
    assert all(a in html for a in data.lost_actors), data.lost_actors

    def no_actors_and_the_node_marked_dead() -> dict[str, Any] | None:
        # the run may end before the head's health checks (about 15 s) mark the killed
        # node dead: its actors' deaths are seen at once, through their lost connections
        state = _cluster_state(cluster)
        dead = [n for n in state["nodes"] if n["state"] == "DEAD"]
        return None if state["actors"] or not dead else state

    state = wait_for(
        no_actors_and_the_node_marked_dead,
        90,
        "no live actor left and the killed node marked dead",
        2.0,
    )
    dead = [n for n in state["nodes"] if n["state"] == "DEAD"]
    assert len(dead) == 1, state["nodes"]
    assert dead[0]["resources"].get("accel") == 2, state["nodes"]
    ended_at = datetime.fromisoformat(run["end_date"]).timestamp()
    print(  # the figures docs/fault-matrix.md quotes
        f"node loss: killed {killed_at - triggered_at:.1f}s after the trigger; the head "
        f"marked the node dead {dead[0]['end_ms'] / 1000 - killed_at:.1f}s after the kill; "
        f"the run ended {ended_at - killed_at:.1f}s after the kill; lost: {data.lost_actors}"
    )
    assert_no_secret({"the head's token": cluster.token}, xcom=repr(rest.xcoms(DAG_ID, run_id)))
