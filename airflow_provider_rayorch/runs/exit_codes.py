"""The driver's exit codes: what kind of failure ended a run's Ray job.

The driver exits with one of them after its ``RAYORCH_ERROR`` line; the Airflow side
(``common/driver_exit.py``) maps each to the task's error. Import, compile and
plan-change failures are not worth a task retry; any other error is.
"""

from __future__ import annotations

__all__ = ["EXIT_COMPILE", "EXIT_ERROR", "EXIT_IMPORT", "EXIT_PLAN_CHANGED"]

#: Any error (the default of ``DriverError``).
EXIT_ERROR = 1
#: The compiled plan is not the stored one: the code changed since the plan was made.
EXIT_PLAN_CHANGED = 3
#: The pipeline factory cannot be imported.
EXIT_IMPORT = 4
#: The pipeline does not compile.
EXIT_COMPILE = 5
