"""The benchmark suite still runs: every section at the smoke size, into a tmp dir.

Peers that are not installed (CI installs ``.[dev,documents,video]`` only, not
``.[bench]``) are skipped by the suite itself and listed in its results; this
test prints which. No timing is asserted.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.processes import run_in_own_session

pytest.importorskip("ray")

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def run_smoke_suite(out: Path) -> dict:
    """Run the suite at the smoke size in a fresh process (it starts its own Ray, with
    the emulated accelerators, whatever Ray other tests left running here)."""
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": ""}
    argv = [sys.executable, "-m", "benchmarks.suite", "--size", "smoke", "--out", str(out)]
    proc = run_in_own_session(argv, cwd=root, env=env, timeout=560)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((out / "results.json").read_text())


@pytest.mark.timeout(600)
def test_smoke_suite_writes_results_readme_and_plots(tmp_path: Path) -> None:
    from benchmarks.suite import SECTIONS
    from benchmarks.systems import SYSTEMS

    results = run_smoke_suite(tmp_path)

    skipped = results["e2e"]["skipped"]
    peer_errors = results["e2e"]["errors"]
    print(f"peers skipped: {skipped or 'none'}; peers that failed to run: {peer_errors or 'none'}")
    assert results["errors"] == {}
    assert set(SECTIONS) <= set(results)
    systems = results["e2e"]["systems"]
    assert "this engine" in systems
    assert "this engine" not in peer_errors
    assert set(systems) | set(skipped) | set(peer_errors) == set(SYSTEMS)
    for name, figures in systems.items():
        for mode in ("cold", "warm"):
            assert figures[mode]["correct"], (name, mode)
    assert all(p["correct"] for p in results["scaling"]["points"])
    opt_out = results["scaling"]["opt_out"]
    assert opt_out["correct"]
    assert opt_out["accelerators"] == 2
    assert results["ablations"]["containment"]["variants"]["on"]["correct"]
    assert results["overhead"]["pure_core"]["grains"] > 0
    curve = results["containment_curve"]["points"]
    assert curve
    assert all(p["correct"] for p in curve)
    assert all(0.0 <= p["queued_share"] <= 1.0 for p in curve)
    assert results["size"] == "smoke"
    readme = (tmp_path / "README.md").read_text()
    assert "Workload 1" in readme
    assert "Containment curve" in readme
    assert "At 2 accelerators with split, render and write opted out" in readme
    try:
        import matplotlib  # noqa: F401  (the bench extra only)
    except ImportError:
        print("matplotlib is not installed: no plots")
    else:
        assert (tmp_path / "e2e.png").stat().st_size > 0
