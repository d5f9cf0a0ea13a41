"""A loopback head that dies keeps its logs for diagnosis.

``stop_local_head`` removes the head's temp dir, where its logs are. With
``$RAYORCH_HEAD_LOG_ARCHIVE`` set (the e2e deployment sets it), the stop first copies
the head's ``ray-start.log`` and its Ray logs there, and ``head_logs.digest`` prints
what they say: here a head whose raylet is killed, so ``ray start --block`` exits and
names the process that exited unexpectedly. The test stops only its own head, by its
process group, never with ``ray stop``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import TYPE_CHECKING

import psutil
import pytest

from tests.integration.airflow.own_heads import own_heads

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(300)


def _raylet(pgid: int) -> psutil.Process:
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and any(
                a.endswith("/raylet") for a in proc.info["cmdline"] or []
            ):
                return proc
    raise AssertionError(f"no raylet in process group {pgid}")


def test_a_head_whose_raylet_dies_keeps_its_logs_and_the_digest_names_the_exit(
    tmp_path: Path, monkeypatch
) -> None:
    from airflow_provider_rayorch.common import head_logs
    from airflow_provider_rayorch.operators.local_head import start_local_head, stop_local_head

    archive = own_heads(tmp_path, monkeypatch)

    head = start_local_head(num_cpus=1, timeout=240)
    try:
        leader = psutil.Process(int(head["pgid"]))
        _raylet(int(head["pgid"])).send_signal(signal.SIGKILL)
        while leader.status() != psutil.STATUS_ZOMBIE and leader.is_running():
            time.sleep(0.5)  # `ray start --block` exits once it sees the raylet gone
    finally:
        stop_local_head(head)

    assert not os.path.exists(head["temp_dir"])
    kept = archive / f"{os.path.basename(head['temp_dir'])}-{head['pgid']}"
    assert "exited unexpectedly" in (kept / "ray-start.log").read_text()
    assert (kept / "logs" / "raylet.out").is_file()
    assert not list(kept.rglob("auth_token"))
    report = head_logs.digest(archive)
    assert f"process group {head['pgid']}" in report
    assert "`ray start` had exited" in report
    assert "exited unexpectedly" in report
