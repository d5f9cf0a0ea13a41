"""The worker wrapper: run a UDF on one batch and check what it returned.

Shared by the local and the Ray backends, so both judge UDF results alike.
UDFs see plain column lists and static keyword arguments; never lineage ids.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import RayOrchError
from ..outcomes import GroupFailure, RecordFailure
from ..plain_text import strip_ansi
from .portable import unsendable_rows

__all__ = ["BatchOutcome", "instantiate", "run_batch"]

_FAILURES = (RecordFailure, GroupFailure)


@dataclass(slots=True)
class BatchOutcome:
    """What one batch produced: rows (one per input row), or why it has none."""

    rows: list[Any] | None = None
    error: str | None = None
    exception: BaseException | None = None
    rejected: str | None = None
    busy_s: float = 0.0


def instantiate(udf: type, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """Build one UDF instance (heavy set-up runs here, once per worker)."""
    return udf(*args, **dict(kwargs))


def run_batch(
    instance: Any, name: str, columns: list[list[Any]], kwargs: Mapping[str, Any], n_outputs: int
) -> BatchOutcome:
    """Call ``instance.run(*columns, **kwargs)`` and shape the result into rows.

    A row is the value (a tuple of values when ``n_outputs > 1``) or a
    ``RecordFailure``/``GroupFailure``; a value Ray cannot serialize becomes a
    ``RecordFailure`` saying so (``portable``), on either backend. An exception
    becomes ``error`` (plain text); a result of the wrong length or arity becomes
    ``rejected``.
    """
    n = len(columns[0]) if columns else 0
    start = time.perf_counter()
    try:
        result = instance.run(*columns, **kwargs)
    except Exception as exc:
        return BatchOutcome(
            error=strip_ansi(f"{type(exc).__name__}: {exc}"),
            exception=exc,
            busy_s=time.perf_counter() - start,
        )
    busy = time.perf_counter() - start
    try:
        rows = _rows(result, n, n_outputs, name)
    except _Shape as bad:
        return BatchOutcome(rejected=str(bad), busy_s=busy)
    return BatchOutcome(rows=unsendable_rows(rows, name), busy_s=busy)


class _Shape(RayOrchError):
    """A batch's results do not have the shape its Call declares (caught in this module)."""


def _as_list(value: Any, what: str) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, (str, bytes, Mapping)) or value is None:
        raise _Shape(f"{what} is {type(value).__name__}, not a list")
    try:
        return list(value)
    except TypeError:
        raise _Shape(f"{what} is {type(value).__name__}, not a list") from None


def _rows(result: Any, n: int, n_outputs: int, name: str) -> list[Any]:
    if n_outputs == 1:
        rows = _as_list(result, f"{name}.run() returned a value that")
        if len(rows) != n:
            raise _Shape(f"{name}.run() returned {len(rows)} results for a batch of {n} rows")
        return rows
    if not isinstance(result, (tuple, list)) or len(result) != n_outputs:
        got = len(result) if isinstance(result, (tuple, list)) else type(result).__name__
        raise _Shape(
            f"{name}.run() must return a tuple of {n_outputs} lists (returns({n_outputs})), "
            f"got {got}"
        )
    lists = [_as_list(part, f"{name}.run() output {k}") for k, part in enumerate(result)]
    for k, part in enumerate(lists):
        if len(part) != n:
            raise _Shape(f"{name}.run() output {k} has {len(part)} results for a batch of {n} rows")
    shaped: list[Any] = []
    for values in zip(*lists, strict=True):
        failure = next((v for v in values if isinstance(v, _FAILURES)), None)
        shaped.append(failure if failure is not None else values)
    return shaped
