"""A loopback head's logs kept past its stop, and the digest a failure report prints."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from airflow_provider_rayorch.common import head_logs

if TYPE_CHECKING:
    from pathlib import Path


def _head(tmp_path: Path, name: str, ray_start: str, raylet: str) -> dict[str, object]:
    temp_dir = tmp_path / name
    logs = temp_dir / "session_2026-01-01_00-00-00_1" / "logs"
    logs.mkdir(parents=True)
    (temp_dir / "session_latest").symlink_to(logs.parent)
    (temp_dir / "ray-start.log").write_text(ray_start)
    (temp_dir / "auth_token").write_text("s3cr3t-token-never-copied")
    (logs / "raylet.out").write_text(raylet)
    (logs / "big.log").write_bytes(b"x" * (head_logs.TAIL_BYTES + 10) + b"\nlast line\n")
    return {"pgid": 4242, "temp_dir": str(temp_dir), "address": "http://127.0.0.1:1234"}


def test_a_stopped_head_keeps_its_logs_only_where_the_archive_variable_says(
    tmp_path: Path, monkeypatch
) -> None:
    head = _head(tmp_path, "rayhabc", "Ray runtime started.\n", "raylet up\n")
    monkeypatch.delenv(head_logs.ARCHIVE_ENV, raising=False)
    assert head_logs.archive(head, leader_alive=True) is None

    monkeypatch.setenv(head_logs.ARCHIVE_ENV, str(tmp_path / "kept"))
    kept = head_logs.archive(head, leader_alive=True)
    assert kept == tmp_path / "kept" / "rayhabc-4242"
    assert (kept / "ray-start.log").read_text() == "Ray runtime started.\n"
    assert (kept / "logs" / "raylet.out").read_text() == "raylet up\n"
    big = (kept / "logs" / "big.log").read_bytes()
    assert len(big) == head_logs.TAIL_BYTES
    assert big.endswith(b"last line\n")
    assert "s3cr3t" not in "".join(p.read_text() for p in kept.rglob("*") if p.is_file())
    assert json.loads((kept / "stop.json").read_text())["ray_start_alive"] is True


def test_the_digest_shows_the_heads_that_died_with_the_line_naming_the_exit(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv(head_logs.ARCHIVE_ENV, str(tmp_path / "kept"))
    fine = _head(tmp_path, "rayhfine", "Ray runtime started.\n", "Raylet received SIGTERM\n")
    head_logs.archive(fine, leader_alive=True)
    assert head_logs.digest() == ""  # a head stopped while it ran says nothing

    dead = _head(
        tmp_path,
        "rayhdead",
        "Ray runtime started.\nSome Ray subprocesses exited unexpectedly:\n  raylet\n",
        "starting\n[raylet] Failed to bind: Address already in use\n",
    )
    head_logs.archive(dead, leader_alive=False)
    report = head_logs.digest()
    assert "(2 heads kept)" in report
    assert "rayhdead-4242" in report
    assert "rayhfine" not in report
    assert "`ray start` had exited" in report
    assert "Some Ray subprocesses exited unexpectedly:" in report
    assert "[raylet] Failed to bind: Address already in use" in report
    assert "starting" not in report.split("-- raylet.out:")[1]
    assert "rayhfine-4242" in head_logs.digest(every=True)


def test_what_a_live_heads_logs_say_is_their_key_lines_per_file(tmp_path: Path) -> None:
    head = _head(
        tmp_path,
        "rayhlive",
        "Local node IP: 127.0.0.1\n",
        "[info] started\n[error] Check failed: Timed out waiting for file metrics_agent_port\n",
    )
    said = head_logs.what_logs_say(str(head["temp_dir"]))
    assert said == (
        "raylet.out: [error] Check failed: Timed out waiting for file metrics_agent_port"
    )
    assert head_logs.what_logs_say(tmp_path / "no-such-head") == ""


def test_what_logs_say_is_capped_in_all(tmp_path: Path) -> None:
    noisy = "".join(f"[error] Check failed: step {n}\n" for n in range(30))
    head = _head(tmp_path, "rayhnoisy", "", noisy)
    said = head_logs.what_logs_say(str(head["temp_dir"]), limit=30, most=7)
    assert said.splitlines() == [f"raylet.out: [error] Check failed: step {n}" for n in range(7)]
