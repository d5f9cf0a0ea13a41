"""The work every variant of the Airflow-path benchmark does, and its inputs.

Text documents whose pages are separated by form feeds, prepared by
``rayorch_example_pipelines.TextDocPipeline`` (split into pages, recognize each
page, assemble per document). :func:`prepare_with_ray_data` is the same work written
the way a user without this provider would: a plain ``@task`` that connects to the
Ray cluster and runs Ray Data (``read_binary_files`` -> ``map_batches`` ->
``write_parquet``) with the pipeline's own ``Recognize`` and ``Assemble`` code.
Imported by the benchmark DAGs' tasks and by Ray Data's workers (the repository and
``dags_examples`` are on both paths).
"""

from __future__ import annotations

import glob
import os
import time
from typing import Any

__all__ = ["prepare_with_ray_data", "write_documents"]


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


def prepare_with_ray_data(
    source_glob: str, out_dir: str, *, address: str | None, token_path: str | None
) -> dict[str, Any]:
    """What a user writes in a ``@task``: ``ray.init`` (the cluster's address, its
    token), then Ray Data over the files; returns the driver's Ray job id (Ray's job
    table has its start time) and how many documents were written."""
    import ray

    if token_path:  # the cluster runs in token mode
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN_PATH"] = token_path
    ray.init(address=address or None)
    try:
        job_id = ray.get_runtime_context().get_job_id()
        paths = sorted(glob.glob(source_glob))
        ds = ray.data.read_binary_files(paths, include_paths=True)
        ds = ds.map_batches(_prepare_batch, batch_size=8)
        ds.write_parquet(out_dir)
        return {"ray_job_id": job_id, "documents": len(paths), "written_at": time.time()}
    finally:
        ray.shutdown()
