"""An operator's ``sources`` as rows: a list as given, a glob URI expanded through
``pyarrow.fs`` (optionally by modification time), or a mapping of columns.

The operators resolve them to write the run's source listing; the lineage resolves a
list to name the run's inputs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from airflow_provider_rayorch.exceptions import RayOrchPermanentError
from airflow_provider_rayorch.rayorch.errors import UsageError

__all__ = ["resolve_sources", "stream_sources"]


def resolve_sources(
    sources: Any,
    *,
    modified_after: datetime | str | None = None,
    modified_before: datetime | str | None = None,
) -> tuple[list[Any], int]:
    """``(rows, n_columns)``: a list as given, a glob URI expanded through
    ``pyarrow.fs``, or a mapping of equally long columns (in ``forward``'s order)
    turned into rows of one value per column.

    A glob whose folder does not exist fails (``SourcesNotFound`` names the folder);
    one that matches no file in an existing folder skips the task, saying so: a run
    of nothing is neither a success to count nor a failure to retry."""
    from airflow_provider_rayorch.runs.globbing import glob_uris

    if isinstance(sources, str):
        after = _as_datetime(modified_after)
        before = _as_datetime(modified_before)
        rows = glob_uris(sources, modified_after=after, modified_before=before, missing_ok=False)
        if not rows:
            _skip_empty_glob(sources, after, before)
        return list(rows), 1
    if sources is None:
        return [], 1
    if isinstance(sources, Mapping):
        columns = [list(c) for c in sources.values()]
        if not columns:
            return [], 1
        if len({len(c) for c in columns}) != 1:
            sizes = {name: len(c) for name, c in zip(sources, columns, strict=True)}
            raise UsageError(
                f"source columns differ in length: {sizes}; give sources={{column: values}} "
                "with one value per row in every column"
            )
        if len(columns) == 1:
            return columns[0], 1
        return [list(row) for row in zip(*columns, strict=True)], len(columns)
    return list(sources), 1


def stream_sources(
    sources: Any,
    *,
    modified_after: datetime | str | None = None,
    modified_before: datetime | str | None = None,
) -> tuple[Iterable[Any], int, bool]:
    """``(rows, n_columns, strings)`` as :func:`resolve_sources`, but a glob's rows come
    lazily as its folders are listed (``strings``: every row is one string, a URI).
    A glob that matches nothing skips the task as soon as that is known."""
    from airflow_provider_rayorch.runs.globbing import iter_glob_uris

    if not isinstance(sources, str):
        rows, n_columns = resolve_sources(sources)
        return rows, n_columns, n_columns == 1 and all(isinstance(r, str) for r in rows)
    after = _as_datetime(modified_after)
    before = _as_datetime(modified_before)
    found = iter_glob_uris(sources, modified_after=after, modified_before=before, missing_ok=False)
    first = next(found, None)
    if first is None:
        _skip_empty_glob(sources, after, before)
    return itertools.chain([first], found), 1, True


def _skip_empty_glob(pattern: str, after: datetime | None, before: datetime | None) -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    from airflow_provider_rayorch.runs.globbing import glob_base

    window = ""
    if after is not None or before is not None:
        window = f" modified in [{after or '-inf'}, {before or '+inf'})"
    raise AirflowSkipException(
        f"sources glob {pattern!r} matched no file{window} in {glob_base(pattern)!r}: "
        "nothing to run, so the task is skipped (see docs/airflow/operators.md)"
    )


def _as_datetime(value: datetime | str | None) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:  # e.g. "None": a template naming a date this run does not have
        raise RayOrchPermanentError(
            f"sources_modified_after/_before is {str(value)!r}, not an ISO 8601 date: give "
            "the template a fallback, e.g. {{ data_interval_start | default('', true) }} "
            "('' is no bound; see docs/airflow/operators.md, runs with no logical date)"
        ) from None
