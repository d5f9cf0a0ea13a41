"""Committing a microbatch: its rows per output Port, then its manifest.

A value the run store cannot hold (see :mod:`.values`) FAILS its source on every
Port before anything is written, with a cause naming the type and the fix, and the
manifest's counts, failures and state are corrected to match: what the manifest
says and what the Parquet files hold always agree, and the failed-ratio verdict
sees every such source.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch import summary as summaries
from airflow_provider_rayorch.runs.aggregate import sample_of
from airflow_provider_rayorch.runs.values import unstorable
from airflow_provider_rayorch.runs.verdict import judged

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from airflow_provider_rayorch.runs.records import MicrobatchManifest, PlanRecord
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["account_lost", "commit_microbatch", "fail_unstorable", "root_name", "rows_of"]

Row = tuple[str, str | None, Any]


def rows_of(outputs: Iterable[Any]) -> list[Row]:
    """Turn engine outputs (values and ``OutputIssue``s) into ``(outcome, cause, value)``."""
    from airflow_provider_rayorch.rayorch.outcomes import OutputIssue

    rows: list[Row] = []
    for item in outputs:
        if isinstance(item, OutputIssue):
            cause = None if item.cause is None else str(item.cause)
            rows.append((str(item.outcome.value), cause, None))
        else:
            rows.append(("present", None, item))
    return rows


def fail_unstorable(
    ports: dict[str, list[Row]], sources: Sequence[int], root: str
) -> tuple[dict[str, list[Row]], dict[int, str]]:
    """``ports`` (rows per Port, one per source of ``sources``) with every source whose
    value some Port cannot store FAILED on all Ports; and ``{source: cause}`` of those."""
    lost: dict[int, str] = {}
    for port, rows in ports.items():
        values = [value if outcome == "present" else None for outcome, _, value in rows]
        for position, problem in unstorable(values).items():
            source = int(sources[position])
            if source not in lost:
                named = f"Port {port!r}: " if len(ports) > 1 else ""
                lost[source] = f"{root}[{source}]: {named}{problem}"
    if not lost:
        return ports, lost
    fixed = {
        port: [
            ("failed", lost[int(s)], None) if int(s) in lost else row
            for s, row in zip(sources, rows, strict=True)
        ]
        for port, rows in ports.items()
    }
    return fixed, lost


def account_lost(
    summary: dict[str, Any], lost: dict[int, str], max_failed_ratio: float
) -> dict[str, Any]:
    """``summary`` (a microbatch lineage summary) with the sources in ``lost`` counted
    FAILED instead of PRESENT, listed under ``failures`` and judged again."""
    if not lost:
        return summary
    sources = dict(summary["sources"])
    moved = min(len(lost), int(sources["present"]))
    sources["present"] = int(sources["present"]) - moved
    sources["failed"] = int(sources["failed"]) + moved
    failures = [f for f in summary.get("failures") or [] if int(f["source"]) not in lost]
    failures += [{"source": s, "outcome": "failed", "cause": c} for s, c in lost.items()]
    failures.sort(key=lambda f: int(f["source"]))
    outputs = dict(summary.get("outputs") or {})
    if "rows" in outputs:
        outputs["rows"] = sources["present"]
    return {
        **summary,
        "sources": sources,
        "failures": failures[: summaries.FAILURES_CAP],
        "outputs": outputs,
        "state": summaries.summary_state(sources, max_failed_ratio),
    }


def root_name(compiled: Any) -> str:
    """The name of the plan's root Domain (``doc``), which causes start with."""
    root = getattr(compiled, "root", None)
    return str(getattr(root, "name", None) or "source")


def commit_microbatch(store: RunStore, plan: PlanRecord, mb: Any, root: str) -> MicrobatchManifest:
    """Write ``mb``'s outputs (one file per Port), then its manifest; returns its record."""
    outputs = mb.outputs if isinstance(mb.outputs, tuple) else (mb.outputs,)
    names: Sequence[str] = tuple(mb.output_names) or tuple(
        "out" if len(outputs) == 1 else f"out{i}" for i in range(len(outputs))
    )
    per_port = {
        name: rows_of(port_outputs) for name, port_outputs in zip(names, outputs, strict=True)
    }
    ids = list(range(mb.first_source, mb.first_source + mb.count))
    per_port, lost = fail_unstorable(per_port, ids, root)
    files = {
        name: store.write_outputs(plan.run_id, mb.index, name, mb.first_source, rows)
        for name, rows in per_port.items()
    }
    manifest = account_lost(
        dict(mb.lineage(max_failed_ratio=plan.max_failed_ratio)), lost, plan.max_failed_ratio
    )
    manifest.update(run_id=plan.run_id, pipeline=plan.pipeline, fingerprint=plan.fingerprint)
    # the commit names its files and attempt (a repair replaces both, see repair.py)
    manifest.update(attempt=1, files=files, committed_at=datetime.now(UTC).isoformat())
    manifest["sample"] = sample_of(per_port, ids)  # what the live report lists of it
    manifest = judged(manifest, plan.max_failed_ratio)  # the verdict, recorded once
    manifest["outputs"] = {
        **dict(manifest.get("outputs") or {}),
        "uri": store.outputs_uri(plan.run_id, mb.index),
        "ports": list(names),
    }
    return store.commit_microbatch(plan.run_id, mb.index, manifest)
