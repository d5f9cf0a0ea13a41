"""The cost of isolating by default: a raising page, isolated now vs blamed on its batch.

    python -m benchmarks.isolation_cost --docs 200 --pages 8 --every 20 --rounds 3

Documents of ``--pages`` pages each; page 1 of every ``--every``-th document raises
on every try. The page Call keeps the default RecoveryPolicy (``retry_batch(1)``),
batch 16 on 2 replicas, and sleeps ``--row-ms`` per page. On one warm Executor,
runs alternate between two variants:

- ``isolate``: the engine as it is (once the retry is spent, the batch is split,
  each part pinned ahead, until the raising page FAILS alone);
- ``blame``: the rule it replaced, patched into the driver's core for that run
  only (once the retry is spent, every page of the batch FAILS with the exception).

Per variant: wall seconds (median of the rounds), the page Call's batches (rpcs)
and page dispatches, and the sources PRESENT. ``--backend local`` counts the same
dispatches in-process, without Ray and without sleeping.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from typing import TYPE_CHECKING, Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.program.options import RecoveryKind
from airflow_provider_rayorch.rayorch.runtime import core as core_module
from airflow_provider_rayorch.rayorch.runtime.recovery import Decision
from benchmarks.local_ray import init_own_ray

if TYPE_CHECKING:
    from collections.abc import Iterator

    from airflow_provider_rayorch.rayorch.runtime.lineage import Grain

VARIANTS = ("isolate", "blame")


def blame_batch(
    policy: ro.RecoveryPolicy, grains: list[Grain], *, alone: bool | None = None
) -> Decision:
    """The rule before isolation, for ``retry_batch``: retry the same batch at once
    while retries are left, then FAIL every Grain whose retries are spent."""
    assert policy.kind is RecoveryKind.RETRY_BATCH, policy
    fresh = [g for g in grains if g.retries < policy.max_retries]
    for grain in fresh:
        grain.retries += 1
    spent = [g for g in grains if g not in fresh]
    return Decision(pinned_front=[fresh] if fresh else [], fail=spent)


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """Run the driver's core under ``name``'s recovery rule."""
    if name == "isolate":
        yield
        return
    original = core_module.decide_after_exception
    core_module.decide_after_exception = blame_batch
    try:
        yield
    finally:
        core_module.decide_after_exception = original


class Pages:
    def run(self, docs: list[list[str]]) -> list[list[str]]:
        return docs


class SlowPage:
    """Sleeps ``row_s`` per page; the batch raises when one of its pages is poisoned."""

    def __init__(self, row_s: float) -> None:
        self.row_s = row_s

    def run(self, pages: list[str]) -> list[int]:
        if self.row_s:
            time.sleep(self.row_s * len(pages))
        for page in pages:
            if page.endswith("!"):
                raise RuntimeError(f"page {page} raised")
        return [len(page) for page in pages]


class Documents(ro.Pipeline):
    def __init__(self, row_s: float, batch_size: int, replicas: int) -> None:
        self.pages = ro.RayModule(Pages).ray_options(batch_size=32)
        self.page = (
            ro.RayModule(SlowPage)
            .pre_init(row_s)
            .ray_options(replicas=replicas, batch_size=batch_size, num_cpus=0.5)
        )

    def forward(self, doc: ro.Port) -> ro.Port:
        return ro.F.reduce(self.page(ro.F.expand(self.pages(doc), domain="page")))


def make_docs(docs: int, pages: int, every: int) -> list[list[str]]:
    """Page 1 of every ``every``-th document (counting from 0) ends with ``!``."""
    out = []
    for d in range(docs):
        poisoned = every > 0 and d % every == every - 1 and pages > 1
        out.append([f"d{d}p{p}" + ("!" if poisoned and p == 1 else "") for p in range(pages)])
    return out


def figures(result: ro.RunResult, seconds: float) -> dict[str, Any]:
    page = next(c for c in result.calls if c["name"] == "page")
    present = sum(1 for o in result.outputs if not isinstance(o, ro.OutputIssue))
    return {
        "seconds": round(seconds, 3),
        "page_batches": page["rpcs"],
        "page_dispatches": page["grains_dispatched"],
        "present": present,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    docs = make_docs(args.docs, args.pages, args.every)
    row_s = args.row_ms / 1000 if args.backend == "ray" else 0.0
    pipeline = Documents(row_s, args.batch_size, args.replicas)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    started = False
    if args.backend == "ray":
        import ray

        if not ray.is_initialized():
            init_own_ray()
            started = True
    try:
        with ro.Executor(pipeline, backend=args.backend) as executor:
            executor.run(docs[: args.batch_size])  # start the actors: warm rounds only
            for r in range(args.rounds):
                order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
                for name in order:
                    with variant(name):
                        t0 = time.perf_counter()
                        result = executor.run(docs)
                        runs[name].append(figures(result, time.perf_counter() - t0))
    finally:
        if started:
            import ray

            ray.shutdown()
    report: dict[str, Any] = {"poisoned_docs": sum(1 for d in docs if d[1:2] and d[1][-1] == "!")}
    for name, rounds in runs.items():
        report[name] = {
            "seconds_median": statistics.median(r["seconds"] for r in rounds),
            **{k: [r[k] for r in rounds] for k in rounds[0]},
        }
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--every", type=int, default=20, help="every n-th document raises")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--row-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", choices=("ray", "local"), default="ray")
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = parser.parse_args(argv)
    report = {"args": vars(args), **measure(args)}
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return report


if __name__ == "__main__":
    main()
