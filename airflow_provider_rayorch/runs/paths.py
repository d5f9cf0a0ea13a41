"""Where every file of a run lives in the run store: the one module that names them.

Each function returns the path's parts under the store's root (``run_id`` first), for
:meth:`~.store.RunStore.read_bytes`, :meth:`~.store.RunStore.record_uri` and the
like. Layout of one run (docs/run-store.md describes every file)::

    <run_id>/plan.json                                   the plan record
    <run_id>/sources/<listing>/mb-00003.parquet          microbatch 3's source rows
    <run_id>/outputs/mb-00003/<port>.parquet             attempt 1's rows of one Port
    <run_id>/outputs/mb-00003/attempt-2/<port>.parquet   repair attempt 2's rows
    <run_id>/manifests/mb-00003.json                     microbatch manifest
    <run_id>/run.json                                    run manifest
    <run_id>/run_aggregate.json                          its head and bounded aggregate
    <run_id>/run_state.json                              the driver's run-state record
    <run_id>/job_state.json                              the Ray job's last known status
    <run_id>/repairs/mb-00003.json                       the microbatch's last repair
    <run_id>/repairs/claims/mb-00003-attempt-2.json      an attempt's claim
    <run_id>/resumes/<job_id>.json                       the job that resumed another
    <run_id>/locks/repair.json                           the run's repair lease
    <run_id>/report.json, report.html                    report data, kept report
    <run_id>/logs/driver-1.log                           the drivers' logs
"""

from __future__ import annotations

import re

__all__ = [
    "CLAIMS",
    "DRIVER_LOGS",
    "JOB_STATE_FILE",
    "LEASE_FILE",
    "LOCKS",
    "MANIFESTS",
    "OUTPUTS",
    "PLAN_FILE",
    "REPAIRS",
    "REPORT_DATA_FILE",
    "REPORT_FILE",
    "RESUMES",
    "RUN_AGGREGATE_FILE",
    "RUN_MANIFEST_FILE",
    "RUN_STATE_FILE",
    "SOURCES",
    "attempt_folder",
    "claim",
    "driver_log",
    "driver_log_name",
    "driver_log_number",
    "driver_logs",
    "is_driver_log",
    "is_record",
    "job_state",
    "lease",
    "listing",
    "listing_file",
    "manifest",
    "manifest_index",
    "manifests",
    "output_file",
    "outputs",
    "plan",
    "repair",
    "repair_index",
    "repairs",
    "report",
    "report_data",
    "resume",
    "resumes",
    "run_aggregate",
    "run_manifest",
    "run_state",
]

PLAN_FILE = "plan.json"
RUN_MANIFEST_FILE = "run.json"
RUN_AGGREGATE_FILE = "run_aggregate.json"
RUN_STATE_FILE = "run_state.json"
JOB_STATE_FILE = "job_state.json"
REPORT_FILE = "report.html"
REPORT_DATA_FILE = "report.json"
SOURCES = "sources"
OUTPUTS = "outputs"
MANIFESTS = "manifests"
REPAIRS = "repairs"
CLAIMS = "claims"
RESUMES = "resumes"
LOCKS = "locks"
LEASE_FILE = "repair.json"
#: The folder of a run that holds its drivers' logs.
DRIVER_LOGS = "logs"
_JSON = ".json"
_PARQUET = ".parquet"
_NUMBERED_LOG = re.compile(r"^driver-(\d+)\.log$")


def _mb(index: int) -> str:
    return f"mb-{int(index):05d}"


def _index_of(name: str) -> int | None:
    """The index in a ``mb-NNNNN.json`` name, None for any other name."""
    stem = name[: -len(_JSON)] if name.endswith(_JSON) else ""
    digits = stem[3:] if stem.startswith("mb-") else ""
    return int(digits) if digits.isdigit() else None


def is_record(name: str) -> bool:
    """A file name that is a JSON record's (what a record folder lists)."""
    return name.endswith(_JSON)


def plan(run_id: str) -> tuple[str, ...]:
    return (run_id, PLAN_FILE)


def listing(run_id: str, name: str) -> tuple[str, ...]:
    """The folder of the source listing ``name``."""
    return (run_id, SOURCES, name)


def listing_file(run_id: str, name: str, index: int) -> tuple[str, ...]:
    return (*listing(run_id, name), _mb(index) + _PARQUET)


def outputs(run_id: str, index: int | None = None) -> tuple[str, ...]:
    """A run's outputs folder, or microbatch ``index``'s (its attempt 1)."""
    return (run_id, OUTPUTS) if index is None else (run_id, OUTPUTS, _mb(index))


def attempt_folder(run_id: str, index: int, attempt: int) -> tuple[str, ...]:
    """The folder of microbatch ``index``'s attempt ``attempt`` (attempt 1: its own)."""
    base = outputs(run_id, index)
    return base if attempt <= 1 else (*base, f"attempt-{int(attempt)}")


def output_file(run_id: str, index: int, attempt: int, port: str) -> tuple[str, ...]:
    return (*attempt_folder(run_id, index, attempt), f"{port}{_PARQUET}")


def manifests(run_id: str) -> tuple[str, ...]:
    return (run_id, MANIFESTS)


def manifest(run_id: str, index: int) -> tuple[str, ...]:
    return (run_id, MANIFESTS, _mb(index) + _JSON)


def manifest_index(name: str) -> int | None:
    """The microbatch index a manifest's file name holds (None: not a manifest)."""
    return _index_of(name)


def run_manifest(run_id: str) -> tuple[str, ...]:
    return (run_id, RUN_MANIFEST_FILE)


def run_aggregate(run_id: str) -> tuple[str, ...]:
    return (run_id, RUN_AGGREGATE_FILE)


def run_state(run_id: str) -> tuple[str, ...]:
    return (run_id, RUN_STATE_FILE)


def job_state(run_id: str) -> tuple[str, ...]:
    return (run_id, JOB_STATE_FILE)


def repairs(run_id: str) -> tuple[str, ...]:
    return (run_id, REPAIRS)


def repair(run_id: str, index: int) -> tuple[str, ...]:
    return (run_id, REPAIRS, _mb(index) + _JSON)


def repair_index(name: str) -> int | None:
    """The microbatch index a repair record's file name holds (None: not one)."""
    return _index_of(name)


def claim(run_id: str, index: int, attempt: int) -> tuple[str, ...]:
    return (run_id, REPAIRS, CLAIMS, f"{_mb(index)}-attempt-{int(attempt)}{_JSON}")


def resumes(run_id: str) -> tuple[str, ...]:
    return (run_id, RESUMES)


def resume(run_id: str, name: str) -> tuple[str, ...]:
    """The resume record of the job whose (file-safe) name is ``name``."""
    return (run_id, RESUMES, name + _JSON)


def lease(run_id: str) -> tuple[str, ...]:
    return (run_id, LOCKS, LEASE_FILE)


def report(run_id: str) -> tuple[str, ...]:
    return (run_id, REPORT_FILE)


def report_data(run_id: str) -> tuple[str, ...]:
    return (run_id, REPORT_DATA_FILE)


def driver_logs(run_id: str) -> tuple[str, ...]:
    return (run_id, DRIVER_LOGS)


def driver_log_name(number: int) -> str:
    """The file name of a run's ``number``-th driver log (``driver-2.log``)."""
    return f"driver-{int(number)}.log"


def driver_log(run_id: str, number: int) -> tuple[str, ...]:
    """Where a run's ``number``-th driver log lives: ``<run_id>/logs/driver-<number>.log``."""
    return (*driver_logs(run_id), driver_log_name(number))


def is_driver_log(name: str) -> bool:
    """A file name of a driver log (numbered or not): ``driver-*.log``."""
    return name.startswith("driver-") and name.endswith(".log")


def driver_log_number(name: str) -> int | None:
    """The number of a numbered driver log's file name (None: not numbered)."""
    found = _NUMBERED_LOG.match(name)
    return int(found.group(1)) if found else None
