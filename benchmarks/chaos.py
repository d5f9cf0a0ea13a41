"""Chaos runs: random actor kills during real Ray runs; nothing may be lost or duplicated.

    python -m benchmarks.chaos --runs 50 --sources 60

Each run kills 1 to ``--max-kills`` actors of the page stage at random moments
while a fan-out pipeline runs (expand -> slow page Call -> reduce), then compares
every source's gathered list with the undisturbed result: a missing page is
"lost", an extra one "duplicated", any other difference "mismatched".
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from collections import Counter
from typing import Any

import ray

import airflow_provider_rayorch.rayorch as ro


class Pages:
    def run(self, docs: list[int]) -> list[list[int]]:
        return [list(range(d * 100, d * 100 + 1 + d % 9)) for d in docs]


class SlowPage:
    def __init__(self, delay: float) -> None:
        self.delay = delay

    def run(self, pages: list[int]) -> list[int]:
        time.sleep(self.delay)
        return [p * 3 + 1 for p in pages]


class ChaosPipeline(ro.Pipeline):
    def __init__(self, delay: float = 0.01) -> None:
        self.pages = ro.RayModule(Pages).ray_options(batch_size=4)
        self.page = (
            ro.RayModule(SlowPage)
            .pre_init(delay)
            .ray_options(
                replicas=2,
                batch_size=4,
                recovery=ro.RecoveryPolicy.retry_batch(1, infra_retries=20),
            )
        )

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.page(ro.F.expand(self.pages(doc))))


def compare(expected: list[Any], got: list[Any]) -> Counter[str]:
    tally: Counter[str] = Counter()
    for want, have in zip(expected, got, strict=True):
        if isinstance(have, ro.OutputIssue):
            tally["lost"] += len(want)
            continue
        missing = Counter(want) - Counter(have)
        extra = Counter(have) - Counter(want)
        tally["lost"] += sum(missing.values())
        tally["duplicated"] += sum(extra.values())
        if not missing and not extra and have != want:
            tally["mismatched"] += 1
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--sources", type=int, default=60)
    parser.add_argument("--max-kills", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()

    docs = list(range(args.sources))
    expected = ro.run(ChaosPipeline(0.0), docs, backend="local").outputs
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    totals: Counter[str] = Counter()
    kills = 0
    started = time.perf_counter()
    try:
        with ro.Executor(ChaosPipeline()) as executor:
            backend: Any = executor._backend
            for run in range(args.runs):
                rng = random.Random(args.seed * 100_003 + run)
                stop = threading.Event()
                killed: list[str] = []

                def killer(
                    rng: random.Random = rng,
                    stop: threading.Event = stop,
                    killed: list[str] = killed,
                ) -> None:
                    for _ in range(rng.randint(1, args.max_kills)):
                        if stop.wait(rng.uniform(0.05, 0.8)):
                            return
                        actors = [
                            (k, a)
                            for k, a in list(backend._actors.items())
                            if k.startswith("page#")
                        ]
                        if actors:
                            key, actor = rng.choice(actors)
                            ray.kill(actor, no_restart=True)
                            killed.append(key)

                thread = threading.Thread(target=killer)
                thread.start()
                try:
                    result = executor.run(docs, input_batch_size=15, max_active_input_batches=2)
                finally:
                    stop.set()
                    thread.join()
                kills += len(killed)
                tally = compare(expected, result.outputs)
                totals.update(tally)
                totals["failed_sources"] += sum(
                    isinstance(o, ro.OutputIssue) for o in result.outputs
                )
                print(
                    f"run {run + 1:3}/{args.runs}: kills {len(killed)}, "
                    f"lost {tally['lost']}, duplicated {tally['duplicated']}, "
                    f"mismatched {tally['mismatched']}",
                    flush=True,
                )
    finally:
        ray.shutdown()
    summary = {
        "command": f"python -m benchmarks.chaos --runs {args.runs} --sources {args.sources} "
        f"--max-kills {args.max_kills} --seed {args.seed}",
        "runs": args.runs,
        "kills": kills,
        "lost": totals["lost"],
        "duplicated": totals["duplicated"],
        "mismatched": totals["mismatched"],
        "failed_sources": totals["failed_sources"],
        "seconds": round(time.perf_counter() - started, 1),
        "ray": ray.__version__,
    }
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=2)


if __name__ == "__main__":
    main()
