"""Every source row of a run, a page at a time: the page's sources are read from the
microbatches that hold them only (their manifests and output files), so a page costs
the same however large the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._data import MicrobatchView, _output_rows, microbatch_labels
from .page import _render

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["PAGE_ROWS", "SourcePage", "read_source_page", "render_source_page"]

#: Sources listed on one page.
PAGE_ROWS = 500


@dataclass
class SourcePage:
    """One page of a run's source rows (``{"source", "label", "outcome", "cause",
    "microbatch", "port"}``; a pending microbatch's sources are ``pending``)."""

    run_id: str
    page: int
    pages: int
    total_sources: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    multi_port: bool = False


def read_source_page(store: RunStore, run_id: str, page: int, size: int = PAGE_ROWS) -> SourcePage:
    """Sources ``page * size`` to ``(page + 1) * size - 1`` of ``run_id`` (None of the
    run's other files are read); an empty page when the run has no plan."""
    plan = store.read_plan(run_id)
    if plan is None:
        return SourcePage(run_id, 0, 0, 0)
    total = int(plan.total_sources)
    pages = max((total + size - 1) // size, 1)
    page = min(max(page, 0), pages - 1)
    lo, hi = page * size, min((page + 1) * size, total)
    out = SourcePage(run_id, page, pages, total)
    for index in range(lo // plan.batch_size, (hi - 1) // plan.batch_size + 1):
        first, count = plan.microbatch(index)  # only the microbatches holding the page
        wanted = range(max(lo, first), min(hi, first + count))
        labels = microbatch_labels(store, plan, index, wanted)
        manifest = store.manifest_record(run_id, index)
        if manifest is None:
            out.rows += [
                {
                    "source": s,
                    "label": labels.get(s, ""),
                    "outcome": "pending",
                    "cause": "",
                    "microbatch": index,
                    "port": "",
                }
                for s in wanted
            ]
            continue
        ports = list((manifest.outputs.ports if manifest.outputs else None) or ["out"])
        out.multi_port = out.multi_port or len(ports) > 1
        mb = MicrobatchView(index, first, count, manifest.state or "success")
        mb.files = dict(manifest.files or {})
        for port in ports:
            for row in _output_rows(store, run_id, mb, port):
                source = int(row["source"])
                if lo <= source < hi:
                    out.rows.append(
                        {
                            "source": source,
                            "label": labels.get(source, ""),
                            "outcome": str(row["outcome"]),
                            "cause": row["cause"] or "",
                            "microbatch": index,
                            "port": port,
                        }
                    )
    out.rows.sort(key=lambda r: (int(r["source"]), str(r["port"])))
    return out


def render_source_page(
    page: SourcePage, query: str, *, report_href: str, stylesheet: str | None = None
) -> str:
    """The page's HTML: its rows and links to the previous and next pages (``query``
    locates the run, ``&page=N`` is added) and back to the report."""
    prev = f"sources?{query}&page={page.page - 1}" if page.page > 0 else None
    nxt = f"sources?{query}&page={page.page + 1}" if page.page + 1 < page.pages else None
    return _render(
        "sources.html.j2",
        stylesheet,
        title=f"RayOrch run {page.run_id}: sources",
        p=page,
        prev=prev,
        next=nxt,
        report_href=report_href,
    )
