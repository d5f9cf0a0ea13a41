"""The run store's records: one pydantic model per JSON file, each with a schema version.

Every record is validated when it is written and when it is read, so a reader
never works on a half-written, hand-edited or newer record by accident: such a
record raises :class:`StoreError` naming its URI, what is wrong and what to do.
Records written before schema versions existed carry none and read as version 1.
docs/run-store.md lists the files and their fields.

Lineage summaries (microbatch and run manifests) are open: keys beyond the ones
API.md names are kept, so the summary contract can grow without a new version.
The other records are closed: an unknown key means the file is not what it claims.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.job_status import JobStatus  # noqa: TC001 (pydantic)

__all__ = [
    "PLAN_VERSION",
    "SCHEMA_VERSION",
    "WRITE_FIX",
    "JobStateRecord",
    "MicrobatchManifest",
    "PlanRecord",
    "Record",
    "RepairRecord",
    "RunManifest",
    "decode_record",
    "encode_record",
    "microbatch_count",
    "sanitize_message",
    "validate_record",
]

#: The schema version this provider writes (and the only one it reads) for every
#: record but the plan record (:data:`PLAN_VERSION`).
SCHEMA_VERSION = 1
#: The plan record's schema version: 2 keeps the sources apart (:mod:`.sources`);
#: version 1 records (sources inline) still read.
PLAN_VERSION = 2

_MESSAGE_LIMIT = 2000
_REDACTED = "[redacted]"
#: an Authorization-like header or a token assignment, its value up to a delimiter
_CREDENTIAL_FIELD = re.compile(
    r"(?i)((?:authorization|auth[_-]?token|token)[\"']?\s*[:=]\s*[\"']?)"
    r"(?:(?:bearer|basic|token)\s+)?[^\s\"',;}]+"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"',;}]+")


def sanitize_message(message: str) -> str:
    """``message`` without credential values, at most a couple of thousand characters."""
    text = _CREDENTIAL_FIELD.sub(lambda m: m.group(1) + _REDACTED, str(message))
    text = _BEARER.sub(lambda m: f"{m.group(1)} {_REDACTED}", text)
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT - 1] + "…"
    return text


class Record(BaseModel):
    """A stored record. Subclasses name themselves (``KIND``) and the remedy for a
    broken file (``FIX``); ``VERSION_FIELD`` holds the schema version."""

    model_config = ConfigDict(extra="forbid")

    KIND: ClassVar[str] = "record"
    FIX: ClassVar[str] = "delete or restore the file"
    VERSION_FIELD: ClassVar[str] = "schema_version"
    #: The schema version written, and the ones read.
    SCHEMA: ClassVar[int] = SCHEMA_VERSION
    READS: ClassVar[frozenset[int]] = frozenset({SCHEMA_VERSION})
    #: Dump only the keys that were given (summaries keep their callers' shape).
    SPARSE: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON values, without its schema version (a property of the file),
        its keys sorted at every depth as in the file: a summary pushed to XCom reads the
        same whatever order the model declares its fields in."""
        data = self.model_dump(mode="json", exclude_unset=self.SPARSE)
        data.pop(self.VERSION_FIELD, None)
        return _sorted_keys(data)


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


R = TypeVar("R", bound=Record)


def _where(kind: str, uri: str | None) -> str:
    return f"{kind} {uri}" if uri else kind


def _problems(exc: ValidationError) -> str:
    """Field paths and what is wrong with them, never the values (they may be large)."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False)[:5]:
        loc = ".".join(str(p) for p in error["loc"]) or "(record)"
        parts.append(f"{loc}: {error['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


#: The remedy when a record a caller is about to write is invalid.
WRITE_FIX = "nothing was written: the code that built it is at fault, please report it"


def validate_record(
    model: type[R], data: Any, uri: str | None = None, *, fix: str | None = None
) -> R:
    """``data`` (a JSON object) as a ``model``; :class:`StoreError` if it is not one,
    ending with ``fix`` (default: the model's remedy for a stored file)."""
    fix = fix or model.FIX
    if not isinstance(data, dict):
        raise StoreError(
            f"{_where(model.KIND, uri)} is not a JSON object but {type(data).__name__}; {fix}"
        )
    version = data.get(model.VERSION_FIELD, 1)  # records written before versions: 1
    if version not in model.READS:
        reads = " and ".join(str(v) for v in sorted(model.READS))
        raise StoreError(
            f"{_where(model.KIND, uri)} has schema version {version!r}; this "
            f"airflow-provider-rayorch reads version {reads} only. It was written by "
            "another (newer) release: upgrade the provider wherever the run store is read "
            "(Airflow workers, triggerer, API server and the Ray cluster's runtime_env)"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise StoreError(
            f"{_where(model.KIND, uri)} is not a valid {model.KIND}: {_problems(exc)}; {fix}"
        ) from None


def decode_record(model: type[R], text: str | bytes, uri: str | None = None) -> R:
    """Parse one stored record; :class:`StoreError` naming ``uri`` if it does not parse."""
    try:
        data = json.loads(text)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise StoreError(f"{_where(model.KIND, uri)} is not JSON ({exc}); {model.FIX}") from None
    return validate_record(model, data, uri)


def encode_record(record: Record, *, indent: int | None = None) -> bytes:
    """The record's file content, with its schema version."""
    data = record.model_dump(mode="json", exclude_unset=record.SPARSE)
    data[record.VERSION_FIELD] = record.SCHEMA
    return json.dumps(data, sort_keys=True, indent=indent).encode()


def microbatch_count(total_sources: int, input_batch_size: int | None) -> int:
    """How many source microbatches ``total_sources`` rows make."""
    if total_sources <= 0:
        return 0
    size = input_batch_size or total_sources
    return -(-total_sources // size)


class PlanRecord(Record):
    """Everything a driver needs to (re)run one plan; stored as ``plan.json``.

    Version 2 holds the run's metadata and microbatch layout; the source rows live in
    the listing it names (``sources/<listing>/``, :mod:`.sources`), read a microbatch
    at a time. A version-1 record holds its rows in ``sources``; so does a record built
    in memory, which :meth:`.store.RunStore.write_plan` splits into listing and record.
    Its schema version is ``version`` (the field predates the other records')."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    KIND: ClassVar[str] = "plan record"
    FIX: ClassVar[str] = (
        "the plan record is written first and never changes: delete the run's directory "
        "and run the task again, which plans the run anew"
    )
    VERSION_FIELD: ClassVar[str] = "version"
    SCHEMA: ClassVar[int] = PLAN_VERSION
    READS: ClassVar[frozenset[int]] = frozenset({1, PLAN_VERSION})

    run_id: str
    pipeline: str
    fingerprint: str
    #: the rows inline (version 1, or in memory); never written by version 2
    sources: list[Any] | None = Field(default=None, exclude=True)
    #: how many source rows; the listing folder under ``sources/`` and its digest
    total_sources: int = Field(default=0, ge=0)
    listing: str = ""
    sources_digest: str = ""
    input_batch_size: int | None = None
    max_active_input_batches: int = 1
    pipeline_kwargs: dict[str, Any] = Field(default_factory=dict)
    max_failed_ratio: float = 0.0
    backend: str = "ray"
    ray_init_kwargs: dict[str, Any] = Field(default_factory=dict)
    created_at: str = ""
    version: int = PLAN_VERSION
    #: with several source columns each row of ``sources`` is a list of that many values
    n_columns: int = 1
    #: the compiled plan's ``semantic_fingerprint`` and ``semantic_record()`` (what a
    #: repair compares; empty in records written before repairs existed)
    semantic_fingerprint: str = ""
    semantic: dict[str, Any] = Field(default_factory=dict)

    #: the stored listing's rows, read a microbatch at a time (set by the run store)
    _listed: list[Any] | None = PrivateAttr(default=None)

    @property
    def rows(self) -> list[Any]:
        """Every source row: the inline ones, or the listing's read a microbatch at a
        time (a plan the run store read or wrote)."""
        rows = self.sources if self.sources is not None else self._listed
        if rows is None:
            raise StoreError(f"plan record of run {self.run_id} was not read from a run store")
        return rows

    @model_validator(mode="before")
    @classmethod
    def _count_inline(cls, data: Any) -> Any:
        """Inline rows set ``total_sources`` (and version 1, unless given); a version-2
        file must name its listing."""
        if isinstance(data, dict) and data.get("sources") is not None:
            return {"version": 1, **data, "total_sources": len(data["sources"])}
        if (
            isinstance(data, dict)
            and data.get("version") == PLAN_VERSION
            and data.get("total_sources")
            and not data.get("listing")
        ):
            raise ValueError("a version-2 plan record with sources names their listing")
        return data

    def columns(self) -> list[list[Any]]:
        """The source columns ``forward`` takes (one Port each), of a plan holding its
        rows (version 1 or in memory); a stored version-2 plan reads them with
        :func:`.sources.source_columns`."""
        if self.sources is None:
            raise StoreError(
                f"plan record of run {self.run_id} keeps its sources in a listing: read them "
                "with RunStore.read_sources"
            )
        if self.n_columns == 1:
            return [list(self.sources)]
        return [[row[i] for row in self.sources] for i in range(self.n_columns)]

    @property
    def batch_size(self) -> int:
        """The effective source microbatch size."""
        return self.input_batch_size or max(self.total_sources, 1)

    def microbatch(self, index: int) -> tuple[int, int]:
        """``(first_source, count)`` of microbatch ``index``."""
        size = self.batch_size
        first = index * size
        if not 0 <= index < microbatch_count(self.total_sources, size):
            raise StoreError(f"run {self.run_id} has no microbatch {index}")
        return first, min(size, self.total_sources - first)

    def microbatches(self) -> list[dict[str, int]]:
        """Descriptors ``{"index", "first_source", "count"}`` of every source microbatch."""
        size, total = self.batch_size, self.total_sources
        return [
            {"index": i, "first_source": i * size, "count": min(size, total - i * size)}
            for i in range(microbatch_count(total, size))
        ]

    def to_json(self) -> str:
        """The record's file content; a record holding its rows spells version 1 (rows
        inline), as :meth:`.store.RunStore.write_plan` never writes it."""
        if self.sources is None:
            return encode_record(self, indent=1).decode()
        data = self.model_dump(mode="json", exclude={"total_sources", "listing", "sources_digest"})
        data.update(sources=self.sources, version=1)
        return json.dumps(data, sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str | bytes, uri: str | None = None) -> PlanRecord:
        return decode_record(cls, text, uri)


# -- lineage summaries (API.md section 3) -----------------------------------------------
# Keys API.md names are typed; a summary may leave some out (older or minimal records),
# but never holds null where a value belongs: only the fields in ``NULLABLE`` may be null.


def _not_null(cls: Any, value: Any, info: ValidationInfo) -> Any:
    if value is None and info.field_name not in cls.NULLABLE:
        raise ValueError("must not be null (leave the key out instead)")
    return value


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    NULLABLE: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="before")
    @classmethod
    def _never_null(cls, value: Any, info: ValidationInfo) -> Any:
        return _not_null(cls, value, info)


class SourceCounts(_Open):
    total: int = Field(ge=0)
    present: int = Field(ge=0)
    dropped: int = Field(ge=0)
    failed: int = Field(ge=0)
    suppressed: int = Field(ge=0)


class MicrobatchRef(_Open):
    index: int = Field(ge=0)
    first_source: int = Field(ge=0)
    count: int = Field(ge=0)


class GrainCounts(_Open):
    dispatched: int = Field(ge=0)
    retried: int = Field(ge=0)
    suppressed: int = Field(ge=0)


class Failure(_Open):
    source: int = Field(ge=0)
    outcome: str
    cause: str


class SampleRow(_Open):
    """One source row of a manifest's bounded ``sample`` (cause "" when present)."""

    source: int = Field(ge=0)
    outcome: str
    cause: str = ""


class Outputs(_Open):
    NULLABLE: ClassVar[frozenset[str]] = frozenset({"uri"})

    uri: str | None = None
    rows: int | None = Field(default=None, ge=0)
    ports: list[str] | None = Field(default=None)


class Attempt(_Open):
    """One entry of a repaired microbatch's ``attempts`` history."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset(
        {"at", "kind", "job_id", "state", "fingerprint", "elapsed_s"}
    )

    attempt: int = Field(ge=1)
    at: str | None = None
    kind: str | None = None
    job_id: str | None = None
    repaired_sources: list[int] | None = Field(default=None)
    sources: dict[str, int] | None = Field(default=None)
    state: str | None = None
    fingerprint: str | None = None
    elapsed_s: float | None = None


class _Summary(Record):
    model_config = ConfigDict(extra="allow", strict=True)
    SPARSE: ClassVar[bool] = True
    NULLABLE: ClassVar[frozenset[str]] = frozenset(
        {"run_id", "pipeline", "fingerprint", "job_status"}
    )

    @field_validator("*", mode="before")
    @classmethod
    def _never_null(cls, value: Any, info: ValidationInfo) -> Any:
        return _not_null(cls, value, info)

    FIX: ClassVar[str] = (
        "a microbatch is committed iff its manifest exists: delete the file and retry the "
        "task, which recomputes what it stood for"
    )

    schema_version: int = SCHEMA_VERSION
    run_id: str | None = None
    pipeline: str | None = None
    fingerprint: str | None = None
    state: Literal["success", "failed"] | None = Field(default=None)
    job_status: str | None = None
    sources: SourceCounts | None = Field(default=None)
    entities: dict[str, int] | None = Field(default=None)
    grains: GrainCounts | None = Field(default=None)
    failures: list[Failure] | None = Field(default=None)
    outputs: Outputs | None = Field(default=None)
    elapsed_s: float | None = Field(default=None)


class MicrobatchManifest(_Summary):
    """``manifests/mb-NNNNN.json``: a committed microbatch's lineage summary, plus the
    commit's ``attempt``, ``files`` (``{port: uri}``), ``committed_at``, ``sample``
    (``{port: rows}``: a bounded sample of its source rows, failures first, for the
    live report) and, once repaired, ``attempts``."""

    KIND: ClassVar[str] = "microbatch manifest"

    microbatch: MicrobatchRef | None = Field(default=None)
    attempt: int | None = Field(default=None, ge=1)
    files: dict[str, str] | None = Field(default=None)
    committed_at: str | None = Field(default=None)
    attempts: list[Attempt] | None = Field(default=None)
    sample: dict[str, list[SampleRow]] | None = Field(default=None)


class MicrobatchEntry(_Open):
    index: int = Field(ge=0)
    first_source: int = Field(ge=0)
    count: int = Field(ge=0)
    state: str | None = Field(default=None)
    attempt: int | None = Field(default=None, ge=1)


class RepairEntry(_Open):
    NULLABLE: ClassVar[frozenset[str]] = frozenset({"job_id", "at", "message"})

    index: int = Field(ge=0)
    attempt: int = Field(ge=0)
    status: str
    job_id: str | None = None
    at: str | None = None
    message: str | None = None


class RunManifest(_Summary):
    """``run.json``: the run's lineage summary, the sum of its microbatch manifests."""

    KIND: ClassVar[str] = "run manifest"
    FIX: ClassVar[str] = (
        "delete the file: the run task (or a resumed run) writes it again from the "
        "microbatch manifests"
    )

    microbatches: list[MicrobatchEntry] | None = Field(default=None)
    repairs: list[RepairEntry] | None = Field(default=None)


# -- the other records -------------------------------------------------------------------


class _Messaged(Record):
    """A record with a ``message`` for people: never with credential values in it."""

    schema_version: int = SCHEMA_VERSION
    message: str | None = None
    at: str | None = None

    @field_validator("message")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        return None if value is None else sanitize_message(value)


class JobStateRecord(_Messaged):
    """``job_state.json``: the run's Ray job status as last seen (``at``), and why."""

    KIND: ClassVar[str] = "job-state record"
    FIX: ClassVar[str] = "delete it, the next status check writes a new one"

    job_status: JobStatus


class RepairRecord(_Messaged):
    """``repairs/mb-NNNNN.json``: which Ray job repairs a microbatch, and how it ended."""

    KIND: ClassVar[str] = "repair record"
    FIX: ClassVar[str] = (
        "delete it (the microbatch's manifest still says which attempt is committed) and "
        "clear the microbatch task again to repair it"
    )

    index: int = Field(ge=0)
    attempt: int = Field(default=0, ge=0)
    job_id: str | None = None
    status: Literal["running", "committed", "refused", "failed"]
    owner: str | None = None
