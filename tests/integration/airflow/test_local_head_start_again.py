"""A loopback head whose raylet aborts while it starts is stopped, its logs kept, and
a new head begun, which comes up.

On a loaded machine Ray's raylet aborts when the head's dashboard agent is slow to
report its port (``Timed out waiting for file .../metrics_agent_port_...``), and
``ray start --block`` then waits minutes for a raylet that is gone. Here the first
head's dashboard agent is made slow on purpose (a ``sitecustomize`` on the head's
``PYTHONPATH`` that sleeps in the agent once), so the first head fails exactly so.
The test stops only its own heads, by their process groups, never with ``ray stop``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from tests.integration.airflow.own_heads import own_heads

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(300)

#: Sleeps in the first dashboard agent that starts (past the raylet's wait for its
#: port), in none after it.
SLOW_FIRST_AGENT = """
import os, sys, time
if any(arg.endswith("dashboard/agent.py") for arg in sys.argv):
    try:
        os.close(os.open({marker!r}, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        pass
    else:
        time.sleep(40)
"""


def test_a_head_whose_raylet_aborts_while_it_starts_is_begun_again(
    tmp_path: Path, monkeypatch
) -> None:
    from airflow_provider_rayorch.operators._head_start import answers_jobs
    from airflow_provider_rayorch.operators.local_head import start_local_head, stop_local_head

    archive = own_heads(tmp_path, monkeypatch)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        SLOW_FIRST_AGENT.format(marker=str(tmp_path / "agent-slowed"))
    )

    head = start_local_head(num_cpus=1, env={"PYTHONPATH": str(site)}, timeout=240)
    try:
        assert (tmp_path / "agent-slowed").exists()  # the first head's agent slept
        assert answers_jobs(head)
    finally:
        stop_local_head(head)

    kept = sorted(archive.iterdir())
    assert len(kept) == 2  # the head that died, then the one that came up
    aborted = [
        d for d in kept if "Timed out waiting for file" in (d / "logs" / "raylet.out").read_text()
    ]
    assert len(aborted) == 1
    assert aborted[0].name != f"{os.path.basename(head['temp_dir'])}-{head['pgid']}"
