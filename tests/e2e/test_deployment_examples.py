"""The example DAGs on a real deployment. The
scheduler runs them on the LocalExecutor, deferred sensors wait in the real triggerer,
and everything is driven and read through the REST API. The processes run under a
user ``HOME`` where Ray has already written ``~/.ray/auth_token``, with no ``RAY_*``
variable set by hand.

Every run of this module is triggered at once (``example_runs``): the scheduler runs
``rayorch_minimal``, ``rayorch_ingest``, ``rayorch_documents``, ``rayorch_video`` and
``rayorch_gated`` side by side, and each test waits for its own run and checks it.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from e2e_helpers import heads_of, live_members
from e2e_runs import (
    all_task_logs,
    assert_no_secret,
    failure_digest,
    finish_run,
    log_files,
    ray_secrets,
    start_runs,
)
from load import cpu_burners

from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import RunStore, read_summary_outputs
from airflow_provider_rayorch.workloads.samples import SAMPLE_DOCUMENTS, SAMPLE_VIDEOS

if TYPE_CHECKING:
    from collections.abc import Iterator

    from deployment import Deployment
    from rest import AirflowRest

pytestmark = [pytest.mark.slow]

#: A run waits beside the module's four others and two CPU burners on two shared cores.
CONCURRENT_RUN_DEADLINE_S = 720


def _land_files(landing: Path, start: datetime) -> None:
    """10 text files modified inside the interval (file 6 has an unreadable page) and
    one older file outside it."""
    inside = (start + timedelta(minutes=30)).timestamp()
    for i in range(10):
        path = landing / f"doc{i:02d}.txt"
        path.write_text(f"page one of {i}\fpage two" + (" POISON" if i == 6 else ""))
        os.utime(path, (inside, inside))
    stale = landing / "old.txt"
    stale.write_text("landed long ago")
    outside = (start - timedelta(hours=2)).timestamp()
    os.utime(stale, (outside, outside))


def assert_the_shared_head(deployment: Deployment, head: dict[str, Any]) -> None:
    """``head`` (a ``ray_head`` task's XCom) is the deployment's one shared head, still up
    after the run: the examples triggered together all ran on it (``deployment.stop``
    stops it with the session)."""
    from airflow_provider_rayorch.common import local_heads

    with heads_of(deployment):
        shared = local_heads.read_shared()
        started = local_heads.started_heads(local_heads.SHARED_KEY)
    assert shared is not None, "no shared head is recorded in the deployment's heads dir"
    assert (head["pgid"], head["address"]) == (shared["pgid"], shared["address"])
    assert [h.pgid for h in started] == [shared["pgid"]], "more than one shared head started"
    assert live_members(int(head["pgid"])) != []


def _gates(deployment: Deployment) -> dict[str, str]:
    """``rayorch_gated``'s gate files: microbatch 0's, and the other microbatches'."""
    return {
        "first_gate": str(deployment.landing / "gate-first-open"),
        "gate": str(deployment.landing / "gate-open"),
    }


@pytest.fixture(scope="module")
def busy_machine() -> Iterator[None]:
    """Two CPU-burning processes for the whole module: the loopback-head examples
    (``rayorch_ingest``, ``rayorch_documents``) start their head on a busy machine,
    where users run ``local_head=True``."""
    with cpu_burners():
        yield


@pytest.fixture(scope="module")
def example_runs(
    busy_machine: None, airflow_deployment: Deployment, airflow_rest: AirflowRest
) -> dict[str, str]:
    """One run of each example DAG (and of ``rayorch_gated``), all triggered together,
    beside two CPU burners: ``{dag_id: run_id}``. ``rayorch_ingest``'s is the run of
    the hour before the last complete one, as the scheduler makes an hour's run, over
    files landed in that hour: never the hour whose run the scheduler itself creates
    once another test unpauses the DAG, so the modules may run in any order."""
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    start = end - timedelta(hours=1)
    _land_files(airflow_deployment.landing, start)
    return start_runs(
        airflow_rest,
        {
            "rayorch_gated": {"conf": _gates(airflow_deployment)},
            "rayorch_minimal": {},
            "rayorch_ingest": {
                "logical_date": start.isoformat(),
                "data_interval": (start.isoformat(), end.isoformat()),
            },
            "rayorch_documents": {},
            "rayorch_video": {},
        },
    )


def _finished(rest: AirflowRest, runs: dict[str, str], dag_id: str) -> tuple[str, Any]:
    run_id = runs[dag_id]
    return run_id, finish_run(rest, dag_id, run_id, CONCURRENT_RUN_DEADLINE_S)


def trigger_logs(deployment: Deployment, dag_id: str, run_id: str, task_id: str) -> dict[str, str]:
    """``{map_index=N: text}`` of the trigger logs the triggerer wrote for a task."""
    found: dict[str, str] = {}
    folder = deployment.airflow_home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
    for path in (folder / f"task_id={task_id}").glob("map_index=*/*.trigger.*.log"):
        found[path.parent.name] = found.get(path.parent.name, "") + path.read_text()
    return found


# First in the module: its job holds every microbatch until this test opens the gates.
@pytest.mark.timeout(1200)  # includes starting the deployment (first test to use it)
def test_microbatch_sensors_defer_to_the_real_triggerer(
    airflow_deployment, airflow_rest, example_runs
) -> None:
    """A job that commits nothing until a gate opens: each mapped sensor defers, and its
    trigger fires in the triggerer process when its microbatch commits. Microbatch 0 has
    a gate of its own: its task succeeds while the job still holds the others (the
    microbatch's task ends when it commits, not when the job ends)."""
    dag_id, rest = "rayorch_gated", airflow_rest
    run_id, gates = example_runs[dag_id], _gates(airflow_deployment)
    mb = "docs.microbatch"

    def states() -> dict[tuple[str, int], str]:
        tis = rest.task_instances(dag_id, run_id)
        if {"failed", "upstream_failed"} & {ti["state"] for ti in tis.values()}:
            raise AssertionError(failure_digest(rest, dag_id, run_id))
        return {key: ti["state"] for key, ti in tis.items()}

    def all_deferred() -> bool:
        got = states()
        return [got.get((mb, i)) for i in range(3)] == ["deferred"] * 3

    rest.wait(all_deferred, CONCURRENT_RUN_DEADLINE_S, "the three microbatch sensors to defer")
    # opened at once: the triggers end their tasks themselves, so no "state mismatch"
    # can fail a sensor whose trigger fires seconds after it deferred (test_deferral.py)
    Path(gates["first_gate"]).write_text("open")

    def first_committed() -> dict[tuple[str, int], str] | None:
        got = states()
        return got if got[(mb, 0)] == "success" else None

    held = rest.wait(first_committed, 300, "microbatch 0's sensor to succeed")
    # the job still holds microbatches 1 and 2: their sensors and the run's wait on
    assert [held[(mb, 1)], held[(mb, 2)]] == ["deferred", "deferred"], held
    assert held[("docs.run", -1)] not in ("success", "failed"), held
    Path(gates["gate"]).write_text("open")
    run = rest.wait_for_run(dag_id, run_id, 300)
    assert run["state"] == "success", failure_digest(rest, dag_id, run_id)
    tis = rest.task_instances(dag_id, run_id)
    for i in range(3):
        assert tis[(mb, i)]["state"] == "success"
        summary = rest.xcom(dag_id, run_id, mb, map_index=i)
        assert (summary["state"], summary["sources"]["present"]) == ("success", 4)
    fired = trigger_logs(airflow_deployment, dag_id, run_id, mb)
    assert sorted(fired) == [f"map_index={i}" for i in range(3)], airflow_deployment.logs()
    assert all("Trigger fired event" in text for text in fired.values()), fired


@pytest.mark.timeout(900)
def test_minimal_example_through_the_scheduler(
    airflow_deployment, airflow_rest, example_runs
) -> None:
    """The README's smoke job: no connection, an embedded local Ray in the worker."""
    dag_id = "rayorch_minimal"
    run_id, tis = _finished(airflow_rest, example_runs, dag_id)
    assert tis[("prepare_docs", -1)]["state"] == "success"
    summary = airflow_rest.xcom(dag_id, run_id, "prepare_docs")
    assert summary["state"] == "success"
    assert summary["sources"] == {
        "total": 48,
        "present": 47,
        "dropped": 0,
        "failed": 0,
        "suppressed": 1,
    }
    assert summary["failures"] == [
        {"source": 7, "outcome": "suppressed", "cause": "doc[7]/page[3]: unreadable page"}
    ]
    # the outputs are in the run store the task names, one row per source, in order
    store = airflow_rest.xcom(dag_id, run_id, "prepare_docs", key="rayorch_run_store")
    rayorch_run = airflow_rest.xcom(dag_id, run_id, "prepare_docs", key="rayorch_run_id")
    assert store.startswith(str(airflow_deployment.airflow_home))
    # without a connection the runs go to $AIRFLOW_HOME/rayorch/runs, named by the task
    assert Path(store) == airflow_deployment.airflow_home / "rayorch" / "runs"
    assert rayorch_run.startswith("rayorch_minimal.prepare_docs.")
    rows = RunStore(store).read_outputs(rayorch_run)
    assert [r["source"] for r in rows] == list(range(48))
    assert [r["outcome"] for r in rows].count("present") == 47
    assert rows[0]["value"]["pages"] == 1
    assert [m["index"] for m in summary["microbatches"]] == list(range(6))
    # the summary is the run manifest plus the Airflow-side state and the job's status
    manifest = plain(RunStore(store).run_manifest_record(rayorch_run))
    assert manifest is not None
    assert summary == manifest | {
        "state": "success",
        "job_status": "SUCCEEDED",
    }
    assert (Path(store) / rayorch_run / "report.html").is_file()  # the driver's HTML report
    logs = all_task_logs(airflow_rest, dag_id, run_id)
    assert "48 sources, 47 present, 0 dropped, 0 failed, 1 suppressed" in logs
    xcoms = repr(airflow_rest.xcoms(dag_id, run_id))
    assert_no_secret(ray_secrets(airflow_deployment), task_logs=logs, xcom=xcoms)


@pytest.mark.timeout(900)
def test_ingest_example_through_the_scheduler_and_triggerer(
    airflow_deployment, airflow_rest, example_runs
) -> None:
    """The per-microbatch pattern: loopback head (setup/teardown), submit, mapped
    deferrable microbatch sensors, the run sensor, a reader task. (Whether a sensor
    defers depends on how fast the job commits; the gated test above makes them.)"""
    dag_id = "rayorch_ingest"
    run_id, tis = _finished(airflow_rest, example_runs, dag_id)
    xcom = lambda task, **kw: airflow_rest.xcom(dag_id, run_id, task, **kw)  # noqa: E731
    assert xcom("ingest.submit") == [
        {"index": 0, "first_source": 0, "count": 4},
        {"index": 1, "first_source": 4, "count": 4},
        {"index": 2, "first_source": 8, "count": 2},
    ]
    labels = ["mb 0: sources 0-3", "mb 1: sources 4-7", "mb 2: sources 8-9"]
    for i, label in enumerate(labels):
        ti = tis[("ingest.microbatch", i)]
        assert (ti["state"], ti["rendered_map_index"]) == ("success", label), failure_digest(
            airflow_rest, dag_id, run_id
        )
        summary = xcom("ingest.microbatch", map_index=i)
        assert summary["state"] == "success"
        assert summary["microbatch"]["index"] == i
        bad = 1 if i == 1 else 0
        assert summary["sources"]["present"] == summary["microbatch"]["count"] - bad
        assert [f["source"] for f in summary["failures"]] == ([6] if bad else [])
        # each microbatch summary reads its own committed rows back from the run store
        rows = read_summary_outputs(summary)
        assert [r["source"] for r in rows] == list(range(4 * i, 4 * i + len(rows)))
    run = xcom("ingest.run")
    assert run["state"] == "success"
    assert run["sources"] == {"total": 10, "present": 9, "dropped": 0, "failed": 0, "suppressed": 1}
    assert [m["state"] for m in run["microbatches"]] == ["success"] * 3
    assert xcom("report") == {"documents": 9, "words": 9 * 6}
    rows = read_summary_outputs(run)
    assert [r["source"] for r in rows] == list(range(10))
    assert rows[6]["outcome"] == "suppressed"
    assert str(rows[0]["value"]["markdown"]).startswith("page one of 0")
    # the run found the machine's shared head, the one every run started with it uses
    head = xcom("ingest.ray_head")
    assert ("ingest.stop_ray_head", -1) not in tis
    assert_the_shared_head(airflow_deployment, head)
    # clearing one mapped microbatch (dry run) targets it and what runs after it only
    cleared = airflow_rest.clear(dag_id, run_id, [("ingest.microbatch", 1)], dry_run=True)
    targets = {(t["task_id"], t["map_index"]) for t in cleared}
    assert {("ingest.microbatch", 1), ("ingest.run", -1), ("report", -1)} <= targets
    assert not {("ingest.microbatch", 0), ("ingest.microbatch", 2)} & targets
    logs = all_task_logs(airflow_rest, dag_id, run_id)
    xcoms = repr(airflow_rest.xcoms(dag_id, run_id))
    assert_no_secret(
        ray_secrets(airflow_deployment, head),
        task_logs=logs,
        xcom=xcoms,
        log_files=log_files(airflow_deployment),
    )


def squash(text: str) -> str:
    """Lower case without spaces: OCR may join or split words at spaces."""
    return re.sub(r"\s+", "", text).lower()


@pytest.mark.timeout(900)
def test_documents_example_through_the_scheduler_and_triggerer(
    airflow_deployment, airflow_rest, example_runs
) -> None:
    """The README's main job: the sample PDFs through OCR, one mapped task per
    microbatch on a loopback head; the corrupt PDF fails with its cause, tolerated."""
    dag_id, rest = "rayorch_documents", airflow_rest
    run_id, tis = _finished(rest, example_runs, dag_id)
    xcom = lambda task, **kw: rest.xcom(dag_id, run_id, task, **kw)  # noqa: E731
    names = sorted(SAMPLE_DOCUMENTS)  # the sources glob lists files sorted
    corrupt = names.index("corrupt.pdf")
    # the cause names the source, the file and PDFium's words
    (failure,) = xcom("documents.run")["failures"]
    cause = failure["cause"]
    assert cause.startswith(f"doc[{corrupt}]: corrupt.pdf: corrupt or not a PDF ("), cause
    assert xcom("documents.submit") == [
        {"index": 0, "first_source": 0, "count": 2},
        {"index": 1, "first_source": 2, "count": 2},
    ]
    for i, label in enumerate(["mb 0: sources 0-1", "mb 1: sources 2-3"]):
        ti = tis[("documents.microbatch", i)]
        assert (ti["state"], ti["rendered_map_index"]) == ("success", label), failure_digest(
            rest, dag_id, run_id
        )
        summary = xcom("documents.microbatch", map_index=i)
        assert summary["state"] == "success"
        assert summary["microbatch"] == {"index": i, "first_source": 2 * i, "count": 2}
        bad = summary["failures"]
        assert bad == (
            [{"source": corrupt, "outcome": "failed", "cause": cause}] if corrupt // 2 == i else []
        )
        assert summary["sources"]["present"] == 2 - len(bad)
    run = xcom("documents.run")
    assert run["state"] == "success"
    assert run["sources"] == {"total": 4, "present": 3, "dropped": 0, "failed": 1, "suppressed": 0}
    assert run["failures"] == [{"source": corrupt, "outcome": "failed", "cause": cause}]
    assert [m["state"] for m in run["microbatches"]] == ["success", "success"]

    out = xcom("publish")
    docs = {Path(d["file"]).name: d for d in out["documents"]}
    assert sorted(docs) == sorted(n for n, pages in SAMPLE_DOCUMENTS.items() if pages)
    # the multi-page PDF: every page's recognized words, in page order
    pages = SAMPLE_DOCUMENTS["annual-report.pdf"]
    assert pages is not None
    report = docs["annual-report.pdf"]
    assert report["pages"] == len(pages) == 3
    assert [squash(p["text"]) for p in report["page_texts"]] == [
        squash("".join(lines)) for lines in pages
    ]
    # the blank page is skipped, its document still PRESENT
    memo = docs["memo-with-blank-page.pdf"]
    assert (memo["pages"], memo["skipped_pages"]) == (2, [2])
    assert squash(memo["text"]) == squash("Team memo Meeting on Friday")
    assert squash(docs["invoice.pdf"]["text"]) == squash("Invoice 4711 Total due 120 EUR")
    # the corrupt file, named by its file, with its cause
    (failure,) = out["failures"]
    assert Path(failure["file"]).name == "corrupt.pdf"
    assert (failure["source"], failure["outcome"], failure["cause"]) == (corrupt, "failed", cause)
    # kept outputs: markdown per document, the run's Parquet outputs and its report
    for name, doc in docs.items():
        markdown = Path(doc["markdown"])
        assert markdown.parent == Path(out["markdown_dir"])
        assert markdown.read_text() == doc["text"] + "\n", name
    assert sorted(p.name for p in Path(out["outputs"]).glob("mb-*")) == ["mb-00000", "mb-00001"]
    assert cause in Path(out["report"]).read_text()
    assert Path(out["run_dir"]).is_relative_to(airflow_deployment.airflow_home)
    # what the user reads in the publish task's log
    published = rest.task_log(dag_id, run_id, "publish")
    assert f"corrupt.pdf: failed: {cause}" in published
    assert f"report: {out['report']}" in published
    # the run found the machine's shared head, the one every run started with it uses
    head = xcom("documents.ray_head")
    assert ("documents.stop_ray_head", -1) not in tis
    assert_the_shared_head(airflow_deployment, head)
    assert_no_secret(
        ray_secrets(airflow_deployment, head),
        task_logs=all_task_logs(rest, dag_id, run_id),
        xcom=repr(rest.xcoms(dag_id, run_id)),
        log_files=log_files(airflow_deployment),
    )


@pytest.mark.timeout(900)
def test_video_example_through_the_scheduler(
    airflow_deployment, airflow_rest, example_runs
) -> None:
    """Generated clips split at their cuts on an embedded Ray: one record per kept
    clip, in time order, the still shot dropped."""
    dag_id, rest = "rayorch_video", airflow_rest
    run_id, tis = _finished(rest, example_runs, dag_id)
    assert tis[("clips", -1)]["state"] == "success"
    summary = rest.xcom(dag_id, run_id, "clips")
    assert summary["state"] == "success"
    out = rest.xcom(dag_id, run_id, "clip_records")
    assert out["sources"]["present"] == len(SAMPLE_VIDEOS)
    assert out["sources"] == summary["sources"]
    assert out["failures"] == []
    by_video: dict[str, list[dict[str, Any]]] = {}
    for clip in out["clips"]:
        by_video.setdefault(Path(clip["video"]).name, []).append(clip)
    assert sorted(by_video) == sorted(SAMPLE_VIDEOS)
    for name, clips in by_video.items():
        for clip in clips:
            assert 0 <= clip["start_s"] <= clip["keyframe_s"] <= clip["end_s"], (name, clip)
        for a, b in pairwise(clips):
            assert a["end_s"] <= b["start_s"], (name, clips)
    approx = pytest.approx
    spans = {
        name: [(c["clip"], c["start_s"], c["end_s"]) for c in clips]
        for name, clips in by_video.items()
    }
    assert spans["three-shots.mp4"] == [
        (0, 0.0, approx(1.0, abs=0.1)),
        (2, approx(2.0, abs=0.1), approx(3.0, abs=0.1)),
    ]
    assert spans["two-shots.mp4"] == [
        (0, 0.0, approx(1.5, abs=0.1)),
        (1, approx(1.5, abs=0.1), approx(2.5, abs=0.1)),
    ]
    assert Path(out["report"]).is_file()
    assert Path(out["outputs"]).is_relative_to(airflow_deployment.airflow_home)
    log = rest.task_log(dag_id, run_id, "clip_records")
    assert "two-shots.mp4 clip 1: " in log
    assert_no_secret(
        ray_secrets(airflow_deployment),
        task_logs=all_task_logs(rest, dag_id, run_id),
        xcom=repr(rest.xcoms(dag_id, run_id)),
    )
