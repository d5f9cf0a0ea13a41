"""Run a pipeline on a 3-node ``ray.cluster_utils.Cluster``, optionally removing a
worker node once the first microbatch is done; print the outputs as JSON.

    python -m tests.integration.rayorch.node_loss_run [--remove-node]

A separate process, because the cluster needs its own ``ray.init``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import ray
from ray.cluster_utils import Cluster

import airflow_provider_rayorch.rayorch as ro

ON_WORKERS = {"resources": {"worker": 0.01}}


class Pages:
    def run(self, docs: list[int]) -> list[list[int]]:
        return [list(range(d * 10, d * 10 + 4 + d % 5)) for d in docs]


class Render:
    def run(self, pages: list[int]) -> list[bytes]:
        return [page.to_bytes(4, "big") * 4096 for page in pages]  # 16 KB payloads


class Measure:
    def run(self, blobs: list[bytes]) -> list[int]:
        return [int.from_bytes(b[:4], "big") + len(b) for b in blobs]


class NodeLoss(ro.Pipeline):
    def __init__(self) -> None:
        self.pages = ro.RayModule(Pages).ray_options(batch_size=4, **ON_WORKERS)
        self.render = ro.RayModule(Render).ray_options(replicas=2, batch_size=8, **ON_WORKERS)
        self.measure = ro.RayModule(Measure).ray_options(replicas=2, batch_size=8, **ON_WORKERS)

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.measure(self.render(ro.F.expand(self.pages(doc)))))


def wait_until_dead(node_id: str, bound_s: float = 60.0) -> None:
    """Return once the GCS marks node ``node_id`` dead; raise after ``bound_s``."""
    deadline = time.monotonic() + bound_s
    while any(n["NodeID"] == node_id and n["Alive"] for n in ray.nodes()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"node {node_id} still alive {bound_s:g}s after its removal")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--remove-node", action="store_true")
    args = parser.parse_args()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 4},
        },
    )
    workers = [cluster.add_node(num_cpus=1, resources={"worker": 10}) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    outputs: list[Any] = []
    removed = False
    try:
        with ro.Executor(NodeLoss()) as executor:
            for part in executor.stream(
                list(range(24)), input_batch_size=4, max_active_input_batches=3
            ):
                outputs.append([part.index, part.outputs])
                if args.remove_node and not removed:
                    node_id = workers[0].node_id
                    cluster.remove_node(workers[0], allow_graceful=False)
                    # The run goes on only once Ray knows: its actors there are dead
                    # then, so the rest of the run meets the loss (else a fast run
                    # could end before Ray's health checks noticed it).
                    wait_until_dead(node_id)
                    removed = True
            metrics = executor._backend.metrics()  # type: ignore[union-attr]
    finally:
        ray.shutdown()
        cluster.shutdown()
    outputs.sort()
    print(
        "NODE_LOSS_RESULT "
        + json.dumps({"outputs": [o for _, o in outputs], "metrics": metrics, "removed": removed})
    )


if __name__ == "__main__":
    main()
