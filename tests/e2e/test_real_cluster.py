"""docs/airflow/real-cluster.md works as written for a head and a worker
node in token mode (tested on loopback, tests/e2e/real_cluster.py runs the page's
blocks), and its connection reaches the cluster with the head's token.

Before: the page's worker command (``ray start --address=<head>:6379`` alone) failed
against a head in token mode with ``InvalidAuthToken ... RAY_AUTH_MODE is currently
'disabled'``, and the page said nowhere how to get the token.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from doc_blocks import ROOT, VENV_BIN, one_block, run_block, run_text
from e2e_runs import assert_no_secret

if TYPE_CHECKING:
    from deployment import Deployment
    from real_cluster import TokenCluster

pytestmark = [pytest.mark.slow]

#: the test's connection id: rayorch_default is the other e2e tests' embedded Ray
CONN_ID = "rayorch_doc_cluster"


@pytest.mark.timeout(400)
def test_a_worker_joins_a_token_mode_head_as_the_page_says(token_cluster: TokenCluster) -> None:
    assert [n.name for n in token_cluster.nodes] == ["head", "worker1"]
    assert token_cluster.alive_nodes() == 2, token_cluster.logs()


@pytest.mark.timeout(600)
def test_the_documented_connection_tests_green_with_the_heads_token(
    token_cluster: TokenCluster, airflow_deployment: Deployment
) -> None:
    """The page's ``airflow connections add`` (host, port, token from
    ``ray get-auth-token``) and ``airflow connections test``, on the deployment."""
    block = one_block("cluster-connection")
    text = token_cluster.substitute(block.text).replace("ray-head.ray.svc", "127.0.0.1")
    text = text.replace("rayorch_default", CONN_ID)
    env = {
        **airflow_deployment.env,
        "RAY_AUTH_TOKEN": token_cluster.token,
        "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
    }
    _delete_connection(env)
    try:
        got = run_block(block, text, env=env, cwd=ROOT, timeout=300)
        out = got.stdout + got.stderr
        assert "Connection success!" in out, out[-4000:]
        assert_no_secret({"the head's token": token_cluster.token}, **{block.id: out})
        # the test did use the password: with another token the head refuses it
        _delete_connection(env)
        wrong = run_text(
            ["bash", "-euo", "pipefail", "-c", text],
            env={**env, "RAY_AUTH_TOKEN": "0" * 48},
            cwd=ROOT,
            timeout=300,
            what=f"{block.id} with a wrong token",
        )
        refused = wrong.stdout + wrong.stderr
        assert "Testing..." in refused, refused[-4000:]
        assert "Connection success!" not in refused, refused[-4000:]
    finally:
        _delete_connection(env)


def _delete_connection(env: dict[str, str]) -> None:
    subprocess.run(
        [str(Path(VENV_BIN) / "airflow"), "connections", "delete", CONN_ID],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
