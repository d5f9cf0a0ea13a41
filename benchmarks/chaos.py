"""Chaos runs: faults staged at random during real Ray runs; nothing may be lost,
duplicated or hung.

    python -m benchmarks.chaos --runs 200 --sources 30

A fan-out pipeline (expand -> a slow page Call on 2 actors, ``batch_timeout_s``
set -> reduce; page 1 of every 11th document is a ``GroupFailure``, so every run
withdraws in-flight and queued siblings) runs ``--runs`` times on one warm
``Executor``. Each run draws its faults at random:

- ``kill``: 0 to ``--max-kills`` page actors killed (``ray.kill``) at random moments;
- ``start_exit``: with ``--p-start``, a page actor is killed and its replacement's
  constructor exits (a kill at actor start);
- ``withdrawal_kill``: with ``--p-withdrawal``, the actor a withdrawal was just sent
  to is killed (a kill during withdrawal);
- ``hang``: with ``--p-hang``, one random page blocks forever on its next try
  (``batch_timeout_s`` kills its actor; the retry succeeds).

Every run's outputs are compared with the local reference backend's: a missing
page is "lost", an extra one "duplicated", any other difference "mismatched". A run
that does not end within ``--run-bound`` seconds counts as "hung": its stacks are
dumped, Ray is restarted, and the benchmark goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import Any

import ray

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.shared_process import actor_of
from airflow_provider_rayorch.rayorch.program.shared_processes import process_groups

from .chaos_faults import (
    START_EXIT,
    ChaosPipeline,
    compare,
    hang_token,
    pages_of,
    staged_faults,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH_TIMEOUT_S = 2.0


class Session:
    """Ray plus one warm Executor; rebuilt after a hung run."""

    def __init__(self, fault_dir: str, batch_timeout_s: float | None, share: bool) -> None:
        self.fault_dir = fault_dir
        self.batch_timeout_s = batch_timeout_s
        self.share = share
        self.executor: Any = None
        self.start()

    def start(self) -> None:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": ROOT}},
        )
        pipeline = ChaosPipeline(self.fault_dir, 0.01, self.batch_timeout_s, self.share)
        self.executor = ro.Executor(pipeline).__enter__()

    def restart(self) -> None:
        """After a hung run: drop everything (the hung thread is abandoned)."""
        ray.shutdown()
        self.start()

    def close(self) -> None:
        try:
            self.executor.__exit__(None, None, None)
        finally:
            ray.shutdown()

    def page_actors(self) -> list[tuple[str, Any]]:
        backend: Any = self.executor._backend
        return [(k, a) for k, a in list(backend._actors.items()) if k.startswith("page#")]


class Faults:
    """One run's faults, drawn from its own random generator."""

    def __init__(self, session: Session, rng: random.Random, args: argparse.Namespace) -> None:
        self.session = session
        self.rng = rng
        self.kills = rng.randint(0, args.max_kills)
        self.start_exit = rng.random() < args.p_start
        self.withdrawal_kill = rng.random() < args.p_withdrawal
        self.hang_page = rng.choice(args.pages) if rng.random() < args.p_hang else None
        self.done: Counter[str] = Counter()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._kill_at_random, daemon=True)

    def __enter__(self) -> Faults:
        if self.hang_page is not None:
            open(os.path.join(self.session.fault_dir, hang_token(self.hang_page)), "w").close()
        if self.withdrawal_kill:
            self._arm_withdrawal_kill()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        backend: Any = self.session.executor._backend
        backend.__dict__.pop("_withdraw", None)  # the class's own again
        if self.hang_page is not None:  # not reached (e.g. its document was withdrawn)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.session.fault_dir, hang_token(self.hang_page)))

    def _kill_one(self, kind: str) -> None:
        actors = self.session.page_actors()
        if actors:
            _, actor = self.rng.choice(actors)
            ray.kill(actor_of(actor), no_restart=True)
            self.done[kind] += 1

    def _kill_at_random(self) -> None:
        plan = ["kill"] * self.kills + (["start_exit"] if self.start_exit else [])
        self.rng.shuffle(plan)
        for kind in plan:
            if self.stop.wait(self.rng.uniform(0.05, 0.6)):
                return
            if kind == "start_exit":
                open(os.path.join(self.session.fault_dir, START_EXIT), "w").close()
                self._kill_one("start_kill")
            else:
                self._kill_one("kill")

    def _arm_withdrawal_kill(self) -> None:
        backend: Any = self.session.executor._backend
        original = type(backend)._withdraw

        def withdraw_then_kill(command: Any) -> None:
            original(backend, command)
            if not self.done["withdrawal_kill"]:
                actor = backend._actors.get(command.worker)
                if actor is not None:
                    ray.kill(actor_of(actor), no_restart=True)
                    self.done["withdrawal_kill"] += 1

        backend._withdraw = withdraw_then_kill  # drive() reads it at each run's start


def run_bounded(session: Session, docs: list[int], bound: float) -> tuple[Any, str | None]:
    """``(result, None)``, ``(None, error)``, or ``(None, "hung")`` past ``bound``."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = session.executor.run(
                docs, input_batch_size=10, max_active_input_batches=2
            )
        except Exception as exc:
            box["error"] = f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(bound)
    if thread.is_alive():
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        return None, "hung"
    return box.get("result"), box.get("error")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--sources", type=int, default=30)
    parser.add_argument("--max-kills", type=int, default=2)
    parser.add_argument("--p-start", type=float, default=0.3)
    parser.add_argument("--p-withdrawal", type=float, default=0.3)
    parser.add_argument("--p-hang", type=float, default=0.3)
    parser.add_argument("--run-bound", type=float, default=120.0)
    parser.add_argument(
        "--batch-timeout",
        type=float,
        default=BATCH_TIMEOUT_S,
        help="the page Call's batch_timeout_s (0: none, so a hang hangs the run)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--share",
        action="store_true",
        help="both stages in one shared process (share_process): a kill ends every slot",
    )
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()

    docs = list(range(args.sources))
    args.pages = [p for d in docs for p in pages_of(d)]
    expected = ro.run(ChaosPipeline(), docs, backend="local").outputs
    fault_dir = tempfile.mkdtemp(prefix="rayorch-chaos-")
    totals: Counter[str] = Counter()
    injected: Counter[str] = Counter()
    errors: list[str] = []
    started = time.perf_counter()
    session = Session(fault_dir, args.batch_timeout or None, args.share)
    #: The backend's counters are cumulative over an Executor's runs.
    seen: Counter[str] = Counter()
    try:
        for run in range(args.runs):
            rng = random.Random(args.seed * 100_003 + run)
            staged_before = staged_faults(fault_dir)
            with Faults(session, rng, args) as faults:
                result, error = run_bounded(session, docs, args.run_bound)
            staged = staged_faults(fault_dir) - staged_before
            injected.update(faults.done)
            if error == "hung":
                totals["hung"] += 1
                errors.append(f"run {run + 1}: hung past {args.run_bound:.0f}s")
                session.restart()
                seen = Counter()
                tally: Counter[str] = Counter()
            elif error is not None:
                totals["errors"] += 1
                errors.append(f"run {run + 1}: {error}")
                tally = compare(expected, [])
            else:
                tally = compare(expected, result.outputs)
                for key in ("batches_timed_out", "workers_lost", "actor_start_failures"):
                    now = int(result.metrics.get(key, 0))
                    totals[key] += now - seen[key]
                    seen[key] = now
            totals.update(tally)
            print(
                f"run {run + 1:3}/{args.runs}: injected {dict(faults.done)}, staged "
                f"{dict(staged)}, lost {tally['lost']}, duplicated {tally['duplicated']}, "
                f"mismatched {tally['mismatched']}{', ' + error if error else ''}",
                flush=True,
            )
    finally:
        session.close()
    staged_total = staged_faults(fault_dir)
    faults_by_kind = {
        "kill": injected["kill"] + injected["start_kill"],
        "kill_at_actor_start": staged_total["start_exit"],
        "kill_during_withdrawal": injected["withdrawal_kill"],
        "hang": staged_total["hang"],
    }
    summary = {
        "command": f"python -m benchmarks.chaos --runs {args.runs} --sources {args.sources} "
        f"--max-kills {args.max_kills} --p-start {args.p_start} "
        f"--p-withdrawal {args.p_withdrawal} --p-hang {args.p_hang} "
        f"--run-bound {args.run_bound:g} --batch-timeout {args.batch_timeout:g} "
        f"--seed {args.seed}{' --share' if args.share else ''}",
        "runs": args.runs,
        "faults": faults_by_kind,
        "faults_total": sum(faults_by_kind.values()),
        "lost": totals["lost"],
        "duplicated": totals["duplicated"],
        "mismatched": totals["mismatched"],
        "hung": totals["hung"],
        "errors": totals["errors"],
        "error_messages": errors[:20],
        "batches_timed_out": totals["batches_timed_out"],
        "workers_lost": totals["workers_lost"],
        "actor_start_failures": totals["actor_start_failures"],
        "batch_timeout_s": args.batch_timeout or None,
        "share_process": args.share,
        #: The actor processes several modules share, as the engine resolved them
        #: (``--share``: the named one; otherwise the default for modules that ask
        #: for nothing, e.g. with ``--batch-timeout 0``).
        "shared_processes": {
            name: [m.name for m in members]
            for name, members in process_groups(
                ChaosPipeline(fault_dir, 0.01, args.batch_timeout or None, args.share)
                .compile()
                .modules
            ).items()
        },
        "seconds": round(time.perf_counter() - started, 1),
        "ray": ray.__version__,
    }
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":
    main()
