"""The job's entrypoint goes without the optional packages the driver never needs,
in its own process only."""

from __future__ import annotations

import subprocess
import sys

import pytest

from airflow_provider_rayorch import job

pytestmark = pytest.mark.timeout(60)


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_entrypoint_process_cannot_import_the_unneeded_modules() -> None:
    code = (
        "from airflow_provider_rayorch import job\n"
        "job.skip_unneeded_imports()\n"
        "import importlib\n"
        "for name in job.UNNEEDED_MODULES:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError:\n"
        "        print('skipped', name)\n"
    )
    assert _python(code).splitlines() == [f"skipped {name}" for name in job.UNNEEDED_MODULES]


def test_importing_the_entrypoint_leaves_every_module_importable() -> None:
    code = (
        "import sys\n"
        "from airflow_provider_rayorch import job\n"
        "print(sorted(n for n in job.UNNEEDED_MODULES if n in sys.modules))\n"
    )
    assert _python(code) == "[]"


def test_a_module_already_imported_stays() -> None:
    code = (
        "import json, sys\n"
        "from airflow_provider_rayorch import job\n"
        "sys.modules['rfc3987_syntax'] = json\n"
        "job.skip_unneeded_imports()\n"
        "print(sys.modules['rfc3987_syntax'] is json)\n"
    )
    assert _python(code) == "True"
