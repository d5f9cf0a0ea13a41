"""A deterministic "flaky service" pipeline for repair tests (real engine).

Each source ``n`` (an int) splits into two pages ``n*10``, ``n*10+1``; the page
stage appends ``<source>`` to ``<state_dir>/calls.log`` for every row it sees and
returns ``RecordFailure`` while ``<state_dir>/fail-<source>`` exists (the source
ends SUPPRESSED); the doc stage FAILS a source while ``fail-root-<source>``
exists. ``<state_dir>/config.json`` (if present) sets the page stage's
``batch_size`` and UDF import path, so a test can change the code between attempts.
"""

from __future__ import annotations

import json
import os
from typing import Any

import airflow_provider_rayorch.rayorch as ro


def _log(state_dir: str, sources: list[int]) -> None:
    with open(os.path.join(state_dir, "calls.log"), "a") as f:
        f.writelines(f"{s}\n" for s in sources)


class Check:
    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir

    def run(self, docs: list[int]) -> list[Any]:
        return [
            ro.RecordFailure("service down")
            if os.path.exists(os.path.join(self.state_dir, f"fail-root-{d}"))
            else [d * 10, d * 10 + 1]
            for d in docs
        ]


class Pages:
    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir

    def run(self, pages: list[int]) -> list[Any]:
        _log(self.state_dir, [p // 10 for p in pages])
        return [
            ro.RecordFailure("flaky service")
            if os.path.exists(os.path.join(self.state_dir, f"fail-{p // 10}"))
            else p * 2
            for p in pages
        ]


class OtherPages(Pages):
    """Same behaviour, another import path: a repair must refuse it."""


def read_config(state_dir: str) -> dict[str, Any]:
    path = os.path.join(state_dir, "config.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return dict(json.load(f))


class Flaky(ro.Pipeline):
    def __init__(self, state_dir: str) -> None:
        config = read_config(state_dir)
        udf = {"Pages": Pages, "OtherPages": OtherPages}[config.get("udf", "Pages")]
        self.check = ro.RayModule(Check).pre_init(state_dir).ray_options(batch_size=4)
        self.pages = (
            ro.RayModule(udf)
            .pre_init(state_dir)
            .ray_options(batch_size=int(config.get("batch_size", 3)))
        )

    def forward(self, doc: ro.Port) -> ro.Port:
        pages = ro.F.expand(self.check(doc))
        return ro.F.reduce(self.pages(pages))
