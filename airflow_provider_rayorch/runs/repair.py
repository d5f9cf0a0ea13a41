"""The driver's repair mode: re-run a committed microbatch's FAILED and SUPPRESSED sources.

::

    python -m airflow_provider_rayorch.job --run-store URI --run-id ID --repair 3

The sources come from the stored plan record (never a new glob expansion). The
pipeline compiled here must have the stored plan's *semantic* fingerprint
(schedule-only options may differ, see :mod:`.program.semantics`); otherwise the
repair is refused (exit code 3) with a sentence per change. Each repaired source
runs as a microbatch of its own global index (``input_batch_size=1`` with every
other index skipped), so causes and ``failures[].source`` keep global indices and
PRESENT sources are never dispatched. The repaired microbatch's files go to a new
attempt folder, then its manifest is replaced atomically (:mod:`.attempts`).
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch import summary as summaries
from airflow_provider_rayorch.rayorch.errors import DriverError
from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.aggregate import sample_of
from airflow_provider_rayorch.runs.attempt_claims import AttemptConflict, claim_attempt
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.commit import account_lost, fail_unstorable, root_name, rows_of
from airflow_provider_rayorch.runs.exit_codes import EXIT_PLAN_CHANGED
from airflow_provider_rayorch.runs.pipeline_load import plan_executor
from airflow_provider_rayorch.runs.sources import source_columns
from airflow_provider_rayorch.runs.verdict import judged

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from airflow_provider_rayorch.runs.records import MicrobatchManifest, MicrobatchRef
    from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

__all__ = ["REPAIRABLE", "check_semantics", "repair_microbatches", "repair_targets"]

#: Source outcomes a repair re-runs.
REPAIRABLE = ("failed", "suppressed")


def check_semantics(plan: PlanRecord, compiled: Any) -> None:
    """Refuse (``DriverError``, exit 3) when ``compiled`` computes something else than
    the stored plan; say what changed."""
    from airflow_provider_rayorch.rayorch.program.semantics import semantic_diff

    if plan.semantic_fingerprint:
        if compiled.semantic_fingerprint == plan.semantic_fingerprint:
            return
        changes = semantic_diff(plan.semantic, compiled.semantic_record()) or [
            "the semantic fingerprint differs"
        ]
    elif compiled.fingerprint == plan.fingerprint:
        return
    else:
        changes = ["the plan record predates semantic fingerprints and its fingerprint differs"]
    raise DriverError(
        f"run {plan.run_id!r}: refusing to repair with a pipeline that computes something "
        f"else than the stored plan: {'; '.join(changes)}. Only schedule-only options "
        "(replicas, batch sizes, batch_timeout_s, retry counts, actor options) may change "
        "for a repair: restore the code, or start a new run.",
        EXIT_PLAN_CHANGED,
    )


def repair_targets(
    store: RunStore, plan: PlanRecord, indices: Iterable[int] | None
) -> dict[int, list[int]]:
    """``{microbatch index: [global source indices to re-run]}``; ``None``: every
    committed microbatch that has some. An uncommitted microbatch cannot be repaired."""
    committed = store.committed(plan.run_id)
    wanted = sorted(committed) if indices is None else sorted(set(indices))
    targets: dict[int, list[int]] = {}
    for index in wanted:
        manifest, _ = _committed(store, plan, index)
        bad: set[int] = set()
        for port in _ports(manifest):
            rows = store.read_microbatch_rows(plan.run_id, index, port)
            bad.update(int(r["source"]) for r in rows if r["outcome"] in REPAIRABLE)
        if bad:
            targets[index] = sorted(bad)
    return targets


def _committed(
    store: RunStore, plan: PlanRecord, index: int
) -> tuple[MicrobatchManifest, MicrobatchRef]:
    """Microbatch ``index``'s manifest and its microbatch; DriverError if uncommitted."""
    manifest = store.manifest_record(plan.run_id, index)
    if manifest is None or manifest.microbatch is None:
        raise DriverError(
            f"run {plan.run_id!r}: microbatch {index} is not committed, there is nothing "
            "to repair; resume the run instead (retry the task)"
        )
    return manifest, manifest.microbatch


def _ports(manifest: MicrobatchManifest) -> list[str]:
    return list((manifest.outputs.ports if manifest.outputs else None) or ["out"])


def repair_microbatches(
    store: RunStore,
    plan: PlanRecord,
    pipeline: Any,
    compiled: Any,
    indices: Iterable[int] | None,
    *,
    address: str | None = None,
    job_id: str | None = None,
    say: Any = print,
) -> list[dict[str, Any]]:
    """Repair the given microbatches (``None``: every one with failed sources) in one
    executor run; returns the new manifests."""
    check_semantics(plan, compiled)
    targets = repair_targets(store, plan, indices)
    redo = sorted(s for ids in targets.values() for s in ids)
    if not redo:
        say(f"repair of run {plan.run_id}: no failed or suppressed source, nothing to do")
        return []
    say(f"repair of run {plan.run_id}: re-running sources {redo} of microbatches {sorted(targets)}")
    started = time.monotonic()
    fresh: dict[int, Any] = {}
    keep = set(redo)
    skip = frozenset(i for i in range(plan.total_sources) if i not in keep)
    with plan_executor(plan, pipeline, address) as executor:
        for mb in executor.stream(
            *source_columns(store, plan),
            input_batch_size=1,
            max_active_input_batches=max(len(redo), 1),
            skip_microbatches=skip,
        ):
            if mb.index in keep:
                fresh[int(mb.index)] = mb
    elapsed = time.monotonic() - started
    manifests = []
    for index, ids in targets.items():
        manifest = _commit_attempt(store, plan, compiled, index, ids, fresh, elapsed, job_id)
        manifests.append(manifest)
        src = manifest["sources"]
        say(
            f"microbatch {index} repaired (attempt {manifest['attempt']}): "
            f"{src['present']}/{src['total']} present, {src['failed']} failed, "
            f"{src['suppressed']} suppressed"
        )
    return manifests


def _commit_attempt(
    store: RunStore,
    plan: PlanRecord,
    compiled: Any,
    index: int,
    ids_to_repair: Sequence[int],
    fresh: dict[int, Any],
    elapsed_s: float,
    job_id: str | None,
) -> dict[str, Any]:
    version = store.manifest_version(plan.run_id, index)  # before the read: never newer
    record, desc = _committed(store, plan, index)
    old = plain(record)  # the new manifest starts as the committed one's JSON values
    attempt = (record.attempt or 1) + 1
    claim_attempt(store, plan.run_id, index, attempt, owner=job_id or uuid.uuid4().hex)
    ports = _ports(record)
    lo, count = desc.first_source, desc.count
    ids = list(range(lo, lo + count))
    per_port: dict[str, list[tuple[str, str | None, Any]]] = {}
    for p, port in enumerate(ports):
        kept = {int(r["source"]): r for r in store.read_microbatch_rows(plan.run_id, index, port)}
        rows: list[tuple[str, str | None, Any]] = []
        for source in ids:
            if source in fresh:
                outputs = fresh[source].outputs
                port_outputs = outputs[p] if isinstance(outputs, tuple) else outputs
                rows.append(rows_of(port_outputs)[0])
            else:
                r = kept[source]
                rows.append((str(r["outcome"]), r["cause"], r["value"]))
        per_port[port] = rows
    # a repaired value the store cannot hold FAILS its source, as in a first run
    per_port, lost = fail_unstorable(per_port, ids, root_name(compiled))
    files = {
        port: store.write_outputs(plan.run_id, index, port, lo, rows, attempt=attempt)
        for port, rows in per_port.items()
    }
    repaired = set(ids_to_repair)
    parts = [
        account_lost(
            fresh[s].lineage(max_failed_ratio=plan.max_failed_ratio),
            {s: lost[s]} if s in lost else {},
            plan.max_failed_ratio,
        )
        for s in ids_to_repair
        if s in fresh
    ]
    sources = {"total": count, **dict.fromkeys(("present", "dropped", "failed", "suppressed"), 0)}
    for outcome, _, _ in per_port[ports[0]]:
        sources[outcome] = sources.get(outcome, 0) + 1
    failures = [f for f in old.get("failures") or [] if int(f["source"]) not in repaired]
    for part in parts:
        failures.extend(part["failures"])
    failures += [
        {"source": s, "outcome": "failed", "cause": c} for s, c in lost.items() if s not in repaired
    ]
    failures.sort(key=lambda f: int(f["source"]))
    grains = dict(old.get("grains") or {})
    entities = dict(old.get("entities") or {})
    for part in parts:
        for key, n in part["grains"].items():
            grains[key] = int(grains.get(key, 0)) + int(n)
        for key, n in part["entities"].items():
            entities[key] = int(entities.get(key, 0)) + int(n)
    state = summaries.summary_state(sources, plan.max_failed_ratio)
    history = list(old.get("attempts") or [_first_attempt(old)])
    history.append(
        {
            "attempt": attempt,
            "at": datetime.now(UTC).isoformat(),
            "kind": "repair",
            "job_id": job_id,
            "repaired_sources": sorted(repaired),
            "sources": {k: sum(int(p["sources"][k]) for p in parts) for k in sources},
            "state": state,
            "fingerprint": str(compiled.fingerprint),
            "elapsed_s": round(elapsed_s, 6),
        }
    )
    manifest = {
        **old,
        "state": state,
        "sources": sources,
        "failures": failures[: summaries.FAILURES_CAP],
        "grains": grains,
        "entities": entities,
        "attempt": attempt,
        "files": files,
        "attempts": history,
        "sample": sample_of(per_port, ids),
        "outputs": {
            **dict(old.get("outputs") or {}),
            "uri": store.record_uri(paths.attempt_folder(plan.run_id, index, attempt)),
            "rows": sources["present"],
            "ports": ports,
        },
    }
    manifest = judged(manifest, plan.max_failed_ratio)  # the verdict, recorded once
    store.delete(paths.run_aggregate(plan.run_id))  # it no longer sums the run's manifests
    # the commit point: only over the manifest this repair read
    if version is None or not store.replace_manifest(plan.run_id, index, manifest, version):
        raise AttemptConflict(
            f"microbatch {index} of run {plan.run_id!r}: its manifest changed while this "
            f"repair ran (attempt {attempt}); this attempt's files are left unused and the "
            "committed manifest is untouched. Clear the task again if sources are still failed"
        )
    return manifest


def _first_attempt(old: dict[str, Any]) -> dict[str, Any]:
    return {
        "attempt": 1,
        "at": old.get("committed_at"),
        "kind": "run",
        "job_id": None,
        "repaired_sources": [],
        "sources": dict(old.get("sources") or {}),
        "state": old.get("state"),
        "fingerprint": old.get("fingerprint"),
        "elapsed_s": old.get("elapsed_s"),
    }
