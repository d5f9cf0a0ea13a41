"""The work every variant of the Airflow-path benchmark does, and its inputs.

Text documents whose pages are separated by form feeds, prepared by
``rayorch_example_pipelines.TextDocPipeline`` (split into pages, recognize each
page, assemble per document). :func:`prepare_with_ray_data` is the same work written
the way a user without this provider would: a plain ``@task`` that connects to the
Ray cluster and runs Ray Data with the pipeline's own ``Recognize`` and ``Assemble``
code, either a batch of whole documents at a time (``read_binary_files`` ->
``map_batches`` -> ``write_parquet``) or, with ``gather=True``, page by page as the
pipeline does: ``flat_map`` into pages, ``map_batches`` over pages, ``groupby`` on the
document and ``map_groups`` assembling each document's pages in order.
Imported by the benchmark DAGs' tasks and by Ray Data's workers (the repository and
``dags_examples`` are on both paths).
"""

from __future__ import annotations

import glob
import os
import time
from typing import Any

__all__ = ["output_folder", "prepare_with_ray_data", "write_documents"]


def document_text(i: int) -> str:
    """Document ``i``: 1 to 4 pages of a few words, separated by form feeds."""
    pages = [f"document {i} page {p}: " + "lorem ipsum " * (p + 1) for p in range(1 + i % 4)]
    return "\f".join(pages)


def write_documents(folder: str, n: int, *, prefix: str = "doc") -> list[str]:
    """Write ``n`` documents as ``<folder>/<prefix>-NNN.txt``; returns their paths."""
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(n):
        path = os.path.join(folder, f"{prefix}-{i:03d}.txt")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(document_text(i))
        paths.append(path)
    return paths


def output_folder(root: str, dag_id: str, run_id: str) -> str:
    """Where a Ray Data task of DAG ``dag_id`` writes its run's files."""
    return os.path.join(root, dag_id, "".join(c if c.isalnum() else "_" for c in run_id))


def _prepare_batch(batch: dict[str, Any]) -> dict[str, Any]:
    """Split, recognize and assemble a batch of documents (the pipeline's stage code)."""
    from rayorch_example_pipelines import Assemble, Recognize

    recognize, assemble = Recognize(), Assemble()
    docs = [bytes(b).decode("utf-8").split("\f") for b in batch["bytes"]]
    records = assemble.run([recognize.run(pages) for pages in docs])
    return {
        "source": list(batch["path"]),
        "markdown": [r["markdown"] for r in records],
        "pages": [r["pages"] for r in records],
        "words": [r["words"] for r in records],
    }


def _pages(row: dict[str, Any]) -> list[dict[str, Any]]:
    """One document's pages as rows: its path, the page's ordinal and text."""
    pages = bytes(row["bytes"]).decode("utf-8").split("\f")
    return [{"doc": row["path"], "ordinal": k, "page": p} for k, p in enumerate(pages)]


def _recognize_pages(batch: dict[str, Any]) -> dict[str, Any]:
    """Recognize a batch of pages (the pipeline's ``Recognize``), keeping their keys."""
    from rayorch_example_pipelines import Recognize

    records = Recognize().run([str(p) for p in batch["page"]])
    return {
        "doc": list(batch["doc"]),
        "ordinal": list(batch["ordinal"]),
        "text": [r["text"] for r in records],
        "words": [r["words"] for r in records],
    }


def _assemble_document(group: dict[str, Any]) -> dict[str, Any]:
    """One document's recognized pages, in page order, assembled into its record."""
    from rayorch_example_pipelines import Assemble

    order = sorted(range(len(group["ordinal"])), key=lambda k: int(group["ordinal"][k]))
    pages = [{"text": str(group["text"][k]), "words": int(group["words"][k])} for k in order]
    record = Assemble().run([pages])[0]
    return {
        "source": [group["doc"][0]],
        "markdown": [record["markdown"]],
        "pages": [record["pages"]],
        "words": [record["words"]],
    }


def prepare_with_ray_data(
    source_glob: str, out_dir: str, *, address: str | None, token_path: str | None,
    gather: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """What a user writes in a ``@task``: ``ray.init`` (the cluster's address, its
    token), then Ray Data over the files (``gather``: page by page, gathered per
    document with ``groupby``); returns the driver's Ray job id (Ray's job table has
    its start time) and how many documents were written."""
    import ray

    if token_path:  # the cluster runs in token mode
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN_PATH"] = token_path
    ray.init(address=address or None)
    try:
        job_id = ray.get_runtime_context().get_job_id()
        paths = sorted(glob.glob(source_glob))
        ds = ray.data.read_binary_files(paths, include_paths=True)
        if gather:
            ds = ds.flat_map(_pages)
            ds = ds.map_batches(_recognize_pages, batch_size=8, batch_format="numpy")
            ds = ds.groupby("doc").map_groups(_assemble_document, batch_format="numpy")
        else:
            ds = ds.map_batches(_prepare_batch, batch_size=8)
        ds.write_parquet(out_dir)
        return {"ray_job_id": job_id, "documents": len(paths), "written_at": time.time()}
    finally:
        ray.shutdown()
