"""What a microbatch task logs about its committed microbatch, and the run task about
its run: the counts, each failure with its source and cause (the first
:data:`MAX_LISTED`), the Grains and the time it took; the driver's ``microbatch 2/6
committed`` line, told by the task."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch.plain_text import strip_ansi

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["MAX_LISTED", "log_microbatch", "log_run", "microbatch_lines", "run_lines"]

#: At most this many failures are logged one by one; the counts are never capped.
MAX_LISTED = 20


def microbatch_lines(summary: Mapping[str, Any], run_id: str | None = None) -> list[str]:
    """``microbatch 1 (sources 4-7) of run r committed: 4 sources, 2 present, 1 failed,
    1 suppressed; 9 grains dispatched, 1 retried (2.5 s)``, then one line per failure."""
    mb = dict(summary.get("microbatch") or {})
    index, first = int(mb.get("index", 0)), int(mb.get("first_source", 0))
    src = {k: int(v) for k, v in dict(summary.get("sources") or {}).items()}
    count = int(mb.get("count", src.get("total", 0)))
    run = run_id or summary.get("run_id") or "?"
    head = f"microbatch {index} (sources {first}-{first + count - 1}) of run {run} committed"
    attempt = int(summary.get("attempt") or 1)
    if attempt > 1:
        head += f" (attempt {attempt}, a repair)"
    text = f"{head}: {_counts(src, count)}"
    return [_with_time(text, summary), *_failure_lines(summary, src)]


def _counts(src: Mapping[str, int], total: int) -> str:
    text = (
        f"{src.get('total', total)} sources, {src.get('present', 0)} present, "
        f"{src.get('failed', 0)} failed, {src.get('suppressed', 0)} suppressed"
    )
    return f"{text}, {src['dropped']} dropped" if src.get("dropped") else text


def _with_time(text: str, summary: Mapping[str, Any]) -> str:
    grains = dict(summary.get("grains") or {})
    if grains:
        text += (
            f"; {int(grains.get('dispatched', 0))} grains dispatched, "
            f"{int(grains.get('retried', 0))} retried"
        )
    if summary.get("elapsed_s") is not None:
        text += f" ({float(summary['elapsed_s']):.1f} s)"
    return text


def _failure_lines(summary: Mapping[str, Any], src: Mapping[str, int]) -> list[str]:
    failures = list(summary.get("failures") or [])
    lines = []
    for failure in failures[:MAX_LISTED]:
        cause = strip_ansi(str(failure.get("cause")))
        lines.append(f"  source {failure.get('source')} {failure.get('outcome')}: {cause}")
    more = src.get("failed", 0) + src.get("suppressed", 0) - min(len(failures), MAX_LISTED)
    if more > 0:
        lines.append(
            f"  ... and {more} more failed or suppressed sources (the run report's Sources "
            "table lists each one)"
        )
    return lines


def run_lines(summary: Mapping[str, Any], run_id: str | None = None) -> list[str]:
    """``run r: 3 microbatches (2 success, 1 failed: mb 1), 10 sources, 8 present, ...``,
    then one line per failure."""
    src = {k: int(v) for k, v in dict(summary.get("sources") or {}).items()}
    mbs = list(summary.get("microbatches") or [])
    failed = [int(m.get("index", 0)) for m in mbs if m.get("state") == "failed"]
    states = f"{len(mbs) - len(failed)} success, {len(failed)} failed"
    if failed:
        listed = ", ".join(f"mb {i}" for i in failed[:MAX_LISTED])
        states += f": {listed}" + (", ..." if len(failed) > MAX_LISTED else "")
    run = run_id or summary.get("run_id") or "?"
    text = f"run {run}: {len(mbs)} microbatches ({states}), {_counts(src, 0)}"
    return [_with_time(text, summary), *_failure_lines(summary, src)]


def log_microbatch(log: Any, summary: Mapping[str, Any], run_id: str | None = None) -> None:
    """Log the microbatch's lines at INFO."""
    for line in microbatch_lines(summary, run_id):
        log.info("%s", line)


def log_run(log: Any, summary: Mapping[str, Any], run_id: str | None = None) -> None:
    """Log the run's lines at INFO."""
    for line in run_lines(summary, run_id):
        log.info("%s", line)
