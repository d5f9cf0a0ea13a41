"""Loopback heads started at once never get the same port.

``start_local_head`` gives Ray four ports it probes (bind to port 0, close): a probed
port is free only until its socket closes, so two heads probing at the same moment
can get the same one, and the second to bind it fails. ``local_heads.reserve_ports``
keeps the ports of heads being started in the registry, under a lock.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

HEADS = 8
STARTS_EACH = 25


def _starts(registry: str, barrier: multiprocessing.synchronize.Barrier, out) -> None:
    import os

    from airflow_provider_rayorch.common import local_heads
    from airflow_provider_rayorch.operators._head_start import _free_port

    os.environ["RAYORCH_LOCAL_HEADS_DIR"] = registry
    barrier.wait(timeout=120)
    out.put([p for _ in range(STARTS_EACH) for p in local_heads.reserve_ports(4, _free_port)])


def test_heads_started_at_once_in_separate_processes_get_distinct_ports(tmp_path: Path) -> None:
    import airflow_provider_rayorch.operators.local_head  # noqa: F401  (imported once, forked)

    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(HEADS), ctx.Queue()
    procs = [
        ctx.Process(target=_starts, args=(str(tmp_path / "heads"), barrier, out))
        for _ in range(HEADS)
    ]
    for proc in procs:
        proc.start()
    ports = [p for _ in procs for p in out.get(timeout=300)]
    for proc in procs:
        proc.join(timeout=60)
    shared = {p: n for p, n in Counter(ports).items() if n > 1}
    assert len(ports) == HEADS * STARTS_EACH * 4
    assert not shared, f"ports given to more than one head: {shared}"


def test_released_ports_can_be_given_again_and_reservations_expire(
    tmp_path: Path, monkeypatch
) -> None:
    from airflow_provider_rayorch.common import local_heads

    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))
    offered = iter([5001, 5001, 5002, 5001, 5003, 5001])
    first = local_heads.reserve_ports(2, lambda: next(offered))
    assert first == [5001, 5002]
    assert local_heads.reserve_ports(1, lambda: next(offered)) == [5003]  # 5001 is taken
    local_heads.release_ports(first)
    assert local_heads.reserve_ports(1, lambda: next(offered)) == [5001]

    monkeypatch.setattr(local_heads, "PORT_HOLD_S", -1.0)  # a starter that died
    local_heads.reserve_ports(1, lambda: 6000)
    assert local_heads.reserve_ports(1, lambda: 6000) == [6000]
