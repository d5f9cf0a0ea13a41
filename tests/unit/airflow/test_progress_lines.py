"""Task-log progress reads as one human line per committed microbatch; the machine
events stay available but out of the reader's way."""

from __future__ import annotations

import re
from unittest import mock

import pytest
from structlog.testing import capture_logs

from airflow_provider_rayorch.runs import driver
from tests.unit.runs.plans import write_fake_plan

pytestmark = pytest.mark.timeout(30)

LINE = re.compile(
    r"^microbatch (\d+)/(\d+) committed: (\d+) sources, (\d+) present, (\d+) failed, "
    r"(\d+) suppressed \(\d+\.\d s, \d+ \w+/s\)$"
)


def test_driver_prints_one_human_line_per_committed_microbatch(
    tmp_path, fake_engine, capsys
) -> None:
    driver.run_plan(write_fake_plan(tmp_path, poison=[4]), "run")
    lines = [line for line in capsys.readouterr().out.splitlines() if LINE.match(line)]
    parsed = [LINE.match(line).groups() for line in lines]  # type: ignore[union-attr]
    assert [(g[0], g[1]) for g in parsed] == [("1", "3"), ("2", "3"), ("3", "3")]
    assert parsed[1][2:] == ("3", "2", "1", "0")  # 3 sources, 2 present, 1 failed
    assert parsed[2][2] == "1"


def test_relayed_job_log_keeps_events_out_of_the_info_log(tmp_path, fake_engine) -> None:
    from airflow_provider_rayorch.hooks.settings import RayOrchSettings
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    hook = mock.MagicMock(embedded=False, run_store_uri=str(tmp_path), is_local_head=False)
    hook.settings = RayOrchSettings(address="http://h:8265", run_store=str(tmp_path))
    hook.runtime_env.side_effect = lambda override=None: dict(override or {})
    hook.get_job_info.return_value = {"status": "SUCCEEDED", "message": ""}
    hook.get_job_status.return_value = "SUCCEEDED"
    hook.get_job_logs.return_value = (
        'RAYORCH_EVENT {"event": "start"}\n'
        "microbatch 1/1 committed: 1 sources, 1 present, 0 failed, 0 suppressed (0.1 s, 9 x/s)\n"
    )
    op = RayOrchOperator(task_id="t", pipeline="fake_pipelines:Square", sources=[1])
    op.__dict__["hook"] = hook
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    with capture_logs() as logs:
        op._poll("j", {"ti": ti})
    info = [str(e["event"]) for e in logs if e.get("log_level") == "info"]
    assert any("microbatch 1/1 committed" in line for line in info), info
    assert not any("RAYORCH_EVENT" in line for line in info), info


def _relayed_from_an_embedded_driver(*lines: str) -> mock.MagicMock:
    """A mock task log after an embedded driver's ``lines`` were relayed to it."""
    from airflow_provider_rayorch.common.progress import relay_line

    log = mock.MagicMock()
    for line in lines:
        relay_line(log, "[driver]", line)
    return log


def test_machine_lines_go_to_debug() -> None:
    log = _relayed_from_an_embedded_driver(
        'RAYORCH_EVENT {"event": "end"}', "microbatch 1/1 committed: ..."
    )
    log.debug.assert_called_once_with("%s %s", "[driver]", 'RAYORCH_EVENT {"event": "end"}')
    log.info.assert_called_once_with("%s %s", "[driver]", "microbatch 1/1 committed: ...")


def test_an_embedded_drivers_lines_are_plain_text() -> None:
    log = _relayed_from_an_embedded_driver(
        "\x1b[33mWARNING\x1b[0m slow", '\x1b[2mRAYORCH_EVENT {"event": "end"}\x1b[0m'
    )
    log.info.assert_called_once_with("%s %s", "[driver]", "WARNING slow")
    log.debug.assert_called_once_with("%s %s", "[driver]", 'RAYORCH_EVENT {"event": "end"}')
