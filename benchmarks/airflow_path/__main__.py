"""``python -m benchmarks.airflow_path``: run the section alone and write its files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import BATCH, DOCUMENTS, measure

REPO = Path(__file__).resolve().parents[2]
#: what ``--runs 0`` prints
EVENTS_ONLY = ("command", "events", "errors", "loadavg", "section_s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip())
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="runs per variant (median); 0 measures only the event-driven files and "
        "prints their figures, writing no page",
    )
    parser.add_argument("--event-files", type=int, default=4, help="files landed one by one")
    parser.add_argument("--documents", type=int, default=DOCUMENTS)
    parser.add_argument("--batch", type=int, default=BATCH, help="sources per microbatch")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks")
    parser.add_argument("--keep", action="store_true", help="keep the temporary root")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)
    result = measure(
        args.runs, args.event_files, documents=args.documents, batch=args.batch, keep=args.keep
    )
    result["command"] = "python -m benchmarks.airflow_path " + " ".join(sys.argv[1:])
    if not result["variants"]:  # --runs 0: no page of the variants to write
        print(json.dumps({k: result[k] for k in EVENTS_ONLY}, indent=1, default=str))
        return 0
    from ..report.airflow_path import write_page

    args.out.mkdir(parents=True, exist_ok=True)
    write_page(result, args.out, plots=not args.no_plots)
    print((args.out / "airflow-path.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
