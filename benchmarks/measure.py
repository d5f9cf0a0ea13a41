"""What one timed run of workload 1 yields, computed the same way for every system."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from .workload import Doc, digest

__all__ = ["Measurement", "expected_digests", "measure", "median_of"]


@dataclass
class Measurement:
    """One run: wall time, per-document completion and accelerator figures."""

    system: str
    mode: str
    e2e_s: float
    docs_ok: int
    docs_failed: int
    pages: int
    #: Seconds from the run's start at which each document was written, sorted.
    completions: list[float] = field(default_factory=list)
    accel_busy_s: float = 0.0
    accel_batches: float = 0.0
    accelerators: int = 1
    correct: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def first_doc_s(self) -> float | None:
        return self.completions[0] if self.completions else None

    @property
    def busy_fraction(self) -> float:
        return self.accel_busy_s / (self.accelerators * self.e2e_s) if self.e2e_s else 0.0

    @property
    def batch_fill(self) -> float:
        """Mean pages per accelerator batch."""
        return self.pages / self.accel_batches if self.accel_batches else 0.0

    def as_dict(self, curve_points: int = 50) -> dict[str, Any]:
        return {
            "system": self.system,
            "mode": self.mode,
            "e2e_s": round(self.e2e_s, 4),
            "first_doc_s": None if self.first_doc_s is None else round(self.first_doc_s, 4),
            "docs_ok": self.docs_ok,
            "docs_failed": self.docs_failed,
            "pages": self.pages,
            "busy_fraction": round(self.busy_fraction, 4),
            "batch_fill": round(self.batch_fill, 3),
            "correct": self.correct,
            "curve": thin(self.completions, curve_points),
            **self.extra,
        }


def thin(values: list[float], points: int) -> list[float]:
    """At most ``points`` evenly spaced quantiles of a sorted list (for plots)."""
    if len(values) <= points:
        return [round(v, 4) for v in values]
    step = (len(values) - 1) / (points - 1)
    return [round(values[round(i * step)], 4) for i in range(points)]


def expected_digests(docs: list[Doc], poison_ordinal: int | None = None) -> dict[int, str]:
    """The digest each healthy document must have (poisoned ones are left out)."""
    return {
        d.doc: digest(d.doc, list(range(d.pages)))
        for d in docs
        if not (poison_ordinal is not None and d.poisoned)
    }


def measure(
    system: str,
    mode: str,
    rows: list[Any],
    started: float,
    finished: float,
    expected: dict[int, str],
    accelerators: int,
) -> Measurement:
    """Fold a system's output rows (dicts from ``summarize`` or failure markers)."""
    done = [r for r in rows if isinstance(r, dict)]
    seen = {r["doc"]: r["digest"] for r in done}
    correct = seen == expected
    return Measurement(
        system=system,
        mode=mode,
        e2e_s=finished - started,
        docs_ok=len(done),
        docs_failed=len(rows) - len(done),
        pages=sum(r["pages"] for r in done),
        completions=sorted(r["t_done"] - started for r in done),
        accel_busy_s=sum(r["busy"] for r in done),
        accel_batches=sum(r["batches"] for r in done),
        accelerators=accelerators,
        correct=correct,
        extra={"accel_actors_used": len({pid for r in done for pid in r.get("pids", ())})},
    )


def median_of(runs: list[Measurement]) -> dict[str, Any]:
    """Median figures over repeated runs, with the spread."""
    e2e = [r.e2e_s for r in runs]
    mid = sorted(runs, key=lambda r: r.e2e_s)[len(runs) // 2]
    return {
        **mid.as_dict(),
        "e2e_s": round(statistics.median(e2e), 4),
        "e2e_runs": [round(x, 4) for x in e2e],
        "first_doc_s": round(statistics.median(r.first_doc_s or 0.0 for r in runs), 4),
        "busy_fraction": round(statistics.median(r.busy_fraction for r in runs), 4),
        "batch_fill": round(statistics.median(r.batch_fill for r in runs), 3),
        "correct": all(r.correct for r in runs),
    }


def all_actors_up(executor: Any) -> None:
    """Before a warm run: wait until every actor is up (this engine starts them a
    few at a time; the paper's package has them all up after its constructor)."""
    warm_up = getattr(executor, "warm_up", None)
    if warm_up is not None:
        warm_up()


def host_cpu_times() -> tuple[int, int] | None:
    """(total, idle) jiffies of the whole machine from ``/proc/stat``; None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(fields), fields[3] + fields[4]


def host_cpu_busy(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """Share of all the machine's CPUs that was busy between two ``host_cpu_times``."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    return round(1 - (after[1] - before[1]) / (after[0] - before[0]), 4)


def child_result(
    argv: list[str], *, cwd: Any, env: dict[str, str], timeout: float, what: str
) -> dict[str, Any]:
    """Run ``python <argv>`` in a fresh process; the JSON object on its last ``{`` line.
    Raises naming ``what`` with the end of its output when it failed or printed none."""
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise RuntimeError(f"{what} exited {proc.returncode}: {tail}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result
