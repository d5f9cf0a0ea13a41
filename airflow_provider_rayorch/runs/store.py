"""The run store: plan records, per-microbatch outputs and manifests, run manifests.

A run store is a filesystem URI (a local path, ``file://``, ``s3://``, ``gs://``, ...)
opened through :mod:`pyarrow.fs`. Layout of one run::

    <root>/<run_id>/plan.json                         the plan record (written first)
    <root>/<run_id>/outputs/mb-00003/<port>.parquet   one file per microbatch and output Port
    <root>/<run_id>/outputs/mb-00003/attempt-2/...    a repair attempt's files (see attempts.py)
    <root>/<run_id>/manifests/mb-00003.json           microbatch manifest (lineage summary)
    <root>/<run_id>/run.json                          run manifest (run lineage summary)
    <root>/<run_id>/job_state.json                    the Ray job's last known status

A microbatch is *committed* iff its manifest exists. The manifest is written after
its outputs, atomically: a temporary file renamed into place on local disks, a
single object put on object stores. A restarted driver skips committed microbatches.

Output Parquet files hold the columns ``source`` (global 0-based source index),
``outcome`` (``present``/``dropped``/``failed``/``suppressed``), ``cause`` (null when
present) and ``value``: native when pyarrow types the values losslessly, otherwise
JSON text. The schema metadata key ``rayorch.value_encoding`` says which.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.job_status import JobStatus
from airflow_provider_rayorch.runs.uris import join_uri, open_filesystem, store_root_of

from .globbing import _GLOB_CHARS, _glob_regex, glob_uris  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

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

#: Parquet schema metadata key naming how the ``value`` column is encoded.
ENCODING_KEY = b"rayorch.value_encoding"
_PLAN = "plan.json"
_RUN = "run.json"
_JOB_STATE = "job_state.json"
_MESSAGE_LIMIT = 2000
_REDACTED = "[redacted]"
#: an Authorization-like header or a token assignment, its value up to a delimiter
_CREDENTIAL_FIELD = re.compile(
    r"(?i)((?:authorization|auth[_-]?token|token)[\"']?\s*[:=]\s*[\"']?)"
    r"(?:(?:bearer|basic|token)\s+)?[^\s\"',;}]+"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"',;}]+")


def microbatch_count(total_sources: int, input_batch_size: int | None) -> int:
    """How many source microbatches ``total_sources`` rows make."""
    if total_sources <= 0:
        return 0
    size = input_batch_size or total_sources
    return -(-total_sources // size)


@dataclass(frozen=True)
class PlanRecord:
    """Everything a driver needs to (re)run one plan; stored as ``plan.json``."""

    run_id: str
    pipeline: str
    fingerprint: str
    sources: list[Any]
    input_batch_size: int | None = None
    max_active_input_batches: int = 1
    pipeline_kwargs: dict[str, Any] = field(default_factory=dict)
    max_failed_ratio: float = 0.0
    backend: str = "ray"
    ray_init_kwargs: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    version: int = 1
    #: with several source columns each row of ``sources`` is a list of that many values
    n_columns: int = 1
    #: the compiled plan's ``semantic_fingerprint`` and ``semantic_record()`` (what a
    #: repair compares; empty in records written before repairs existed)
    semantic_fingerprint: str = ""
    semantic: dict[str, Any] = field(default_factory=dict)

    def columns(self) -> list[list[Any]]:
        """The source columns ``forward`` takes (one Port each)."""
        if self.n_columns == 1:
            return [list(self.sources)]
        return [[row[i] for row in self.sources] for i in range(self.n_columns)]

    @property
    def batch_size(self) -> int:
        """The effective source microbatch size."""
        return self.input_batch_size or max(len(self.sources), 1)

    def microbatches(self) -> list[dict[str, int]]:
        """Descriptors ``{"index", "first_source", "count"}`` of every source microbatch."""
        size, total = self.batch_size, len(self.sources)
        return [
            {"index": i, "first_source": i * size, "count": min(size, total - i * size)}
            for i in range(microbatch_count(total, size))
        ]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str) -> PlanRecord:
        data = json.loads(text)
        if data.get("version") != 1:
            raise StoreError(f"unsupported plan record version {data.get('version')!r}")
        return cls(**data)


def _encode_values(values: Sequence[Any]) -> tuple[pa.Array, str]:
    """The ``value`` column: native if pyarrow round-trips the values exactly, else JSON."""
    try:
        native = pa.array(list(values))
        # repr, not ==: 1 == 1.0, but an int must not come back as a float
        if repr(native.to_pylist()) == repr(list(values)):
            return native, "native"
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    return _json_column(values)


def _json_column(values: Sequence[Any]) -> tuple[pa.Array, str]:
    text = [None if v is None else json.dumps(v, default=_json_default) for v in values]
    return pa.array(text, type=pa.string()), "json"


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"__bytes_hex__": value.hex()}
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    return repr(value)


class RunStore:
    """One run store root; every method takes the run id it works on."""

    def __init__(self, uri: str, options: Mapping[str, Any] | None = None) -> None:
        self.uri = uri if "://" in uri else os.path.abspath(os.path.expanduser(uri))
        self.options = dict(options or {})
        self.fs, self.root = open_filesystem(uri, self.options)
        self._atomic_rename = isinstance(self.fs, pafs.LocalFileSystem)

    def __repr__(self) -> str:
        return f"RunStore({self.uri!r})"

    # -- paths -------------------------------------------------------------------
    def run_uri(self, run_id: str) -> str:
        """The URI of one run's directory."""
        return join_uri(self.uri, run_id)

    def outputs_uri(self, run_id: str, index: int | None = None) -> str:
        """Where a run's (or one microbatch's) output Parquet files live."""
        base = join_uri(self.uri, run_id, "outputs")
        return base if index is None else join_uri(base, f"mb-{index:05d}")

    def _path(self, run_id: str, *parts: str) -> str:
        return posixpath.join(self.root, run_id, *parts)

    def _manifest_path(self, run_id: str, index: int) -> str:
        return self._path(run_id, "manifests", f"mb-{index:05d}.json")

    # -- raw I/O -----------------------------------------------------------------
    def _exists(self, path: str) -> bool:
        return bool(self.fs.get_file_info(path).type == pafs.FileType.File)

    def _read_text(self, path: str) -> str | None:
        try:
            with self.fs.open_input_stream(path) as f:
                return bytes(f.read()).decode("utf-8")
        except FileNotFoundError:
            return None

    def _write_atomic(self, path: str, data: bytes) -> None:
        self.fs.create_dir(posixpath.dirname(path), recursive=True)
        if not self._atomic_rename:  # object stores: one put is atomic
            with self.fs.open_output_stream(path) as f:
                f.write(data)
            return
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        self.fs.move(tmp, path)

    # -- plan ----------------------------------------------------------------------
    def write_plan(self, plan: PlanRecord) -> None:
        self._write_atomic(self._path(plan.run_id, _PLAN), plan.to_json().encode())

    def read_plan(self, run_id: str) -> PlanRecord | None:
        text = self._read_text(self._path(run_id, _PLAN))
        return None if text is None else PlanRecord.from_json(text)

    def delete_run(self, run_id: str) -> None:
        """Remove everything stored for ``run_id``."""
        path = self._path(run_id)
        if self.fs.get_file_info(path).type == pafs.FileType.Directory:
            self.fs.delete_dir(path)

    # -- microbatches ------------------------------------------------------------
    def committed(self, run_id: str) -> frozenset[int]:
        """Indices of the committed microbatches (those whose manifest exists)."""
        base = self._path(run_id, "manifests")
        selector = pafs.FileSelector(base, allow_not_found=True)
        found: set[int] = set()
        for info in self.fs.get_file_info(selector):
            name = info.base_name
            if (
                info.type == pafs.FileType.File
                and name.startswith("mb-")
                and name.endswith(".json")
            ):
                found.add(int(name[3:-5]))
        return frozenset(found)

    def read_manifest(self, run_id: str, index: int) -> dict[str, Any] | None:
        text = self._read_text(self._manifest_path(run_id, index))
        return None if text is None else dict(json.loads(text))

    def manifests(self, run_id: str) -> list[dict[str, Any]]:
        """Every committed microbatch manifest, by index."""
        found = (self.read_manifest(run_id, i) for i in sorted(self.committed(run_id)))
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
        """
        values = [value if outcome == "present" else None for outcome, _, value in rows]
        folder = self._attempt_folder(index, attempt)
        path = self._path(run_id, "outputs", *folder, f"{port}.parquet")
        self.fs.create_dir(posixpath.dirname(path), recursive=True)
        value_col, encoding = _encode_values(values)
        ids = (
            list(sources)
            if sources is not None
            else list(range(first_source, first_source + len(rows)))
        )
        try:
            self._write_table(path, ids, rows, value_col, encoding)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            # Parquet cannot hold every Arrow type (an empty struct, ...): fall back to JSON
            value_col, encoding = _json_column(values)
            self._write_table(path, ids, rows, value_col, encoding)
        return join_uri(self.outputs_uri(run_id), *folder, f"{port}.parquet")

    @staticmethod
    def _attempt_folder(index: int, attempt: int) -> tuple[str, ...]:
        mb = f"mb-{index:05d}"
        return (mb,) if attempt <= 1 else (mb, f"attempt-{attempt}")

    def _write_table(
        self,
        path: str,
        ids: Sequence[int],
        rows: Sequence[tuple[str, str | None, Any]],
        value_col: pa.Array,
        encoding: str,
    ) -> None:
        table = pa.table(
            {
                "source": pa.array(list(ids), pa.int64()),
                "outcome": pa.array([r[0] for r in rows], pa.string()),
                "cause": pa.array([r[1] for r in rows], pa.string()),
                "value": value_col,
            }
        ).replace_schema_metadata({ENCODING_KEY: encoding.encode()})
        # A half-written output file is harmless: without a manifest it is rewritten.
        pq.write_table(table, path, filesystem=self.fs)

    def commit_microbatch(self, run_id: str, index: int, manifest: dict[str, Any]) -> None:
        """Write a microbatch manifest atomically; from now on the microbatch is committed."""
        data = json.dumps(manifest, sort_keys=True).encode()
        self._write_atomic(self._manifest_path(run_id, index), data)

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
        manifest = self.read_manifest(run_id, index) or {}
        attempt = int(manifest.get("attempt") or 1)
        path = self._path(
            run_id, "outputs", *self._attempt_folder(index, attempt), f"{port}.parquet"
        )
        table = pq.read_table(path, filesystem=self.fs)
        encoding = (table.schema.metadata or {}).get(ENCODING_KEY, b"native").decode()
        rows = table.to_pylist()
        for row in rows:
            if encoding == "json" and row["value"] is not None:
                row["value"] = json.loads(row["value"])
        return rows

    # -- run manifest ----------------------------------------------------------------
    def write_run_manifest(self, run_id: str, summary: dict[str, Any]) -> None:
        data = json.dumps(summary, sort_keys=True).encode()
        self._write_atomic(self._path(run_id, _RUN), data)

    def read_run_manifest(self, run_id: str) -> dict[str, Any] | None:
        text = self._read_text(self._path(run_id, _RUN))
        return None if text is None else dict(json.loads(text))

    def clear_run_manifest(self, run_id: str) -> None:
        """Forget a previous run manifest (a resumed run writes a new one)."""
        path = self._path(run_id, _RUN)
        if self._exists(path):
            self.fs.delete_file(path)

    # -- job state -------------------------------------------------------------------
    def write_job_state(self, run_id: str, job_status: str, message: str | None = None) -> None:
        """Record the run's Ray job status (``JobStatus`` value) and why, atomically.

        The message is stripped of anything that looks like a credential (a
        ``Bearer ...`` value, an ``Authorization`` header's value) and shortened.
        """

        status = JobStatus.parse(job_status)
        record = {
            "job_status": status.value,
            "message": None if message is None else sanitize_message(message),
            "at": datetime.now(UTC).isoformat(),
        }
        data = json.dumps(record, sort_keys=True).encode()
        self._write_atomic(self._path(run_id, _JOB_STATE), data)

    def read_job_state(self, run_id: str) -> dict[str, Any] | None:
        """``{"job_status", "message", "at"}`` as last written, or None if never written."""
        path = self._path(run_id, _JOB_STATE)
        text = self._read_text(path)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StoreError(
                f"job-state record {self.run_uri(run_id)}/{_JOB_STATE} is not JSON ({exc}); "
                "delete it, the next status check writes a new one"
            ) from None
        if not isinstance(data, dict) or "job_status" not in data:
            raise StoreError(
                f"job-state record {self.run_uri(run_id)}/{_JOB_STATE} has no 'job_status'; "
                "delete it, the next status check writes a new one"
            )
        return {
            "job_status": str(data["job_status"]),
            "message": data.get("message"),
            "at": data.get("at"),
        }


def sanitize_message(message: str) -> str:
    """``message`` without credential values, at most a couple of thousand characters."""
    text = _CREDENTIAL_FIELD.sub(lambda m: m.group(1) + _REDACTED, str(message))
    text = _BEARER.sub(lambda m: f"{m.group(1)} {_REDACTED}", text)
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT - 1] + "…"
    return text


def read_summary_outputs(
    summary: dict[str, Any], port: str = "out", options: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The committed output rows of the run (or microbatch) a lineage summary describes.

    ``options``: the run store's filesystem options (the connection's ``run_store_options``).
    """
    uri = str(summary["outputs"]["uri"])
    run_id = str(summary["run_id"])
    root = store_root_of(uri, run_id)
    if root is None:
        raise StoreError(f"outputs URI {uri} is not inside a run {run_id!r} of a run store")
    rows = RunStore(root, options).read_outputs(run_id, port)
    mb = summary.get("microbatch")
    if mb:
        lo, hi = int(mb["first_source"]), int(mb["first_source"]) + int(mb["count"])
        rows = [r for r in rows if lo <= int(r["source"]) < hi]
    return rows


def rows_of(outputs: Iterable[Any]) -> list[tuple[str, str | None, Any]]:
    """Turn engine outputs (values and ``OutputIssue``s) into ``(outcome, cause, value)``."""
    from airflow_provider_rayorch.rayorch.outcomes import OutputIssue

    rows: list[tuple[str, str | None, Any]] = []
    for item in outputs:
        if isinstance(item, OutputIssue):
            cause = None if item.cause is None else str(item.cause)
            rows.append((str(item.outcome.value), cause, None))
        else:
            rows.append(("present", None, item))
    return rows
