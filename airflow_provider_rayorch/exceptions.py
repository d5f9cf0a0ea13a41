"""Exceptions of the Airflow layer, under the package's one root ``RayOrchError``.

::

    RayOrchError                         the root (rayorch/errors.py; the engine's tree)
    ├── RayOrchTransientError            trying again later may help: the provider's
    │                                    pollers and its submit retry these, within
    │                                    one budget (common/polling.py)
    └── RayOrchAirflowError              an Airflow-layer error (also AirflowException:
        │                                Airflow retries the task if it has retries)
        ├── RayOrchClusterError          a Jobs-API call failed; not retried by the pollers
        │   ├── RayOrchClusterUnavailable  (also RayOrchTransientError) no answer in
        │   │                            time, a disconnect, a refusal after an answer,
        │   │                            or an answer that says "try later" (HTTP
        │   │                            502/503/504, Ray's 500 "No available agent")
        │   └── RayOrchAuthError         the Jobs API refused the token (HTTP 401/403)
        ├── RayOrchConnectionNotFound    the task's rayorch_conn_id is not defined (also
        │                                AirflowNotFoundException)
        ├── RayOrchHeadsDirNotPrivate    the directory that records loopback heads is not
        │                                this user's mode-0700 directory (also PermissionError)
        ├── RayOrchJobFailed             the run's Ray job (or embedded driver) did not
        │                                complete the run (or never started)
        ├── RayOrchPlanChanged           the run store holds another plan for this run id
        ├── RayOrchFailedRatioExceeded   too many sources (or microbatch sources) failed
        └── RayOrchPermanentError        also AirflowFailException: never retried by Airflow
            ├── RayOrchCompileFailed     the pipeline does not compile (nothing submitted)
            └── RayOrchPipelineNotImportable  the pipeline cannot be imported where it runs

Retryability is the type: ``isinstance(exc, RayOrchTransientError)`` for the
provider's request retries, ``AirflowFailException`` for "no task retry";
``exc.transient`` reads the type. The raise site picks the class: a transient failure
raises ``RayOrchClusterUnavailable``, a permanent one ``RayOrchClusterError``. Every
class pickles (the root's ``__reduce__``).
"""

from __future__ import annotations

from airflow.sdk.exceptions import (
    AirflowException,
    AirflowFailException,
    AirflowNotFoundException,
)

from airflow_provider_rayorch.rayorch.errors import RayOrchError

__all__ = [
    "RayOrchAirflowError",
    "RayOrchAuthError",
    "RayOrchClusterError",
    "RayOrchClusterUnavailable",
    "RayOrchCompileFailed",
    "RayOrchConnectionNotFound",
    "RayOrchError",
    "RayOrchFailedRatioExceeded",
    "RayOrchHeadDied",
    "RayOrchHeadsDirNotPrivate",
    "RayOrchJobFailed",
    "RayOrchPermanentError",
    "RayOrchPipelineNotImportable",
    "RayOrchPlanChanged",
    "RayOrchTransientError",
]


class RayOrchTransientError(RayOrchError):
    """Trying the same request again later may help (a restarting or busy cluster)."""


class RayOrchAirflowError(RayOrchError, AirflowException):
    """Base of the Airflow layer's errors; Airflow retries the task (when it has retries)."""

    # AirflowException.serialize names the class and passes str(self) only: keep the
    # root's pickling (RayOrchError.__reduce__), which keeps every attribute.
    __reduce__ = RayOrchError.__reduce__


class RayOrchClusterError(RayOrchAirflowError):
    """A call to the Ray Jobs API (or a loopback head's start) failed permanently:
    the pollers do not retry it. The transient case is the subclass
    :class:`RayOrchClusterUnavailable`, raised by name where the failure is transient.

    ``status`` is the HTTP status when the Jobs API answered (``None``: no answer).
    """

    status: int | None

    def __init__(self, message: str = "", *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def transient(self) -> bool:
        """Whether trying again later may help: the type says it."""
        return isinstance(self, RayOrchTransientError)


class RayOrchClusterUnavailable(RayOrchClusterError, RayOrchTransientError):
    """The Jobs API did not answer in time, dropped the connection, refused it after
    answering before, or answered "try again later"; retried within the budget."""


class RayOrchHeadDied(RayOrchClusterError):
    """A Ray process of a loopback head ended while the head started (on a loaded
    machine Ray's raylet aborts when its dashboard agent is slow to report its port):
    the head is stopped, and a new start may succeed."""


class RayOrchAuthError(RayOrchClusterError):
    """The Jobs API refused the request's token (HTTP 401/403): never retried."""


class RayOrchConnectionNotFound(RayOrchAirflowError, AirflowNotFoundException):
    """The ``rayorch`` connection a task names is not defined where Airflow looks for
    connections; the message names it and how to define it (or to use embedded Ray)."""


class RayOrchHeadsDirNotPrivate(RayOrchAirflowError, PermissionError):
    """The directory that records the provider's loopback heads (it holds Ray token
    paths) is not a directory of this user with mode 0700; the message names it."""


class RayOrchJobFailed(RayOrchAirflowError):
    """The run's Ray job (or the embedded driver) did not complete the run: it ended
    FAILED or STOPPED, the cluster lost it, it ended without its run manifest, or
    (for a sensor) the submit task never started it. A task retry submits a new job
    that resumes from the committed microbatches."""


class RayOrchPlanChanged(RayOrchAirflowError):
    """The run store already holds a different plan (fingerprint) for this run id."""


class RayOrchFailedRatioExceeded(RayOrchAirflowError):
    """(FAILED + SUPPRESSED) / total sources exceeded ``max_failed_ratio``."""


class RayOrchPermanentError(RayOrchAirflowError, AirflowFailException):
    """No retry of the task can help: Airflow fails it at once."""


class RayOrchCompileFailed(RayOrchPermanentError):
    """The pipeline raised ``CompileError``; nothing was submitted."""


class RayOrchPipelineNotImportable(RayOrchPermanentError):
    """The pipeline's module cannot be imported by the process that must run it."""
