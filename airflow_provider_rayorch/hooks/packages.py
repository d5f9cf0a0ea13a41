"""Ship a job's local ``working_dir`` / ``py_modules`` to the cluster before submitting.

Ray's packaging helpers zip the local directory (or take a wheel/zip file) and name
it by content hash; the upload itself goes through the hook's one request path
(:class:`~airflow_provider_rayorch.hooks.jobs_api.JobsApi`), so it gets the same
TLS, token and error mapping as every other Jobs-API call. The runtime_env that
comes back names the uploaded packages by URI, as Ray's own client would send it.
"""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_rayorch.hooks.jobs_api import JobsApi

__all__ = ["prepare_runtime_env"]


def _upload_if_needed(
    api: JobsApi,
    path: str,
    *,
    include_gitignore: bool,
    include_parent_dir: bool,
    excludes: list[str] | None,
    is_file: bool,
) -> str:
    from ray._private.runtime_env.packaging import (
        create_package,
        get_uri_for_directory,
        get_uri_for_package,
    )
    from ray.dashboard.modules.job.common import uri_to_http_components

    if is_file:
        uri = get_uri_for_package(Path(path))
    else:
        uri = get_uri_for_directory(path, include_gitignore, excludes=excludes)
    protocol, name = uri_to_http_components(uri)
    endpoint = f"/api/packages/{protocol}/{name}"
    if api.request("GET", endpoint, what=f"checking package {uri}", allow_404=True) is not None:
        return uri
    with tempfile.TemporaryDirectory() as tmp:
        package = Path(path) if is_file else Path(tmp) / name
        if not is_file:
            create_package(
                path,
                package,
                include_gitignore=include_gitignore,
                include_parent_dir=include_parent_dir,
                excludes=excludes,
            )
        api.request("PUT", endpoint, what=f"uploading {path}", content=package.read_bytes())
    return uri


def prepare_runtime_env(api: JobsApi, runtime_env: Mapping[str, Any] | None) -> dict[str, Any]:
    """``runtime_env`` with local packages uploaded and validated as Ray's client does."""
    from ray._private.ray_constants import RAY_RUNTIME_ENV_IGNORE_GITIGNORE
    from ray._private.runtime_env.py_modules import upload_py_modules_if_needed
    from ray._private.runtime_env.working_dir import upload_working_dir_if_needed
    from ray.runtime_env import RuntimeEnv

    env = copy.deepcopy(dict(runtime_env or {}))
    if not env:
        return {}
    gitignore = os.environ.get(RAY_RUNTIME_ENV_IGNORE_GITIGNORE, "0") != "1"

    def working_dir_fn(path: str, excludes: list[str] | None, is_file: bool = False) -> None:
        _upload_if_needed(
            api,
            path,
            include_gitignore=gitignore,
            include_parent_dir=False,
            excludes=excludes,
            is_file=is_file,
        )

    def py_module_fn(path: str, excludes: list[str] | None, is_file: bool = False) -> None:
        _upload_if_needed(
            api,
            path,
            include_gitignore=gitignore,
            include_parent_dir=True,
            excludes=excludes,
            is_file=is_file,
        )

    env = upload_working_dir_if_needed(env, include_gitignore=gitignore, upload_fn=working_dir_fn)
    env = upload_py_modules_if_needed(env, include_gitignore=gitignore, upload_fn=py_module_fn)
    return dict(RuntimeEnv(**env).to_dict())
