"""A Ray of this process's own, for benchmarks and the integration tests."""

from __future__ import annotations

import os

#: the repository, on the actors' PYTHONPATH so they import ``benchmarks`` and ``tests``
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def init_own_ray() -> None:
    """Start a new 2-CPU local Ray (never join another Ray running on a shared machine),
    without a dashboard or relayed worker logs, whose actors import from the repository."""
    import ray

    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": ROOT}},
    )
