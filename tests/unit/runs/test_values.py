"""No silent value loss: what the run store holds comes back as documented
(docs/run-store.md), and a value it cannot hold FAILS its source with a cause that
names the type."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import RunStore

from .pipelines import Weird
from .test_driver import _store_local_plan

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)

UTC = dt.UTC
WHEN = dt.datetime(2026, 3, 4, 5, 6, 7, 890123)

# (value written, value read back): the table docs/run-store.md shows
ROUND_TRIPS: list[Any] = [
    pytest.param({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2]}, id="dict"),
    pytest.param([1, "x", None], [1, "x", None], id="list"),
    pytest.param("text", "text", id="str"),
    pytest.param(2**62, 2**62, id="int"),
    pytest.param(1.5, 1.5, id="float"),
    pytest.param(True, True, id="bool"),
    pytest.param(None, None, id="none"),
    pytest.param(b"\x00\xffraw", b"\x00\xffraw", id="bytes"),
    pytest.param(np.array([[1, 2], [3, 4]]), [[1, 2], [3, 4]], id="numpy-array"),
    pytest.param(np.array([0.5, 1.5], dtype=np.float32), [0.5, 1.5], id="numpy-float32"),
    pytest.param(np.int64(7), 7, id="numpy-scalar"),
    pytest.param(WHEN, WHEN, id="datetime"),
    pytest.param(WHEN.replace(tzinfo=UTC), WHEN.replace(tzinfo=UTC), id="datetime-aware"),
    pytest.param(WHEN.date(), WHEN.date(), id="date"),
    pytest.param(WHEN.time(), WHEN.time(), id="time"),
    pytest.param(dt.timedelta(seconds=90.5), dt.timedelta(seconds=90.5), id="timedelta"),
    pytest.param(Decimal("1.10"), Decimal("1.10"), id="decimal"),
    pytest.param((1, "a"), [1, "a"], id="tuple"),
    pytest.param(frozenset({3}), [3], id="frozenset"),
    pytest.param({1: "a", 2: "b"}, {1: "a", 2: "b"}, id="int-keys"),
    pytest.param({"$rayorch": "bytes", "v": "AA=="}, {"$rayorch": "bytes", "v": "AA=="}, id="tag"),
    pytest.param(
        {"when": WHEN, "raw": [b"ab", np.arange(3)], "meta": {"ok": True, "n": None}},
        {"when": WHEN, "raw": [b"ab", [0, 1, 2]], "meta": {"ok": True, "n": None}},
        id="nested-mix",
    ),
]


def _roundtrip(tmp_path: Path, values: list[Any]) -> list[Any]:
    store = RunStore(str(tmp_path))
    store.write_outputs("r", 0, "out", 0, [("present", None, v) for v in values])
    store.commit_microbatch("r", 0, {"state": "success"})
    return [r["value"] for r in store.read_outputs("r")]


def _same(got: Any, want: Any) -> bool:
    """Equal and of the same types all the way down (1 is not 1.0, bytes is not str)."""
    return repr(got) == repr(want)


@pytest.mark.parametrize(("value", "expected"), ROUND_TRIPS)
def test_a_column_of_one_type_round_trips(tmp_path: Path, value: Any, expected: Any) -> None:
    got = _roundtrip(tmp_path, [value, value])
    assert _same(got, [expected, expected]), got


@pytest.mark.parametrize(("value", "expected"), ROUND_TRIPS)
def test_a_value_round_trips_beside_values_of_other_types(
    tmp_path: Path, value: Any, expected: Any
) -> None:
    """Mixed types make the column JSON: every documented type survives that too."""
    got = _roundtrip(tmp_path, [value, "other", 3])
    assert _same(got, [expected, "other", 3]), got


def test_a_value_the_store_cannot_hold_is_refused_not_stored_as_its_repr(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    rows = [("present", None, {"ok": 1}), ("present", None, {"bad": [Weird()]})]
    with pytest.raises(StoreError) as err:
        store.write_outputs("r", 0, "out", 0, rows)
    message = str(err.value)
    assert "tests.unit.runs.pipelines.Weird" in message
    assert "['bad'][0]" in message
    assert "object at 0x" not in message


CAUSE = (
    "doc[1]: output value of type tests.unit.runs.pipelines.Weird cannot be stored "
    "(neither Parquet nor JSON can encode it)"
)


def test_an_unstorable_output_fails_its_source_and_the_counts_agree(tmp_path: Path) -> None:
    store = _store_local_plan(tmp_path, "tests.unit.runs.pipelines:Weirdo", list(range(3)))
    summary = driver.run_plan(store, "run")
    rows = store.read_outputs("run")
    assert [r["outcome"] for r in rows] == ["present", "failed", "present"]
    assert rows[1]["value"] is None
    assert rows[1]["cause"].startswith(CAUSE)
    assert "return dict/list/str/int/float/bool/None" in rows[1]["cause"]
    assert all("object at 0x" not in str(r["value"]) for r in rows)
    manifest = plain(store.manifest_record("run", 0))
    assert manifest is not None
    for record in (manifest, summary, plain(store.run_manifest_record("run"))):
        assert record is not None
        assert record["sources"] == {
            "total": 3,
            "present": 2,
            "dropped": 0,
            "failed": 1,
            "suppressed": 0,
        }
        assert record["state"] == "failed"  # max_failed_ratio 0: the verdict sees it
        assert [f["source"] for f in record["failures"]] == [1]
        assert record["failures"][0]["cause"].startswith(CAUSE)
    assert manifest["outputs"]["rows"] == 2


def test_the_failed_ratio_verdict_counts_unstorable_values(tmp_path: Path) -> None:
    spec = "tests.unit.runs.pipelines:Weirdo"
    store = _store_local_plan(tmp_path, spec, list(range(4)), max_failed_ratio=0.25)
    assert driver.run_plan(store, "run")["state"] == "success"  # 1 of 4 is within 0.25


def test_an_unstorable_value_on_one_port_fails_the_source_on_every_port(tmp_path: Path) -> None:
    store = _store_local_plan(
        tmp_path, "tests.unit.runs.pipelines:TwoPortsOneWeird", list(range(4))
    )
    summary = driver.run_plan(store, "run")
    ports = plain(store.manifest_record("run", 0))["outputs"]["ports"]  # type: ignore[index]
    for port in ports:
        outcomes = [r["outcome"] for r in store.read_outputs("run", port)]
        assert outcomes == ["present", "present", "failed", "present"], port
    assert summary["sources"]["failed"] == 1
    assert summary["sources"]["present"] == 3


def test_the_unstorable_error_survives_a_pickle_round_trip() -> None:
    import pickle

    from airflow_provider_rayorch.runs.values import UnstorableValue

    error = UnstorableValue("mod.Weird", "['a'][0]")
    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again, StoreError)
    assert str(again) == str(error)
    assert (again.type_name, again.where) == ("mod.Weird", "['a'][0]")


def test_a_repair_that_returns_an_unstorable_value_keeps_the_source_failed(tmp_path: Path) -> None:
    """The repair path fails such a source too, and its manifest agrees with its rows."""
    store = _store_local_plan(tmp_path, "tests.unit.runs.pipelines:Weirdo", list(range(3)))
    driver.run_plan(store, "run")
    [manifest] = driver.repair_plan(store, "run", "0")
    assert manifest["attempt"] == 2
    assert manifest["sources"]["failed"] == 1
    assert manifest["sources"]["present"] == 2
    assert manifest["state"] == "failed"
    assert [f["source"] for f in manifest["failures"]] == [1]
    assert manifest["failures"][0]["cause"].startswith(CAUSE)
    assert manifest["attempts"][-1]["sources"]["failed"] == 1
    rows = store.read_outputs("run")
    assert [r["outcome"] for r in rows] == ["present", "failed", "present"]
    assert rows[1]["cause"].startswith(CAUSE)
    assert [r["value"] for r in rows if r["outcome"] == "present"] == [{"x": 0}, {"x": 2}]
