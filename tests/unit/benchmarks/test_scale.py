"""The scale section runs at a tiny size and returns the shape the report reads; its
goals and growth exponents are computed from the points it returns."""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks.report.scale import goals, plot, section
from benchmarks.scale import PATHS, run_section, summarize
from benchmarks.sizes import SIZES

POINT_KEYS = {
    "path",
    "sources",
    "elapsed_s",
    "per_1000_s",
    "driver_peak_rss_mb",
    "store_bytes_per_source",
    "report_from_store_s",
    "report_live_s",
    "readback_s",
    "runs_page_s",
    "run_state",
    "present",
    "correct",
}
TRIGGER_KEYS = {
    "triggers",
    "warm_up_s",
    "window_s",
    "store_reads_per_s",
    "jobs_api_requests_per_s",
    "loop_cpu_share",
    "fired",
}


@pytest.mark.timeout(300)
def test_the_section_measures_every_path_and_the_waiting_triggers(tmp_path) -> None:
    tiny = replace(SIZES["smoke"], scale_sources=(120,), scale_triggers=(2,))

    result = run_section(tiny, {}, None)

    points = result["points"]
    assert [(p["path"], p["sources"]) for p in points] == [(p, 120) for p in PATHS]
    for p in points:
        assert set(p) >= POINT_KEYS, p["path"]
        assert (p["run_state"], p["present"], p["correct"]) == ("success", 120, True)
        assert p["driver_peak_rss_mb"] > 0
        assert p["store_bytes_per_source"] > 0
    [waiting] = result["triggers"]
    assert set(waiting) >= TRIGGER_KEYS
    assert (waiting["triggers"], waiting["fired"]) == (2, 0)
    assert waiting["store_reads_per_s"] > 0  # the store is looked at every second
    assert section(result)[0].startswith("## Scale")
    assert plot(result, tmp_path) == ["scale.png"]
    assert (tmp_path / "scale.png").stat().st_size > 0


def _point(path: str, n: int, seconds: float, rss: float) -> dict:
    return {
        "path": path,
        "sources": n,
        "elapsed_s": seconds,
        "per_1000_s": seconds / n * 1000,
        "driver_peak_rss_mb": rss,
        "readback_s": 0.01,
        "report_live_s": 0.02,
        "runs_page_s": 0.001,
        "present": n,
        "correct": True,
    }


def test_the_growth_exponent_is_the_log_log_slope() -> None:
    points = [_point("job", 1_000, 1.0, 100.0), _point("job", 100_000, 100.0, 1_000.0)]

    growth = summarize(points)

    assert growth["job"]["elapsed_s"] == 1.0
    assert growth["job"]["driver_peak_rss_mb"] == 0.5
    assert growth["job"]["readback_s"] == 0.0
    assert "operator" not in growth


def test_the_goals_compare_the_largest_operator_run_with_100k() -> None:
    flat = [_point("operator", 100_000, 10.0, 200.0), _point("operator", 10_000_000, 1000.0, 300.0)]
    triggers = [
        {"triggers": 10, "store_reads_per_s": 10.0},
        {"triggers": 1000, "store_reads_per_s": 700.0},
    ]

    rows = goals({"points": flat, "triggers": triggers})

    met = {row[0]: row[3] for row in rows}
    assert met["per-1,000-source cost at 10,000,000 / 100k"] == "yes"
    assert met["driver peak RSS at 10,000,000 / 100k"] == "no"
    assert met["10,000,000 tiny sources through the operator"] == "yes"
    assert met["store reads/s, 1,000 waiting triggers / 10"] == "no"
