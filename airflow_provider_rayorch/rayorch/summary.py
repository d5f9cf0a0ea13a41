"""Lineage summaries: the JSON documents pushed to XCom and written to manifests.

A repaired microbatch's manifest also holds ``attempt`` (its committed attempt),
``files`` (``{port: uri}``) and ``attempts`` (the history, see :mod:`.repair`); the
run summary's ``microbatches`` entries of such microbatches carry ``attempt`` and
``attempts`` (``{"attempt", "state", "at"}``), and a run repaired through the
per-microbatch pattern gets ``repairs`` (the run store's repair records).

Both builders return plain JSON values only (dict, list, str, int, float, bool,
None), so ``json.loads(json.dumps(s)) == s`` always holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, Unpack

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "FAILURES_CAP",
    "SummaryLabels",
    "assemble_run_summary",
    "failed_ratio",
    "microbatch_summary",
    "run_summary",
    "summary_state",
]

#: At most this many entries are listed under ``failures``; the counts are never capped.
FAILURES_CAP = 100

_OUTCOMES = ("present", "dropped", "failed", "suppressed")


class SummaryLabels(TypedDict, total=False):
    """What names a summary and judges it: the run (``run_id``), the pipeline and its
    plan's ``fingerprint``, where its outputs are (``outputs_uri``), each None when
    not given, and the failed-ratio bar it is judged against (``max_failed_ratio``,
    default 0)."""

    run_id: str | None
    pipeline: str | None
    fingerprint: str | None
    outputs_uri: str | None
    max_failed_ratio: float


def _named(labels: SummaryLabels, sources: Mapping[str, int]) -> dict[str, Any]:
    """A summary's first keys: its names and its state judged against the bar."""
    return {
        "run_id": labels.get("run_id"),
        "pipeline": labels.get("pipeline"),
        "fingerprint": labels.get("fingerprint"),
        "state": summary_state(sources, labels.get("max_failed_ratio", 0.0)),
    }


def failed_ratio(sources: Mapping[str, int]) -> float:
    """(FAILED + SUPPRESSED) / total; DROPPED sources count as fine."""
    total = sources["total"]
    return 0.0 if total == 0 else (sources["failed"] + sources["suppressed"]) / total


def summary_state(sources: Mapping[str, int], max_failed_ratio: float = 0.0) -> str:
    """``"failed"`` when the failed ratio exceeds ``max_failed_ratio``, else ``"success"``."""
    return "failed" if failed_ratio(sources) > max_failed_ratio else "success"


def microbatch_summary(
    *,
    index: int,
    first_source: int,
    count: int,
    outcome_counts: Mapping[str, int],
    entities: Mapping[str, int],
    grains: Mapping[str, int],
    failures: Iterable[Mapping[str, Any]],
    elapsed_s: float,
    **labels: Unpack[SummaryLabels],
) -> dict[str, Any]:
    """The summary of one source microbatch (API.md section 3)."""
    sources = {"total": int(count)}
    sources.update({name: int(outcome_counts.get(name, 0)) for name in _OUTCOMES})
    listed = [
        {"source": int(f["source"]), "outcome": str(f["outcome"]), "cause": str(f["cause"])}
        for f in failures
    ][:FAILURES_CAP]
    return {
        **_named(labels, sources),
        "microbatch": {"index": int(index), "first_source": int(first_source), "count": int(count)},
        "sources": sources,
        "entities": {str(k): int(v) for k, v in entities.items()},
        "grains": {
            "dispatched": int(grains.get("dispatched", 0)),
            "retried": int(grains.get("retried", 0)),
            "suppressed": int(grains.get("suppressed", 0)),
        },
        "failures": listed,
        "outputs": {"uri": labels.get("outputs_uri"), "rows": sources["present"]},
        "elapsed_s": round(float(elapsed_s), 6),
    }


def run_summary(
    microbatches: Iterable[Mapping[str, Any]],
    *,
    elapsed_s: float,
    **labels: Unpack[SummaryLabels],
) -> dict[str, Any]:
    """Sum microbatch summaries into the run summary (API.md section 3)."""
    parts = sorted(microbatches, key=lambda s: s["microbatch"]["index"])
    sources = {"total": 0, **dict.fromkeys(_OUTCOMES, 0)}
    grains = {"dispatched": 0, "retried": 0, "suppressed": 0}
    entities: dict[str, int] = {}
    failures: list[dict[str, Any]] = []
    listing: list[dict[str, Any]] = []
    for part in parts:
        for key in sources:
            sources[key] += int(part["sources"][key])
        for key in grains:
            grains[key] += int(part["grains"][key])
        for domain, n in part["entities"].items():
            entities[domain] = entities.get(domain, 0) + int(n)
        failures.extend(dict(f) for f in part["failures"])
        entry = {
            **{k: int(v) for k, v in part["microbatch"].items()},
            "state": summary_state(part["sources"], labels.get("max_failed_ratio", 0.0)),
        }
        if part.get("attempts"):  # a repaired microbatch: its attempt and their states
            entry["attempt"] = int(part.get("attempt") or 1)
            entry["attempts"] = [
                {"attempt": int(a["attempt"]), "state": a.get("state"), "at": a.get("at")}
                for a in part["attempts"]
            ]
        listing.append(entry)
    return assemble_run_summary(
        sources, entities, grains, failures, listing, elapsed_s=elapsed_s, **labels
    )


def assemble_run_summary(
    sources: Mapping[str, int],
    entities: Mapping[str, int],
    grains: Mapping[str, int],
    failures: Iterable[Mapping[str, Any]],
    microbatches: list[dict[str, Any]],
    *,
    elapsed_s: float,
    **labels: Unpack[SummaryLabels],
) -> dict[str, Any]:
    """The run summary's shape (API.md section 3) from its summed parts: judged
    against ``max_failed_ratio``, failures capped at :data:`FAILURES_CAP`."""
    return {
        **_named(labels, sources),
        "sources": dict(sources),
        "entities": dict(entities),
        "grains": dict(grains),
        "failures": [dict(f) for f in failures][:FAILURES_CAP],
        "outputs": {"uri": labels.get("outputs_uri"), "rows": sources["present"]},
        "microbatches": microbatches,
        "elapsed_s": round(float(elapsed_s), 6),
    }
