"""A GroupFailure also stops queued upstream Grains of its siblings whose outputs only
the failed Call reads: their work is moot (the failed Call's siblings are SUPPRESSED).
Upstream Grains whose outputs something else reads still run."""

from __future__ import annotations

from typing import Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.runtime.core import Core
from airflow_provider_rayorch.rayorch.runtime.events import (
    BatchFinished,
    Dispatch,
    MicrobatchDone,
    WorkerAdded,
)

from ..support import Identity, check_core

S = ro.ItemOutcome.SUPPRESSED


class RenderThenModel(ro.Pipeline):
    """doc -> pages -> render -> model -> reduce: render's output feeds the model only."""

    def __init__(self) -> None:
        self.render = ro.RayModule(Identity).ray_options(batch_size=1)
        self.model = ro.RayModule(Identity).ray_options(batch_size=1)

    def forward(self, doc: ro.Port) -> ro.Port:
        return ro.F.reduce(self.model(self.render(ro.F.expand(doc, domain="page"))))


class RenderReadTwice(ro.Pipeline):
    """As above, and a second Call reads render's output too."""

    def __init__(self) -> None:
        self.render = ro.RayModule(Identity).ray_options(batch_size=1)
        self.model = ro.RayModule(Identity).ray_options(batch_size=1)
        self.audit = ro.RayModule(Identity).ray_options(batch_size=1)

    def forward(self, doc: ro.Port) -> Any:
        rendered = self.render(ro.F.expand(doc, domain="page"))
        return ro.F.reduce(self.model(rendered)), ro.F.reduce(self.audit(rendered))


def start(pipeline: ro.Pipeline, column: list[Any], modules: list[str]) -> tuple[Core, list[Any]]:
    plan = pipeline.compile()
    ids = {m.name: m.id for m in plan.modules}
    core = Core(plan, [column], clock=lambda: 0.0)
    out: list[Any] = []
    for name in modules:
        out += core.handle(WorkerAdded(f"w-{name}", ids[name], 1))
    out += core.start()
    return core, out


def dispatched(cmds: list[Any]) -> list[tuple[int, str, list[Any]]]:
    return sorted((c.batch, c.node.name, c.columns[0]) for c in cmds if type(c) is Dispatch)


def batch_of(cmds: list[Any], call: str) -> int:
    (batch,) = [c.batch for c in cmds if type(c) is Dispatch and c.node.name == call]
    return batch


def finish(core: Core, batch: int, rows: list[Any]) -> list[Any]:
    out = core.handle(BatchFinished(batch, rows))
    check_core(core)
    return out


def by_name(core: Core) -> dict[str, Any]:
    return {c.name: c for c in core.calls}


def test_group_failure_suppresses_queued_upstream_siblings_read_only_by_the_failed_call() -> None:
    core, out = start(RenderThenModel(), [["a", "b", "c", "d"]], ["render", "model"])
    assert dispatched(out) == [(1, "render", ["a"])]
    out = finish(core, 1, ["A"])
    assert [(n, r) for _, n, r in dispatched(out)] == [("render", ["b"]), ("model", ["A"])]
    model, render = batch_of(out, "model"), batch_of(out, "render")
    out = finish(core, model, [ro.GroupFailure("torn")])
    assert dispatched(out) == []  # c and d are never rendered: only the model read them
    calls = by_name(core)
    assert (calls["render"].suppressed, calls["model"].suppressed) == (2, 0)
    out = finish(core, render, ["B"])  # b was being rendered: its model Grain is suppressed
    assert dispatched(out) == []
    done = [c.microbatch for c in out if type(c) is MicrobatchDone]
    assert done[0].outputs[0] == [ro.OutputIssue(S, "doc[0]/page[0]: torn")]
    assert calls["render"].dispatched == 2


def test_upstream_siblings_another_call_reads_still_run() -> None:
    core, out = start(RenderReadTwice(), [["a", "b", "c"]], ["render", "model", "audit"])
    assert dispatched(out) == [(1, "render", ["a"])]
    out = finish(core, 1, ["A"])
    assert sorted((n, r) for _, n, r in dispatched(out)) == [
        ("audit", ["A"]),
        ("model", ["A"]),
        ("render", ["b"]),
    ]
    render = batch_of(out, "render")
    out = finish(core, batch_of(out, "model"), [ro.GroupFailure("torn")])
    assert by_name(core)["render"].suppressed == 0
    out = finish(core, render, ["B"])
    assert [(n, r) for _, n, r in dispatched(out) if n == "render"] == [("render", ["c"])]
