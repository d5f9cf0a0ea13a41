"""From a run's triggering asset events to its sources, and the record of what it committed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk import Asset
from airflow.sdk.execution_time.comms import AssetEventDagRunReferenceResult
from airflow.sdk.execution_time.context import (
    AssetStateStoreAccessors,
    TriggeringAssetEventsAccessor,
)

from airflow_provider_rayorch.assets.new_sources import (
    committed_sources,
    new_sources,
    record_committed,
    sources_from_events,
)
from airflow_provider_rayorch.assets.watch_state import COMMITTED_KEY

if TYPE_CHECKING:
    from pathlib import Path

INBOX = Asset(name="inbox", uri="file:///in")
OTHER = Asset(name="other", uri="file:///other")


def _event(asset: Asset, files: list[str] | None, **extra: Any) -> AssetEventDagRunReferenceResult:
    if files is not None:
        extra["payload"] = {
            "asset_name": asset.name,
            "uri_glob": "/in/*.txt",
            "files": [{"uri": f, "size": len(f)} for f in files],
        }
    return AssetEventDagRunReferenceResult(
        asset={"name": asset.name, "uri": asset.uri, "extra": {}},
        extra=extra,
        source_task_id=None,
        source_dag_id=None,
        source_run_id=None,
        source_map_index=None,
        source_aliases=[],
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_every_event_since_the_previous_run_is_merged_without_duplicates() -> None:
    events = [
        _event(INBOX, ["/in/b.txt", "/in/a.txt"]),
        _event(INBOX, ["/in/c.txt", "/in/a.txt"]),  # a again: at-least-once delivery
        _event(INBOX, ["/in/b.txt"]),
    ]
    assert sources_from_events(events) == ["/in/a.txt", "/in/b.txt", "/in/c.txt"]


def test_files_already_committed_are_dropped() -> None:
    events = [_event(INBOX, ["/in/a.txt", "/in/b.txt"])]
    assert sources_from_events(events, committed={"/in/a.txt": "run-1"}) == ["/in/b.txt"]


def test_events_without_a_trigger_payload_bring_no_files() -> None:
    """A manual asset event (UI or REST) carries no payload: it adds nothing."""
    events = [_event(INBOX, None, note="manual"), _event(INBOX, ["/in/a.txt"])]
    assert sources_from_events(events) == ["/in/a.txt"]


def test_a_malformed_payload_names_the_event_and_what_is_wrong() -> None:
    bad = _event(INBOX, None, payload={"files": "/in/a.txt"})
    with pytest.raises(ValueError, match=r"event 1 of 2.*'files' must be a list"):
        sources_from_events([_event(INBOX, ["/in/b.txt"]), bad])


def test_mapping_events_work_as_well_as_task_sdk_events() -> None:
    events = [{"extra": {"payload": {"files": [{"uri": "/in/a.txt", "size": 1}]}}}]
    assert sources_from_events(events) == ["/in/a.txt"]


def test_new_sources_reads_the_context_and_the_asset_state_store(state_comms: Any) -> None:
    state_comms.rows[("inbox", COMMITTED_KEY)] = {"/in/a.txt": "run-1"}
    context = {
        "triggering_asset_events": TriggeringAssetEventsAccessor.build(
            [
                _event(INBOX, ["/in/a.txt", "/in/b.txt"]),
                _event(OTHER, ["/other/x.txt"]),
                _event(INBOX, ["/in/c.txt"]),
            ]
        ),
        "asset_state_store": AssetStateStoreAccessors(inlets=[INBOX]),
    }
    assert new_sources(context, INBOX) == ["/in/b.txt", "/in/c.txt"]


def test_new_sources_without_the_asset_as_inlet_says_how_to_fix_it(state_comms: Any) -> None:
    context = {
        "triggering_asset_events": TriggeringAssetEventsAccessor.build([_event(INBOX, ["/a"])]),
        "asset_state_store": AssetStateStoreAccessors(inlets=[OTHER]),
    }
    with pytest.raises(ValueError, match=r"inlets=\[.*inbox"):
        new_sources(context, INBOX)


def test_record_committed_adds_to_what_earlier_runs_recorded(state_comms: Any) -> None:
    state = AssetStateStoreAccessors(inlets=[INBOX])[INBOX]
    assert record_committed(state, ["/in/a.txt"], run_id="run-1") == 1
    assert record_committed(state, ["/in/b.txt", "/in/a.txt"], run_id="run-2") == 1
    assert committed_sources(state) == {"/in/a.txt": "run-1", "/in/b.txt": "run-2"}


def test_record_committed_with_the_glob_forgets_files_that_are_gone(
    tmp_path: Path, state_comms: Any
) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("k")
    state = AssetStateStoreAccessors(inlets=[INBOX])[INBOX]
    record_committed(state, [str(tmp_path / "archived.txt")], run_id="run-1")
    record_committed(state, [str(kept)], run_id="run-2", uri_glob=f"{tmp_path}/*.txt")
    assert committed_sources(state) == {str(kept): "run-2"}


def test_a_run_then_a_redelivered_event_processes_nothing_twice(state_comms: Any) -> None:
    """The effectively-once loop: the next run drops what the previous one committed."""
    state = AssetStateStoreAccessors(inlets=[INBOX])[INBOX]
    run1 = sources_from_events([_event(INBOX, ["/in/a.txt"])], committed=committed_sources(state))
    record_committed(state, run1, run_id="run-1")
    redelivered = [_event(INBOX, ["/in/a.txt", "/in/b.txt"])]
    assert sources_from_events(redelivered, committed=committed_sources(state)) == ["/in/b.txt"]
