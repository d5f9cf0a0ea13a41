"""The pipeline of tests/e2e/test_cluster_node_loss.py (the DAG folder and the Ray job
import it as ``node_loss_pipelines``; the job gets this folder as its ``working_dir``).

Its one stage needs the custom resource ``accel``, which only the cluster's worker
node has, so every batch of it runs on that node. Source ``n`` (an int) becomes
``n * 10``. A batch whose rows are not all in ``first`` writes ``<state_dir>/held-<n>``
for each row and holds until ``<state_dir>/open`` exists, so the test can kill the
worker node while one microbatch is committed and others are in flight on it.
"""

from __future__ import annotations

import os
import time
from typing import Any

import airflow_provider_rayorch.rayorch as ro


class AccelStage:
    def __init__(self, state_dir: str, first: list[int], timeout_s: float) -> None:
        self.state_dir, self.first, self.timeout_s = state_dir, set(first), timeout_s

    def run(self, rows: list[int]) -> list[Any]:
        if not set(rows) <= self.first:
            for n in rows:
                with open(os.path.join(self.state_dir, f"held-{n}"), "w") as f:
                    f.write(str(os.getpid()))
            gate = os.path.join(self.state_dir, "open")
            deadline = time.monotonic() + self.timeout_s
            while not os.path.exists(gate):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{gate} was not created in {self.timeout_s}s")
                time.sleep(0.2)
        return [n * 10 for n in rows]


class NodeLossPipeline(ro.Pipeline):
    def __init__(self, state_dir: str, first: list[int], timeout_s: float = 300.0) -> None:
        self.stage = (
            ro.RayModule(AccelStage)
            .pre_init(state_dir, [int(n) for n in first], timeout_s)
            .ray_options(replicas=2, batch_size=2, num_cpus=0.25, resources={"accel": 1})
        )

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.stage(doc)
