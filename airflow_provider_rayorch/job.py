"""The Ray job's entrypoint: the run driver with report writing wired in.

::

    python -m airflow_provider_rayorch.job --run-store URI --run-id ID [--repair 3,5]

The driver (:mod:`airflow_provider_rayorch.runs.driver`) knows nothing of reports;
this module hands it the report writer, so the run layer never imports upward. It
also tells the driver when its process began (the driver's first start phase).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

#: When this module began loading: the process's start where ``/proc`` does not tell it.
LOADED_AT = time.time()

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["main", "skip_unneeded_imports", "write_report"]


def write_report(
    store: RunStore,
    run_id: str,
    timeline: list[Any],
    calls: list[Any],
    *,
    microbatches: list[Any] | None,
    live: Any = None,
) -> str:
    """Store the driver's measurements as the run's report data (``report.json``) and
    render the kept ``report.html`` from it and the store (imported lazily: reports are
    optional); returns the kept report's URI. ``live``: the driver's running aggregate
    (a live report from it reads nothing that grows with the run)."""
    from airflow_provider_rayorch.reports.writer import write_run_report

    return write_run_report(store, run_id, timeline, calls, microbatches=microbatches, live=live)


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or repair) one stored plan, writing its report; returns the exit code."""
    from airflow_provider_rayorch.runs import driver
    from airflow_provider_rayorch.runs.driver_events import process_started_at

    return driver.main(argv, report=write_report, started_at=process_started_at(LOADED_AT))


#: Optional packages the driver process goes without, though installed: jsonschema
#: (imported with Ray) builds the grammar of its ``iri`` format checker, rfc3987_syntax,
#: when it is imported, about 0.9 s of every driver's start (docs/performance/
#: driver-start.md); the driver checks no JSON Schema format.
UNNEEDED_MODULES = ("rfc3987_syntax",)


def skip_unneeded_imports() -> None:
    """Make :data:`UNNEEDED_MODULES` unimportable in this process (an importer that
    tries one gets ``ImportError``, as if it were not installed); one already imported
    stays. Only the job's own process calls this: never a process that imports the
    module, such as the tests'."""
    for name in UNNEEDED_MODULES:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


if __name__ == "__main__":
    skip_unneeded_imports()
    sys.exit(main())
