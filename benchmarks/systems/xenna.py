"""cosmos-xenna, the fifth peer: the suite's side of ``xenna_runner``.

Xenna's wheel is for Python 3.12 only, so it runs in its own venv
(``bash scripts/setup-xenna.sh`` makes ``.venv-xenna``; ``XENNA_VENV`` points
elsewhere) as a subprocess of the suite, which sends one
``xenna_protocol.Request`` on its stdin and reads the ``Reply`` from a file.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..measure import Measurement

if TYPE_CHECKING:
    from ..workload import Workload
    from .xenna_protocol import Reply, Request

__all__ = [
    "XennaError",
    "available",
    "run_nested",
    "run_noop",
    "run_pair",
    "venv_python",
    "versions",
]

REPO = Path(__file__).resolve().parents[2]
#: Seconds one runner invocation may take before it is killed.
TIMEOUT_S = 1800


class XennaError(RuntimeError):
    """The runner failed; the message carries its error and the tail of its log."""


def venv_python() -> Path:
    return Path(os.environ.get("XENNA_VENV", REPO / ".venv-xenna")) / "bin" / "python"


@functools.cache
def _probe() -> dict[str, str] | None:
    """The venv's versions, or None when it is missing or cannot import Xenna."""
    python = venv_python()
    if not python.exists():
        return None
    code = (
        "import sys, json; from importlib.metadata import version as v; "
        "import cosmos_xenna.pipelines.v1, ray, tqdm; "
        "print(json.dumps({'cosmos-xenna': v('cosmos-xenna'), 'ray': ray.__version__, "
        "'tqdm': v('tqdm'), 'python': '.'.join(map(str, sys.version_info[:3]))}))"
    )
    try:
        out = subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, timeout=120, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def available() -> bool:
    return _probe() is not None


def versions() -> dict[str, str]:
    return _probe() or {}


def call(workload: str, params: dict[str, Any], warm_runs: int) -> Reply:
    """Run the runner once; raises ``XennaError`` with its error and log tail."""
    with tempfile.TemporaryDirectory(prefix="xenna-") as tmp:
        req: Request = {
            "workload": workload,  # type: ignore[typeddict-item]
            "params": params,
            "warm_runs": warm_runs,
            "cpus": max(1, os.cpu_count() or 1),
            "reply_path": str(Path(tmp) / "reply.json"),
        }
        paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        # Its own Ray: never the suite's (another Python), whatever RAY_ADDRESS says.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "RAY_ADDRESS": ""}
        log = Path(tmp) / "runner.log"
        with log.open("w") as sink:
            proc = subprocess.run(
                [str(venv_python()), "-m", "benchmarks.systems.xenna_runner"],
                input=json.dumps(req),
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=REPO,
                env=env,
                timeout=TIMEOUT_S,
                check=False,
                start_new_session=True,
            )
        tail = log.read_text(errors="replace")[-1500:]
        reply_file = Path(req["reply_path"])
        if not reply_file.exists():
            raise XennaError(f"xenna_runner exited {proc.returncode} with no reply; log:\n{tail}")
        reply: Reply = json.loads(reply_file.read_text())
    if reply["error"]:
        raise XennaError(f"xenna_runner ({workload}): {reply['error']}")
    return reply


def _layout(reply: Reply) -> dict[str, Any]:
    return {"cpu_per_worker": reply["cpu_per_worker"], "workers": reply["workers"]}


def run_pair(w: Workload, *, warm_runs: int = 1, **_: Any) -> list[Measurement]:
    """Workload 1: a cold execution and ``warm_runs`` warm ones (see ``xenna_runner``)."""
    reply = call("w1", w.as_dict(), warm_runs)
    out = []
    for run in reply["runs"]:
        m = Measurement(**run["measurement"])
        m.extra.update(_layout(reply))
        out.append(m)
    return out


def run_nested(w: Workload, rounds: int) -> dict[str, Any]:
    """Workload 3: cold and median warm seconds over ``rounds`` warm executions."""
    import statistics

    reply = call("w3", w.as_dict(), max(1, rounds))
    runs = reply["runs"]
    return {
        "cold_s": runs[0]["e2e_s"],
        "warm_s": statistics.median(r["e2e_s"] for r in runs[1:]),
        "correct": all(r["correct"] for r in runs),
        **_layout(reply),
    }


def run_noop(sources: list[list[int]], *, batch_size: int, replicas: int) -> dict[str, Any]:
    """Workload 4: one cold and one warm execution, Grains per second of each."""
    reply = call("w4", {"sources": sources, "batch_size": batch_size, "replicas": replicas}, 1)
    grains = sum(len(s) for s in sources)
    out: dict[str, Any] = {}
    for run in reply["runs"]:
        out[f"{run['mode']}_s"] = run["e2e_s"]
        out[f"{run['mode']}_grains_per_s"] = grains / run["e2e_s"]
    out["correct"] = all(r["correct"] for r in reply["runs"])
    out.update(_layout(reply))
    return out
