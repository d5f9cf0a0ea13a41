"""The one conversion of a stored record to plain JSON values, where a record leaves
the provider's code: an XCom value, a trigger event's payload, the UI's JSON, the
engine's summary functions (which know no records)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.records import Record

__all__ = ["plain"]


@overload
def plain(record: Record) -> dict[str, Any]: ...
@overload
def plain(record: None) -> None: ...
def plain(record: Record | None) -> dict[str, Any] | None:
    """``record`` as JSON values (:meth:`~.records.Record.to_dict`); None stays None."""
    return None if record is None else record.to_dict()
