"""What the document and video example DAGs hand to their users after a run.

Both read the committed outputs of a run back from the run store (through its
lineage summary, opened with the connection's ``run_store_options``, so an
S3-compatible store works too) and name each source by its file instead of its index:
``publish_documents`` writes one markdown file per prepared document beside the
run's outputs and report; ``clip_records`` flattens videos into one record per clip.
Importable on its own (not a DAG file), so tests call these functions directly.
"""

from __future__ import annotations

import os
from typing import Any

from airflow_provider_rayorch.hooks.rayorch import open_run_store
from airflow_provider_rayorch.reports import report_uri
from airflow_provider_rayorch.runs.store import RunStore, read_summary_outputs
from airflow_provider_rayorch.runs.uris import join_uri, store_root_of

__all__ = ["clip_records", "examples_output", "publish_documents", "run_paths"]

#: Set by ``scripts/main-job.sh``: the folder the example DAGs keep their inputs and
#: run store in (``<it>/inputs``, ``<it>/runs``). Unset: ``$AIRFLOW_HOME/rayorch-examples``
#: for the inputs and the connection's run store for the runs.
OUTPUT_ENV = "RAYORCH_EXAMPLES_OUTPUT"


def examples_output() -> tuple[str, str | None]:
    """``(inputs folder, run store URI or None for the connection's)`` of the examples."""
    chosen = os.environ.get(OUTPUT_ENV)
    if chosen:
        root = os.path.abspath(os.path.expanduser(chosen))
        return os.path.join(root, "inputs"), os.path.join(root, "runs")
    home = os.environ.get("AIRFLOW_HOME") or os.path.join(os.path.expanduser("~"), "airflow")
    return os.path.join(home, "rayorch-examples", "inputs"), None


def _store_of(summary: dict[str, Any], conn_id: str | None = None) -> RunStore:
    """The run store ``summary``'s outputs lie in, opened with connection ``conn_id``'s
    ``run_store_options`` (default ``rayorch_default``, as the example DAGs use)."""
    uri, run_id = str(summary["outputs"]["uri"]), str(summary["run_id"])
    root = store_root_of(uri, run_id)
    if root is None:
        raise ValueError(f"outputs URI {uri} is not inside a run {run_id!r} of a run store")
    return open_run_store(root, conn_id)


def _local(uri: str) -> str:
    """A ``file://`` URI as a plain path (what a user pastes into a file browser)."""
    return uri.removeprefix("file://")


def run_paths(summary: dict[str, Any], conn_id: str | None = None) -> dict[str, str]:
    """Where one run's folder, output Parquet files and HTML report are."""
    return _paths(_store_of(summary, conn_id), str(summary["run_id"]))


def _paths(store: RunStore, run_id: str) -> dict[str, str]:
    return {
        "run_dir": _local(store.run_uri(run_id)),
        "outputs": _local(store.outputs_uri(run_id)),
        "report": _local(report_uri(store, run_id)),
    }


def _source_names(store: RunStore, summary: dict[str, Any]) -> list[str]:
    plan = store.read_plan(str(summary["run_id"]))
    return [str(s) for s in plan.rows] if plan is not None else []


def _failures(summary: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "file": names[f["source"]] if f["source"] < len(names) else None,
            "source": f["source"],
            "outcome": f["outcome"],
            "cause": f["cause"],
        }
        for f in summary["failures"]
    ]


def _page_texts(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """``{"page", "text", "skipped"}`` for every page, skipped (blank) ones included."""
    texts = {int(d["page"]): str(d["text"]) for d in doc["page_details"]}
    skipped = set(doc["skipped_pages"])
    return [
        {"page": n, "text": texts.get(n, ""), "skipped": n in skipped}
        for n in range(1, int(doc["pages"]) + 1)
    ]


def publish_documents(summary: dict[str, Any], conn_id: str | None = None) -> dict[str, Any]:
    """Write ``<run dir>/markdown/<name>.md`` per PRESENT document; describe the run.

    Returns the run's paths, one entry per prepared document (its file, page count,
    skipped blank pages, recognized text, per page too, and markdown file) and the
    failures with the file each one names.
    """
    store, run_id = _store_of(summary, conn_id), str(summary["run_id"])
    paths = _paths(store, run_id)
    names = _source_names(store, summary)
    markdown_dir = join_uri(store.run_uri(run_id), "markdown")
    documents = []
    for row in read_summary_outputs(summary, options=store.options):
        if row["outcome"] != "present":
            continue
        doc = row["value"]
        stem = os.path.splitext(os.path.basename(str(doc["source"])))[0]
        data = str(doc["markdown"]).encode("utf-8") + b"\n"
        store.write_bytes((run_id, "markdown", f"{stem}.md"), data)
        documents.append(
            {
                "file": str(doc["source"]),
                "pages": int(doc["pages"]),
                "skipped_pages": list(doc["skipped_pages"]),
                "text": str(doc["markdown"]),
                "page_texts": _page_texts(doc),
                "markdown": _local(join_uri(markdown_dir, f"{stem}.md")),
            }
        )
    return {
        **paths,
        "markdown_dir": _local(markdown_dir),
        "sources": dict(summary["sources"]),
        "documents": documents,
        "failures": _failures(summary, names),
    }


def clip_records(summary: dict[str, Any], conn_id: str | None = None) -> dict[str, Any]:
    """One record per kept clip of every PRESENT video, in video then time order."""
    store = _store_of(summary, conn_id)
    names = _source_names(store, summary)
    clips = []
    for row in read_summary_outputs(summary, options=store.options):
        if row["outcome"] != "present":
            continue
        video = row["value"]
        for clip in video["clips"]:
            clips.append(
                {
                    "video": str(video["source"]),
                    "clip": int(clip["index"]),
                    "start_s": float(clip["start_s"]),
                    "end_s": float(clip["end_s"]),
                    "keyframe_s": float(clip["keyframe_s"]),
                    "motion": float(clip["motion"]),
                }
            )
    return {
        **_paths(store, str(summary["run_id"])),
        "sources": dict(summary["sources"]),
        "clips": clips,
        "failures": _failures(summary, names),
    }
