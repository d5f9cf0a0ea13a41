"""The sections that study this engine alone: strong scaling, ablations, the
containment curve and the simulator; one function per section of results.json,
returning its markdown lines (none when the section did not run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .markdown import fmt, table

if TYPE_CHECKING:
    from ..results import CurveResult

__all__ = ["ablations", "curve", "scaling", "simulator"]


def _cpu_per_batch(p: dict[str, Any]) -> str:
    """Driver and whole-host CPU milliseconds per batch of a warm scaling run."""
    batches, driver, host = p.get("batches"), p.get("driver_cpu_s"), p.get("host_cpu_busy")
    if not batches or driver is None or host is None:
        return "-"
    host_ms = host * p.get("host_cpus", 1) * p["warm_s"] / batches * 1e3
    return f"{driver / batches * 1e3:.2f} / {host_ms:.2f}"


def scaling(s: dict[str, Any] | None) -> list[str]:
    if not s:
        return []
    lines = [
        "## Strong scaling (this engine, warm, beside the simulator)",
        "",
        f"{s['workload']['docs']} documents, {s['pages']} pages; render replicas = "
        "ceil(accelerators / 2), write replicas = max(1, accelerators / 8), admission "
        "= max(32, 4 x accelerators) documents per microbatch.",
        "",
    ]
    rows = [
        [
            str(p["accelerators"]),
            fmt(p["cold_s"]),
            fmt(p["warm_s"]),
            fmt(p["speedup"]),
            fmt(p["efficiency"], 2, pct=True),
            fmt(p["ideal_s"]),
            fmt(p["fraction_of_ideal"], 2, pct=True),
            fmt(p["busy_fraction"], 2, pct=True),
            fmt(p["batch_fill"], 1),
            fmt(p.get("host_cpu_busy"), 2, pct=True),
            _cpu_per_batch(p),
            fmt(p["sim_s"]),
            fmt(p["sim_efficiency"], 2, pct=True),
        ]
        for p in s["points"]
    ]
    lines += table(
        [
            "accel",
            "cold s",
            "warm s",
            "speedup",
            "efficiency",
            "ideal s",
            "of ideal",
            "accel busy",
            "fill",
            "host CPU busy",
            "CPU ms per batch (driver / host)",
            "sim s",
            "sim efficiency",
        ],
        rows,
    )
    return lines + _opt_out_line(s)


def _opt_out_line(s: dict[str, Any]) -> list[str]:
    """The largest point beside the same run with the light stages opted out."""
    o = s.get("opt_out")
    if not o:
        return []
    p = next(p for p in s["points"] if p["accelerators"] == o["accelerators"])
    return [
        "",
        f"At {o['accelerators']} accelerators with split, render and write opted out of "
        f"the default shared process (`share_process=False`): warm {fmt(o['warm_s'])} s "
        f"(default {fmt(p['warm_s'])} s), cold {fmt(o['cold_s'])} s (default "
        f"{fmt(p['cold_s'])} s), host CPU busy {fmt(o.get('host_cpu_busy'), 2, pct=True)}.",
    ]


def ablations(a: dict[str, Any] | None) -> list[str]:
    if not a:
        return []
    lines = [
        "## Ablations (this engine, warm, paired rounds)",
        "",
        "Each pair runs alternately on open executors; *saving* is 1 - first/second per round.",
        "",
    ]
    rows = []
    for key, title in (
        ("fifo", "FIFO vs shuffled ready order (workload 1)"),
        ("batching", "any_parent vs single_parent (workload 1)"),
        ("containment", "containment on vs off (workload 5)"),
        ("containment_in_flight_1", "containment on vs off, 1 batch in flight (workload 5)"),
    ):
        part = a.get(key)
        if not part:
            continue
        v = part["variants"]
        names = list(v)
        sav = part["paired_saving"]
        rows.append(
            [
                title,
                f"{fmt(v[names[0]]['e2e_s'])} / {fmt(v[names[1]]['e2e_s'])}",
                fmt(v[names[0]]["batch_fill"], 1) + " / " + fmt(v[names[1]]["batch_fill"], 1),
                fmt(sav["mean"], 2, pct=True),
                ", ".join(fmt(x, 2, pct=True) for x in sav["rounds"]),
            ]
        )
    lines += table(
        ["ablation", "median s (first / second)", "batch fill", "mean saving", "rounds"], rows
    )
    c = a.get("containment")
    if c:
        lines.append(
            f"Workload 5: {c['poisoned_docs']} poisoned documents "
            f"({c['poisoned_pages']} of {c['pages']} pages)."
        )
        for key, label in (("containment", "2 batches"), ("containment_in_flight_1", "1 batch")):
            part = a.get(key)
            if not part:
                continue
            on, off = part["variants"]["on"], part["variants"]["off"]
            model = on.get("calls", {}).get("model", {})
            sup = model.get("suppressed")
            withdrawn = model.get("withdrawn", 0)
            skipped = on.get("rows_skipped", 0)
            ran_on = (model.get("grains") or 0) - skipped
            ran_off = off.get("calls", {}).get("model", {}).get("grains")
            lines.append(
                f"- {label} in flight per actor: the page model ran {ran_on} pages with "
                f"containment, {ran_off} without; {sup} siblings suppressed, of which "
                f"{withdrawn} were in other batches already sent to an actor and {skipped} "
                "of those were skipped before their batch started; healthy documents "
                f"identical: {on['correct'] and off['correct']}."
            )
        lines.append("")
    f = a.get("fifo", {})
    if f.get("simulated_saving") is not None:
        lines += [
            f"The simulator, with the same shuffled queue, predicts a FIFO saving of "
            f"{fmt(f['simulated_saving'], 2, pct=True)}.",
            "",
        ]
    return lines


def curve(c: CurveResult | None) -> list[str]:
    if not c or not c.get("points"):
        return []
    lines = [
        "## Containment curve (workload 5, this engine, warm, paired rounds)",
        "",
        "Documents of one length against the in-flight window (page-model actors x batches "
        "in flight x batch 16); every page of a poisoned document fails. *Queued share*: the "
        "poisoned documents' siblings the page model did not run with containment (still "
        "queued, or withdrawn before their batch started) over all their siblings, measured; "
        "*estimate*: max(0, pages - running) / (pages - 1), running = page-model actors x "
        "batch 16 (batches sent and not started are withdrawn). *Bound*: the saving of the "
        "cost model's makespan lower bound when exactly those pages are removed from the "
        "page model's work and the ones not rendered from the render stage's. "
        f"{c['rounds']} paired round(s) per point.",
        "",
    ]
    rows = [
        [
            p["label"],
            f"{p['docs']} x {p['pages_per_doc']}",
            f"{p['accelerators']} x {p['in_flight']} x 16 = {p['window_pages']}",
            f"{p['poisoned_docs']} ({p['poisoned_siblings']} siblings)",
            fmt(p["queued_share_estimate"], 2, pct=True),
            fmt(p["queued_share"], 2, pct=True),
            fmt(p["queued_of_all_pages"], 2, pct=True),
            fmt(p["saving_mean"], 2, pct=True),
            fmt(p["bound"], 2, pct=True),
            f"{fmt(p['on_s'])} / {fmt(p['off_s'])}",
            "yes" if p["correct"] else "NO",
        ]
        for p in c["points"]
    ]
    lines += table(
        [
            "point",
            "docs x pages",
            "window (pages)",
            "poisoned docs",
            "queued est.",
            "queued (measured)",
            "of all pages",
            "saving",
            "bound",
            "on / off s",
            "outputs ok",
        ],
        rows,
    )
    return [*lines, ""]


def simulator(s: dict[str, Any] | None) -> list[str]:
    if not s:
        return []
    cfg = s["config"]
    lines = [
        "## Simulator (the real core on a virtual clock)",
        "",
        f"Driver cost {cfg['driver_s_per_grain'] * 1e6:.1f} us per Grain (the pure core, "
        f"workload 4) plus {cfg['driver_s_per_batch'] * 1e3:.2f} ms per batch (this engine's "
        "driver CPU time in its warm workload-1 runs, less the Grains' share), RPC "
        f"{cfg['rpc_s'] * 1e3:.2f} ms each way. Beside the real runs: see the scaling "
        "table (`sim s`).",
        "",
    ]
    for name, b in s.get("beside_real", {}).items():
        lines += [
            f"- {name} at {b['accelerators']} accelerators: simulated {fmt(b['sim_s'])} s, "
            f"measured warm {fmt(b['real_warm_s'])} s; accelerator busy simulated "
            f"{fmt(b['sim_busy_fraction'], 2, pct=True)}, measured "
            f"{fmt(b['real_busy_fraction'], 2, pct=True)}.",
        ]
    lines += ["", f"Extrapolation, {s['pages']:,} pages:", ""]
    rows = [
        [
            str(p["accelerators"]),
            f"{p['pages']:,}",
            fmt(p["makespan_s"]),
            fmt(p["ideal_s"]),
            fmt(p["fraction_of_ideal"], 2, pct=True),
            fmt(p["busy_fraction"], 2, pct=True),
            fmt(p["batch_fill"], 1),
            fmt(p["driver_busy_fraction"], 2, pct=True),
            fmt(p.get("driver_10x_fraction_of_ideal"), 2, pct=True),
            fmt(p["wall_s"], 1),
        ]
        for p in s["extrapolation"]
    ]
    lines += table(
        [
            "accel",
            "pages",
            "makespan s",
            "ideal s",
            "of ideal",
            "accel busy",
            "fill",
            "driver busy",
            "of ideal, driver 10x cheaper",
            "sim wall s",
        ],
        rows,
    )
    gpu = s.get("extrapolation_gpu_like")
    if gpu:
        c = s.get("gpu_like_cost", {})
        lines += [
            f"The same, with GPU-like costs (page model {c.get('model_fixed')} s + "
            f"{c.get('model_per_page')} s per page, render {c.get('render_per_page')} s per "
            "page):",
            "",
        ]
        rows = [
            [
                str(p["accelerators"]),
                fmt(p["makespan_s"], 1),
                fmt(p["ideal_s"], 1),
                fmt(p["fraction_of_ideal"], 2, pct=True),
                fmt(p["busy_fraction"], 2, pct=True),
                fmt(p["batch_fill"], 1),
                fmt(p["driver_busy_fraction"], 2, pct=True),
            ]
            for p in gpu
        ]
        lines += table(
            ["accel", "makespan s", "ideal s", "of ideal", "accel busy", "fill", "driver busy"],
            rows,
        )
    big = s.get("big")
    if big:
        lines += [
            f"10M-page point: {big['pages']:,} pages on {big['accelerators']} accelerators: "
            f"makespan {fmt(big['makespan_s'])} s, ideal {fmt(big['ideal_s'])} s "
            f"({fmt(big['fraction_of_ideal'], 2, pct=True)}), driver busy "
            f"{fmt(big['driver_busy_fraction'], 2, pct=True)}, "
            f"simulated in {fmt(big['wall_s'], 0)} s.",
            "",
        ]
    return lines
