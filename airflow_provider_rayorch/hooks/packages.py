"""Ship a job's local ``working_dir`` / ``py_modules`` to the cluster before submitting.

Ray's public ``JobSubmissionClient`` uploads these itself, but over its own HTTP
client; the hook keeps every Jobs-API call on its one request path
(:class:`~airflow_provider_rayorch.hooks.jobs_api.JobsApi`: TLS, token, error
mapping). So the package is built here (:mod:`.package_files`) and sent to the job
server's package route, the one Ray's client uses: ``GET /api/packages/gcs/<name>``
(200 when stored, 404 when not; it also keeps a stored package from being evicted
before the job starts) and ``PUT`` of the package's bytes. The runtime_env that
comes back names each package by URI, and Ray's public ``RuntimeEnv`` validates it.
"""

from __future__ import annotations

import copy
import re
import tempfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from airflow_provider_rayorch.exceptions import RayOrchPermanentError
from airflow_provider_rayorch.hooks import package_files as pf

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_rayorch.hooks.jobs_api import JobsApi

__all__ = ["prepare_runtime_env"]

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def prepare_runtime_env(api: JobsApi, runtime_env: Mapping[str, Any] | None) -> dict[str, Any]:
    """``runtime_env`` with its local packages uploaded (once per content) and named
    by URI, validated by Ray's ``RuntimeEnv``. Raises :class:`RayOrchPermanentError`
    for a local path that cannot be shipped."""
    from ray.runtime_env import RuntimeEnv

    env = dict(runtime_env or {})
    if not env:
        return {}
    modules = env.pop("py_modules", None)  # may hold module objects, which do not copy
    env = copy.deepcopy(env)
    gitignore = pf.include_gitignore()
    excludes = list(env.get("excludes") or [])
    working_dir = env.get("working_dir")
    if working_dir is not None:
        env["working_dir"] = _ship(api, _working_dir_package(working_dir, excludes, gitignore))
    if modules is not None:
        if not isinstance(modules, list):
            raise _bad("py_modules", modules, "must be a list of paths, modules or URIs")
        env["py_modules"] = [_ship(api, _module_package(m, excludes, gitignore)) for m in modules]
    return dict(RuntimeEnv(**env).to_dict())


def _working_dir_package(value: Any, excludes: list[str], gitignore: bool) -> pf.Package | str:
    if not isinstance(value, (str, Path)):
        raise _bad("working_dir", value, "must be a local path or a URI")
    if isinstance(value, str) and _is_uri(value):
        return value
    path = Path(value)
    if path.is_dir():
        return pf.directory_package(
            path, excludes=[*pf.default_excludes(), *excludes], gitignore=gitignore, top_level=False
        )
    package = pf.archive_package(path) if path.is_file() else None
    if package is None:
        formats = ", ".join(pf.ARCHIVE_EXTENSIONS)
        raise _bad("working_dir", value, f"must be an existing directory or archive ({formats})")
    return package


def _module_package(value: Any, excludes: list[str], gitignore: bool) -> pf.Package | str:
    if isinstance(value, ModuleType):
        value = _module_path(value)
    if not isinstance(value, (str, Path)):
        raise _bad("py_modules", value, "entries must be local paths, modules or URIs")
    if isinstance(value, str) and _is_uri(value):
        return value
    path = Path(value)
    if path.is_dir():
        return pf.directory_package(path, excludes=excludes, gitignore=gitignore, top_level=True)
    if path.is_file() and path.suffix == ".py":
        return pf.module_file_package(path)
    if path.is_file() and path.suffix == ".whl":
        return pf.wheel_package(path)
    raise _bad("py_modules", value, "entries must be an existing directory, .py file or .whl")


def _module_path(module: ModuleType) -> str:
    paths = list(getattr(module, "__path__", []) or [])
    if len(paths) == 1:
        return str(paths[0])
    if not paths and module.__file__:
        return module.__file__
    raise _bad("py_modules", module.__name__, "a module must be one file or one directory")


def _ship(api: JobsApi, package: pf.Package | str) -> str:
    """Upload ``package`` unless the cluster holds it; its URI (a URI passes through)."""
    if isinstance(package, str):
        return package
    what = f"checking package {package.name} ({package.source})"
    if api.request("GET", package.endpoint, what=what, allow_404=True) is None:
        with tempfile.TemporaryDirectory(prefix="rayorch-pkg-") as tmp:
            content = package.write(Path(tmp)).read_bytes()
            api.request(
                "PUT", package.endpoint, what=f"uploading {package.source}", content=content
            )
    return package.uri


def _is_uri(value: str) -> bool:
    """A URI has a scheme (``gcs://``, ``s3://``, ``local://``, ...); a path has none
    (a Windows drive letter is not a scheme)."""
    return bool(urlparse(value).scheme) and not _WINDOWS_DRIVE.match(value)


def _bad(field: str, value: Any, problem: str) -> RayOrchPermanentError:
    return RayOrchPermanentError(
        f"runtime_env {field} {str(value)!r} {problem}: fix the path in the task's or the "
        "connection's runtime_env (the path is read on the machine that submits the job)"
    )
