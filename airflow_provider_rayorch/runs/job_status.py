"""A Ray job's status as the provider sees it (imports neither airflow nor ray)."""

from __future__ import annotations

from enum import StrEnum

from airflow_provider_rayorch.rayorch.errors import UsageError

__all__ = ["JobStatus"]


class JobStatus(StrEnum):
    """A Ray job's status (Ray's own five values) plus ``NOT_STARTED``, the provider's
    word for a run whose job was never submitted or never accepted."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    NOT_STARTED = "NOT_STARTED"
    #: The cluster does not know the job (never accepted, or the head was replaced).
    MISSING = "MISSING"

    @property
    def is_active(self) -> bool:
        """The job may still make progress."""
        return self in (JobStatus.PENDING, JobStatus.RUNNING)

    @property
    def is_terminal(self) -> bool:
        """The job ended (or never will start): nothing more will be committed by it."""
        return not self.is_active

    @classmethod
    def parse(cls, value: object) -> JobStatus:
        """A status from Ray's reply (a string or Ray's own enum); unknown values raise
        ``UsageError`` (a ``ValueError``) naming them."""
        text = str(getattr(value, "value", value)).upper()
        try:
            return cls(text)
        except ValueError:
            known = ", ".join(s.value for s in cls)
            raise UsageError(f"unknown Ray job status {value!r} (known: {known})") from None
