"""The workload sections of the report: each system measured on the same work.

Workload 1 end to end (and the peer tuning behind it), workloads 2, 3 and 4, and
the cold-start variants; one function per section of results.json, returning its
markdown lines (none when the section did not run).
"""

from __future__ import annotations

from typing import Any

from .markdown import fmt, table

__all__ = ["e2e", "nested", "ocr", "overhead", "startup", "tuning"]


def e2e(e: dict[str, Any] | None) -> list[str]:
    if not e:
        return []
    w = e["workload"]
    lines = [
        "## Workload 1: long-tailed documents, end to end",
        "",
        f"{w['docs']} documents, {e['pages']} pages (lognormal, mean {w['mean_pages']}, seed "
        f"{w['seed']}); {w['accelerators']} emulated accelerators (page model, batch "
        f"{w['model_batch']}), render x{w['render_replicas']} (batch {w['render_batch']}), "
        f"write x{w['write_replicas']}. Ideal (makespan lower bound): "
        f"{fmt(e['ideal']['bound_s'])} s. Median of the rounds; *cold* includes starting the "
        "actors, *warm* reuses them (Ray Data, Daft and Xenna restart theirs on every "
        "execution, so their warm run is a second execution in a warm process).",
        "",
    ]
    rows = []
    for name, fig in e["systems"].items():
        c, wm = fig["cold"], fig["warm"]
        rows.append(
            [
                name,
                fmt(c["e2e_s"]),
                fmt(wm["e2e_s"]),
                " ".join(fmt(x) for x in wm["e2e_runs"]),
                fmt(c["first_doc_s"]),
                fmt(wm["first_doc_s"]),
                fmt(wm["busy_fraction"], 2, pct=True),
                fmt(wm["batch_fill"], 1),
                fmt(c["fraction_of_ideal"], 2, pct=True),
                fmt(wm["fraction_of_ideal"], 2, pct=True),
                "yes" if c["correct"] and wm["correct"] else "NO",
            ]
        )
    lines += table(
        [
            "system",
            "cold s",
            "warm s",
            "warm runs",
            "1st doc cold s",
            "1st doc warm s",
            "accel busy (warm)",
            "batch fill",
            "of ideal cold",
            "of ideal warm",
            "outputs ok",
        ],
        rows,
    )
    if e.get("ratios"):
        lines += ["Ratios of E2E time (row / column; below 1: the row system is faster):", ""]
        names = list(e["systems"])
        for mode in ("cold", "warm"):
            ratios = e["ratios"].get(mode, {})
            rows = [
                [a] + [("1" if a == b else fmt(ratios.get(f"{a} / {b}"))) for b in names]
                for a in names
            ]
            lines += [f"*{mode}*", "", *table(["row / column", *names], rows)]
    for k, v in e.get("skipped", {}).items():
        lines.append(f"- skipped {k}: {v}")
    for k, v in e.get("errors", {}).items():
        lines.append(f"- error in {k}: {v}")
    for name, fig in e["systems"].items():
        cpu = fig["cold"].get("cpu_per_worker")
        if cpu is not None:
            pinned = ", ".join(f"{k} x{v}" for k, v in fig["cold"].get("workers", {}).items())
            lines.append(
                f"- {name}: every stage pinned ({pinned}), {cpu} CPU per worker; pinned "
                "workers stand in for the emulated accelerators (it cannot reserve a custom "
                "Ray resource); its own Ray in its own Python 3.12 venv, started by the suite "
                "as a subprocess"
            )
    par = e.get("peer_parallelism")
    if par:
        lines.append(
            "- peer input parallelism used (the fastest of the `tuning` sweep when it ran): "
            + ", ".join(f"{k} {v}" for k, v in par.items())
        )
    return [*lines, ""]


def tuning(t: dict[str, Any] | None) -> list[str]:
    if not t or not t.get("sweep"):
        return []
    lines = [
        "## Peer tuning (workload 1, one execution per setting)",
        "",
        "Ray Data runs one block's batches on one actor and Daft one partition per task, so",
        "the input must be cut finely enough to feed every actor; the sweep picks the",
        "setting the comparison then uses.",
        "",
    ]
    rows = [
        [name, str(p["parallelism"]), fmt(p.get("e2e_s")), p.get("error", "")]
        for name, points in t["sweep"].items()
        for p in points
    ]
    return lines + table(["peer", "blocks / partitions", "E2E s", "error"], rows)


def nested(n: dict[str, Any] | None) -> list[str]:
    if not n:
        return []
    lines = ["## Workload 3: nested document -> page -> table -> page -> document", ""]
    if n.get("note"):
        lines += [n["note"], ""]
    rows = [
        [
            name,
            fmt(fig.get("cold_s")),
            fmt(fig.get("warm_s")),
            "yes" if fig.get("correct") else "NO",
            str(fig.get("empty_pages", "-")),
        ]
        for name, fig in n.get("systems", {}).items()
    ]
    lines += table(["system", "cold s", "warm s", "outputs ok", "pages without tables"], rows)
    for k, v in n.get("skipped", {}).items():
        lines.append(f"- skipped {k}: {v}")
    return [*lines, ""]


def ocr(o: dict[str, Any] | None) -> list[str]:
    if not o:
        return []
    lines = ["## Workload 2: real OCR (reportlab PDFs, pypdfium2, rapidocr)", ""]
    if o.get("note"):
        lines += [o["note"], ""]
    rows = [
        [
            name,
            fmt(fig.get("cold_s")),
            fmt(fig.get("warm_s")),
            str(fig.get("docs_with_text", "-")),
            "yes" if fig.get("same_text_as_first") else "NO",
        ]
        for name, fig in o.get("systems", {}).items()
    ]
    if rows:
        lines += table(["system", "cold s", "warm s", "docs with text", "same text"], rows)
    for k, v in o.get("skipped", {}).items():
        lines.append(f"- skipped {k}: {v}")
    return [*lines, ""]


def startup(p: dict[str, Any] | None) -> list[str]:
    if not p:
        return []
    lines = [
        "## Cold start: how actors start",
        "",
        "Workload 1 cold on this engine, alternating. *All at once*: every actor in a",
        "process of its own, all started together (`actor_start_concurrency` = every",
        "actor), as the engine once did. *A few at a time*: as many as the cluster has",
        "CPUs, one per pool first, each given to the core as soon as it is up, every",
        "actor in a process of its own (`share_process=False`, the opt-out). The",
        "default: split, render and write, which ask Ray for nothing, share one actor",
        "process, 9 processes instead of 14.",
        "",
    ]
    rows = [
        [
            name,
            fmt(f["cold_s"]),
            " ".join(fmt(x) for x in f["cold_runs"]),
            fmt(f["first_doc_s"]),
            "yes" if f["correct"] else "NO",
        ]
        for name, f in p.items()
    ]
    return [*lines, *table(["variant", "cold s", "runs", "1st doc s", "outputs ok"], rows), ""]


def overhead(o: dict[str, Any] | None) -> list[str]:
    if not o:
        return []
    p = o["pure_core"]
    lines = [
        "## Workload 4: engine overhead",
        "",
        f"Pure core (no Ray, instant workers): {p['grains']:,} Grains in {p['seconds']} s = "
        f"**{p['grains_per_s']:,} Grains/s** (`{p['command']}`).",
        "",
        f"No-op pipeline on Ray, {o['noop_grains']:,} page Grains (`{o['noop_command']}`):",
        "",
    ]
    rows = [
        [
            name,
            fmt(f["cold_s"]),
            f"{f['cold_grains_per_s']:,.0f}",
            fmt(f["warm_s"]),
            f"{f['warm_grains_per_s']:,.0f}",
            {True: "yes", False: "NO"}.get(f.get("correct"), "yes"),
        ]
        for name, f in o["noop_on_ray"].items()
    ]
    lines += table(
        ["engine", "cold s", "cold Grains/s", "warm s", "warm Grains/s", "gathers ok"], rows
    )
    if "warm_speedup_vs_paper" in o:
        lines += [
            f"This engine: {o['cold_speedup_vs_paper']}x the paper's package cold, "
            f"{o['warm_speedup_vs_paper']}x warm.",
            "",
        ]
    return lines
