"""The report names the actors lost with a batch in flight (a killed node, a crashed
process): ``report.json`` lists them and the page shows them (the node-loss
e2e test, tests/e2e/test_cluster_node_loss.py, checks the same on a real cluster)."""

from __future__ import annotations

from airflow_provider_rayorch.reports.measure import measure
from airflow_provider_rayorch.reports.model import ReportData
from airflow_provider_rayorch.reports.writer import read_report_data, write_run_report

from .conftest import RUN, make_timeline
from .test_report import parse


def _lost(call: str, worker: str, batch: int, t: float) -> list[dict[str, object]]:
    return [
        {"event": "dispatch", "t": t - 1, "call": call, "worker": worker, "batch": batch,
         "size": 2, "queued": 0},
        {"event": "report", "t": t, "call": call, "worker": worker, "batch": batch,
         "busy_s": 0.0, "outcome": "lost"},
    ]  # fmt: skip


def test_actors_lost_with_a_batch_are_listed_once_each_in_order() -> None:
    timeline, calls, timings = make_timeline()
    timeline += _lost("ocr", "w2", 7, 3.0) + _lost("asm", "w3", 8, 3.5) + _lost("ocr", "w2", 9, 3.8)
    data = measure(RUN, timeline, calls, timings)
    assert data.lost_actors == ["ocr \u00b7 w2", "asm \u00b7 w3"]
    assert ReportData.from_json(data.to_json(), "x").lost_actors == data.lost_actors


def test_a_run_without_losses_lists_none_and_old_report_data_still_parses() -> None:
    timeline, calls, timings = make_timeline()
    assert measure(RUN, timeline, calls, timings).lost_actors == []
    old = '{"version": 1, "run_id": "r", "written_at": "2026-01-01T00:00:00+00:00"}'
    assert ReportData.from_json(old, "old").lost_actors == []


def test_the_page_names_the_lost_actors(run_store) -> None:
    timeline, calls, timings = make_timeline()
    timeline += _lost("ocr", "w2", 7, 3.0)
    write_run_report(run_store, RUN, timeline, calls, microbatches=timings)
    stored = read_report_data(run_store, RUN)
    assert stored is not None
    assert stored.lost_actors == ["ocr \u00b7 w2"]
    html = (run_store.fs.open_input_stream(f"{run_store.root}/{RUN}/report.html").read()).decode()
    assert "lost-actors" in parse(html).ids
    assert "ocr \u00b7 w2" in html.split('id="lost-actors"')[1].split("</p>")[0]


def test_no_lost_actors_note_without_losses(run_store) -> None:
    timeline, calls, timings = make_timeline()
    write_run_report(run_store, RUN, timeline, calls, microbatches=timings)
    html = (run_store.fs.open_input_stream(f"{run_store.root}/{RUN}/report.html").read()).decode()
    assert "lost-actors" not in parse(html).ids


def test_the_page_names_the_node_the_lost_actors_ran_on(run_store) -> None:
    """A node that dies loses every actor on it: the report names that node."""
    node = "5f3c0a9e1b2d4c6e8f7a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a at 10.0.0.7"
    timeline, calls, timings = make_timeline()
    for call, worker, batch, t in (("ocr", "w2", 7, 3.0), ("asm", "w3", 8, 3.1)):
        records = _lost(call, worker, batch, t)
        records[1]["node"] = node
        timeline += records
    timeline += _lost("ocr", "w4", 9, 3.5)  # its node unknown (a killed actor)
    write_run_report(run_store, RUN, timeline, calls, microbatches=timings)
    stored = read_report_data(run_store, RUN)
    assert stored is not None
    assert stored.lost_nodes == [f"{node}: ocr \u00b7 w2, asm \u00b7 w3"]
    html = (run_store.fs.open_input_stream(f"{run_store.root}/{RUN}/report.html").read()).decode()
    assert "lost-nodes" in parse(html).ids
    note = html.split('id="lost-nodes"')[1].split("</p>")[0]
    assert node in note
    assert "ocr \u00b7 w2, asm \u00b7 w3" in note
