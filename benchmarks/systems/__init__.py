"""The systems the benchmarks compare, and their adapters in one place.

Adapters for workload 1 live beside this file: ``rayorch`` (this engine and the
paper's package, the same spelling), ``raydata``, ``daft``, and ``xenna`` (which
drives ``xenna_runner`` in cosmos-xenna's own Python 3.12 venv over the JSON
protocol of ``xenna_protocol``). This module imports nothing heavy: each adapter
is imported when it is asked for, so ``xenna_runner`` can import the package in
a venv that has neither Ray Data nor Daft.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..measure import Measurement
    from ..workload import Workload

__all__ = [
    "AVAILABLE",
    "DAFT",
    "OURS",
    "OURS_OWN",
    "PAPER",
    "RAY_DATA",
    "RUNNERS",
    "SYSTEMS",
    "TUNABLE",
    "XENNA",
    "pick_systems",
    "versions",
]

#: This engine as a user gets it: split, render and write ask Ray for nothing, so
#: they share one actor process (the default; docs/engine-api.md, ``share_process``).
OURS = "this engine"
#: The same engine with every module replica in a process of its own
#: (``share_process=False`` on the light stages, the opt-out; the default before).
OURS_OWN = "this engine, a process per replica"
PAPER = "rayorch (paper)"
RAY_DATA = "Ray Data"
DAFT = "Daft"
XENNA = "Xenna"
SYSTEMS = (OURS, OURS_OWN, PAPER, RAY_DATA, DAFT, XENNA)
#: Peers whose input parallelism (Ray Data blocks, Daft partitions) the ``tuning``
#: section sweeps before the comparison.
TUNABLE = (RAY_DATA, DAFT)


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _adapter(name: str) -> Any:
    return importlib.import_module(f"{__name__}.{name}")


AVAILABLE: dict[str, Callable[[], bool]] = {
    OURS: lambda: True,
    OURS_OWN: lambda: True,
    PAPER: lambda: _importable("rayorch"),
    RAY_DATA: lambda: bool(_adapter("raydata").available()),
    DAFT: lambda: bool(_adapter("daft").available()),
    XENNA: lambda: bool(_adapter("xenna").available()),
}


def _run_rayorch(system: str, **options: Any) -> Callable[..., list[Measurement]]:
    def run(w: Workload, **_: Any) -> list[Measurement]:
        measured = list(_adapter("rayorch").run_pair(system, w, **options))
        for m in measured:  # named as its row in the tables
            m.system = OURS_OWN if options.get("own_processes") else system
        return measured

    return run


RUNNERS: dict[str, Callable[..., list[Measurement]]] = {
    OURS: _run_rayorch(OURS),
    OURS_OWN: _run_rayorch(OURS, own_processes=True),
    PAPER: _run_rayorch(PAPER),
    RAY_DATA: lambda w, **kw: list(_adapter("raydata").run_pair(w, **kw)),
    DAFT: lambda w, **kw: list(_adapter("daft").run_pair(w, **kw)),
    XENNA: lambda w, **kw: list(_adapter("xenna").run_pair(w, **kw)),
}


def versions() -> dict[str, str | None]:
    """The version of every system (None: not installed), recorded beside the figures."""
    from importlib.metadata import PackageNotFoundError, version

    import ray

    def version_of(module: str) -> str | None:
        try:
            return str(getattr(importlib.import_module(module), "__version__", "?"))
        except ImportError:
            return None

    try:
        ours = version("airflow-provider-rayorch")
    except PackageNotFoundError:
        ours = "?"
    xenna = _adapter("xenna").versions() if AVAILABLE[XENNA]() else None
    return {
        OURS: f"airflow-provider-rayorch {ours}",
        "ray": ray.__version__,
        PAPER: version_of("rayorch"),
        RAY_DATA: ray.__version__ if AVAILABLE[RAY_DATA]() else None,
        DAFT: version_of("daft"),
        XENNA: xenna["cosmos-xenna"] if xenna else None,
        "Xenna venv": (
            f"Python {xenna['python']}, ray {xenna['ray']}, tqdm {xenna['tqdm']}" if xenna else None
        ),
        "matplotlib": version_of("matplotlib"),
    }


def pick_systems(wanted: tuple[str, ...] | None) -> tuple[list[str], dict[str, str]]:
    """The installed systems among ``wanted`` (all when None), and why others are skipped."""
    chosen, skipped = [], {}
    for name in SYSTEMS:
        if wanted is not None and name not in wanted:
            skipped[name] = "not selected (--systems)"
        elif not AVAILABLE[name]():
            skipped[name] = (
                "not set up (bash scripts/setup-xenna.sh)"
                if name == XENNA
                else "not installed (pip install -e '.[bench]')"
            )
        else:
            chosen.append(name)
    return chosen, skipped
