"""The JSON messages between the suite and ``xenna_runner`` (cosmos-xenna's venv).

The suite writes one ``Request`` to the runner's stdin; the runner writes one
``Reply`` to the file the request names (its stdout and stderr carry Ray's and
Xenna's logs, kept for errors). Both sides import only this module, the
workloads and the standard library.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = ["WORKLOADS", "Reply", "Request", "RunFigures"]

WORKLOADS = ("w1", "w3", "w4")


class Request(TypedDict):
    #: "w1" long-tailed documents, "w3" nested tables, "w4" the no-op fan-out.
    workload: Literal["w1", "w3", "w4"]
    #: ``Workload.as_dict()`` (w1, w3); for w4 ``{"sources": [[...], ...], "batch_size",
    #: "replicas"}``.
    params: dict[str, Any]
    #: Executions after the first ("cold") one, in the same process.
    warm_runs: int
    #: CPUs of the runner's own Ray (it cannot join the suite's: another Python).
    cpus: int
    #: Where the runner writes its ``Reply``.
    reply_path: str


class RunFigures(TypedDict, total=False):
    """One execution. w1: ``Measurement`` fields; w3 and w4: seconds and correctness."""

    mode: str
    e2e_s: float
    correct: bool
    measurement: dict[str, Any]


class Reply(TypedDict):
    versions: dict[str, str]
    #: CPUs each Xenna worker reserves (every stage pinned, all workers fit at once).
    cpu_per_worker: float
    workers: dict[str, int]
    runs: list[RunFigures]
    error: str | None
