"""Run the whole benchmark suite and write results, tables and plots.

    python -m benchmarks.suite --size default     # ~20 min on 2 cores -> docs/benchmarks/
    python -m benchmarks.suite --size smoke --out /tmp/bench   # seconds (CI)

Sections (``registry.REGISTRY``, each run after the sections it reads):
workload 1 end to end on every installed system (cold and warm, median of
rounds), strong scaling on this engine beside the simulator, ablations (FIFO,
batching policy, containment on workload 5), the containment curve (workload 5's
saving against the share of poisoned siblings still queued, beside its bound),
workload 3 (nested), workload 2 (real OCR), engine overhead (workload 4), the
simulator's extrapolation, and scale (tiny sources through the operator and the job
entrypoint, and waiting triggers: ``benchmarks/scale.py``; ``--size full`` adds 10M).
Peers that are not installed are skipped and listed in the results; cosmos-xenna
needs ``bash scripts/setup-xenna.sh`` first.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from . import registry
from .sizes import SIZES
from .systems import versions

__all__ = ["main", "run_suite"]

REPO = Path(__file__).resolve().parent.parent
SECTIONS = registry.SECTIONS


def start_ray(accel: int = 16) -> bool:
    """Start a local Ray (2 CPUs, ``accel`` emulated accelerators) unless one is up.

    Returns whether this call started it (the caller then shuts it down)."""
    import ray

    if ray.is_initialized():
        return False
    # Actors import ``benchmarks`` from the repository.
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    ray.init(
        # A new Ray: never one that ``ray start`` left on this (shared) machine.
        address="local",
        num_cpus=2,
        resources={"accel": accel},
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=True,
        logging_level=logging.ERROR,
    )
    return True


def _commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment() -> dict[str, Any]:
    load = os.getloadavg()
    return {
        "git_commit": _commit(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": [round(x, 2) for x in load],
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def run_suite(
    size: str,
    out: Path,
    *,
    only: tuple[str, ...] = SECTIONS,
    systems: tuple[str, ...] | None = None,
    plots: bool = True,
    merge: bool = False,
) -> dict[str, Any]:
    """Run the chosen sections at ``size``; writes results.json (after every
    section) and the README and plots into ``out``. Returns the results."""
    spec = SIZES[size]
    out.mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks.suite " + " ".join(sys.argv[1:]) if sys.argv[1:] else ""
    previous: dict[str, Any] = {}
    if merge and (out / "results.json").exists():
        previous = json.loads((out / "results.json").read_text())
        if previous.get("size") != size:
            raise SystemExit(f"--merge: {out}/results.json has size {previous.get('size')!r}")
    results: dict[str, Any] = {
        **{k: v for k, v in previous.items() if k in SECTIONS},
        "size": size,
        "command": command or f"python -m benchmarks.suite --size {size}",
        "environment": environment(),
        # a merged re-run keeps the versions of peers it did not detect (not installed here)
        "versions": {
            **previous.get("versions", {}),
            **{k: v for k, v in versions().items() if v is not None},
        },
        "errors": {},
        "section_seconds": dict(previous.get("section_seconds", {})),
    }
    if previous:
        # The main run's identity stays; each merged re-run is listed with its own.
        for key in ("command", "environment", "suite_seconds"):
            if key in previous:
                results[key] = previous[key]
        results["merged"] = [
            *previous.get("merged", []),
            {"command": command, "sections": list(only), "environment": environment()},
        ]
    owned = start_ray()
    t0 = time.perf_counter()
    try:
        for section in registry.ordered(only):
            name = section.name
            missing = [n for n in section.needs if n not in results]
            if missing:
                print(f"[suite] {name} reads {missing}, not in these results: defaults", flush=True)
            began = time.perf_counter()
            try:
                results[name] = section.run(spec, results, systems)
            except Exception as exc:
                results["errors"][name] = f"{type(exc).__name__}: {exc}"
                traceback.print_exc()
            results.setdefault("section_seconds", {})[name] = round(time.perf_counter() - began, 1)
            print(f"[suite] {name}: {time.perf_counter() - began:.1f} s", flush=True)
            _write_json(out / "results.json", results)
    finally:
        if owned:
            import ray

            ray.shutdown()
    if not previous:
        results["environment"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        results["suite_seconds"] = round(time.perf_counter() - t0, 1)
    _write_json(out / "results.json", results)
    from .report import write_report

    write_report(results, out, plots=plots)
    return results


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    tmp.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="default")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument(
        "--systems", nargs="+", help="subset of systems for workload 1 (default: all installed)"
    )
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument(
        "--merge", action="store_true", help="keep the other sections of an existing results.json"
    )
    args = parser.parse_args()
    run_suite(
        args.size,
        args.out,
        only=tuple(args.only),
        systems=tuple(args.systems) if args.systems else None,
        plots=not args.no_plots,
        merge=args.merge,
    )


if __name__ == "__main__":
    main()
