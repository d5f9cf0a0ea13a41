"""The run store: plan records, per-microbatch outputs and manifests, run manifests.

A run store is a filesystem URI (a local path, ``file://``, ``s3://``, ``gs://``, ...)
opened through :mod:`pyarrow.fs`. Layout of one run (:mod:`.paths` computes every
path; docs/run-store.md has every file and field)::

    <root>/<run_id>/plan.json                         the plan record (written first)
    <root>/<run_id>/sources/<listing>/mb-00003.parquet   microbatch 3's source rows
    <root>/<run_id>/outputs/mb-00003/<port>.parquet   one file per microbatch and output Port
    <root>/<run_id>/outputs/mb-00003/attempt-2/...    a repair attempt's files (see attempts.py)
    <root>/<run_id>/manifests/mb-00003.json           microbatch manifest (lineage summary)
    <root>/<run_id>/run.json                          run manifest (run lineage summary)
    <root>/<run_id>/job_state.json                    the Ray job's last known status

A microbatch is *committed* iff its manifest exists. The manifest is written after
its outputs, atomically: a temporary file renamed into place on local disks, a
single object put on object stores. A restarted driver skips committed microbatches.

Every JSON file is a typed, versioned record (:mod:`.records`), validated on the way
in and out: one that does not parse raises ``StoreError`` naming its URI. Output
Parquet files hold the columns ``source`` (global 0-based source index), ``outcome``
(``present``/``dropped``/``failed``/``suppressed``), ``cause`` (null when present)
and ``value``, encoded as :mod:`.values` says. A run store that cannot be written
raises ``StoreError`` naming it and the ``run_store`` setting.
"""

from __future__ import annotations

import json
import os
import posixpath
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.job_status import JobStatus
from airflow_provider_rayorch.runs.records import (
    PLAN_VERSION,
    WRITE_FIX,
    JobStateRecord,
    MicrobatchManifest,
    PlanRecord,
    Record,
    RunManifest,
    decode_record,
    encode_record,
    microbatch_count,
    sanitize_message,
    validate_record,
)
from airflow_provider_rayorch.runs.sources import SourceRows, read_listing, write_listing
from airflow_provider_rayorch.runs.uris import join_uri, open_filesystem, store_root_of
from airflow_provider_rayorch.runs.values import ENCODING_KEY, decode_values, encode_values

from .globbing import _GLOB_CHARS, _glob_regex, glob_uris  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

__all__ = [
    "ENCODING_KEY",
    "PlanRecord",
    "RunStore",
    "StoreError",
    "glob_uris",
    "microbatch_count",
    "read_summary_outputs",
    "sanitize_message",
]

#: Where to change the run store, for errors that say it cannot be written.
_SETTING = (
    "If that location does not exist, cannot be created or is read-only here, set "
    "`run_store` (the connection's extra, or the operator's `run_store`) to one that every "
    "Airflow worker and Ray node can write to"
)
#: The fix for a local store whose place a file takes.
_A_FOLDER = (
    "move that file away, or set `run_store` (the connection's extra, or the operator's "
    "`run_store`) to a folder every Airflow worker and Ray node can write to (it need not "
    "exist yet)"
)
R = TypeVar("R", bound=Record)


class RunStore:
    """One run store root; every method takes the run id it works on."""

    def __init__(self, uri: str, options: Mapping[str, Any] | None = None) -> None:
        self.uri = uri if "://" in uri else os.path.abspath(os.path.expanduser(uri))
        self.options = dict(options or {})
        self.fs, self.root = open_filesystem(uri, self.options)
        self._atomic_rename = isinstance(self.fs, pafs.LocalFileSystem)
        if self._atomic_rename:
            self._refuse_a_file_in_the_way()

    def __repr__(self) -> str:
        return f"RunStore({self.uri!r})"

    # -- paths -------------------------------------------------------------------
    def run_uri(self, run_id: str) -> str:
        """The URI of one run's directory."""
        return join_uri(self.uri, run_id)

    def outputs_uri(self, run_id: str, index: int | None = None) -> str:
        """Where a run's (or one microbatch's) output Parquet files live."""
        return join_uri(self.uri, *paths.outputs(run_id, index))

    def _path(self, run_id: str, *parts: str) -> str:
        return posixpath.join(self.root, run_id, *parts)

    def _refuse_a_file_in_the_way(self) -> None:
        """A local store's root, or a folder above it, that is a file: refused, naming it."""
        path = self.root
        while True:
            info = self.fs.get_file_info(path)
            if info.type == pafs.FileType.File:
                raise StoreError(
                    f"the run store {self.uri} is not a folder: {path} is a file; {_A_FOLDER}"
                )
            parent = posixpath.dirname(path)
            if info.type == pafs.FileType.Directory or parent == path:
                return
            path = parent

    def _unwritable(self, exc: OSError) -> StoreError:
        return StoreError(f"cannot write to the run store {self.uri}: {exc}. {_SETTING}")

    # -- records (the one place a JSON record is written or read) ----------------------
    def record_uri(self, parts: Sequence[str]) -> str:
        """The URI of the record at ``parts`` (one of :mod:`.paths`)."""
        return join_uri(self.uri, *parts)

    def write_record(self, parts: Sequence[str], record: Record) -> None:
        """Write ``record`` at ``parts`` under the root, atomically, with its schema version."""
        self.write_bytes(parts, encode_record(record))

    def read_record(self, parts: Sequence[str], model: type[R]) -> R | None:
        """The ``model`` record at ``parts``, None if there is none; :class:`StoreError`
        naming its URI if it does not parse or has an unknown schema version."""
        text = self.read_bytes(parts)
        return None if text is None else decode_record(model, text, self.record_uri(parts))

    def record_names(self, parts: Sequence[str]) -> list[str]:
        """The names of the JSON records in the folder at ``parts``, sorted."""
        selector = pafs.FileSelector(posixpath.join(self.root, *parts), allow_not_found=True)
        return sorted(
            info.base_name
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File and paths.is_record(info.base_name)
        )

    def exists(self, parts: Sequence[str]) -> bool:
        """A file exists at ``parts``."""
        path = posixpath.join(self.root, *parts)
        return bool(self.fs.get_file_info(path).type == pafs.FileType.File)

    def delete(self, parts: Sequence[str]) -> None:
        """Remove the file at ``parts`` if it exists."""
        if self.exists(parts):
            try:
                self.fs.delete_file(posixpath.join(self.root, *parts))
            except OSError as exc:
                raise self._unwritable(exc) from exc

    def read_bytes(self, parts: Sequence[str]) -> bytes | None:
        """The content of the file at ``parts``, None if it does not exist."""
        try:
            with self.fs.open_input_stream(posixpath.join(self.root, *parts)) as f:
                return bytes(f.read())
        except FileNotFoundError:
            return None
        except NotADirectoryError as exc:  # a file took the place of a folder since
            raise StoreError(
                f"cannot read {self.record_uri(parts)} of the run store {self.uri}: a file "
                f"stands where a folder must be ({exc}); {_A_FOLDER}"
            ) from None

    def write_bytes(self, parts: Sequence[str], data: bytes) -> None:
        """Write ``data`` at ``parts`` atomically: a temporary file renamed into place on
        a local disk, one put on an object store."""
        path = posixpath.join(self.root, *parts)
        try:
            self.fs.create_dir(posixpath.dirname(path), recursive=True)
            if not self._atomic_rename:  # object stores: one put is atomic
                with self.fs.open_output_stream(path) as f:
                    f.write(data)
                return
            tmp = f"{path}.tmp-{uuid.uuid4().hex}"
            with self.fs.open_output_stream(tmp) as f:
                f.write(data)
            self.fs.move(tmp, path)
        except OSError as exc:
            raise self._unwritable(exc) from exc

    def _summary(self, model: type[R], data: Mapping[str, Any], parts: Sequence[str]) -> R:
        """``data`` as a summary record; a caller's summary that breaks the contract is
        refused before anything is written."""
        try:
            plain = json.loads(json.dumps(data))
        except (TypeError, ValueError) as exc:
            raise StoreError(
                f"refusing to write {model.KIND} {self.record_uri(parts)}: not JSON values ({exc})"
            ) from None
        return validate_record(model, plain, self.record_uri(parts), fix=WRITE_FIX)

    # -- plan ----------------------------------------------------------------------
    def write_plan(self, plan: PlanRecord) -> PlanRecord:
        """Write the plan record; one holding its rows (built in memory) has them
        written as its source listing first. Returns the record as stored."""
        if plan.sources is not None:
            listing = write_listing(
                self,
                plan.run_id,
                plan.sources,
                n_columns=plan.n_columns,
                batch_size=plan.input_batch_size,
                strings=all(isinstance(v, str) for v in plan.sources),
            )
            plan = plan.model_copy(
                update={
                    "sources": None,
                    "listing": listing.name,
                    "total_sources": listing.total,
                    "sources_digest": listing.digest,
                    "version": PLAN_VERSION,
                }
            )
        self.write_bytes(paths.plan(plan.run_id), plan.to_json().encode())
        plan._listed = SourceRows(self, plan)
        return plan

    def read_plan(self, run_id: str) -> PlanRecord | None:
        """The plan record; its ``rows`` read its source listing a microbatch at a time."""
        plan = self.read_record(paths.plan(run_id), PlanRecord)
        if plan is not None:
            plan._listed = SourceRows(self, plan)
        return plan

    def read_sources(self, plan: PlanRecord, index: int) -> list[list[Any]]:
        """Microbatch ``index``'s source columns (one list per column): its listing
        file, or the rows of a version-1 plan record."""
        return read_listing(self, plan, index)

    def iter_sources(self, plan: PlanRecord) -> Iterator[Any]:
        """Every source row of ``plan`` in order (a list per row with several
        columns), read a microbatch at a time."""
        for mb in plan.microbatches():
            columns = self.read_sources(plan, mb["index"])
            yield from (
                columns[0] if plan.n_columns == 1 else map(list, zip(*columns, strict=True))
            )

    def delete_run(self, run_id: str, *, keep_listing: str = "") -> None:
        """Remove everything stored for ``run_id`` (but the source listing ``keep_listing``)."""
        path = self._path(run_id)
        if self.fs.get_file_info(path).type != pafs.FileType.Directory:
            return
        try:
            if not keep_listing:
                self.fs.delete_dir(path)
                return
            for info in self.fs.get_file_info(pafs.FileSelector(path)):
                if info.base_name == paths.SOURCES and info.type == pafs.FileType.Directory:
                    for listing in self.fs.get_file_info(pafs.FileSelector(info.path)):
                        if listing.base_name != keep_listing:
                            self._delete_path(listing)
                else:
                    self._delete_path(info)
        except OSError as exc:
            raise self._unwritable(exc) from exc

    def delete_listing(self, run_id: str, listing: str) -> None:
        """Remove the source listing ``listing`` of ``run_id`` (one no plan names)."""
        path = self._path(*paths.listing(run_id, listing))
        try:
            self._delete_path(self.fs.get_file_info(path))
        except OSError as exc:
            raise self._unwritable(exc) from exc

    def _delete_path(self, info: pafs.FileInfo) -> None:
        if info.type == pafs.FileType.Directory:
            self.fs.delete_dir(info.path)
        elif info.type == pafs.FileType.File:
            self.fs.delete_file(info.path)

    # -- microbatches ------------------------------------------------------------
    def committed(self, run_id: str) -> frozenset[int]:
        """Indices of the committed microbatches (those whose manifest exists)."""
        found = (paths.manifest_index(n) for n in self.record_names(paths.manifests(run_id)))
        return frozenset(i for i in found if i is not None)

    def manifest_record(self, run_id: str, index: int) -> MicrobatchManifest | None:
        """Microbatch ``index``'s manifest record (its lineage summary and commit fields)."""
        return self.read_record(paths.manifest(run_id, index), MicrobatchManifest)

    def manifest_records(self, run_id: str) -> list[MicrobatchManifest]:
        """Every committed microbatch's manifest record, by index."""
        found = (self.manifest_record(run_id, i) for i in sorted(self.committed(run_id)))
        return [m for m in found if m is not None]

    def write_outputs(
        self,
        run_id: str,
        index: int,
        port: str,
        first_source: int,
        rows: Sequence[tuple[str, str | None, Any]],
        *,
        attempt: int = 1,
        sources: Sequence[int] | None = None,
    ) -> str:
        """Write one microbatch's rows of one output Port; returns the file's URI.

        ``rows`` holds ``(outcome, cause, value)`` per source row in order (global
        indices ``first_source...``, or ``sources`` when given). Attempt 1 writes
        ``mb-NNNNN/<port>.parquet``; a repair attempt ``n`` ``mb-NNNNN/attempt-n/``.
        A value the store cannot hold raises :class:`~.values.UnstorableValue` (the
        driver fails such sources before writing, see :mod:`.commit`).
        """
        values = [value if outcome == "present" else None for outcome, _, value in rows]
        parts = paths.output_file(run_id, index, attempt, port)
        path = posixpath.join(self.root, *parts)
        ids = (
            list(sources)
            if sources is not None
            else list(range(first_source, first_source + len(rows)))
        )
        value_col, meta = encode_values(values)
        try:
            self.fs.create_dir(posixpath.dirname(path), recursive=True)
            try:
                self._write_table(path, ids, rows, value_col, meta)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
                # Parquet cannot hold every Arrow type (an empty struct, ...): JSON then
                value_col, meta = encode_values(values, native=False)
                self._write_table(path, ids, rows, value_col, meta)
        except OSError as exc:
            raise self._unwritable(exc) from exc
        return join_uri(self.uri, *parts)

    def _write_table(
        self,
        path: str,
        ids: Sequence[int],
        rows: Sequence[tuple[str, str | None, Any]],
        value_col: pa.Array,
        meta: dict[bytes, bytes],
    ) -> None:
        table = pa.table(
            {
                "source": pa.array(list(ids), pa.int64()),
                "outcome": pa.array([r[0] for r in rows], pa.string()),
                "cause": pa.array([r[1] for r in rows], pa.string()),
                "value": value_col,
            }
        ).replace_schema_metadata(meta)
        # A half-written output file is harmless: without a manifest it is rewritten.
        pq.write_table(table, path, filesystem=self.fs)

    def commit_microbatch(
        self, run_id: str, index: int, manifest: Mapping[str, Any]
    ) -> MicrobatchManifest:
        """Write a microbatch manifest atomically; from now on the microbatch is committed.
        Returns the record as written."""
        parts = paths.manifest(run_id, index)
        record = self._summary(MicrobatchManifest, manifest, parts)
        self.write_record(parts, record)
        return record

    def manifest_version(self, run_id: str, index: int) -> str | None:
        """A token for the manifest's current version (None: not committed), for
        :meth:`replace_manifest`; needs the store's conditional writes."""
        from .conditional import conditional_writes

        path = posixpath.join(self.root, *paths.manifest(run_id, index))
        current = conditional_writes(self).read(path)
        return None if current is None else current[1]

    def replace_manifest(
        self, run_id: str, index: int, manifest: Mapping[str, Any], version: str
    ) -> bool:
        """Replace a committed manifest only if it still is ``version``; False if
        another writer replaced it since (nothing is written then)."""
        from .conditional import conditional_writes

        parts = paths.manifest(run_id, index)
        data = encode_record(self._summary(MicrobatchManifest, manifest, parts))
        path = posixpath.join(self.root, *parts)
        return conditional_writes(self).replace_if_unchanged(path, data, version) is not None

    def read_outputs(self, run_id: str, port: str = "out") -> list[dict[str, Any]]:
        """Every committed row of one output Port, by source index.

        Each row is ``{"source", "outcome", "cause", "value"}`` with ``value`` decoded.
        """
        rows: list[dict[str, Any]] = []
        for index in sorted(self.committed(run_id)):
            rows.extend(self.read_microbatch_rows(run_id, index, port))
        rows.sort(key=lambda r: int(r["source"]))
        return rows

    def read_microbatch_rows(
        self, run_id: str, index: int, port: str = "out"
    ) -> list[dict[str, Any]]:
        """One committed microbatch's rows of one Port: the files its manifest names
        (``attempt`` and ``files``), or attempt 1's file for older manifests."""
        manifest = self.manifest_record(run_id, index)
        attempt = (manifest.attempt if manifest is not None else None) or 1
        path = posixpath.join(self.root, *paths.output_file(run_id, index, attempt, port))
        table = pq.read_table(path, filesystem=self.fs)
        values = decode_values(table.column("value").to_pylist(), table.schema.metadata)
        rows = table.to_pylist()
        for row, value in zip(rows, values, strict=True):
            row["value"] = value
        return rows

    # -- run manifest ----------------------------------------------------------------
    def write_run_manifest(self, run_id: str, summary: Mapping[str, Any]) -> None:
        """Write the run manifest (the run's lineage summary) atomically."""
        parts = paths.run_manifest(run_id)
        self.write_record(parts, self._summary(RunManifest, summary, parts))

    def run_manifest_record(self, run_id: str) -> RunManifest | None:
        """The run manifest record, None before the run task wrote it."""
        return self.read_record(paths.run_manifest(run_id), RunManifest)

    def clear_run_manifest(self, run_id: str) -> None:
        """Forget a previous run manifest (a resumed run writes a new one)."""
        self.delete(paths.run_manifest(run_id))

    # -- job state -------------------------------------------------------------------
    def write_job_state(self, run_id: str, job_status: str, message: str | None = None) -> None:
        """Record the run's Ray job status (``JobStatus`` value) and why, atomically.

        The message is stripped of anything that looks like a credential (a
        ``Bearer ...`` value, an ``Authorization`` header's value) and shortened.
        """
        record = JobStateRecord(
            job_status=JobStatus.parse(job_status),
            message=message,
            at=datetime.now(UTC).isoformat(),
        )
        self.write_record(paths.job_state(run_id), record)

    def job_state_record(self, run_id: str) -> JobStateRecord | None:
        """The job-state record as last written, or None if never written."""
        return self.read_record(paths.job_state(run_id), JobStateRecord)


def read_summary_outputs(
    summary: dict[str, Any], port: str = "out", options: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The committed output rows of the run (or microbatch) a lineage summary describes.

    A microbatch's summary reads that microbatch's manifest and files only.

    ``options``: the run store's filesystem options (the connection's ``run_store_options``).
    """
    uri = str(summary["outputs"]["uri"])
    run_id = str(summary["run_id"])
    root = store_root_of(uri, run_id)
    if root is None:
        raise StoreError(f"outputs URI {uri} is not inside a run {run_id!r} of a run store")
    store = RunStore(root, options)
    mb = summary.get("microbatch")
    if not mb:
        return store.read_outputs(run_id, port)
    index = int(mb["index"])
    if not store.exists(paths.manifest(run_id, index)):  # not committed
        return []
    return store.read_microbatch_rows(run_id, index, port)
