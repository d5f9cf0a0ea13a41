"""One parser for the driver's exit codes and RAYORCH_ERROR lines:
the operator, its embedded driver and the microbatch repair use it."""

from __future__ import annotations

import pytest

from airflow_provider_rayorch.common.driver_exit import (
    driver_exit_error,
    error_from,
    error_line,
    exit_code,
)
from airflow_provider_rayorch.exceptions import (
    RayOrchCompileFailed,
    RayOrchJobFailed,
    RayOrchPipelineNotImportable,
    RayOrchPlanChanged,
)
from airflow_provider_rayorch.runs import exit_codes

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        pytest.param(exit_codes.EXIT_IMPORT, RayOrchPipelineNotImportable, id="import"),
        pytest.param(exit_codes.EXIT_COMPILE, RayOrchCompileFailed, id="compile"),
        pytest.param(exit_codes.EXIT_PLAN_CHANGED, RayOrchPlanChanged, id="plan-changed"),
        pytest.param(exit_codes.EXIT_ERROR, RayOrchJobFailed, id="error"),
        pytest.param(137, RayOrchJobFailed, id="killed"),
    ],
)
def test_exit_codes(code: int, kind: type[Exception]) -> None:
    error = driver_exit_error(code, "why")
    assert type(error) is kind
    assert str(error) == "why"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", None, id="empty"),
        pytest.param("just a log\nno error", None, id="no-marker"),
        pytest.param(
            'x\nRAYORCH_ERROR {"exit_code": 5, "message": "m"}\ny',
            {"exit_code": 5, "message": "m"},
            id="json",
        ),
        pytest.param(
            'RAYORCH_ERROR {"message": "first"}\nRAYORCH_ERROR {"message": "last"}',
            {"message": "last"},
            id="last-wins",
        ),
        pytest.param("(pid=1) RAYORCH_ERROR not json", {"message": "not json"}, id="prefixed-text"),
    ],
)
def test_error_line(text: str, expected: dict | None) -> None:
    assert error_line(text) == expected
    assert error_line(text.splitlines()) == expected  # the embedded driver's kept lines


def test_error_from_takes_the_first_text_with_an_exit_code() -> None:
    log = 'RAYORCH_ERROR {"message": "no code"}'
    message = 'tail: RAYORCH_ERROR {"exit_code": 4, "message": "No module named x"}'
    error = error_from(log, message)
    assert isinstance(error, RayOrchPipelineNotImportable)
    assert str(error) == "No module named x"
    assert error_from("plain", "text") is None


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        pytest.param(None, None, id="no-info"),
        pytest.param({}, None, id="no-code"),
        pytest.param({"driver_exit_code": 5}, 5, id="int"),
        pytest.param({"driver_exit_code": "3"}, 3, id="text"),
        pytest.param({"driver_exit_code": "?"}, None, id="garbage"),
    ],
)
def test_exit_code_from_job_info(info, expected) -> None:
    assert exit_code(info) == expected


def test_one_parser_in_the_package() -> None:
    """No second reader of RAYORCH_ERROR lines (the operator and the repair had one each)."""
    from pathlib import Path

    import airflow_provider_rayorch

    root = Path(airflow_provider_rayorch.__file__).parent
    readers = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if 'partition("RAYORCH_ERROR' in p.read_text(encoding="utf-8")
        or "partition(ERROR_MARKER" in p.read_text(encoding="utf-8")
    )
    assert readers == ["common/driver_exit.py"]
