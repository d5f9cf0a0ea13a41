"""A stand-in driver that records it runs, then dies of SIGKILL (the OOM killer)."""

from __future__ import annotations

import argparse
import os
import signal

from airflow_provider_rayorch.runs.run_state import write_run_state
from airflow_provider_rayorch.runs.store import RunStore

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--run-store")
    parser.add_argument("--run-id")
    args, _ = parser.parse_known_args()
    write_run_state(RunStore(args.run_store), args.run_id, "running", committed=1, total=3)
    os.kill(os.getpid(), signal.SIGKILL)
