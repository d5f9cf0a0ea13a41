"""Why a pipeline path cannot be imported, and the fix, as the operators say it.

A misspelt class (the module imported, the name is not in it) is fixed by the name:
the message names the module's file and the names it holds that come close. A
module this worker cannot import is fixed by where it lives: the message lists the
paths searched, the DAG folder first (Airflow appends it to ``sys.path``, after the
interpreter's own entries), and says to put the module there or in an installed
package, and, for a remote cluster, to ship it with ``runtime_env``.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.exceptions import RayOrchPipelineNotImportable

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["dag_folder", "importable_hint", "not_importable_here"]

#: ``sys.path`` entries named in a message besides the DAG folder.
_SHOWN_PATHS = 5


def _module_name(spec: str) -> str:
    return spec.partition(":")[0] if ":" in spec else spec.rpartition(".")[0]


def dag_folder(dag_file: str | None) -> tuple[str, bool] | None:
    """``(folder, on_path)``: the ``sys.path`` entry holding ``dag_file`` (the folder
    modules next to DAGs are imported from), else the file's own directory."""
    if not dag_file:
        return None
    where = os.path.dirname(os.path.abspath(dag_file))
    entries = [os.path.abspath(p) for p in sys.path if p]
    holding = [p for p in entries if where == p or where.startswith(p.rstrip(os.sep) + os.sep)]
    if holding:
        return max(holding, key=len), True
    return where, False


def _searched(folder: tuple[str, bool] | None) -> str:
    """The paths this worker searched: the DAG folder first, then ``sys.path``."""
    skip = None if folder is None else folder[0]
    others = [p for p in dict.fromkeys(sys.path) if p and os.path.abspath(p) != skip]
    shown = ", ".join(others[:_SHOWN_PATHS]) + (", ..." if len(others) > _SHOWN_PATHS else "")
    if folder is None:
        return f"searched sys.path: {shown}"
    if folder[1]:
        return f"searched the DAG folder {folder[0]}, then sys.path: {shown}"
    return f"searched sys.path: {shown}; the DAG folder {folder[0]} is not on it"


def _missing_name(spec: str) -> str:
    """What a module that imported lacks: its file, and the names that come close."""
    module_name = _module_name(spec)
    attr = spec.partition(":")[2] if ":" in spec else spec.rpartition(".")[2]
    obj: Any = importlib.import_module(module_name)
    where = str(getattr(obj, "__file__", "") or module_name)
    for part in attr.split("."):
        if not hasattr(obj, part):
            close = difflib.get_close_matches(part, [n for n in dir(obj) if not n.startswith("_")])
            guess = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            return f"module {module_name!r} ({where}) has no {part!r}{guess}"
        obj = getattr(obj, part)
    return f"module {module_name!r} ({where}) has no {attr!r}"


def not_importable_here(
    spec: str, exc: BaseException, remote: bool, dag_file: str | None = None
) -> str:
    """Why ``spec`` cannot be imported in this worker, and the fix.

    Here the worker itself cannot import it, so shipping it to a cluster is not the
    first fix: the name is misspelt or the module is not where this worker looks."""
    module_name = _module_name(spec)
    cause = exc.__cause__ or exc
    if isinstance(cause, AttributeError):
        try:
            what = _missing_name(spec)
        except Exception:  # the module imported once; say what Python said
            what = f"module {module_name!r} has no attribute named by {spec!r} ({cause})"
        return f"pipeline {spec!r}: {what}. Fix: correct the name after ':' in pipeline=."
    if not isinstance(cause, ModuleNotFoundError):
        return f"pipeline {spec!r}: importing it failed: {type(cause).__name__}: {cause}"
    folder = dag_folder(dag_file)
    home = f"the DAG folder ({folder[0]})" if folder is not None else "the DAG folder"
    message = (
        f"pipeline {spec!r}: module {cause.name or module_name!r} is not importable in this "
        f"worker ({_searched(folder)}). Fix: check the spelling of 'pkg.module:Factory'; "
        f"put the module in {home} or in an installed package (or add its directory to "
        "PYTHONPATH)."
    )
    if remote:
        message += (
            " Then, for a remote cluster, ship the module to it with runtime_env "
            "`py_modules` or `working_dir`, or install it on every node."
        )
    return message


def importable_hint(
    spec: str, module: Any, remote: bool, runtime_env: Mapping[str, Any], shares_worker_path: bool
) -> None:
    """Refuse a pipeline defined in a DAG file or script; warn when a remote cluster
    may not import a module that is not an installed package and is not shipped."""
    name = getattr(module, "__name__", "")
    if name == "__main__" or name.startswith("unusual_prefix_") or "<locals>" in spec:
        where = "the Ray cluster's workers" if remote else "the driver process"
        raise RayOrchPipelineNotImportable(
            f"pipeline {spec!r} is defined inside a DAG file or script ({name}); "
            f"{where} cannot import it. Move it to a module of its own (next to the DAG, "
            "or in an installed package) and, for a remote cluster, ship that module with "
            "runtime_env `py_modules` or `working_dir`."
        )
    if shares_worker_path:  # the provider's loopback head imports what this worker imports
        return
    if remote and not (runtime_env.get("py_modules") or runtime_env.get("working_dir")):
        top = spec.partition(":")[0].split(".")[0]
        top_module = sys.modules.get(top)
        path = str(getattr(top_module, "__file__", "") or "")
        if "site-packages" not in path and "dist-packages" not in path:
            from airflow.sdk.definitions._internal.logging_mixin import LoggingMixin

            LoggingMixin().log.warning(
                "pipeline %r comes from %s, which is not an installed package and no "
                "runtime_env py_modules/working_dir is set: the Ray cluster must be able to "
                "import it (else the job fails at import).",
                spec,
                path or "an unknown location",
            )
