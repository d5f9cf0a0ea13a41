"""A gated "flaky service" pipeline for the S3 e2e test (the DAG folder and the Ray job
import it as ``s3_pipelines``; the job gets this folder as its ``working_dir``).

Each source ``n`` (an int) becomes ``n * 2``. The stage holds a batch while
``<state_dir>/open`` is missing unless every row is in ``first``, so one microbatch
commits while the next is held and the test can kill the job between them. It then
appends each row to ``<state_dir>/calls.log`` and fails a row while
``<state_dir>/fail-<n>`` exists.
"""

from __future__ import annotations

import os
import time
from typing import Any

import airflow_provider_rayorch.rayorch as ro


class GatedPages:
    def __init__(self, state_dir: str, first: list[int], timeout_s: float) -> None:
        self.state_dir, self.first, self.timeout_s = state_dir, set(first), timeout_s

    def _path(self, name: str) -> str:
        return os.path.join(self.state_dir, name)

    def run(self, rows: list[int]) -> list[Any]:
        deadline = time.monotonic() + self.timeout_s
        while not set(rows) <= self.first and not os.path.exists(self._path("open")):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self._path('open')} was not created in {self.timeout_s}s")
            time.sleep(0.2)
        with open(self._path("calls.log"), "a") as f:
            f.writelines(f"{n}\n" for n in rows)
        return [
            ro.RecordFailure("flaky service") if os.path.exists(self._path(f"fail-{n}")) else n * 2
            for n in rows
        ]


class GatedFlaky(ro.Pipeline):
    def __init__(self, state_dir: str, first: list[int], timeout_s: float = 600.0) -> None:
        self.pages = (
            ro.RayModule(GatedPages)
            .pre_init(state_dir, [int(n) for n in first], timeout_s)
            .ray_options(replicas=1, batch_size=3, num_cpus=0.25)
        )

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.pages(doc)
