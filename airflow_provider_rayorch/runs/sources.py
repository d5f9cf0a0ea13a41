"""The source listing: a run's source rows, one Parquet file per microbatch.

``<run_id>/sources/<listing>/mb-NNNNN.parquet`` holds the rows of microbatch
``NNNNN``, one column per source column (``c0``, ``c1``, ...), each a string column:
the value itself when every value of that column is a string (a glob's URIs), its
JSON text otherwise. The schema metadata ``rayorch.source_listing`` says so
(``{"version": 1, "columns": ["string" | "json", ...], "first_source": N}``).

The writer takes the rows as an iterable and consumes it lazily: it holds at most
one row group (:data:`ROW_GROUP` rows, fewer with smaller microbatches) while a
listing of any size is written. The plan record (:class:`.records.PlanRecord`)
names the listing folder, the number of sources and their digest.

:class:`SourceColumns` hands the engine one source column that reads its rows a
microbatch at a time, so a driver or a repair holds one microbatch's sources.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, SupportsIndex, overload

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.paths import listing_file as _parts

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from airflow_provider_rayorch.runs.records import PlanRecord
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "LISTING_KEY",
    "LISTING_VERSION",
    "ROW_GROUP",
    "Listing",
    "SourceColumns",
    "SourceRows",
    "listing_digest",
    "read_listing",
    "source_columns",
    "write_listing",
]

#: The schema version of a source listing file this release writes and reads.
LISTING_VERSION = 1
#: The Parquet schema metadata key describing a listing file.
LISTING_KEY = b"rayorch.source_listing"
#: Rows held in memory at most while a listing is written.
ROW_GROUP = 65_536
_FIX = (
    "the source listing is written with the plan record and never changes: delete the "
    "run's folder and run the task again, which plans the run anew"
)


@dataclass(frozen=True)
class Listing:
    """A written listing: its folder name, how many rows, their digest."""

    name: str
    total: int
    digest: str


def _row_text(row: Any) -> bytes:
    return json.dumps(row, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def listing_digest(rows: Iterable[Any]) -> str:
    """The SHA-256 of the rows' JSON text, in order (what the writer records)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(_row_text(row))
    return digest.hexdigest()


class _FileWriter:
    """One microbatch's listing file, written a row group at a time."""

    def __init__(self, store: RunStore, path: str, kinds: list[str], first: int) -> None:
        meta = {"version": LISTING_VERSION, "columns": kinds, "first_source": first}
        schema = pa.schema(
            [pa.field(f"c{k}", pa.string()) for k in range(len(kinds))],
            metadata={LISTING_KEY: json.dumps(meta).encode()},
        )
        store.fs.create_dir(posixpath.dirname(path), recursive=True)
        self.kinds = kinds
        self.writer = pq.ParquetWriter(path, schema, filesystem=store.fs)

    def write(self, rows: list[Any]) -> None:
        if not rows:
            return
        n = len(self.kinds)
        columns: list[list[str]] = [[] for _ in range(n)]
        for row in rows:
            values = row if n > 1 else (row,)
            for k, value in enumerate(values):
                text = value if self.kinds[k] == "string" else json.dumps(value)
                columns[k].append(text)
        arrays = [pa.array(c, pa.string()) for c in columns]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.writer.schema))

    def close(self) -> None:
        self.writer.close()


def write_listing(
    store: RunStore,
    run_id: str,
    rows: Iterable[Any],
    *,
    n_columns: int = 1,
    batch_size: int | None = None,
    strings: bool = False,
) -> Listing:
    """Write ``rows`` as a new listing of ``run_id``, ``batch_size`` rows per file
    (``None``: one file); consumes ``rows`` lazily. ``strings``: every value is a
    string (stored as itself, not as JSON text)."""
    name = uuid.uuid4().hex[:16]
    kinds = ["string" if strings else "json"] * max(int(n_columns), 1)
    digest = hashlib.sha256()
    size = batch_size or 0
    group = min(size, ROW_GROUP) if size else ROW_GROUP
    held: list[Any] = []
    current: _FileWriter | None = None
    current_index = -1
    total = 0
    try:
        for row in rows:
            index = total // size if size else 0
            if index != current_index:
                if current is not None:
                    current.write(held)
                    held = []
                    current.close()
                path = posixpath.join(store.root, *_parts(run_id, name, index))
                current, current_index = _FileWriter(store, path, kinds, total), index
            assert current is not None
            digest.update(_row_text(row))
            held.append(row)
            total += 1
            if len(held) >= group:
                current.write(held)
                held = []
        if current is not None:
            if held:
                current.write(held)
            current.close()
    except BaseException as exc:  # a row that is no JSON value, a listing that failed
        if current is not None:
            current.close()
        store.delete_listing(run_id, name)  # no plan names it
        if isinstance(exc, OSError):
            raise StoreError(
                f"cannot write the source listing of run {run_id} to {store.uri}: {exc}"
            ) from exc
        raise
    return Listing(name, total, digest.hexdigest())


def read_listing(store: RunStore, plan: PlanRecord, index: int) -> list[list[Any]]:
    """The source columns of microbatch ``index`` of ``plan`` (a list per column)."""
    first, count = plan.microbatch(index)
    if plan.sources is not None:  # a version-1 plan record holds its rows
        rows = plan.sources[first : first + count]
        if plan.n_columns == 1:
            return [list(rows)]
        return [[row[k] for row in rows] for k in range(plan.n_columns)]
    parts = _parts(plan.run_id, plan.listing, index)
    uri = store.record_uri(parts)
    try:
        table = pq.read_table(posixpath.join(store.root, *parts), filesystem=store.fs)
    except FileNotFoundError:
        raise StoreError(f"source listing {uri} of run {plan.run_id} is missing; {_FIX}") from None
    except (OSError, pa.ArrowInvalid) as exc:
        raise StoreError(f"source listing {uri} is not readable ({exc}); {_FIX}") from None
    meta = _meta(table.schema.metadata, uri)
    if table.num_rows != count or len(meta["columns"]) != plan.n_columns:
        raise StoreError(
            f"source listing {uri} holds {table.num_rows} rows of {len(meta['columns'])} "
            f"column(s); its plan record says {count} of {plan.n_columns}; {_FIX}"
        )
    columns = []
    for k, kind in enumerate(meta["columns"]):
        values = table.column(f"c{k}").to_pylist()
        columns.append(values if kind == "string" else [json.loads(v) for v in values])
    return columns


def _meta(metadata: dict[bytes, bytes] | None, uri: str) -> dict[str, Any]:
    raw = (metadata or {}).get(LISTING_KEY)
    try:
        meta = json.loads(raw) if raw is not None else None
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or not isinstance(meta.get("columns"), list):
        raise StoreError(
            f"source listing {uri} has no valid {LISTING_KEY.decode()} metadata; {_FIX}"
        )
    if meta.get("version") != LISTING_VERSION:
        raise StoreError(
            f"source listing {uri} has schema version {meta.get('version')!r}; this "
            f"airflow-provider-rayorch reads version {LISTING_VERSION} only. It was written by "
            "another (newer) release: upgrade the provider wherever the run store is read"
        )
    return meta


class _Chunks:
    """The last microbatch's source columns read, shared by a plan's columns."""

    def __init__(self, store: RunStore, plan: PlanRecord) -> None:
        self.store, self.plan = store, plan
        self.index = -1
        self.columns: list[list[Any]] = []
        self.reads = 0

    def value(self, column: int, source: int) -> Any:
        index = source // self.plan.batch_size
        if index != self.index:
            self.columns = read_listing(self.store, self.plan, index)
            self.index = index
            self.reads += 1
        return self.columns[column][source - index * self.plan.batch_size]


class SourceColumns(list[Any]):
    """One source column of a plan, read a microbatch at a time as the engine asks.

    A ``list`` (the engine takes lists and tuples as they are) that holds no row:
    its length is the plan's, and a row is read with its microbatch's listing file."""

    def __init__(self, chunks: _Chunks, column: int) -> None:
        super().__init__()
        self._chunks, self._column = chunks, column

    def __len__(self) -> int:
        return self._chunks.plan.total_sources

    @overload
    def __getitem__(self, i: SupportsIndex) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: SupportsIndex | slice) -> Any:
        n = len(self)
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(n))]
        j = int(i) + n if int(i) < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(i)
        return self._at(j)

    def _at(self, j: int) -> Any:
        """The value at index ``j`` (in range)."""
        return self._chunks.value(self._column, j)

    def __iter__(self) -> Iterator[Any]:
        return (self[j] for j in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None


class SourceRows(SourceColumns):
    """A plan's source rows (a list per row with several columns), read a microbatch
    at a time: ``rows[i]`` reads row ``i``'s microbatch unless it is the last one read."""

    def __init__(self, store: RunStore, plan: PlanRecord) -> None:
        super().__init__(_Chunks(store, plan), -1)

    def _at(self, j: int) -> Any:
        """Row ``j`` (in range): its one value, or a list of its columns' values."""
        chunks = self._chunks
        if chunks.plan.n_columns == 1:
            return chunks.value(0, j)
        return [chunks.value(k, j) for k in range(chunks.plan.n_columns)]


def source_columns(store: RunStore, plan: PlanRecord) -> list[SourceColumns]:
    """The plan's source columns for ``Executor.stream``, read a microbatch at a time."""
    chunks = _Chunks(store, plan)
    return [SourceColumns(chunks, k) for k in range(plan.n_columns)]
