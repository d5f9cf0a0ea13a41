"""The ids a task's run goes by: the run id (from the task instance, the same on every
try) and the Ray submission id of each try.

The operators name their runs and jobs with them; the sensors' repair and the
lineage read them back the same way.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["derive_run_id", "run_id_from_context", "submission_id"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


def derive_run_id(dag_id: str, run_id: str, task_id: str, map_index: int | None) -> str:
    """A run id from dag, run, task and map index (never the try number): readable, unique."""
    index = -1 if map_index is None else int(map_index)
    slug = _UNSAFE.sub("_", f"{dag_id}.{task_id}")[:80]
    suffix = f".m{index}" if index >= 0 else ""
    return f"{slug}{suffix}.{_digest(dag_id, run_id, task_id, index)[:16]}"


def run_id_from_context(context: Mapping[str, Any]) -> str:
    ti = context["ti"]
    return derive_run_id(ti.dag_id, ti.run_id, ti.task_id, getattr(ti, "map_index", -1))


def submission_id(run_id: str, try_number: int) -> str:
    """The deterministic Ray submission id of one try of a run."""
    return f"rayorch-{_digest(run_id)[:20]}-try{int(try_number)}"
