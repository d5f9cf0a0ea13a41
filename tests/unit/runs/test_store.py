from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import (
    ENCODING_KEY,
    PlanRecord,
    RunStore,
    StoreError,
    glob_uris,
    microbatch_count,
)

pytestmark = pytest.mark.timeout(30)


def _plan(n: int = 5, size: int | None = 2) -> PlanRecord:
    return PlanRecord(
        run_id="r1",
        pipeline="m:F",
        fingerprint="ab" * 32,
        sources=list(range(n)),
        input_batch_size=size,
    )


@pytest.mark.parametrize(
    ("total", "size", "expected"),
    [
        pytest.param(0, 4, 0, id="empty"),
        pytest.param(5, None, 1, id="one-batch"),
        pytest.param(5, 2, 3, id="ragged"),
        pytest.param(4, 2, 2, id="exact"),
    ],
)
def test_microbatch_count(total: int, size: int | None, expected: int) -> None:
    assert microbatch_count(total, size) == expected


def test_plan_roundtrip_and_descriptors(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    plan = _plan()
    stored = store.write_plan(plan)
    assert store.read_plan("r1") == stored
    assert stored.sources is None
    assert stored.total_sources == 5
    assert [store.read_sources(stored, i) for i in range(3)] == [[[0, 1]], [[2, 3]], [[4]]]
    assert plan.microbatches() == [
        {"index": 0, "first_source": 0, "count": 2},
        {"index": 1, "first_source": 2, "count": 2},
        {"index": 2, "first_source": 4, "count": 1},
    ]
    assert store.read_plan("other") is None


@pytest.mark.parametrize(
    ("values", "encoding"),
    [
        pytest.param([1, 4, None], "native", id="ints"),
        pytest.param(
            [{"markdown": "a", "pages": 2}, None, {"markdown": "b", "pages": 1}],
            "native",
            id="uniform-dicts",
        ),
        pytest.param([{"a": 1}, None, {"b": "x"}], "json", id="ragged-dicts"),
        pytest.param([1, "two", None], "json", id="mixed-types"),
    ],
)
def test_outputs_value_encoding(tmp_path, values, encoding) -> None:
    store = RunStore(str(tmp_path))
    rows = [
        ("present", None, v) if v is not None else ("failed", "doc[1]: bad", None) for v in values
    ]
    uri = store.write_outputs("r1", 3, "out", 6, rows)
    table = pq.read_table(uri)
    assert table.schema.metadata[ENCODING_KEY].decode() == encoding
    assert table.column("source").to_pylist() == [6, 7, 8]
    store.commit_microbatch("r1", 3, {"microbatch": {"index": 3, "first_source": 6, "count": 3}})
    got = store.read_outputs("r1")
    assert [r["value"] for r in got] == values
    assert [r["outcome"] for r in got] == [r[0] for r in rows]
    assert [r["cause"] for r in got if r["outcome"] == "failed"] == ["doc[1]: bad"]


def test_commit_is_atomic_and_defines_committed(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    store.write_outputs("r1", 0, "out", 0, [("present", None, 1)])
    assert store.committed("r1") == frozenset()
    store.commit_microbatch("r1", 0, {"x": 1})
    store.commit_microbatch("r1", 2, {"x": 2})
    assert store.committed("r1") == frozenset({0, 2})
    assert plain(store.manifest_record("r1", 2)) == {"x": 2}
    leftovers = [n for n in os.listdir(tmp_path / "r1" / "manifests") if ".tmp-" in n]
    assert leftovers == []
    assert store.committed("missing") == frozenset()


def test_run_manifest_and_delete(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    store.write_run_manifest("r1", {"state": "success"})
    assert plain(store.run_manifest_record("r1")) == {"state": "success"}
    store.clear_run_manifest("r1")
    assert store.run_manifest_record("r1") is None
    store.delete_run("r1")
    assert not (tmp_path / "r1").exists()


def test_file_uri_store(tmp_path) -> None:
    store = RunStore(f"file://{tmp_path}")
    store.commit_microbatch("r", 0, {"a": 1})
    stored = json.loads((tmp_path / "r" / "manifests" / "mb-00000.json").read_text())
    assert stored.pop("schema_version") == 1  # every record carries its schema version
    assert stored == {"a": 1}


def test_glob_uris_with_mtime_window(tmp_path) -> None:
    for name in ("a.pdf", "b.pdf", "c.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.pdf").write_text("x")
    old = time.time() - 3600
    os.utime(tmp_path / "a.pdf", (old, old))
    assert glob_uris(f"{tmp_path}/*.pdf") == [f"{tmp_path}/a.pdf", f"{tmp_path}/b.pdf"]
    assert glob_uris(f"{tmp_path}/**/*.pdf")[-1] == f"{tmp_path}/sub/d.pdf"
    after = datetime.now(UTC) - timedelta(minutes=5)
    assert glob_uris(f"{tmp_path}/*.pdf", modified_after=after) == [f"{tmp_path}/b.pdf"]
    assert glob_uris(f"file://{tmp_path}/*.txt") == [f"file://{tmp_path}/c.txt"]
    assert glob_uris(f"{tmp_path}/nothing/*.pdf") == []


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**62), max_value=2**62)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(_json_values, min_size=1, max_size=6))
def test_outputs_roundtrip_any_json_values(tmp_path_factory, values) -> None:
    store = RunStore(str(tmp_path_factory.mktemp("rt")))
    rows = [("present", None, v) for v in values]
    store.write_outputs("r", 0, "out", 0, rows)
    store.commit_microbatch("r", 0, {})
    got = [r["value"] for r in store.read_outputs("r")]
    assert repr(got) == repr(values)


def test_job_state_roundtrip(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    assert store.job_state_record("r1") is None
    before = datetime.now(UTC)
    store.write_job_state("r1", "not_started", "submit refused: HTTP 401")
    state = plain(store.job_state_record("r1"))
    assert state is not None
    assert state["job_status"] == "NOT_STARTED"
    assert state["message"] == "submit refused: HTTP 401"
    at = datetime.fromisoformat(state["at"])
    assert at.utcoffset() == timedelta(0)
    assert at >= before - timedelta(seconds=1)
    store.write_job_state("r1", "FAILED")
    later = plain(store.job_state_record("r1"))
    assert later is not None
    assert (later["job_status"], later["message"]) == ("FAILED", None)
    # beside the run's other records, no temporary files left over
    assert sorted(os.listdir(tmp_path / "r1")) == ["job_state.json"]


@pytest.mark.parametrize(
    "message",
    [
        pytest.param("HTTP 401 sending Authorization: Bearer s3cr3t-tok.en", id="header"),
        pytest.param("headers={'Authorization': 'Bearer s3cr3t-tok.en'}", id="dict-repr"),
        pytest.param('{"authorization": "s3cr3t-tok.en"}', id="json-bare"),
        pytest.param("sent bearer s3cr3t-tok.en to the head", id="bearer-lowercase"),
        pytest.param("RAY_AUTH_TOKEN=s3cr3t-tok.en in the env", id="env-assignment"),
        pytest.param("x-ray-authorization:s3cr3t-tok.en", id="ray-header"),
    ],
)
def test_job_state_message_never_carries_a_token(tmp_path, message: str) -> None:
    store = RunStore(str(tmp_path))
    store.write_job_state("r1", "NOT_STARTED", message)
    state = plain(store.job_state_record("r1"))
    assert state is not None
    assert "s3cr3t" not in state["message"]
    assert "s3cr3t" not in (tmp_path / "r1" / "job_state.json").read_text()
    assert "[redacted]" in state["message"]


def test_job_state_keeps_harmless_messages_and_rejects_unknown_status(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    text = "Missing authentication token; set the connection's password"
    store.write_job_state("r1", "STOPPED", text)
    assert plain(store.job_state_record("r1"))["message"] == text  # type: ignore[index]
    with pytest.raises(ValueError, match="unknown Ray job status 'DONE'"):
        store.write_job_state("r1", "DONE")


def test_job_state_unreadable_record_names_the_file(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / "job_state.json").write_text("{not json")
    with pytest.raises(StoreError, match=r"r1/job_state.json is not JSON"):
        plain(store.job_state_record("r1"))
