"""``ray status`` on the head, as docs/airflow/real-cluster.md says (``run:
cluster-status``), in a new shell of the head machine (its ``HOME``, no ``RAY_*``
variable): it reaches the token-mode head and lists both nodes.

Plain ``ray status`` fails there twice over: without ``RAY_AUTH_MODE=token`` the
client sends no token (``InvalidAuthToken ... RAY_AUTH_MODE is currently
'disabled'``, though the token is in ``~/.ray/auth_token``), and without
``--address`` it refuses to pick among the machine's Rays (``Found multiple active
Ray instances``).

The head counts both nodes alive when the fixture returns; ``ray status`` shows the
autoscaler's view, which takes in a new node at its next update (every few seconds):
the test runs the command again until it lists both, within a deadline.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import pytest
from doc_blocks import one_block
from real_cluster import node_environment, run_bash_argv

if TYPE_CHECKING:
    from real_cluster import TokenCluster

pytestmark = [pytest.mark.slow]

#: How long the autoscaler's view may lag the head's (a watchdog, not a speed claim).
VIEW_DEADLINE_S = 180


def _active_nodes(out: str) -> list[str]:
    active = out.split("Active:", 1)[1].split("Pending:", 1)[0] if "Active:" in out else ""
    return re.findall(r"^\s*1 node_[0-9a-f]+", active, re.MULTILINE)


@pytest.mark.timeout(400)
def test_ray_status_on_the_head_lists_both_nodes(token_cluster: TokenCluster) -> None:
    block = one_block("cluster-status")
    head = token_cluster.nodes[0]
    deadline = time.monotonic() + VIEW_DEADLINE_S
    while True:
        out = run_bash_argv(
            ["bash", "-euo", "pipefail", "-c", token_cluster.substitute(block.text)],
            env=node_environment(head.home),
            timeout=120,
        )
        if len(_active_nodes(out)) == 2 or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert len(_active_nodes(out)) == 2, out
