"""How the sensors wait: deferred to the triggerer, or on a worker.

One rule, for both sensors and the microbatch group:

- With no listener plugin registered, a sensor defers and its trigger ends the task in
  the triggerer (``end_from_trigger``): nothing resumes on a worker.
- Airflow refuses ``end_from_trigger`` beside listeners (the OpenLineage provider
  registers one), so a deferred sensor would resume on a worker. Airflow 3.3's
  scheduler can fail such a resumed try: it reads the executor's "success" for the
  worker that exited on ``defer()`` after the resumed try was queued, and fails that
  try as a "state mismatch" (apache/airflow#72716). How late that report comes depends
  on the load (seconds on a busy machine), so no delay before resuming is
  safe. Beside listeners the sensors therefore wait on a worker (poke mode) by default:
  one try, one worker process, no resume; the microbatch group bounds how many of its
  sensors wait at once (:data:`LISTENER_SENSOR_WINDOW`).

A sensor whose task must end on a worker for another reason (the run sensor's
outputs Asset alias) waits there too. Explicit ``deferrable`` / ``end_from_trigger``
values always win (``deferrable=True`` with ``end_from_trigger=False`` resumes on a
worker, exposed to the race).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LISTENER_SENSOR_WINDOW", "WaitMode", "listeners_registered", "wait_mode"]

#: Beside listeners, the microbatch group's sensors wait on workers; at most this many
#: of one run's wait at once (``max_active_tis_per_dagrun``). Microbatches commit
#: roughly in order, so a small window follows the run closely.
LISTENER_SENSOR_WINDOW = 4


def listeners_registered() -> bool:
    """A listener plugin is registered (the OpenLineage provider's, for one): Airflow's
    condition for refusing ``end_from_trigger``."""
    from airflow.sdk.listener import get_listener_manager

    return bool(get_listener_manager().has_listeners)


@dataclass(frozen=True)
class WaitMode:
    """``deferrable``: wait in the triggerer; ``end_from_trigger``: the trigger ends the
    task (else the task resumes on a worker)."""

    deferrable: bool
    end_from_trigger: bool


def wait_mode(deferrable: bool | None, end_from_trigger: bool | None) -> WaitMode:
    """Resolve a sensor's ``deferrable`` and ``end_from_trigger``. ``end_from_trigger``
    None: unless listeners are registered. ``deferrable`` None: only when the trigger
    ends the task, so that no try ever resumes after a deferral by default."""
    ends = not listeners_registered() if end_from_trigger is None else bool(end_from_trigger)
    return WaitMode(
        deferrable=ends if deferrable is None else bool(deferrable), end_from_trigger=ends
    )
