"""Which run settings are secret, and how secrets reach a driver without being stored.

Credentials never ride in a URI, a plan record, a command line or a Ray job's
``runtime_env``. The run store's filesystem options (the connection extra
``run_store_options``) and an embedded Ray's ``ray.init()`` options reach an
embedded driver through its process environment (readable only by its own user,
unlike ``ps``'s argv), as JSON in :data:`RUN_STORE_OPTIONS_ENV` and
:data:`RAY_INIT_KWARGS_ENV`. A Ray job's driver gets the run store's options from
the cluster's key-value store (:mod:`.handoff`): its ``runtime_env`` holds only the
entry's key, :data:`RUN_STORE_OPTIONS_KEY_ENV`. The driver drops both variables
from its environment once read, so no process it starts inherits them. The plan
record keeps only what names a run.

This module decides what is secret; registering values with Airflow's secrets
masker is the Airflow layer's job (it imports Airflow, this layer does not).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from airflow_provider_rayorch.rayorch.errors import StoreError

__all__ = [
    "RAY_INIT_KWARGS_ENV",
    "RUN_STORE_OPTIONS_ENV",
    "RUN_STORE_OPTIONS_KEY_ENV",
    "RunStoreSettingError",
    "check_uri",
    "driver_env",
    "is_local",
    "is_secret_key",
    "ray_init_kwargs_from_env",
    "ray_init_secrets",
    "redact_uri",
    "run_store_options_from_env",
    "secret_option_values",
]

#: The run store's filesystem options (a JSON object) for a driver process.
RUN_STORE_OPTIONS_ENV = "RAYORCH_RUN_STORE_OPTIONS"
#: A Ray job driver's key of its run store options in the cluster's key-value store.
RUN_STORE_OPTIONS_KEY_ENV = "RAYORCH_RUN_STORE_OPTIONS_KEY"
#: An embedded driver's ``ray.init()`` options (a JSON object), runtime_env included.
RAY_INIT_KWARGS_ENV = "RAYORCH_RAY_INIT_KWARGS"

_OPTIONS = "run_store_options"
_HIDDEN = "***"

#: A setting whose name holds one of these is a secret (``secret_key``,
#: ``session_token``, ``_redis_password``, ``access_key``, ``api_key``, ...).
_SECRET_WORDS = (
    "secret",
    "token",
    "password",
    "passwd",
    "credential",
    "access_key",
    "private_key",
    "api_key",
    "apikey",
    "signature",
    "auth",
)


class RunStoreSettingError(StoreError, ValueError):
    """A run store URI or its options are unusable (credentials in the URI, an option
    the filesystem does not take); the message names the setting and the fix."""


def is_local(uri: str) -> bool:
    """A plain path (no scheme): the local filesystem."""
    return "://" not in uri


def is_secret_key(name: str) -> bool:
    """A setting named ``name`` holds a secret (matched case-insensitively)."""
    lowered = str(name).lower().replace("-", "_")
    return any(word in lowered for word in _SECRET_WORDS)


def _strings(value: Any) -> list[str]:
    """Every leaf of ``value`` as text (JSON text for numbers and booleans)."""
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    if value is None or value == "":
        return []
    return [value if isinstance(value, str) else json.dumps(value)]


def secret_option_values(options: Mapping[str, Any] | None) -> list[str]:
    """The values of the secret-named keys of ``options`` (at any depth)."""
    found: list[str] = []
    for key, value in (options or {}).items():
        if is_secret_key(key):
            found.extend(_strings(value))
        elif isinstance(value, Mapping):
            found.extend(secret_option_values(value))
    return found


def ray_init_secrets(
    ray_init_kwargs: Mapping[str, Any] | None, runtime_env: Mapping[str, Any] | None = None
) -> list[str]:
    """Secrets of a run's Ray settings: every ``runtime_env.env_vars`` value (users put
    API keys there) and every secret-named ``ray.init()`` option (``_redis_password``)."""
    kwargs = dict(ray_init_kwargs or {})
    found = secret_option_values({k: v for k, v in kwargs.items() if k != "runtime_env"})
    for env in (kwargs.get("runtime_env"), runtime_env):
        if isinstance(env, Mapping):
            found.extend(_strings(env.get("env_vars") or {}))
    return found


def driver_env(
    run_store_options: Mapping[str, Any] | None, ray_init_kwargs: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """Environment variables handing a driver its run store options and, for an
    embedded Ray, its ``ray.init()`` options (empty ones are left out)."""
    env: dict[str, str] = {}
    if run_store_options:
        env[RUN_STORE_OPTIONS_ENV] = json.dumps(dict(run_store_options), sort_keys=True)
    if ray_init_kwargs:
        env[RAY_INIT_KWARGS_ENV] = json.dumps(dict(ray_init_kwargs), sort_keys=True)
    return env


_JSON_OBJECT = 'give one such as {"key": "value"}'


def _parse_object(name: str, text: str | bytes | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise RunStoreSettingError(f"{name} is not a JSON object: {_JSON_OBJECT}") from None
    if not isinstance(value, dict):
        raise RunStoreSettingError(f"{name} is not a JSON object: {_JSON_OBJECT}")
    return value


def _json_object(name: str, environ: Mapping[str, str]) -> dict[str, Any] | None:
    return _parse_object(f"environment variable {name}", environ.get(name))


def run_store_options_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The run store options handed to this driver (empty when none were): the JSON
    of :data:`RUN_STORE_OPTIONS_ENV`, or the key-value entry that
    :data:`RUN_STORE_OPTIONS_KEY_ENV` names, taken from the cluster at ``RAY_ADDRESS``
    (a Ray job's driver). Read from ``os.environ`` (``environ`` None), both variables
    are removed from it, so the processes this driver starts (an embedded Ray) never
    inherit them."""
    env = os.environ if environ is None else environ
    handed = _json_object(RUN_STORE_OPTIONS_ENV, env)
    key = env.get(RUN_STORE_OPTIONS_KEY_ENV)
    if environ is None:
        os.environ.pop(RUN_STORE_OPTIONS_ENV, None)
        os.environ.pop(RUN_STORE_OPTIONS_KEY_ENV, None)
    if handed is not None or not key:
        return handed or {}
    address = env.get("RAY_ADDRESS")
    if not address:
        raise RunStoreSettingError(
            f"environment variable {RUN_STORE_OPTIONS_KEY_ENV} names the run store options "
            "in the cluster's key-value store, but RAY_ADDRESS (the cluster's GCS address, "
            "which Ray sets for a job's driver) is empty: run the driver as a Ray job"
        )
    from airflow_provider_rayorch.runs.handoff import take

    return _parse_object(f"the run store options entry {key}", take(key, address)) or {}


def ray_init_kwargs_from_env(
    stored: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The ``ray.init()`` options handed to this driver; ``stored`` (a plan record's,
    written before secrets left the store) when none were handed over."""
    handed = _json_object(RAY_INIT_KWARGS_ENV, os.environ if environ is None else environ)
    return dict(stored or {}) if handed is None else handed


def _credentials(uri: str) -> list[str]:
    """Where ``uri`` carries credentials (never the values themselves)."""
    if is_local(uri):
        return []
    split = urlsplit(uri)
    found = ["user information before '@'"] if "@" in split.netloc else []
    keys = [k for k, _ in parse_qsl(split.query, keep_blank_values=True) if is_secret_key(k)]
    found.extend(f"query key {k!r}" for k in dict.fromkeys(keys))
    return found


def redact_uri(uri: str) -> str:
    """``uri`` with its user information and secret query values replaced by ``***``."""
    if is_local(uri):
        return uri
    split = urlsplit(uri)
    netloc = split.netloc
    if "@" in netloc:
        netloc = f"{_HIDDEN}@{netloc.rpartition('@')[2]}"
    pairs = parse_qsl(split.query, keep_blank_values=True)
    query = "&".join(
        f"{quote(k, safe='')}={_HIDDEN if is_secret_key(k) else quote(v, safe=':/,')}"
        for k, v in pairs
    )
    return urlunsplit((split.scheme, netloc, split.path, query, split.fragment))


def check_uri(uri: str, setting: str = "run_store") -> None:
    """Refuse a URI that carries credentials; the message never repeats them.

    ``setting`` names where the URI came from; a run store's credentials belong in
    ``run_store_options``, any other URI's (a sources glob) in the credential chain."""
    where = _credentials(uri)
    if not where:
        return
    chain = (
        "the credential chain find them (IAM roles, AWS_* environment variables, GCS "
        "application default credentials)"
    )
    fix = (
        f"put them in the connection extra {_OPTIONS} (for example "
        '{"access_key": "...", "secret_key": "...", "endpoint_override": "host:port"}), '
        f"or leave them out and let {chain}"
        if "run_store" in setting
        else f"let {chain} on the machines that read it"
    )
    raise RunStoreSettingError(
        f"{setting} URI {redact_uri(uri)} carries credentials ({', '.join(where)}): "
        "a URI is logged, pushed to XCom and written into the run store, so it must "
        f"not hold secrets. Remove them from the URI and {fix}."
    )
