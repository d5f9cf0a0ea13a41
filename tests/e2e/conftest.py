"""End-to-end fixtures: a real Airflow deployment (deployment.py) serving the DAG files
of ``DEPLOYMENT_DAGS``, its REST client, and a loopback Ray head with token auth that
the tests reach through connections made with the REST API.

The Ray head is stopped through its own process group, never with ``ray stop``.
"""

from __future__ import annotations

import os
import secrets
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from typing import TYPE_CHECKING

import e2e_runs
from deployment import Deployment, start_deployment, start_listener_deployment
from e2e_helpers import E2E_DAGS, EXAMPLES, ROOT, heads_of
from real_cluster import TokenCluster, start_token_cluster
from rest import UNPAUSED, AirflowRest

from airflow_provider_rayorch.common import head_logs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

#: Every file the e2e tests need in the deployment's DAG folder, linked in before the
#: DAG processor starts: no test alters the folder, and every DAG is parsed at once.
DEPLOYMENT_DAGS = [
    EXAMPLES / "rayorch_minimal.py",
    EXAMPLES / "rayorch_ingest.py",
    EXAMPLES / "rayorch_documents.py",
    EXAMPLES / "rayorch_video.py",
    EXAMPLES / "rayorch_events.py",
    ROOT / "tests" / "e2e" / "browser_dags" / "rayorch_browser.py",
    ROOT / "tests" / "e2e" / "deployment_dags" / "rayorch_gated.py",
    ROOT / "tests" / "e2e" / "deployment_dags" / "rayorch_commit_on_defer.py",
    E2E_DAGS / "e2e_dags.py",
    ROOT / "tests" / "e2e" / "repair_dags" / "rayorch_repair.py",
    # the pipeline rayorch_repair names: the DAG folder is on the workers' and head's path
    ROOT / "tests" / "unit" / "airflow" / "repair_pipelines.py",
    # the S3 run-store DAG of test_s3_store.py and its pipeline
    ROOT / "tests" / "e2e" / "s3_dags" / "rayorch_s3.py",
    ROOT / "tests" / "e2e" / "s3_dags" / "s3_pipelines.py",
    # plain Python tasks the REST examples of docs/airflow act on (tests/docs)
    ROOT / "tests" / "docs" / "dags" / "rayorch_doc_blocks.py",
    # the 2-node cluster DAG of test_cluster_node_loss.py and its pipeline
    ROOT / "tests" / "e2e" / "cluster_dags" / "rayorch_node_loss.py",
    ROOT / "tests" / "e2e" / "cluster_dags" / "node_loss_pipelines.py",
]


@pytest.fixture(scope="session")
def e2e_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def ray_token() -> str:
    return secrets.token_hex(24)


@pytest.fixture(scope="session")
def ray_head(e2e_root, ray_token, session_deployment):
    """A real ``ray start --head`` on 127.0.0.1 with token auth, stopped by process group;
    a provider loopback head of the deployment (recorded where its tasks look heads up)."""
    from airflow_provider_rayorch.operators.local_head import start_local_head, stop_local_head

    home = e2e_root / "head-home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": ray_token,
        "PYTHONPATH": os.pathsep.join([str(EXAMPLES), str(E2E_DAGS)]),
    }
    with heads_of(session_deployment):
        head = start_local_head(
            num_cpus=2,
            env=env,
            timeout=120,
            token=ray_token,
            extra_args=["--include-dashboard=true"],
        )
    try:
        yield head
    finally:
        with heads_of(session_deployment):
            stop_local_head(head)


@pytest.fixture(scope="session")
def token_cluster(tmp_path_factory) -> Iterator[TokenCluster]:
    """A head and a worker node in Ray token mode on loopback, started with the commands
    of docs/airflow/real-cluster.md (tests/e2e/real_cluster.py), stopped by their own
    process groups."""
    cluster = start_token_cluster(tmp_path_factory.mktemp("token-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def session_deployment(tmp_path_factory) -> Iterator[Deployment]:
    """Scheduler (LocalExecutor), DAG processor, triggerer and API server on loopback,
    under a user ``HOME`` where Ray has written its token file; no ``RAY_*`` variable set.
    Serves the example DAGs and the browser DAG; logs under ``<root>/airflow-home``."""
    deployment = start_deployment(tmp_path_factory.mktemp("deployment"), DEPLOYMENT_DAGS)
    try:
        yield deployment
    finally:
        deployment.stop()
    served = sorted(p.name for p in deployment.dags_folder.iterdir())
    assert served == sorted(p.name for p in DEPLOYMENT_DAGS), (
        f"a test changed the deployment's DAG folder: {served}; declare DAG files in "
        "tests/e2e/conftest.py DEPLOYMENT_DAGS instead"
    )


@pytest.fixture(scope="session")
def airflow_deployment(session_deployment: Deployment) -> Deployment:
    """The deployment a test talks to (a module may name another one so: the session
    fixtures that need the main deployment ask for ``session_deployment``)."""
    return session_deployment


#: The DAG files of the deployment with the OpenLineage listener on.
LISTENER_DAGS = [
    ROOT / "tests" / "e2e" / "openlineage_dags" / "rayorch_openlineage.py",
    ROOT / "tests" / "e2e" / "deployment_dags" / "rayorch_commit_on_defer.py",
]


@pytest.fixture(scope="session")
def listener_deployment(tmp_path_factory) -> Iterator[Deployment]:
    """A second deployment, with the OpenLineage listener on and its file transport,
    shared by test_openlineage.py and test_sensors_under_listener.py (the modules name
    it ``airflow_deployment``, so a failure carries its logs)."""
    deployment = start_listener_deployment(tmp_path_factory.mktemp("listener"), LISTENER_DAGS)
    try:
        yield deployment
    finally:
        deployment.stop()


@pytest.fixture(scope="session")
def airflow_rest(airflow_deployment) -> AirflowRest:
    """An admin REST client of ``airflow_deployment``; its waits fail with the logs."""
    return AirflowRest(airflow_deployment.url, on_timeout=airflow_deployment.logs)


@pytest.fixture(autouse=True, scope="module")
def _pause_what_the_module_unpaused() -> Iterator[None]:
    """Pause every DAG the module unpaused when it ends: a scheduled DAG left unpaused
    would keep starting runs (and their Ray heads) beside the modules after it."""
    yield
    while UNPAUSED:
        rest, dag_id = UNPAUSED.pop()
        try:
            rest.pause(dag_id)
        except (AssertionError, OSError) as exc:  # a run that never ended, a gone server
            print(f"could not pause {dag_id}: {exc}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used the deployment gets every component's log tail, and the
    logs of the loopback Ray heads that died (``head_logs.digest``)."""
    outcome = yield
    report = outcome.get_result()
    deployment = getattr(item, "funcargs", {}).get("airflow_deployment")
    if report.failed and isinstance(deployment, Deployment):
        report.sections.append(("airflow deployment logs", deployment.logs()))
        if e2e_runs.HEAD_LOG_ARCHIVE and (heads := head_logs.digest(e2e_runs.HEAD_LOG_ARCHIVE)):
            report.sections.append(("loopback Ray heads that failed", heads))
