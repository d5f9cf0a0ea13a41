"""One exception root: every exception class the engine defines is a ``RayOrchError``,
is exported from ``airflow_provider_rayorch.rayorch`` and drawn in the tree of
``errors.py``; misuse of the public API is a ``UsageError``, also a ``ValueError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch import errors
from airflow_provider_rayorch.runs import driver, exit_codes, store


def engine_exceptions() -> dict[str, type[BaseException]]:
    """Every public exception class defined in a module of the engine package."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(ro.__path__, prefix=f"{ro.__name__}."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[name] = value
    return found


def test_the_walk_finds_the_engine_exceptions() -> None:
    assert {"CompileError", "StoreError", "DriverError", "UsageError"} <= set(engine_exceptions())


def test_every_engine_exception_is_a_rayorch_error() -> None:
    outside = sorted(
        f"{cls.__module__}.{name}"
        for name, cls in engine_exceptions().items()
        if not issubclass(cls, ro.RayOrchError)
    )
    assert outside == []


def test_every_engine_exception_is_exported() -> None:
    for name, cls in engine_exceptions().items():
        assert name in ro.__all__, f"{cls.__module__}.{name} is not in rayorch.__all__"
        assert getattr(ro, name) is cls


def test_every_engine_exception_is_drawn_in_the_tree() -> None:
    tree = errors.__doc__ or ""
    missing = [name for name in engine_exceptions() if f" {name} " not in tree]
    assert missing == []


def test_store_and_driver_errors_keep_their_old_import_paths() -> None:
    assert store.StoreError is ro.StoreError
    assert driver.DriverError is ro.DriverError
    error = driver.DriverError("no plan", exit_codes.EXIT_PLAN_CHANGED)
    assert error.exit_code == exit_codes.EXIT_PLAN_CHANGED
    assert driver.DriverError("x").exit_code == exit_codes.EXIT_ERROR


@pytest.mark.parametrize(
    ("cls", "base"),
    [
        (ro.UsageError, ValueError),
        (ro.CompileError, ValueError),
        (ro.ExecutionError, RuntimeError),
        (ro.ResourceUnavailableError, ro.ExecutionError),
    ],
)
def test_builtin_bases_kept_for_except_clauses(cls: type, base: type) -> None:
    assert issubclass(cls, base)
    assert issubclass(cls, ro.RayOrchError)


class Echo:
    def run(self, xs: list[Any]) -> list[Any]:
        return xs


class One(ro.Pipeline):
    def __init__(self) -> None:
        self.echo = ro.RayModule(Echo)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.echo(doc)


@pytest.mark.parametrize(
    ("misuse", "message"),
    [
        pytest.param(lambda: ro.RecoveryPolicy.retry_batch(-1), r"max_retries must be an int >= 0"),
        pytest.param(
            lambda: ro.RecoveryPolicy.isolate_tail(infra_retries=1.5), r"infra_retries must be"
        ),
        pytest.param(lambda: One().compile(optimize=None), r"optimize="),
        pytest.param(lambda: ro.RecoveryPolicy("abort"), r"kind must be a RecoveryKind"),
        pytest.param(lambda: ro.Executor(One(), backend="spark"), r"backend must be one of"),
        pytest.param(lambda: ro.run(One(), [1], backend="dask"), r"backend must be one of"),
        pytest.param(lambda: ro.run(One(), "abc", backend="local"), r"must be a sequence of rows"),
        pytest.param(lambda: ro.run(One(), [1], [2], backend="local"), r"takes 1 source column"),
        pytest.param(
            lambda: ro.run(One(), [1], input_batch_size=0, backend="local"),
            r"input_batch_size must be an int >= 1",
        ),
        pytest.param(
            lambda: ro.run(One(), [1], max_active_input_batches=0, backend="local"),
            r"max_active_input_batches must be an int >= 1",
        ),
    ],
)
def test_api_misuse_is_a_usage_error(misuse: Any, message: str) -> None:
    with pytest.raises(ro.UsageError, match=message):
        misuse()
