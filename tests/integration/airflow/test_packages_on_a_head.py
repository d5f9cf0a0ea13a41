"""Local packages reach a real job: a ``working_dir`` (less its excluded files), a
``py_modules`` directory and a single-file module, through the hook's request path
to a loopback head (Ray's job agent unpacks what the provider built)."""

from __future__ import annotations

import secrets
import sys
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.operators.local_head import start_local_head, stop_local_head
from tests.integration.airflow.test_local_head_auth import _wait_terminal

if TYPE_CHECKING:
    from pathlib import Path

JOB = (
    "import os, helper_mod_h7, shipped_pkg_h7; "
    "print('files', sorted(os.listdir('.'))); "
    "print('answer', shipped_pkg_h7.ANSWER, helper_mod_h7.HELP); "
    "print('text', open('data/input.txt').read())"
)


@pytest.mark.timeout(240)
def test_local_packages_reach_the_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "input.txt").write_text("hello from working_dir")
    (work / "run.log").write_text("left out by excludes")
    (work / "__pycache__").mkdir()
    (work / "__pycache__" / "x.pyc").write_bytes(b"left out by default")
    package = tmp_path / "shipped_pkg_h7"
    package.mkdir()
    (package / "__init__.py").write_text("ANSWER = 42\n")
    helper = tmp_path / "helper_mod_h7.py"
    helper.write_text("HELP = 'single-file'\n")
    head = start_local_head(num_cpus=1, timeout=120)
    try:
        hook = RayOrchHook(address=head["address"])
        runtime_env = {
            "working_dir": str(work),
            "py_modules": [str(package), str(helper)],
            "excludes": ["*.log"],
        }
        job_id = hook.submit_job(
            f'{sys.executable} -c "{JOB}"',
            submission_id=f"t-{secrets.token_hex(4)}",
            runtime_env=runtime_env,
        )
        status = _wait_terminal(hook, job_id)
        logs = hook.get_job_logs(job_id)
        assert status == "SUCCEEDED", logs[-2000:]
        assert "files ['data']" in logs, logs[-2000:]
        assert "answer 42 single-file" in logs, logs[-2000:]
        assert "text hello from working_dir" in logs, logs[-2000:]
    finally:
        stop_local_head(head)
