"""Run one example DAG with ``dag.test()`` and print what it produced, for a reader.

Usage: ``python scripts/run_example_dag.py DAG_ID --log FILE [--result FILE]``.
Airflow's and Ray's own output goes to ``--log``; stdout gets the outcome: the
recognized text, failures with their causes and the paths of the kept outputs
(documents), the clips (video) or the lineage summaries (any other DAG).
``--result`` also writes the run's task states and XComs as JSON. Exits 1 unless
the DAG run succeeded. Needs ``AIRFLOW_HOME`` (migrated) and
``AIRFLOW__CORE__DAGS_FOLDER`` in the environment.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def output_to(path: str) -> Iterator[None]:
    """Send this process's stdout and stderr (children included) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def run(dag_id: str) -> dict[str, Any]:
    """Run the DAG once; its state, run id, task states and XComs."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    if dag_id not in bag.dags:
        errors = bag.import_errors
        raise SystemExit(f"no DAG {dag_id!r} in the DAGs folder; import errors: {errors}")
    dr = bag.dags[dag_id].test()
    with create_session() as session:
        tis = session.query(TaskInstance).filter_by(dag_id=dag_id, run_id=dr.run_id).all()
        tasks = {
            f"{t.task_id}[{t.map_index}]": str(getattr(t.state, "value", t.state)) for t in tis
        }
        rows = session.query(XComModel).filter_by(dag_id=dag_id, run_id=dr.run_id).all()
        xcoms = {
            f"{x.task_id}[{x.map_index}].{x.key}": XComModel.deserialize_value(x) for x in rows
        }
    state = str(getattr(dr.state, "value", dr.state))
    return {"state": state, "run_id": dr.run_id, "tasks": tasks, "xcoms": xcoms}


def _returns(result: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (key.rsplit(".", 1)[0], value)
        for key, value in sorted(result["xcoms"].items())
        if key.endswith(".return_value")
    ]


def _name(path: str | None) -> str:
    return os.path.basename(path) if path else "?"


def _counts(sources: dict[str, int]) -> str:
    return (
        f"{sources['total']} sources: {sources['present']} present, {sources['dropped']} dropped,"
        f" {sources['failed']} failed, {sources['suppressed']} suppressed"
    )


def _print_failures(failures: list[dict[str, Any]]) -> None:
    print("Failures (tolerated by max_failed_ratio):" if failures else "Failures: none")
    for f in failures:
        print(f"  {_name(f['file'])} (source {f['source']}, {f['outcome']}): {f['cause']}")


def print_documents(out: dict[str, Any]) -> None:
    print(f"Recognized text ({_counts(out['sources'])}):")
    for doc in out["documents"]:
        pages = f"{doc['pages']} page" + ("s" if doc["pages"] != 1 else "")
        print(f"  {_name(doc['file'])} ({pages}):")
        for page in doc["page_texts"]:
            lines = page["text"].splitlines() or ["(blank page: no text, skipped)"]
            for number, line in enumerate(lines):
                label = f"page {page['page']}" if number == 0 else ""
                print(f"    {label:>7} | {line}")
    _print_failures(out["failures"])
    print("Kept outputs:")
    print(f"  markdown per document: {out['markdown_dir']}/")
    for doc in out["documents"]:
        print(f"    {_name(doc['markdown'])}")
    print(f"  Parquet outputs:       {out['outputs']}/")
    print(f"  HTML report:           {out['report']}")


def print_clips(out: dict[str, Any]) -> None:
    print(f"Clips ({_counts(out['sources'])}):")
    for clip in out["clips"]:
        print(
            f"  {_name(clip['video'])} clip {clip['clip']}: {clip['start_s']:.2f}-"
            f"{clip['end_s']:.2f} s, keyframe at {clip['keyframe_s']:.2f} s,"
            f" motion {clip['motion']:.3f}"
        )
    _print_failures(out["failures"])
    print("Kept outputs:")
    print(f"  Parquet outputs: {out['outputs']}/")
    print(f"  HTML report:     {out['report']}")


def print_outcome(result: dict[str, Any]) -> None:
    """The part of the run a reader wants, by what the DAG's tasks returned."""
    returns = _returns(result)
    for _task, value in returns:
        if isinstance(value, dict) and "documents" in value and "markdown_dir" in value:
            print_documents(value)
            return
        if isinstance(value, dict) and "clips" in value and "report" in value:
            print_clips(value)
            return
    for task, value in returns:
        if isinstance(value, dict) and "sources" in value and "run_id" in value:
            print(f"lineage summary of {task}:")
            print(json.dumps(value, indent=2))
            print(f"Kept outputs: {value['outputs']['uri']}/")


#: A line of the task log that begins a log record (not a traceback line).
_RECORD = re.compile(r"^\d{4}-\d\d-\d\dT")


def _exception_lines(block: list[str]) -> list[str]:
    """The lines of a traceback's exception (its type, message and any indented lines
    of the message): from the first line that is not a frame after the last
    "Traceback" line (a chained exception's own traceback comes last)."""
    starts = [i for i, text in enumerate(block) if text.startswith("Traceback (most recent")]
    if not starts:
        return block
    rest = block[starts[-1] + 1 :]
    for at, text in enumerate(rest):
        if not text[:1].isspace():
            return rest[at:]
    return []


def task_errors(log: str, most: int = 3) -> list[str]:
    """The exceptions the log's failed tasks raised, each as its traceback ends, the
    first ``most`` of them."""
    errors: list[str] = []
    lines = log.splitlines()
    for at, line in enumerate(lines):
        if "Task failed with exception" not in line or len(errors) >= most:
            continue
        block: list[str] = []
        for rest in lines[at + 1 :]:
            if _RECORD.match(rest):
                break
            block.append(rest)
        message = "\n".join(_exception_lines(block)).strip()
        if message:
            errors.append(message[:1500])
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dag_id")
    parser.add_argument("--log", required=True, help="where Airflow's and Ray's output goes")
    parser.add_argument("--result", help="also write the run's states and XComs here (JSON)")
    args = parser.parse_args()
    print(f"Running the DAG {args.dag_id} (Airflow and Ray output: {args.log}) ...", flush=True)
    started = time.monotonic()
    # A one-shot job: the shared Ray head an example starts is this job's alone (its
    # own heads dir under AIRFLOW_HOME) and stopped when the run ends.
    os.environ["RAYORCH_LOCAL_HEADS_DIR"] = os.path.join(os.environ["AIRFLOW_HOME"], "ray-heads")
    with output_to(args.log):
        try:
            result = run(args.dag_id)
        finally:
            from airflow_provider_rayorch.operators.local_head import stop_shared_head

            stop_shared_head()
    if args.result:
        with open(args.result, "w") as fh:
            json.dump(result, fh, indent=1, default=str)
    elapsed = time.monotonic() - started
    print(f"DAG run {result['run_id']}: {result['state']} in {elapsed:.0f} s\n")
    if result["state"] != "success":
        for task, state in sorted(result["tasks"].items()):
            print(f"  {task}: {state}")
        with open(args.log, errors="replace") as fh:
            errors = task_errors(fh.read())
        for error in errors:
            print(f"\nA task failed with:\n{error}")
        print(f"\nSee the log {args.log} for the whole story.")
        sys.exit(1)
    print_outcome(result)


if __name__ == "__main__":
    main()
