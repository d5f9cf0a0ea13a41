"""A module Ray cannot ship to its actors (an unpicklable ``pre_init`` argument,
static ``run()`` keyword or class attribute of a class shipped by value) fails
``compile()``, before any actor starts, naming the module, what is at fault and
the fix."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import pytest

import airflow_provider_rayorch.rayorch as ro


class WithLock:
    def __init__(self, lock: Any = None) -> None:
        self.lock = lock or threading.Lock()

    def run(self, xs: list[Any]) -> list[Any]:
        return xs


class ImportableWithLockAttribute:
    """Importable: Ray pickles it by reference, so its class attributes stay here."""

    lock: ClassVar[Any] = threading.Lock()

    def run(self, xs: list[Any]) -> list[Any]:
        return xs


class One(ro.Pipeline):
    def __init__(self, module: ro.RayModule, **kwargs: Any) -> None:
        self.lock_stage = module
        self.kwargs = kwargs

    def forward(self, xs: ro.Port) -> ro.Port:
        return self.lock_stage(xs, **self.kwargs)


def test_a_lock_given_to_pre_init_fails_compile_naming_module_and_argument() -> None:
    pipeline = One(ro.RayModule(WithLock).pre_init(threading.Lock()))
    with pytest.raises(ro.CompileError) as caught:
        pipeline.compile()
    message = str(caught.value)
    assert "self.lock_stage" in message
    assert "pre_init argument 0" in message
    assert "lock" in message
    assert "WithLock.__init__" in message


def test_a_lock_given_as_pre_init_keyword_names_the_keyword() -> None:
    pipeline = One(ro.RayModule(WithLock).pre_init(lock=threading.Lock()))
    with pytest.raises(ro.CompileError, match=r"self\.lock_stage.*pre_init keyword 'lock'"):
        pipeline.compile()


def test_a_generator_as_static_run_keyword_names_the_call() -> None:
    class Takes:
        def run(self, xs: list[Any], *, extra: Any = None) -> list[Any]:
            return xs

    pipeline = One(ro.RayModule(Takes), extra=(i for i in range(3)))
    with pytest.raises(ro.CompileError, match=r"Call 'lock_stage'.*keyword 'extra'.*generator"):
        pipeline.compile()


def test_a_class_shipped_by_value_with_a_lock_attribute_names_the_attribute() -> None:
    class LocalWithLock:  # defined in a function: Ray ships the class itself
        lock = threading.Lock()

        def run(self, xs: list[Any]) -> list[Any]:
            return xs

    with pytest.raises(ro.CompileError) as caught:
        One(ro.RayModule(LocalWithLock)).compile()
    message = str(caught.value)
    assert "self.lock_stage" in message
    assert "LocalWithLock.lock" in message
    assert "__init__" in message


def test_a_lambda_capturing_a_lock_fails_compile() -> None:
    lock = threading.Lock()
    module = ro.function(lambda xs: [(lock, x)[1] for x in xs])
    with pytest.raises(ro.CompileError, match=r"self\.lock_stage.*lock"):
        One(module).compile()


@pytest.mark.parametrize(
    "module",
    [
        pytest.param(ro.RayModule(WithLock), id="lock-made-in-init"),
        pytest.param(ro.RayModule(ImportableWithLockAttribute), id="importable-class"),
        pytest.param(ro.RayModule(WithLock).pre_init(None), id="plain-argument"),
        pytest.param(ro.function(lambda xs: xs), id="plain-lambda"),
    ],
)
def test_shippable_modules_compile(module: ro.RayModule) -> None:
    assert One(module).compile().fingerprint
