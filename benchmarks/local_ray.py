"""A Ray of this process's own, for benchmarks and the integration tests."""

from __future__ import annotations

import logging
import os

from airflow_provider_rayorch.operators._embedded import RAY_START_TIMED_OUT

#: the repository, on the actors' PYTHONPATH so they import ``benchmarks`` and ``tests``
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: ``ray.init`` gives its raylet a fixed 30 s; on a loaded machine the start is tried
#: this many times in all (the embedded driver's rule) before its error is raised.
START_TRIES = 3

log = logging.getLogger(__name__)


def init_own_ray() -> None:
    """Start a new 2-CPU local Ray (never join another Ray running on a shared machine),
    without a dashboard or relayed worker logs, whose actors import from the repository.
    A start whose raylet did not come up in time is tried again, up to
    :data:`START_TRIES` times."""
    import ray

    for attempt in range(1, START_TRIES + 1):
        try:
            ray.init(
                address="local",
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": ROOT}},
            )
            return
        except Exception as exc:
            if RAY_START_TIMED_OUT not in str(exc) or attempt == START_TRIES:
                raise
            log.warning("local Ray start %d/%d timed out: starting again", attempt, START_TRIES)
            ray.shutdown()
