"""Secret settings handed to a Ray job's driver through the head's key-value store.

Ray shows a job's ``runtime_env`` well beyond its driver: on the command line of
every worker of the job while it starts (``setup_worker.py
--serialized-runtime-env-context=...``, readable with ``ps``), in the head's
``runtime_env_agent.log`` and in the job's record in the Jobs API. So the run
store's options never ride in it. The submitting side stores them as one entry of
the cluster's key-value store (the GCS, through the Jobs API's package route, which
takes any bytes) and hands the driver the entry's key in ``runtime_env.env_vars``:
a name, not a secret. The driver takes the entry (reads it, then deletes it) before
it starts any worker.

Nothing in Ray reads or logs the entry: no ``runtime_env`` names it as a package.
An entry whose driver never starts (the job stopped while pending) stays in the
GCS until the cluster is torn down; only processes that authenticate to the
cluster can read the GCS.
"""

from __future__ import annotations

import hashlib

from airflow_provider_rayorch.rayorch.errors import StoreError

__all__ = ["DepositMissing", "deposit_name", "key_of", "take"]

#: Entry names: ``_rayorch_run_store_options_<hash of the submission id>``.
_PREFIX = "_rayorch_run_store_options_"
_SCHEME = "gcs://"


class DepositMissing(StoreError):
    """The key-value entry a driver was handed is not there (already taken)."""


def deposit_name(submission_id: str) -> str:
    """The entry name for a job (one per submission id: a submit sent again rewrites
    the same entry instead of leaving another one behind)."""
    digest = hashlib.sha256(submission_id.encode()).hexdigest()[:32]
    return f"{_PREFIX}{digest}"


def key_of(name: str) -> str:
    """The GCS key of the entry ``name`` (the package route stores ``gcs://<name>``)."""
    return f"{_SCHEME}{name}"


def take(key: str, gcs_address: str) -> bytes:
    """Read the entry ``key`` from the cluster at ``gcs_address`` and delete it.

    Connects this process to the cluster first (``ray.init(address=...)``, as the
    engine would: it then runs on that connection). Ray's key-value calls live in
    ``ray.experimental.internal_kv``, the one Ray module that reads what the package
    route stored; the integration test on a real head checks them at each Ray version.
    Raises :class:`DepositMissing` when the entry is gone: a driver takes its entry
    once, so a job's driver started a second time (by hand) must be submitted anew."""
    if not key.startswith(_SCHEME + _PREFIX):
        raise DepositMissing(
            f"{key!r} is not a run store options entry ({_SCHEME}{_PREFIX}...): the job's "
            "environment was changed; submit the run's job again from Airflow"
        )
    import ray
    from ray.experimental import internal_kv

    if not ray.is_initialized():
        ray.init(address=gcs_address)
    value = internal_kv._internal_kv_get(key)
    if value is None:
        raise DepositMissing(
            f"the run store options entry {key} is not in the cluster's key-value store: "
            "a job's driver takes it once, at its start. Submit the run's job again from "
            "Airflow (clear the task) instead of restarting its driver by hand"
        )
    internal_kv._internal_kv_del(key)
    return bytes(value)
