"""Workloads 1, 3 and 4 on cosmos-xenna; runs in its own venv (``scripts/setup-xenna.sh``).

    .venv-xenna/bin/python -m benchmarks.systems.xenna_runner < request.json

Reads one ``xenna_protocol.Request`` on stdin, writes one ``Reply`` to the file it
names. The pipelines are written as a Xenna user writes them: one ``Stage`` per
step (``xenna_stages``), each with ``required_resources`` and
``stage_batch_size``, in ``StageSpec``s with pinned ``num_workers`` (the
autoscaler then moves no worker between stages); pages are regrouped per
document in one stateful stage on one worker (Xenna has no keyed gather). Xenna
cannot reserve a custom Ray resource: the page model's pinned workers stand in
for the emulated accelerators. Every worker reserves the same CPU share, sized so
all workers fit at once in the CPUs Xenna hands out (``CPU_ALLOCATION`` of the
node's).

"cold" is the first ``run_pipeline`` in this process (it creates its workers;
Ray is already up), "warm" a second one: Xenna starts its workers on every
``run_pipeline``. This runner cannot join the suite's Ray (another Python), so it
starts its own with the same CPU count.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
import traceback
from dataclasses import asdict, replace
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from ..measure import expected_digests, measure
from ..workload import CostModel, Workload, make_docs

if TYPE_CHECKING:
    from .xenna_protocol import Reply, Request, RunFigures

__all__ = ["cpu_share", "layout", "main", "workload_from"]

#: Share of each node's CPUs Xenna hands to pipeline workers (its default is 0.95, of
#: which it counts whole CPUs only: 1 of 2). All of them, as the other systems use the
#: whole node (their light stages reserve no CPU at all).
CPU_ALLOCATION = 1.0
#: Workload 4: sources per call of the expanding stage (the no-op batch is 256 children;
#: with one source per call, Xenna's per-task cost bounds the run).
EXPAND_BATCH = 16
#: What Xenna sets before it starts a local Ray (its README: needed on a cluster
#: started by someone else): Ray must not touch CUDA_VISIBLE_DEVICES, and its state
#: API must list up to 40,000 actors (Xenna asks for that many).
XENNA_RAY_ENV = {
    "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1",
    "RAY_MAX_LIMIT_FROM_API_SERVER": "40000",
    "RAY_MAX_LIMIT_FROM_DATA_SOURCE": "40000",
}


def workload_from(params: dict[str, Any]) -> Workload:
    """Rebuild a ``Workload`` from ``Workload.as_dict()``."""
    fields = {k: v for k, v in params.items() if k != "cost"}
    return replace(Workload(**fields), cost=CostModel(**params["cost"]))


def cpu_share(cpus: int, workers: int) -> float:
    """The CPU each worker reserves so that ``workers`` fit at once (two decimals, down)."""
    return math.floor(100 * math.floor(cpus * CPU_ALLOCATION) / workers) / 100


def layout(req: Request) -> dict[str, int]:
    """Pinned workers per stage: the same actor counts every system gets."""
    if req["workload"] == "w4":
        return {"expand": 1, "noop": int(req["params"]["replicas"]), "gather": 1}
    w = workload_from(req["params"])
    first = "split" if req["workload"] == "w1" else "split_pages"
    return {
        first: w.split_replicas,
        "render": w.render_replicas,
        "model": w.accelerators,
        "gather": 1,
    }


def _pipeline(req: Request, cpu: float) -> list[tuple[Any, int]]:
    """Fresh stage objects (each execution starts from empty gather state)."""
    from . import xenna_stages as st

    n = layout(req)
    if req["workload"] == "w4":
        b = int(req["params"]["batch_size"])
        return [
            (st.ExpandSources(EXPAND_BATCH, cpu), n["expand"]),
            (st.NoOp(b, cpu), n["noop"]),
            (st.GatherSources(b, cpu), n["gather"]),
        ]
    w = workload_from(req["params"])
    c = w.cost
    if req["workload"] == "w1":
        return [
            (st.SplitDocs(c, w.split_batch, cpu), n["split"]),
            (st.RenderPages(c, w.render_batch, cpu), n["render"]),
            (st.PageModelStage(c, w.model_batch, cpu), n["model"]),
            (st.GatherDocs(c, w.model_batch, cpu), n["gather"]),
        ]
    return [
        (st.SplitNested(c, w.split_batch, cpu), n["split_pages"]),
        (st.TablesOfPages(c, w.render_batch, cpu), n["render"]),
        (st.TableModelStage(c, w.model_batch, cpu), n["model"]),
        (st.GatherTables(c, w.model_batch, cpu), n["gather"]),
    ]


def execute(stages: list[tuple[Any, int]], items: list[Any]) -> list[Any]:
    """One Xenna streaming execution of ``stages`` (stage, pinned workers) over ``items``."""
    import cosmos_xenna.pipelines.v1 as xenna

    quiet = xenna.VerbosityLevel.NONE
    config = xenna.PipelineConfig(
        execution_mode=xenna.ExecutionMode.STREAMING,
        return_last_stage_outputs=True,
        logging_interval_s=3600,
        actor_pool_verbosity_level=quiet,
        monitoring_verbosity_level=quiet,
        mode_specific=xenna.StreamingSpecificSpec(
            autoscaler_verbosity_level=quiet, executor_verbosity_level=quiet
        ),
        cpu_allocation_percentage=CPU_ALLOCATION,
    )
    spec = xenna.PipelineSpec(
        input_data=items,
        stages=[xenna.StageSpec(stage, num_workers=n) for stage, n in stages],
        config=config,
    )
    return list(xenna.run_pipeline(spec) or [])


def _inputs(req: Request) -> tuple[list[Any], Any]:
    """The input items and a check of the outputs (w1: the expected digests)."""
    p = req["params"]
    if req["workload"] == "w4":
        sources = p["sources"]
        items = [{"src": i, "n": len(s)} for i, s in enumerate(sources)]

        def ok4(out: list[Any]) -> bool:
            got = {o["src"]: o["values"] for o in out}
            return len(got) == len(sources) and all(got.get(i) == s for i, s in enumerate(sources))

        return items, ok4
    w = workload_from(p)
    docs = make_docs(w)
    if req["workload"] == "w1":
        return [asdict(d) for d in docs], expected_digests(docs)
    from ..nested import expected

    want = expected(docs)
    return [{"doc": d.doc, "pages": d.pages} for d in docs], (
        lambda out: {o["doc"]: o["digest"] for o in out} == want
    )


def run(req: Request, cpu: float) -> list[RunFigures]:
    """The cold execution and ``warm_runs`` warm ones."""
    items, check = _inputs(req)
    out: list[RunFigures] = []
    for i in range(1 + req["warm_runs"]):
        mode = "cold" if i == 0 else "warm"
        stages = _pipeline(req, cpu)
        started = time.time()
        result = execute(stages, items)
        finished = time.time()
        if req["workload"] == "w1":
            w = workload_from(req["params"])
            m = measure("Xenna", mode, result, started, finished, check, w.accelerators)
            fig: RunFigures = {"mode": mode, "e2e_s": m.e2e_s, "correct": m.correct}
            fig["measurement"] = asdict(m)
        else:
            fig = {"mode": mode, "e2e_s": finished - started, "correct": bool(check(result))}
        out.append(fig)
    return out


def main() -> None:
    req: Request = json.load(sys.stdin)
    reply: Reply = {"versions": {}, "cpu_per_worker": 0.0, "workers": {}, "runs": [], "error": None}
    try:
        import ray

        reply["versions"] = {
            "cosmos-xenna": version("cosmos-xenna"),
            "ray": ray.__version__,
            "tqdm": version("tqdm"),
            "python": ".".join(map(str, sys.version_info[:3])),
        }
        workers = layout(req)
        reply["workers"] = workers
        cpu = cpu_share(req["cpus"], sum(workers.values()))
        reply["cpu_per_worker"] = cpu
        # Xenna's README lists the variables a cluster it does not start itself needs;
        # the runner starts Ray first (quiet, ``cpus`` CPUs), so it sets them here.
        # Xenna's monitoring lists actors through Ray's state API, which needs the
        # dashboard, and finds the cluster by RAY_ADDRESS (other Rays run here).
        os.environ.update(XENNA_RAY_ENV)
        ray.init(
            # A new Ray of its own: never one that ``ray start`` left on this machine.
            address="local",
            num_cpus=req["cpus"],
            include_dashboard=True,
            log_to_driver=False,
            configure_logging=True,
            logging_level=logging.ERROR,
        )
        os.environ["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address
        try:
            reply["runs"] = run(req, cpu)
        finally:
            ray.shutdown()
    except Exception as exc:
        reply["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}"
    with open(req["reply_path"], "w") as f:
        json.dump(reply, f)


if __name__ == "__main__":
    main()
