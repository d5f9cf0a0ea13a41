"""Exceptions of the Airflow layer (the engine's own tree is in ``rayorch.errors``).

::

    AirflowException
    ├── RayOrchClusterError            the Ray cluster cannot be reached or refused a call
    │   └── RayOrchAuthError           the Jobs API refused the token (HTTP 401/403)
    ├── RayOrchJobFailed               the Ray job ended FAILED or STOPPED
    ├── RayOrchPlanChanged             the run store holds another plan for this run id
    ├── RayOrchFailedRatioExceeded     too many sources (or microbatch sources) failed
    └── AirflowFailException
        ├── RayOrchCompileFailed       the pipeline does not compile (no retry, nothing submitted)
        └── RayOrchPipelineNotImportable  the pipeline cannot be imported where it must run
"""

from __future__ import annotations

from airflow.sdk.exceptions import AirflowException, AirflowFailException

__all__ = [
    "RayOrchAuthError",
    "RayOrchClusterError",
    "RayOrchCompileFailed",
    "RayOrchFailedRatioExceeded",
    "RayOrchJobFailed",
    "RayOrchPipelineNotImportable",
    "RayOrchPlanChanged",
]


class RayOrchClusterError(AirflowException):
    """The Ray Jobs API is unreachable, refused the token, or failed a request.

    ``transient`` says whether trying again later may help (a refused or timed-out
    connection, HTTP 502/503/504); the pollers retry only those, within one budget
    (:mod:`airflow_provider_rayorch.common.polling`). An error raised without saying
    is taken as transient; the hook always says.
    """

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


class RayOrchAuthError(RayOrchClusterError):
    """The Jobs API refused the request's token (HTTP 401/403): never retried."""

    def __init__(self, message: str) -> None:
        super().__init__(message, transient=False)


class RayOrchJobFailed(AirflowException):
    """The Ray job running the driver ended without a run manifest."""


class RayOrchPlanChanged(AirflowException):
    """The run store already holds a different plan (fingerprint) for this run id."""


class RayOrchFailedRatioExceeded(AirflowException):
    """(FAILED + SUPPRESSED) / total sources exceeded ``max_failed_ratio``."""


class RayOrchCompileFailed(AirflowFailException):
    """The pipeline raised ``CompileError``; nothing was submitted."""


class RayOrchPipelineNotImportable(AirflowFailException):
    """The pipeline's module cannot be imported by the process that must run it."""
