"""In a DAG run: the sources its asset events announce, and the record of what it committed.

One asset-triggered run takes every event since the previous run, and the
trigger delivers at least once, so the same file can come in several events.
``new_sources`` merges them, removes repeats and drops what an earlier run
committed; the run's last task calls ``record_committed``. Together: each file is
processed once (with ``max_active_runs=1``, so runs see each other's records).

    @task(inlets=[INBOX])
    def select(**context):
        return new_sources(context, INBOX)

    @task(inlets=[INBOX])
    def record(sources, **context):
        record_committed(context["asset_state_store"][INBOX], sources,
                         run_id=context["run_id"])
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol

from airflow_provider_rayorch.assets.watch_state import (
    COMMITTED_KEY,
    NewSourcesBatch,
    decode_committed,
)
from airflow_provider_rayorch.rayorch.errors import UsageError

__all__ = ["committed_sources", "new_sources", "record_committed", "sources_from_events"]


class StateStore(Protocol):
    """The part of a task's per-asset state store accessor used here."""

    def get(self, key: str, default: Any = None) -> Any: ...

    def set(self, key: str, value: Any) -> None: ...


def _extra(event: Any) -> Mapping[str, Any]:
    extra = event.get("extra") if isinstance(event, Mapping) else getattr(event, "extra", None)
    return extra if isinstance(extra, Mapping) else {}


def sources_from_events(events: Iterable[Any], *, committed: Collection[str] = ()) -> list[str]:
    """The file URIs of every event's ``extra["payload"]``, once each, sorted, minus ``committed``.

    ``events`` are Task SDK asset events (``.extra``) or mappings with ``"extra"``. An
    event without a payload (one made by hand in the UI or REST API) brings no file.
    Sorted, so a retried run builds the same plan from the same events.
    """
    events = list(events)
    uris: set[str] = set()
    for i, event in enumerate(events):
        extra = _extra(event)
        if "payload" not in extra:
            continue
        try:
            files = NewSourcesBatch.files_of_payload(extra["payload"])
        except ValueError as exc:
            raise UsageError(
                f"asset event {i} of {len(events)} is not a RayOrchNewSourcesTrigger event: "
                f"{exc} (extra={dict(extra)!r})"
            ) from None
        uris.update(f.uri for f in files)
    return sorted(uris.difference(committed))


def _asset_label(asset: Any) -> str:
    return repr(getattr(asset, "name", asset))


def new_sources(context: Mapping[str, Any], asset: Any) -> list[str]:
    """The sources of this run: its triggering events for ``asset``, minus committed files.

    The task needs ``inlets=[asset]``, which gives it the asset's state store.
    """
    try:
        state = context["asset_state_store"][asset]
    except KeyError:
        raise UsageError(
            f"this task cannot read the asset state store of asset {_asset_label(asset)}: "
            f"declare the asset as its inlet, @task(inlets=[Asset({_asset_label(asset)}, ...)])"
        ) from None
    try:
        events = context["triggering_asset_events"][asset]
    except KeyError:
        events = []
    return sources_from_events(events, committed=committed_sources(state))


def committed_sources(state: StateStore) -> dict[str, str]:
    """``{uri: run_id}`` of every file a run has recorded as committed."""
    return decode_committed(state.get(COMMITTED_KEY), _state_label(state))


def _state_label(state: Any) -> str:
    return str(getattr(state, "_name", None) or getattr(state, "_uri", None) or "?")


def record_committed(
    state: StateStore,
    sources: Iterable[str],
    *,
    run_id: str,
    uri_glob: str | None = None,
) -> int:
    """Add ``sources`` to the committed record; returns how many were new.

    Call it from the run's last task, once the outputs are committed. With
    ``uri_glob``, files the glob no longer matches (archived, deleted) leave the
    record, which keeps it small; such a file that comes back counts as new.
    Runs must not overlap (``max_active_runs=1``): each rewrites the record.
    """
    record = committed_sources(state)
    before = len(record)
    for uri in sources:
        record.setdefault(str(uri), run_id)
    added = len(record) - before
    if uri_glob is not None:
        from airflow_provider_rayorch.assets.listing import list_files

        present = {f.uri for f in list_files(uri_glob)}
        record = {uri: rid for uri, rid in record.items() if uri in present}
    state.set(COMMITTED_KEY, dict(sorted(record.items())))
    return added
