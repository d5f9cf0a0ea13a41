"""A test's own loopback heads: no Ray address or token from the machine, a heads
registry in the test's tmp dir, and their logs kept in an archive there."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def own_heads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Set this test's environment for heads of its own; returns the folder their
    logs are kept in when they stop."""
    from airflow_provider_rayorch.common import head_logs

    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))
    archive = tmp_path / "head-logs"
    monkeypatch.setenv(head_logs.ARCHIVE_ENV, str(archive))
    return archive
