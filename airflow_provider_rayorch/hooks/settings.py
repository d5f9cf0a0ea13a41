"""What a ``rayorch`` connection says, parsed; and which of it is secret.

Kept apart from the hook so the rules (defaults, merging, which values to mask) can
be read and tested without a Jobs API. Parsing refuses a ``run_store`` URI that
carries credentials: they belong in the ``run_store_options`` extra, whose secret
values (like the token and every ``runtime_env.env_vars`` value) the hook registers
with Airflow's secrets masker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs.secrets import (
    check_uri,
    ray_init_secrets,
    secret_option_values,
)

__all__ = [
    "DEFAULT_PORT",
    "RayOrchSettings",
    "default_run_store",
    "merge_runtime_env",
]

DEFAULT_PORT = 8265


def _as_dict(value: Any, name: str) -> dict[str, Any]:
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, Mapping):
        raise UsageError(
            f"connection extra {name!r} must be a JSON object, got {type(value).__name__}: "
            f"set the extra key {name!r} to a JSON object such as {{}}"
        )
    return dict(value)


def default_run_store() -> str:
    """``$AIRFLOW_HOME/rayorch/runs`` (a local path: shared only on one machine)."""
    home = os.environ.get("AIRFLOW_HOME") or os.path.join(os.path.expanduser("~"), "airflow")
    return os.path.join(home, "rayorch", "runs")


def merge_runtime_env(
    base: Mapping[str, Any], override: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Operator ``runtime_env`` over the connection's: ``env_vars`` merged key by key,
    ``py_modules`` concatenated, every other key replaced."""
    merged = dict(base)
    for key, value in (override or {}).items():
        if key == "env_vars" and isinstance(value, Mapping):
            merged[key] = {**dict(merged.get(key) or {}), **value}
        elif key == "py_modules" and isinstance(value, list):
            merged[key] = [*list(merged.get(key) or []), *value]
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class RayOrchSettings:
    """What a ``rayorch`` connection says, parsed."""

    address: str | None = None
    token: str | None = field(default=None, repr=False)
    runtime_env: dict[str, Any] = field(default_factory=dict, repr=False)
    run_store: str = field(default_factory=default_run_store)
    #: pyarrow filesystem options of the run store (``endpoint_override``, ``region``,
    #: ``access_key``, ``secret_key``, ...): the connection extra ``run_store_options``
    run_store_options: dict[str, Any] = field(default_factory=dict, repr=False)
    namespace: str | None = None
    ray_init_kwargs: dict[str, Any] = field(default_factory=dict, repr=False)
    dashboard_url: str | None = None
    verify: bool | str = True
    timeout: float = 10.0
    #: Where ``token`` came from: ``"connection"``, ``"local_head"`` or ``"none"``.
    token_source: str = "none"
    #: The loopback head's token file, when ``address`` is a head this provider started.
    local_head_token_path: str | None = None

    @property
    def is_local_head(self) -> bool:
        return self.local_head_token_path is not None

    @property
    def embedded(self) -> bool:
        return not self.address

    def secrets(self) -> list[str]:
        """Every secret value these settings hold, for the secrets masker: the token,
        secret run-store options, ``runtime_env.env_vars`` values, secret-named
        ``ray_init_kwargs`` (``_redis_password``)."""
        found = [self.token] if self.token else []
        found += secret_option_values(self.run_store_options)
        found += ray_init_secrets(self.ray_init_kwargs, self.runtime_env)
        return found

    @classmethod
    def from_connection(cls, conn: Any) -> RayOrchSettings:
        extra = conn.extra_dejson if conn is not None else {}
        host = (getattr(conn, "host", None) or "").strip()
        address = None
        if host:
            scheme = getattr(conn, "schema", None) or "http"
            address = host if "://" in host else f"{scheme}://{host}"
            hostport = address.split("://", 1)[1]
            if ":" not in hostport.split("/", 1)[0]:
                address = f"{address.rstrip('/')}:{conn.port or DEFAULT_PORT}"
            address = address.rstrip("/")
        token = getattr(conn, "password", None) or None
        run_store = str(extra.get("run_store") or default_run_store())
        check_uri(run_store, "the connection extra run_store")
        return cls(
            address=address,
            token=token,
            token_source="connection" if token else "none",
            runtime_env=_as_dict(extra.get("runtime_env"), "runtime_env"),
            run_store=run_store,
            run_store_options=_as_dict(extra.get("run_store_options"), "run_store_options"),
            namespace=extra.get("namespace") or None,
            ray_init_kwargs=_as_dict(extra.get("ray_init_kwargs"), "ray_init_kwargs"),
            dashboard_url=(extra.get("dashboard_url") or None),
            verify=extra.get("verify", True),
            timeout=float(extra.get("timeout") or 10.0),  # the form stores empty as null
        )
