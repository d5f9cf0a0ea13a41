"""End-to-end Grains per second on Ray: this engine beside the paper's package.

    python -m benchmarks.noop_throughput --sources 2000 --children 50

Both engines run the same no-op pipeline (root no-op Call -> expand -> no-op
Call with batch 256 on 2 replicas -> reduce; Grains/s counts the children) on
the same local Ray, in the same process, alternating over ``--repeats`` rounds.
"cold" includes creating the executor and its actors; "warm" reuses an executor
whose actors are up. The paper's package (``rayorch`` on PyPI) is installed by the
``bench`` extra only.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import time
from typing import TYPE_CHECKING, Any

import ray

from .measure import all_actors_up
from .stream_options import add_stream_options

if TYPE_CHECKING:
    from types import ModuleType


class NoOp:
    """The no-op UDF: each row comes back unchanged."""

    def run(self, items: list[Any]) -> list[Any]:
        return items


def make_pipeline(ro: ModuleType, batch_size: int, replicas: int) -> Any:
    class Fanout(ro.Pipeline):  # type: ignore[name-defined]
        def __init__(self) -> None:
            self.split = ro.RayModule(NoOp).ray_options(
                replicas=1, batch_size=batch_size, num_cpus=0
            )
            self.noop = ro.RayModule(NoOp).ray_options(
                replicas=replicas, batch_size=batch_size, num_cpus=1
            )

        def forward(self, doc: Any) -> Any:
            # The paper's package expands Call outputs only, so a no-op root Call
            # (one Grain per source) comes first, for both engines alike.
            return ro.F.reduce(self.noop(ro.F.expand(self.split(doc))))

    return Fanout()


def measure(ro: ModuleType, sources: list[list[int]], args: argparse.Namespace) -> dict[str, float]:
    grains = sum(len(s) for s in sources)
    pipeline = make_pipeline(ro, args.batch_size, args.replicas)
    t0 = time.perf_counter()
    with ro.Executor(pipeline) as executor:
        result = executor.run(
            sources,
            input_batch_size=args.input_batch_size,
            max_active_input_batches=args.max_active,
        )
        cold = time.perf_counter() - t0
        all_actors_up(executor)
        t1 = time.perf_counter()
        result = executor.run(
            sources,
            input_batch_size=args.input_batch_size,
            max_active_input_batches=args.max_active,
        )
        warm = time.perf_counter() - t1
    assert [list(o) for o in result.outputs] == sources, "outputs differ from inputs"
    return {
        "cold_s": cold,
        "warm_s": warm,
        "cold_grains_per_s": grains / cold,
        "warm_grains_per_s": grains / warm,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_stream_options(parser, sources=2000, input_batch_size=500)
    parser.add_argument("--children", type=int, default=50)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = parser.parse_args()

    engines = {"airflow_provider_rayorch": "airflow_provider_rayorch.rayorch"}
    try:
        peer = importlib.import_module("rayorch")
        engines["rayorch (paper)"] = "rayorch"
        peer_version = getattr(peer, "__version__", "?")
    except ImportError:
        peer_version = None
        print("rayorch (the paper's package) is not installed: pip install -e '.[bench]'")
    sources = [list(range(args.children)) for _ in range(args.sources)]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in engines}
    try:
        for _ in range(args.repeats):
            for name, module in engines.items():
                rounds[name].append(measure(importlib.import_module(module), sources, args))
    finally:
        ray.shutdown()
    grains = args.sources * args.children
    report: dict[str, Any] = {
        "command": "python -m benchmarks.noop_throughput "
        + " ".join(
            f"--{k.replace('_', '-')} {v}"
            for k, v in vars(args).items()
            if k != "json" and v is not None
        ),
        "grains": grains,
        "ray": ray.__version__,
        "rayorch_peer": peer_version,
        "engines": {},
    }
    for name, runs in rounds.items():
        report["engines"][name] = {
            key: round(statistics.median(r[key] for r in runs), 3) for key in runs[0]
        }
    mine = report["engines"]["airflow_provider_rayorch"]
    print(f"{grains:,} Grains, median of {args.repeats} rounds")
    for name, fig in report["engines"].items():
        print(
            f"  {name:<26} cold {fig['cold_s']:6.2f} s ({fig['cold_grains_per_s']:9,.0f} Grains/s)"
            f"   warm {fig['warm_s']:6.2f} s ({fig['warm_grains_per_s']:9,.0f} Grains/s)"
        )
    if "rayorch (paper)" in report["engines"]:
        peer_fig = report["engines"]["rayorch (paper)"]
        for mode in ("cold", "warm"):
            ratio = mine[f"{mode}_grains_per_s"] / peer_fig[f"{mode}_grains_per_s"]
            report[f"{mode}_speedup"] = round(ratio, 2)
            print(f"  {mode}: {ratio:.2f}x the paper's package")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)


if __name__ == "__main__":
    main()
