"""Every public exception of the package survives a pickle round trip:
exceptions cross process boundaries here (Ray tasks and actors,
the embedded driver, Airflow's supervisor), and one that cannot be rebuilt turns a
clear error into ``TypeError: __init__() missing ... arguments``. The package has
one exception root, and retryability is a type."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import airflow_provider_rayorch.exceptions as airflow_errors
import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.errors import RayOrchError

pytestmark = pytest.mark.timeout(60)

#: Representative arguments of the classes whose constructor is not ``(message)``.
ARGS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "InvalidTransition": (("doc[3]/page[1]", "IN_FLIGHT", "dispatch", ["READY->IN_FLIGHT"]), {}),
    "BrokenInvariant": (("one phase per grain", "doc[0] is READY and DONE"), {}),
    "DriverError": (("pipeline 'x:Y' is not callable", 4), {}),
    "RayOrchClusterError": (("cannot reach the Ray Jobs API at http://h:8265",), {}),
}


def _package_modules() -> list[Any]:
    """Every module of the package that imports here (optional workloads whose
    libraries are missing, such as the model adapters, are left out)."""
    import importlib
    import pkgutil

    import airflow_provider_rayorch

    found = []
    for info in pkgutil.walk_packages(
        airflow_provider_rayorch.__path__, "airflow_provider_rayorch."
    ):
        try:
            found.append(importlib.import_module(info.name))
        except ImportError:
            continue
    return found


def _exported() -> list[type[BaseException]]:
    """Every exception class the package defines under a public name, in any module
    (the engine's and the Airflow layer's exports, the run layer's, the workloads')."""
    found: dict[str, type[BaseException]] = {}
    for module in (ro, airflow_errors, *_package_modules()):
        for name, value in vars(module).items():
            if (
                not name.startswith("_")
                and isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__.startswith("airflow_provider_rayorch")
                and not value.__name__.startswith("_")
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return sorted(found.values(), key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def _instance(cls: type[BaseException]) -> BaseException:
    args, kwargs = ARGS.get(cls.__name__, ((f"{cls.__name__}: what went wrong, and the fix",), {}))
    return cls(*args, **kwargs)


@pytest.mark.parametrize("cls", _exported(), ids=lambda cls: cls.__qualname__)
def test_every_public_exception_survives_a_pickle_round_trip(cls: type[BaseException]) -> None:
    exc = _instance(cls)
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert back.args == exc.args
    assert str(back) == str(exc)
    assert vars(back) == vars(exc)  # exit_code, story, grain, ... come back too


@pytest.mark.parametrize("cls", _exported(), ids=lambda cls: cls.__qualname__)
def test_every_public_exception_has_the_one_root(cls: type[BaseException]) -> None:
    assert issubclass(cls, RayOrchError)


def test_the_walk_sees_both_layers() -> None:
    names = {cls.__name__ for cls in _exported()}
    assert {"RayOrchError", "InvalidTransition", "RayOrchClusterError", "RayOrchJobFailed"} <= names
    assert {"PdfError", "AttemptConflict", "ConditionalWritesUnsupported"} <= names


def test_retryability_is_a_type() -> None:
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    transient = airflow_errors.RayOrchClusterUnavailable("HTTP 503", status=503)
    permanent = airflow_errors.RayOrchClusterError("HTTP 404", status=404)
    auth = airflow_errors.RayOrchAuthError("HTTP 401", status=401)
    assert type(permanent) is airflow_errors.RayOrchClusterError  # the class is what was named
    assert isinstance(transient, airflow_errors.RayOrchTransientError)
    assert not isinstance(permanent, airflow_errors.RayOrchTransientError)
    assert (transient.transient, permanent.transient, auth.transient) == (True, False, False)
    for exc in (transient, permanent, auth):
        back = pickle.loads(pickle.dumps(exc))
        assert (type(back), back.status, back.transient) == (type(exc), exc.status, exc.transient)
    with pytest.raises(TypeError):  # no flag picks the class: the raise site names it
        airflow_errors.RayOrchClusterError("HTTP 503", transient=True)  # type: ignore[call-arg]
    # Airflow retries a task on AirflowException, and never on AirflowFailException.
    for name in ("RayOrchClusterError", "RayOrchJobFailed", "RayOrchFailedRatioExceeded"):
        cls = getattr(airflow_errors, name)
        assert issubclass(cls, AirflowException)
        assert not issubclass(cls, AirflowFailException)
    for name in ("RayOrchCompileFailed", "RayOrchPipelineNotImportable"):
        assert issubclass(getattr(airflow_errors, name), AirflowFailException), name
