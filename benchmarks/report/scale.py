"""The scale section of the report: its tables, its goals (issue 28) and its log-log plot."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .markdown import fmt, table

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["goals", "plot", "section"]

PATH_TITLES = {"operator": "RayOrchOperator, embedded Ray", "job": "job entrypoint, local Ray"}


def _point(points: list[dict[str, Any]], path: str, n: int) -> dict[str, Any] | None:
    return next((p for p in points if p["path"] == path and p["sources"] == n), None)


def _ratio(big: dict[str, Any] | None, small: dict[str, Any] | None, key: str) -> float | None:
    if not big or not small or not big.get(key) or not small.get(key):
        return None
    return float(big[key]) / float(small[key])


def goals(s: dict[str, Any]) -> list[list[str]]:
    """Issue 28's goals against the largest size measured through the operator (the
    goals name 10M) and 100k: goal, target, measured, met."""
    points = s.get("points") or []
    ours = sorted(p["sources"] for p in points if p["path"] == "operator")
    rows: list[list[str]] = []
    small = _point(points, "operator", 100_000)
    if ours and small and ours[-1] > 100_000:
        n = ours[-1]
        big = _point(points, "operator", n)
        for label, key, bar in (
            ("per-1,000-source cost", "per_1000_s", 1.1),
            ("driver peak RSS", "driver_peak_rss_mb", 1.2),
            ("one microbatch's read-back", "readback_s", 1.2),
            ("one report (live, from the aggregate)", "report_live_s", 1.2),
        ):
            r = _ratio(big, small, key)
            met = "-" if r is None else ("yes" if r <= bar else "no")
            rows.append([f"{label} at {n:,} / 100k", f"<= {bar}x", f"{fmt(r)}x", met])
        if big:
            ok = "yes" if big.get("correct") and n >= 10_000_000 else "no"
            rows.append(
                [
                    f"{n:,} tiny sources through the operator",
                    "10M, every source present once",
                    f"{fmt(big['elapsed_s'], 0)} s, present {big.get('present')}",
                    ok,
                ]
            )
    trig = {t["triggers"]: t for t in s.get("triggers") or []}
    if len(trig) >= 2:
        few, many = trig[min(trig)], trig[max(trig)]
        r = many["store_reads_per_s"] / max(few["store_reads_per_s"], 1e-9)
        rows.append(
            [
                f"store reads/s, {max(trig):,} waiting triggers / {min(trig):,}",
                "<= 1.2x",
                f"{fmt(r)}x",
                "yes" if r <= 1.2 else "no",
            ]
        )
    return rows


def section(s: dict[str, Any] | None) -> list[str]:
    if not s:
        return []
    lines = [
        "## Scale: tiny sources, the provider's own cost",
        "",
        f"Microbatches of {s.get('microbatch', 1000):,} tiny sources "
        "(`benchmarks.expand_reduce:Tiny`), each run in a fresh process (`benchmarks/scale.py`); "
        f"{s.get('note', '')}. Driver RSS: the embedded driver's VmHWM, the job process's "
        "ru_maxrss. Report: one render from the store (as a repair or the plugin does) and one "
        "from the driver's aggregate (the live report). Read-back: `read_summary_outputs` of "
        "the middle microbatch (median of 3). Runs page: the plugin's state read and table.",
        "",
    ]
    rows = []
    for p in sorted(s.get("points") or [], key=lambda p: (p["path"], p["sources"])):
        rows.append(
            [
                PATH_TITLES.get(p["path"], p["path"]),
                f"{p['sources']:,}",
                fmt(p["elapsed_s"], 1),
                fmt(p["per_1000_s"], 3),
                fmt(p["driver_peak_rss_mb"], 0),
                fmt(p["store_bytes_per_source"], 1),
                fmt(p["report_from_store_s"], 3),
                fmt(p["report_live_s"], 3),
                fmt(p["readback_s"], 4),
                fmt(p["runs_page_s"], 4),
                "yes" if p.get("correct") else "no",
            ]
        )
    lines += table(
        [
            "path",
            "sources",
            "total s",
            "s / 1,000",
            "driver peak MB",
            "store B / source",
            "report (store) s",
            "report (live) s",
            "read-back s",
            "runs page s",
            "all present",
        ],
        rows,
    )
    growth = s.get("growth") or {}
    if growth:
        lines += ["Growth exponent (log-log slope, smallest to largest size):", ""]
        keys = list(dict.fromkeys(k for g in growth.values() for k in g))  # as measured
        lines += table(
            ["path", *keys],
            [[PATH_TITLES.get(k, k), *(fmt(g.get(x)) for x in keys)] for k, g in growth.items()],
        )
    trig = s.get("triggers") or []
    if trig:
        lines += [
            "Waiting microbatch triggers in one asyncio loop (`benchmarks/scale_triggers.py`): "
            "a local run store, a job that stays RUNNING on a fake Jobs API in its own "
            "process, a 5 s poll interval; counted after the warm-up.",
            "",
        ]
        lines += table(
            ["triggers", "warm-up s", "store reads/s", "Jobs API requests/s", "loop CPU"],
            [
                [
                    f"{t['triggers']:,}",
                    fmt(t.get("warm_up_s"), 1),
                    fmt(t["store_reads_per_s"], 1),
                    fmt(t["jobs_api_requests_per_s"], 1),
                    fmt(t["loop_cpu_share"], 1, pct=True),
                ]
                for t in trig
            ],
        )
    rows = goals(s)
    if rows:
        lines += ["Goals of issue 28 (never asserted in tests):", ""]
        lines += table(["goal", "target", "measured", "met"], rows)
    return lines


def plot(s: dict[str, Any] | None, out: Path) -> list[str]:
    """scale.png (Pillow, :mod:`.loglog_png`): seconds per 1,000 sources, one read-back
    and one live report, and the driver's peak RSS, against sources, log-log."""
    if not s or not s.get("points"):
        return []
    from .loglog_png import Panel, Series, draw

    cost: list[Series] = []
    rss: list[Series] = []
    for path, title in PATH_TITLES.items():
        pts = sorted((p for p in s["points"] if p["path"] == path), key=lambda p: p["sources"])
        if not pts:
            continue
        n = [float(p["sources"]) for p in pts]
        for key, what in (
            ("per_1000_s", "s per 1,000 sources"),
            ("readback_s", "one read-back, s"),
            ("report_live_s", "one live report, s"),
        ):
            cost.append(Series(f"{title}: {what}", n, [float(p[key] or 0) for p in pts]))
        rss.append(Series(title, n, [float(p["driver_peak_rss_mb"]) for p in pts]))
    draw(
        out / "scale.png",
        [
            Panel("Cost against run size", "tiny sources in the run", "seconds", cost),
            Panel("Driver peak RSS against run size", "tiny sources in the run", "MB", rss),
        ],
    )
    return ["scale.png"]
