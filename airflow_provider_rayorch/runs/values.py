"""Output values in Parquet: which Python values the run store holds, and how.

A Parquet column needs one type, so the ``value`` column is *native* when pyarrow
types every value of it and gives each back exactly (ints stay ints), and *JSON*
text otherwise. JSON alone would lose types, so values JSON cannot spell are
written as tagged objects ``{"$rayorch": "<type>", "v": ...}`` and turned back on
reading: bytes stay bytes, datetimes datetimes (docs/run-store.md has the table).
A dict that happens to hold a ``"$rayorch"`` key is tagged itself, so it reads back
unchanged. The schema metadata says which encoding (``rayorch.value_encoding``) and
whether tags are in use (``rayorch.json_tags``; files written before tags existed
lack it and read as plain JSON).

A value that neither path can encode is never stored as its ``repr``: encoding it
raises :class:`UnstorableValue`, and the driver fails its source instead.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_rayorch.rayorch.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "ENCODING_KEY",
    "STORABLE",
    "TAGS_KEY",
    "UnstorableValue",
    "decode_values",
    "encode_values",
    "unstorable",
]

#: Parquet schema metadata key naming how the ``value`` column is encoded.
ENCODING_KEY = b"rayorch.value_encoding"
#: Present (``b"1"``) when the JSON text uses ``$rayorch`` tags.
TAGS_KEY = b"rayorch.json_tags"
TAG = "$rayorch"
#: What a UDF may return, for error messages.
STORABLE = (
    "return dict/list/str/int/float/bool/None, bytes, numpy arrays or datetimes "
    "(docs/run-store.md lists every type the run store holds)"
)


class UnstorableValue(StoreError):
    """An output value that neither Parquet nor JSON can encode."""

    def __init__(self, type_name: str, where: str = "") -> None:
        self.type_name, self.where = type_name, where
        at = f" (at value{where})" if where else ""
        super().__init__(
            f"output value of type {type_name}{at} cannot be stored (neither Parquet nor "
            f"JSON can encode it); {STORABLE}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.type_name, self.where))


def _type_name(value: Any) -> str:
    cls = type(value)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def _tagged(kind: str, value: Any) -> dict[str, Any]:
    return {TAG: kind, "v": value}


#: JSON-less scalar types: (type, tag, encode); checked in order (datetime before date).
_SCALARS: tuple[tuple[type, str, Callable[[Any], Any]], ...] = (
    (bytes, "bytes", lambda v: base64.b64encode(v).decode("ascii")),
    (bytearray, "bytes", lambda v: base64.b64encode(bytes(v)).decode("ascii")),
    (dt.datetime, "datetime", lambda v: v.isoformat()),
    (dt.date, "date", lambda v: v.isoformat()),
    (dt.time, "time", lambda v: v.isoformat()),
    (dt.timedelta, "timedelta", lambda v: [v.days, v.seconds, v.microseconds]),
    (Decimal, "decimal", str),
)

_DECODERS: dict[str, Callable[[Any], Any]] = {
    "bytes": lambda v: base64.b64decode(v),
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat,
    "timedelta": lambda v: dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2]),
    "decimal": Decimal,
    "dict": lambda v: v,
    "map": lambda v: {k: x for k, x in v},
}


def _to_tree(value: Any, where: str) -> Any:
    """``value`` as JSON values (tagging what JSON cannot spell); raises
    :class:`UnstorableValue` naming the first part that cannot be encoded."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            tree = {k: _to_tree(v, f"{where}[{k!r}]") for k, v in value.items()}
            return _tagged("dict", tree) if TAG in tree else tree
        return _tagged(
            "map",
            [
                [_to_tree(k, f"{where}.key"), _to_tree(v, f"{where}[{k!r}]")]
                for k, v in value.items()
            ],
        )
    if isinstance(value, list | tuple | set | frozenset):
        return [_to_tree(v, f"{where}[{i}]") for i, v in enumerate(value)]
    for kind, tag, encode in _SCALARS:
        if isinstance(value, kind):
            return _tagged(tag, encode(value))
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        plain = value.tolist()  # arrays -> (nested) lists, scalars -> Python scalars
        if plain is not value and type(plain) is not type(value):
            return _to_tree(plain, where)
    raise UnstorableValue(_type_name(value), where)


def _from_tree(tree: Any) -> Any:
    if isinstance(tree, list):
        return [_from_tree(v) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if TAG in tree and len(tree) == 2 and "v" in tree and tree[TAG] in _DECODERS:
        kind = tree[TAG]
        inner = tree["v"]
        if kind == "dict":
            return {k: _from_tree(v) for k, v in inner.items()}
        if kind == "map":
            return _DECODERS[kind]([(_from_tree(k), _from_tree(v)) for k, v in inner])
        return _DECODERS[kind](inner)
    return {k: _from_tree(v) for k, v in tree.items()}


def _native(values: Sequence[Any]) -> pa.Array | None:
    """The values as a typed Arrow array if pyarrow gives each back exactly, else None."""
    try:
        native = pa.array(list(values))
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    # repr, not ==: 1 == 1.0, but an int must not come back as a float
    return native if repr(native.to_pylist()) == repr(list(values)) else None


def unstorable(values: Sequence[Any]) -> dict[int, UnstorableValue]:
    """The positions of ``values`` the store cannot hold, and why (empty: all fine)."""
    if _native(values) is not None:
        return {}
    problems: dict[int, UnstorableValue] = {}
    for i, value in enumerate(values):
        try:
            _to_tree(value, "")
        except UnstorableValue as exc:
            problems[i] = exc
    return problems


def encode_values(
    values: Sequence[Any], *, native: bool = True
) -> tuple[pa.Array, dict[bytes, bytes]]:
    """The ``value`` column and its schema metadata; raises :class:`UnstorableValue`.

    ``native=False`` forces JSON (Parquet cannot hold every Arrow type, e.g. an
    empty struct)."""
    array = _native(values) if native else None
    if array is not None:
        return array, {ENCODING_KEY: b"native"}
    text = [None if v is None else json.dumps(_to_tree(v, "")) for v in values]
    return pa.array(text, type=pa.string()), {ENCODING_KEY: b"json", TAGS_KEY: b"1"}


def decode_values(values: list[Any], metadata: dict[bytes, bytes] | None) -> list[Any]:
    """The Python values of a stored ``value`` column."""
    meta = metadata or {}
    if meta.get(ENCODING_KEY, b"native") != b"json":
        return values
    tagged = meta.get(TAGS_KEY) == b"1"
    out: list[Any] = []
    for value in values:
        if value is None:
            out.append(None)
            continue
        tree = json.loads(value)
        out.append(_from_tree(tree) if tagged else tree)
    return out
