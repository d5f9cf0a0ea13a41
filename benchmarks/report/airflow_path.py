"""The Airflow-path section (benchmarks/airflow_path): its page
docs/benchmarks/airflow-path.md with its raw results beside it, a plot, and the
README's short summary of it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .airflow_path_goals import event_goals, run_goals
from .markdown import fmt, table

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["section", "write_page"]

PAGE = "airflow-path.md"
#: The page's raw results, written with it so the two always come from one run.
RAW = "airflow_path.json"
PLOT = "airflow-path.png"
HEADLINE = [
    ("trigger_to_first_commit_s", "trigger -> first commit"),
    ("trigger_to_job_start_s", "trigger -> Ray job start"),
    ("last_commit_to_success_s", "last commit -> run success"),
    ("total_s", "trigger -> run success"),
]
PARTS = [
    ("trigger_to_task_start_s", "trigger -> first task starts (scheduler, executor)"),
    ("task_start_to_job_start_s", "first task start -> job start (head, plan, submit / ray.init)"),
    ("head_task_s", "- of which the ray_head task (finds the shared head)"),
    ("job_start_to_first_commit_s", "job start -> first commit (driver, actors, work)"),
    ("supervisor_s", "- of which job start -> driver process (Ray's job supervisor)"),
    ("driver_imports_s", "- of which driver process -> imports done (package, pipeline)"),
    ("pool_starts_s", "- of which imports done -> pools started (Ray connect, actors up)"),
    ("to_first_dispatch_s", "- of which pools started -> first dispatch"),
    ("first_batch_s", "- of which first dispatch -> first commit (the first batch)"),
    ("first_to_last_commit_s", "first commit -> last commit (the rest of the work)"),
    ("first_commit_to_sensor_s", "first commit -> its sensor ends"),
    ("last_commit_to_job_end_s", "last commit -> job end (run manifest, report, exit)"),
    ("last_commit_to_run_manifest_s", "- of which last commit -> run manifest"),
    ("run_manifest_to_report_s", "- of which run manifest -> report written"),
    ("report_to_job_end_s", "- of which report -> job end (driver exit, Ray)"),
    ("job_end_to_task_end_s", "job end -> waiting task ends (poll, relay, XCom)"),
    ("task_end_to_success_s", "task end -> DAG run success (scheduler)"),
]
EVENT_PARTS = [
    ("landing_to_run_queued_s", "landing -> run queued (trigger polls, asset event)"),
    ("run_queued_to_prepare_start_s", "run queued -> prepare starts (select_sources, ray_head)"),
    ("head_task_s", "- of which the ray_head task (finds the shared head)"),
    ("prepare_start_to_commit_s", "prepare starts -> commit (submit, driver)"),
    ("prepare_start_to_job_start_s", "- of which prepare starts -> job start (plan, submit)"),
    ("job_start_to_commit_s", "- of which job start -> commit (driver, actors, work)"),
    ("supervisor_s", "- - of which job start -> driver process (supervisor)"),
    ("driver_imports_s", "- - of which driver process -> imports done"),
    ("pool_starts_s", "- - of which imports done -> pools started"),
    ("to_first_dispatch_s", "- - of which pools started -> first dispatch"),
    ("first_batch_s", "- - of which first dispatch -> commit"),
    ("prepare_s", "prepare task, start to end (the run's own time)"),
    ("commit_to_run_success_s", "commit -> run success"),
]


def _variants(r: dict[str, Any]) -> dict[str, Any]:
    return dict(r.get("variants") or {})


def _headline(r: dict[str, Any]) -> list[str]:
    v = _variants(r)
    rows = [
        [name, *(fmt(v[name]["median"].get(k)) for k, _ in HEADLINE), str(v[name]["failed"])]
        for name in v
    ]
    return table(["variant", *(h for _, h in HEADLINE), "failed runs"], rows)


def _events(r: dict[str, Any]) -> list[str]:
    e = r.get("events")
    if not e:
        return []
    lines = [
        "## Event-driven ingestion (`rayorch_events`, the example's settings, shared head)",
        "",
        f"{len(e['files'])} files landed one at a time on an idle deployment whose shared "
        f"head is up, each at a random moment of the trigger's {e['poll_interval_s']:g} s "
        f"poll cycle. File landing -> committed output: p50 {fmt(e['p50_s'])} s, p95 "
        f"{fmt(e['p95_s'])} s.",
        "",
    ]
    lines += event_goals(e)
    lines += ["Where it goes (median over the files):", ""]
    lines += table(["part", "s"], [[h, fmt(e["median"].get(k))] for k, h in EVENT_PARTS])
    top = [(k, h) for k, h in EVENT_PARTS if not h.startswith("-")]
    lines += table(
        ["file", "latency s", *(h.split(" (")[0] for _, h in top)],
        [[f["file"], fmt(f["latency_s"]), *(fmt(f.get(k)) for k, _ in top)]
         for f in e["files"]],
    )  # fmt: skip
    return lines


def section(r: dict[str, Any] | None) -> list[str]:
    """The README's lines: the headline medians, the goals met, a link to the page. A
    result of issue 21's shape (no goals table, one event goal) renders as it did."""
    if not r or not r.get("variants"):
        return []
    issues = "issues 21, 29" if "goals" in r else "issue 21"
    lines = [f"## The Airflow path ({issues})", "", f"Details: [{PAGE}]({PAGE}).", ""]
    lines += _headline(r)
    met = [g for g in r.get("goals") or [] if g["met"] is not None]
    if met:
        lines += [
            f"Issue 29's goals against the Ray Data tasks: {sum(g['met'] for g in met)} of "
            f"{len(met)} met.",
            "",
        ]
    e = r.get("events")
    if e:
        if "goals" in e:
            goals = ", ".join(
                f"{g['target']}: {fmt(g['budget_s'])} s {'met' if g['met'] else 'missed'}"
                for g in e["goals"]
            )
        else:
            goals = f"goal p50 <= {fmt(e['goal']['budget_s'])} s"
        lines += [
            f"Event-driven ingestion: file landing to committed output p50 {fmt(e['p50_s'])} s, "
            f"p95 {fmt(e['p95_s'])} s ({goals}).",
            "",
        ]
    return lines


def _settings(r: dict[str, Any]) -> str:
    return ", ".join(f"`{k}={x}`" for k, x in r["airflow_settings"].items())


def _notes(r: dict[str, Any]) -> list[str]:
    """The warm-up run, the variants not measured and the errors, when there are any."""
    lines = []
    w = r.get("warmup") or {}
    if w.get("state") == "success":
        f = w["figures"]
        lines.append(
            f"Before the rounds, one uncounted run of `{w['variant']}` started the shared "
            f"head: its `ray_head` task took {fmt(f.get('head_task_s'))} s, the run "
            f"{fmt(f.get('total_s'))} s from trigger to success."
        )
    elif w:
        lines.append(f"The warm-up run that starts the shared head ended {w.get('state')}.")
    lines += [f"Not measured: {n}: {why}." for n, why in (r.get("skipped") or {}).items()]
    errors = r.get("errors") or []
    lines += [f"Errors: {e}" for e in errors[:-1] if errors]  # the last one is the logs
    return [x for line in lines for x in (line, "")]


def _page(r: dict[str, Any], plotted: bool) -> list[str]:
    v = _variants(r)
    lines = [
        "# The Airflow path, measured",
        "",
        "Generated by the command below (see docs/performance/airflow-path.md for what",
        "each figure means). A real loopback deployment (scheduler, DAG processor,",
        "triggerer, API server), one loopback Ray head given through the connection and "
        'the machine\'s shared head (`local_head="shared"`, the variants so named); the '
        f"same {r['documents']} text documents ({r['microbatches']} microbatches of "
        f"{r['input_batch_size']}) per run; medians of {r['runs_per_variant']} runs per "
        "variant, interleaved. Times are facts: the REST API (run and task times), the "
        "run store (manifests' `committed_at`, the driver's log), Ray's Jobs API (job "
        "times, the job's log), Ray Data's output files.",
        "",
        "```",
        str(r.get("command") or "python -m benchmarks.suite --only airflow_path"),
        "```",
        "",
        f"Section time {r.get('section_s')} s (deployment and head start {r.get('setup_s')} s); "
        f"load average {r['loadavg']['start']} at start, {r['loadavg']['end']} at end. "
        f"Airflow defaults except: {_settings(r)}.",
        "",
        *_notes(r),
        "## Per run (median seconds)",
        "",
    ]
    lines += _headline(r)
    lines += run_goals(r)
    lines += ["Where the seconds go (median seconds):", ""]
    lines += table(["part", *v], [[h, *(fmt(v[n]["median"].get(k)) for n in v)] for k, h in PARTS])
    lines += ["Every run (trigger -> first commit / trigger -> run success, s):", ""]
    lines += table(
        ["variant", "runs"],
        [[n, ", ".join(f"{fmt(x['figures']['trigger_to_first_commit_s'])}/"
                       f"{fmt(x['figures']['total_s'])}" if x["state"] == "success"
                       else x["state"] for x in v[n]["runs"])] for n in v],
    )  # fmt: skip
    lines += _events(r)
    if plotted:
        lines += [f"![{PLOT}]({PLOT})", ""]
    return lines


def _plot(r: dict[str, Any], out: Path) -> bool:
    """Draw the page's plot (Pillow): each variant's top-level median parts, stacked."""
    from .airflow_path_png import draw_bars

    v = _variants(r)
    parts = [
        (k, label.split(" (")[0])
        for k, label in PARTS
        if k != "first_commit_to_sensor_s" and not label.startswith("-")
    ]
    bars = {n: [v[n]["median"].get(k) or 0.0 for k, _ in parts] for n in v}
    draw_bars(
        out / PLOT, "Where a triggered run's seconds go (medians)", bars, [p for _, p in parts]
    )
    return True


def write_page(r: dict[str, Any] | None, out: Path, *, plots: bool = True) -> None:
    """Write ``out``/airflow-path.md, its raw results (``RAW``) and its plot (with
    Pillow; without it, or with ``plots=False``, no plot: one drawn earlier is removed)."""
    if not r or not r.get("variants"):
        return
    (out / RAW).write_text(json.dumps(r, indent=1, default=str) + "\n")
    plotted = False
    if plots:
        try:
            plotted = _plot(r, out)
        except ImportError:  # Pillow comes with the documents and bench extras
            plotted = False
    if not plotted:  # a plot of another run never stands beside these figures
        (out / PLOT).unlink(missing_ok=True)
    (out / PAGE).write_text("\n".join(_page(r, plotted)) + "\n")
