"""Run a pipeline with no Ray initialized: the engine starts its own local Ray with
``ray_init_kwargs`` and stops it at the end. Prints one JSON line."""

from __future__ import annotations

import json

import ray

import airflow_provider_rayorch.rayorch as ro
from tests.integration.rayorch.udfs import Docs


def main() -> None:
    seen_cpus: list[float] = []
    with ro.Executor(Docs(), ray_init_kwargs={"num_cpus": 1, "include_dashboard": False}) as ex:
        for _part in ex.stream([3, 4, 5], input_batch_size=2):
            seen_cpus.append(ray.cluster_resources().get("CPU", 0.0))
        started_inside = ray.is_initialized()
    print(
        "OWNED_RAY "
        + json.dumps({"cpus": seen_cpus, "inside": started_inside, "after": ray.is_initialized()})
    )


if __name__ == "__main__":
    main()
