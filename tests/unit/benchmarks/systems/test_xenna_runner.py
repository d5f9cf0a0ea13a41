"""The Xenna runner's pure parts (the runner itself needs cosmos-xenna's venv)."""

from __future__ import annotations

from benchmarks.sizes import SIZES
from benchmarks.systems.xenna_runner import cpu_share, layout, workload_from


def test_a_workload_survives_the_json_round_trip() -> None:
    w = SIZES["default"].w1
    assert workload_from(w.as_dict()) == w


def test_every_pinned_worker_fits_in_the_node_cpus() -> None:
    w = SIZES["default"].w1
    req = {"workload": "w1", "params": w.as_dict(), "warm_runs": 1, "cpus": 2, "reply_path": ""}
    workers = layout(req)  # type: ignore[arg-type]
    assert workers == {"split": 1, "render": 4, "model": 8, "gather": 1}
    share = cpu_share(2, sum(workers.values()))
    assert 0 < share * sum(workers.values()) <= 2
    assert share == 0.14


def test_w4_layout_pins_the_noop_replicas() -> None:
    req = {"workload": "w4", "params": {"replicas": 2}, "warm_runs": 1, "cpus": 2, "reply_path": ""}
    assert layout(req) == {"expand": 1, "noop": 2, "gather": 1}  # type: ignore[arg-type]
