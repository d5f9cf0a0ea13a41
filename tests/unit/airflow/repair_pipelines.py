"""A deterministic "flaky service" pipeline for repair tests (real engine).

Each source ``n`` (an int) splits into two pages ``n*10``, ``n*10+1``; the page
stage appends ``<source>`` to ``<state_dir>/calls.log`` for every row it sees and
returns ``RecordFailure`` while ``<state_dir>/fail-<source>`` exists (the source
ends SUPPRESSED); the doc stage FAILS a source while ``fail-root-<source>``
exists. The page stage holds a batch while ``hold-<source>`` exists for one of its
sources (at most ``HOLD_S``), so a test can kill the job while a microbatch runs.
``<state_dir>/config.json`` (if present) sets the page stage's ``batch_size`` and
UDF import path, so a test can change the code between attempts.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import airflow_provider_rayorch.rayorch as ro

#: Longest hold of a batch (``hold-<source>`` markers), so a forgotten marker cannot hang.
HOLD_S = 600.0


def _hold(state_dir: str, sources: set[int]) -> None:
    deadline = time.monotonic() + HOLD_S
    markers = [os.path.join(state_dir, f"hold-{s}") for s in sorted(sources)]
    while any(os.path.exists(m) for m in markers):
        if time.monotonic() > deadline:
            raise TimeoutError(f"held longer than {HOLD_S:g} s by {markers}")
        time.sleep(0.2)


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
        _hold(self.state_dir, {p // 10 for p in pages})
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
