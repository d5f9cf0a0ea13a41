"""The suite's sections; each returns a JSON-able dict for results.json."""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from .measure import median_of
from .systems import AVAILABLE, OURS, PAPER, RUNNERS, TUNABLE, XENNA, pick_systems, versions
from .systems import daft as systems_daft
from .systems import raydata as systems_raydata
from .systems import rayorch as systems_rayorch
from .workload import CostModel, Workload, ideal_seconds, make_docs

if TYPE_CHECKING:
    from .measure import Measurement
    from .sizes import Size

__all__ = [
    "ablations",
    "containment_curve",
    "e2e",
    "nested",
    "ocr",
    "overhead",
    "scaling",
    "simulator",
    "startup",
    "tuning",
    "versions",
]


# -- workload 1: end to end ---------------------------------------------------
def e2e(spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None) -> dict[str, Any]:
    w = spec.w1
    chosen, skipped = pick_systems(systems)
    runs: dict[str, list[Measurement]] = {s: [] for s in chosen}
    errors: dict[str, str] = {}
    tuned = {
        name: best["parallelism"]
        for name, best in (results.get("tuning") or {}).get("best", {}).items()
    }
    for _ in range(spec.rounds):
        for name in chosen:
            if name in errors:
                continue
            try:
                options = {"parallelism": tuned[name]} if name in tuned else {}
                runs[name].extend(RUNNERS[name](w, **options))
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {exc}"
    ideal = ideal_seconds(w)
    table: dict[str, Any] = {}
    for name, ms in runs.items():
        if not ms:
            continue
        row: dict[str, Any] = {}
        for mode in ("cold", "warm"):
            picked = [m for m in ms if m.mode == mode]
            fig = median_of(picked)
            fig["fraction_of_ideal"] = round(ideal["bound_s"] / fig["e2e_s"], 4)
            row[mode] = fig
        table[name] = row
    ratios: dict[str, dict[str, float]] = {}
    for mode in ("cold", "warm"):
        for a in table:
            for b in table:
                if a != b:
                    ratios.setdefault(mode, {})[f"{a} / {b}"] = round(
                        table[a][mode]["e2e_s"] / table[b][mode]["e2e_s"], 3
                    )
    return {
        "workload": w.as_dict(),
        "pages": int(ideal["pages"]),
        "ideal": {k: round(v, 4) for k, v in ideal.items()},
        "systems": table,
        "ratios": ratios,
        "skipped": skipped,
        "errors": errors,
        "peer_parallelism": {
            "Ray Data": tuned.get("Ray Data", systems_raydata.blocks_for(w)),
            "Daft": tuned.get("Daft", systems_daft.partitions_for(w)),
        },
    }


def tuning(
    spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None
) -> dict[str, Any]:
    """Sweep the peers' input parallelism on workload 1 (one execution each) and keep
    the fastest, so the comparison uses each peer as an experienced user would."""
    w = spec.w1
    if not spec.tune_peers:
        return {"sweep": {}, "best": {}, "skipped": "not at this size"}
    chosen, _ = pick_systems(systems)
    sweep: dict[str, list[dict[str, Any]]] = {}
    best: dict[str, dict[str, Any]] = {}
    candidates = sorted({max(1, w.accelerators), 2 * w.accelerators, max(1, w.docs // 2)})
    for name in chosen:
        if name not in TUNABLE:
            continue
        for parallelism in candidates:
            try:
                m = RUNNERS[name](w, warm_runs=0, parallelism=parallelism)[0]
            except Exception as exc:
                sweep.setdefault(name, []).append(
                    {"parallelism": parallelism, "error": f"{type(exc).__name__}: {exc}"}
                )
                continue
            sweep.setdefault(name, []).append(
                {"parallelism": parallelism, "e2e_s": round(m.e2e_s, 3), "correct": m.correct}
            )
        ok = [p for p in sweep.get(name, []) if p.get("correct")]
        if ok:
            best[name] = min(ok, key=lambda p: p["e2e_s"])
    return {"sweep": sweep, "best": best}


# -- strong scaling -------------------------------------------------------------
def scaling(
    spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None
) -> dict[str, Any]:
    from .simulator import config_from_results, simulate

    cfg = config_from_results(results)
    docs = make_docs(spec.scaling)
    points = []
    for a in spec.scaling_accelerators:
        w = spec.scaling.scaled(a)
        ms = systems_rayorch.run_pair(OURS, w, warm_runs=spec.scaling_warm_runs)
        warm = median_of([m for m in ms if m.mode == "warm"])
        sim = simulate(w, cfg, docs)
        points.append(
            {
                "accelerators": a,
                "render_replicas": w.render_replicas,
                "write_replicas": w.write_replicas,
                "warm_s": warm["e2e_s"],
                "cold_s": ms[0].e2e_s,
                "busy_fraction": warm["busy_fraction"],
                "batch_fill": warm["batch_fill"],
                "host_cpu_busy": warm.get("host_cpu_busy"),
                "host_cpus": os.cpu_count(),
                "driver_cpu_s": warm.get("driver_cpu_s"),
                "batches": sum(c.get("rpcs", 0) for c in warm.get("calls", {}).values()),
                "ideal_s": round(ideal_seconds(w, docs)["bound_s"], 4),
                "sim_s": round(sim.makespan_s, 4),
                "sim_busy_fraction": round(sim.busy_fraction, 4),
                "correct": warm["correct"],
            }
        )
    base = points[0]
    for p in points:
        factor = p["accelerators"] / base["accelerators"]
        p["speedup"] = round(base["warm_s"] / p["warm_s"], 3)
        p["efficiency"] = round(p["speedup"] / factor, 4)
        p["sim_speedup"] = round(base["sim_s"] / p["sim_s"], 3) if p["sim_s"] else None
        p["sim_efficiency"] = round(p["sim_speedup"] / factor, 4) if p["sim_speedup"] else None
        p["ideal_speedup"] = round(base["ideal_s"] / p["ideal_s"], 3) if p["ideal_s"] else None
        p["fraction_of_ideal"] = round(p["ideal_s"] / p["warm_s"], 4)
    return {
        "workload": spec.scaling.as_dict(),
        "pages": sum(d.pages for d in docs),
        "points": points,
        "opt_out": _scaling_opt_out(spec, max(spec.scaling_accelerators)),
    }


def _scaling_opt_out(spec: Size, accelerators: int) -> dict[str, Any]:
    """The largest point with split, render and write opting out of the default
    shared process (``share_process=False``): what the default costs or saves there."""
    w = spec.scaling.scaled(accelerators)
    ms = systems_rayorch.run_pair(OURS, w, warm_runs=spec.scaling_warm_runs, own_processes=True)
    warm = median_of([m for m in ms if m.mode == "warm"])
    return {
        "accelerators": accelerators,
        "cold_s": ms[0].e2e_s,
        "warm_s": warm["e2e_s"],
        "host_cpu_busy": warm.get("host_cpu_busy"),
        "correct": warm["correct"],
    }


# -- ablations ----------------------------------------------------------------------
def _paired(runs: dict[str, list[Measurement]], base: str, other: str) -> dict[str, Any]:
    """Medians per variant and the paired saving of ``base`` against ``other``."""
    figures = {name: median_of(ms) for name, ms in runs.items()}
    savings = [
        1 - a.e2e_s / b.e2e_s for a, b in zip(runs[base], runs[other], strict=True) if b.e2e_s
    ]
    return {
        "variants": figures,
        "paired_saving": {
            "mean": round(statistics.fmean(savings), 4) if savings else None,
            "median": round(statistics.median(savings), 4) if savings else None,
            "rounds": [round(s, 4) for s in savings],
            "of": f"{base} vs {other}",
        },
    }


def ablations(
    spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None
) -> dict[str, Any]:
    from .ablations import shuffled_queues, shuffled_ready_order
    from .simulator import config_from_results, simulate

    w = spec.w1
    rounds = spec.ablation_rounds
    fifo = systems_rayorch.run_variants(
        w,
        {"FIFO": {}, "non-FIFO (shuffled)": {}},
        rounds,
        contexts={"non-FIFO (shuffled)": shuffled_ready_order},
    )
    batching = systems_rayorch.run_variants(
        w,
        {"any_parent": {"batching": "any_parent"}, "single_parent": {"batching": "single_parent"}},
        rounds,
    )
    containment = systems_rayorch.run_variants(
        spec.w5, {"on": {"containment": True}, "off": {"containment": False}}, rounds
    )
    # The same pair with one batch in flight per page-model actor: how much of the
    # containment gap is the in-flight window (see ANALYSIS.md).
    containment_1 = systems_rayorch.run_variants(
        spec.w5,
        {
            "on": {"containment": True, "in_flight": 1},
            "off": {"containment": False, "in_flight": 1},
        },
        rounds,
    )
    cfg = config_from_results(results)
    sim_shuffled = simulate(w, cfg, ready_queue=shuffled_queues()).makespan_s
    sim_fifo = simulate(w, cfg).makespan_s
    docs5 = make_docs(spec.w5)
    out = {
        "fifo": _paired(fifo, "FIFO", "non-FIFO (shuffled)"),
        "batching": _paired(batching, "any_parent", "single_parent"),
        "containment": _paired(containment, "on", "off"),
        "containment_in_flight_1": _paired(containment_1, "on", "off"),
    }
    out["fifo"]["simulated_saving"] = (
        round(1 - sim_fifo / sim_shuffled, 4) if sim_shuffled else None
    )
    poisoned = [d for d in docs5 if d.poisoned]
    out["containment"]["workload"] = spec.w5.as_dict()
    out["containment"]["poisoned_docs"] = len(poisoned)
    out["containment"]["poisoned_pages"] = sum(d.pages for d in poisoned)
    out["containment"]["pages"] = sum(d.pages for d in docs5)
    return out


# -- workload 3: nested ----------------------------------------------------------------
def nested(
    spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None
) -> dict[str, Any]:
    from . import nested as w3

    w = replace(spec.w1, docs=spec.w3_docs, mean_pages=8)
    tuned = (results.get("tuning") or {}).get("best", {}).get("Daft", {}).get("parallelism")
    return w3.run_all(w, systems=systems, rounds=1, daft_partitions=tuned or 16)


# -- cold start: how the pools start ------------------------------------------------------
def startup(
    spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None
) -> dict[str, Any]:
    """Cold workload 1, alternating: every actor in a process of its own, all
    started at once (the engine before it started them a few at a time); every
    actor in a process of its own, a few at a time (``share_process=False``, the
    default before); the default (split, render and write, which ask Ray for
    nothing, in one shared process)."""
    actors = (
        spec.w1.split_replicas
        + spec.w1.render_replicas
        + spec.w1.accelerators
        + spec.w1.write_replicas
    )
    variants: dict[str, dict[str, Any]] = {
        "all actors at once, a process each": {
            "executor_options": {"actor_start_concurrency": actors},
            "own_processes": True,
        },
        "a few at a time, a process each (opt-out)": {"own_processes": True},
        "light stages share one process (default)": {},
    }
    runs: dict[str, list[Measurement]] = {name: [] for name in variants}
    for _ in range(spec.rounds):
        for name, options in variants.items():
            runs[name].append(systems_rayorch.run_pair(OURS, spec.w1, warm_runs=0, **options)[0])
    return {
        name: {
            "cold_s": round(statistics.median(m.e2e_s for m in ms), 4),
            "cold_runs": [round(m.e2e_s, 4) for m in ms],
            "first_doc_s": round(statistics.median(m.first_doc_s or 0.0 for m in ms), 4),
            "correct": all(m.correct for m in ms),
        }
        for name, ms in runs.items()
    }


# -- workload 2: real OCR ------------------------------------------------------------------
def ocr(spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None) -> dict[str, Any]:
    from . import ocr as w2

    if not spec.ocr_docs:
        return {"systems": {}, "skipped": {"all": "not run at this size"}}
    return w2.run_all(spec.ocr_docs, systems=systems, rounds=1)


# -- workload 4: engine overhead ------------------------------------------------------------
def overhead(
    spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None
) -> dict[str, Any]:
    from airflow_provider_rayorch.rayorch.execution.gc_policy import rare_full_collections
    from airflow_provider_rayorch.rayorch.runtime.core import Core

    from . import noop_throughput
    from .core_throughput import Fanout, drive

    plan = Fanout(256, 2).compile()
    sources = [list(range(spec.core_children))] * spec.core_sources
    core = Core(plan, [sources], input_batch_size=1000, max_active_input_batches=2)
    t = time.perf_counter()
    with rare_full_collections():
        grains = drive(core, 2)
    pure = time.perf_counter() - t
    args = argparse.Namespace(batch_size=256, replicas=2, input_batch_size=500, max_active=2)
    noop_sources = [list(range(spec.noop_children)) for _ in range(spec.noop_sources)]
    engines = {OURS: "airflow_provider_rayorch.rayorch"}
    if AVAILABLE[PAPER]() and (systems is None or PAPER in systems):
        engines[PAPER] = "rayorch"
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in engines}
    for _ in range(2 if spec.rounds > 1 else 1):
        for name, module in engines.items():
            ro = importlib.import_module(module)
            rounds[name].append(noop_throughput.measure(ro, noop_sources, args))
    on_ray = {
        name: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]}
        for name, rs in rounds.items()
    }
    on_ray.update(_noop_peers(spec, noop_sources, args, results, systems))
    out: dict[str, Any] = {
        "pure_core": {
            "grains": grains,
            "seconds": round(pure, 3),
            "grains_per_s": round(grains / pure),
            "command": f"python -m benchmarks.core_throughput --sources {spec.core_sources} "
            f"--children {spec.core_children}",
        },
        "noop_on_ray": on_ray,
        "noop_grains": spec.noop_sources * spec.noop_children,
        "noop_command": f"python -m benchmarks.noop_throughput --sources {spec.noop_sources} "
        f"--children {spec.noop_children}",
    }
    if PAPER in on_ray:
        for mode in ("cold", "warm"):
            out[f"{mode}_speedup_vs_paper"] = round(
                on_ray[OURS][f"{mode}_grains_per_s"] / on_ray[PAPER][f"{mode}_grains_per_s"], 2
            )
    return out


def _noop_peers(
    spec: Size,
    sources: list[list[int]],
    args: argparse.Namespace,
    results: dict[str, Any],
    systems: tuple[str, ...] | None,
) -> dict[str, dict[str, Any]]:
    """Workload 4 on Ray Data, Daft and Xenna (one cold and one warm execution each), with
    the input cut as the ``tuning`` section found fastest (16 without it)."""
    from . import noop_peers
    from .systems import xenna as systems_xenna

    best = (results.get("tuning") or {}).get("best", {})
    runners = {
        "Ray Data": lambda n: noop_peers.run_raydata(
            sources, batch_size=args.batch_size, replicas=args.replicas, blocks=n
        ),
        "Daft": lambda n: noop_peers.run_daft(
            sources, batch_size=args.batch_size, replicas=args.replicas, partitions=n
        ),
        XENNA: lambda _: systems_xenna.run_noop(
            sources, batch_size=args.batch_size, replicas=args.replicas
        ),
    }
    out: dict[str, dict[str, Any]] = {}
    for name, runner in runners.items():
        if (systems is not None and name not in systems) or not AVAILABLE[name]():
            continue
        figures = runner(best.get(name, {}).get("parallelism") or 16)
        out[name] = {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}
    return out


def _frac(a: float, b: float) -> float | None:
    return round(a / b, 4) if b else None


# -- simulator ---------------------------------------------------------------------------
def simulator(
    spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None
) -> dict[str, Any]:
    from .simulator import config_from_results, docs_for_pages, simulate

    cfg = config_from_results(results)
    beside = {}
    w1 = spec.w1
    sim = simulate(w1, cfg)
    real = results.get("e2e", {}).get("systems", {}).get(OURS, {}).get("warm", {})
    beside["workload 1"] = {
        "accelerators": w1.accelerators,
        "sim_s": round(sim.makespan_s, 4),
        "real_warm_s": real.get("e2e_s"),
        "sim_busy_fraction": round(sim.busy_fraction, 4),
        "real_busy_fraction": real.get("busy_fraction"),
    }
    extrapolation = []
    for a in spec.sim_accelerators:
        w = docs_for_pages(Workload().scaled(a), spec.sim_pages)
        r = simulate(w, cfg)
        point = {**r.as_dict(), "fraction_of_ideal": _frac(r.ideal_s, r.makespan_s)}
        if a == max(spec.sim_accelerators):
            # What a 10x cheaper driver (per Grain and per batch) would give at the top.
            fast = simulate(
                w,
                replace(
                    cfg,
                    driver_s_per_grain=cfg.driver_s_per_grain / 10,
                    driver_s_per_batch=cfg.driver_s_per_batch / 10,
                ),
            )
            point["driver_10x_s"] = round(fast.makespan_s, 4)
            point["driver_10x_fraction_of_ideal"] = _frac(r.ideal_s, fast.makespan_s)
        extrapolation.append(point)
    gpu_like = []
    for a in spec.sim_accelerators:
        w = docs_for_pages(replace(Workload(), cost=CostModel.gpu_like()).scaled(a), spec.sim_pages)
        r = simulate(w, cfg)
        gpu_like.append({**r.as_dict(), "fraction_of_ideal": _frac(r.ideal_s, r.makespan_s)})
    big = None
    if spec.sim_big_pages:
        a = max(spec.sim_accelerators)
        r = simulate(docs_for_pages(Workload().scaled(a), spec.sim_big_pages), cfg)
        big = {**r.as_dict(), "fraction_of_ideal": _frac(r.ideal_s, r.makespan_s)}
    return {
        "config": {
            "driver_s_per_grain": cfg.driver_s_per_grain,
            "driver_s_per_batch": cfg.driver_s_per_batch,
            "rpc_s": cfg.rpc_s,
        },
        "beside_real": beside,
        "extrapolation": extrapolation,
        "extrapolation_gpu_like": gpu_like,
        "gpu_like_cost": asdict(CostModel.gpu_like()),
        "big": big,
        "pages": spec.sim_pages,
    }


# -- containment curve (workload 5 against the in-flight window) -----------------------------
def containment_curve(
    spec: Size, results: dict[str, Any], *, systems: tuple[str, ...] | None
) -> dict[str, Any]:
    """Containment's paired saving per queued share, beside its bound (containment_curve)."""
    from . import containment_curve as curve

    return dict(curve.run(spec.curve_base, spec.curve, spec.curve_rounds))
