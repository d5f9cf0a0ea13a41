"""The report's data: what the driver measured, stored as ``<run>/report.json``.

The run store already holds the plan, the manifests and the outputs; only the
driver knows the actors' timeline, the Calls' metrics and when each microbatch ran.
It stores them here as plots already reduced to the page's resolution (a plot's size
does not grow with the run) and as plain numbers; pages are rendered from this data
and the store through autoescaping templates (:mod:`.page`), never stored as HTML.

Anyone who can write to the run store can write this file: every field is validated
(numbers are numbers, colours are ``#rgb`` hex) and every text is escaped when shown.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from airflow_provider_rayorch.rayorch.errors import StoreError

__all__ = [
    "REPORT_DATA_VERSION",
    "CallMetrics",
    "Line",
    "Plot",
    "Polyline",
    "Rect",
    "ReportData",
    "ReportDataError",
    "Shape",
    "Text",
    "Timing",
]

#: The version of ``report.json`` this code writes and reads.
REPORT_DATA_VERSION: Literal[1] = 1

Color = Annotated[str, Field(pattern=r"^#[0-9a-fA-F]{3,8}$")]
Slug = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,40}$")]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Rect(_Record):
    kind: Literal["rect"] = "rect"
    x: float
    y: float
    w: float
    h: float
    fill: Color
    title: str | None = None


class Line(_Record):
    kind: Literal["line"] = "line"
    x1: float
    y1: float
    x2: float
    y2: float
    stroke: Color
    dash: Annotated[str, Field(pattern=r"^[0-9. ]{0,20}$")] = ""


class Polyline(_Record):
    kind: Literal["polyline"] = "polyline"
    points: list[tuple[float, float]]
    stroke: Color
    title: str = ""


class Text(_Record):
    kind: Literal["text"] = "text"
    x: float
    y: float
    text: str
    anchor: Literal["start", "middle", "end"] = "start"
    size: int = 11
    fill: Color = "#333"
    #: turned a quarter left about (x, y): a y axis label
    vertical: bool = False


Shape = Annotated[Rect | Line | Polyline | Text, Field(discriminator="kind")]


class Plot(_Record):
    """One inline SVG plot: its name (``data-plot``), label, size and shapes in order."""

    plot: Slug
    label: str
    width: int
    height: int
    shapes: list[Shape] = Field(default_factory=list)


class Timing(_Record):
    """When one microbatch ran, in seconds since the run started (driver clock); with
    ``last``, when the microbatches ``index..last`` ran (earliest start, latest finish)."""

    index: int
    started_s: float
    finished_s: float
    last: int | None = None


class CallMetrics(_Record):
    """One Call's figures for the Calls table (``RunResult.calls``)."""

    name: str
    replicas: int = 1
    rpcs: float = 0.0
    grains_dispatched: float = 0.0
    mean_batch: float = 0.0
    retries: float = 0.0
    suppressed: float = 0.0
    failed: float = 0.0
    busy_s: float = 0.0
    queue_wait_s: float = 0.0


class ReportData(_Record):
    """``report.json``: the driver's measurements of one run."""

    version: Literal[1] = REPORT_DATA_VERSION
    run_id: str
    #: When the driver wrote it (ISO 8601, UTC).
    written_at: str
    #: Seconds the timeline spans (its last event).
    span_s: float = 0.0
    #: Per-microbatch timings of this driver's commits; None: use the manifests' times.
    timings: list[Timing] | None = None
    calls: list[CallMetrics] = Field(default_factory=list)
    #: The actors' timeline, the ready-queue depth and one batch-size plot per Call.
    timeline: Plot | None = None
    queue: Plot | None = None
    batch_sizes: list[Plot] = Field(default_factory=list)
    #: Actors (``call \u00b7 worker``) lost with a batch in flight (their process or
    #: node died); the engine ran those batches again on replacements.
    lost_actors: list[str] = Field(default_factory=list)
    #: Nodes those actors ran on, each ``"<node id> at <address>: <actor>, ..."``: a
    #: node that died lost every actor on it.
    lost_nodes: list[str] = Field(default_factory=list)

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes, where: str) -> ReportData:
        """Parse ``report.json``; :class:`ReportDataError` names ``where`` and the fix."""
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first.get("loc", ()))
            raise ReportDataError(
                f"report data {where} does not parse ({at}: {first.get('msg')}); the page "
                "shows the run store alone. Delete the file, the run's next report writes "
                "a new one."
            ) from None


class ReportDataError(StoreError):
    """``report.json`` is damaged or of an unknown version."""
