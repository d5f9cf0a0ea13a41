"""A batch's input objects travel as the task's own arguments.

The driver passes every object a batch's columns reference as a top-level argument
of ``run`` (in ``column_boxes`` order), so Ray resolves them before the batch starts:
a small object rides inside the task, a large one is pulled by the raylet. No
worker waits in ``ray.get`` on a reference nested in its task: in a shared process
(a threaded actor) such a wait on a ready input could last forever (Ray 2.60;
workload 1 at 16 accelerators hung in about one run in six). An input that Ray
cannot resolve (lost with its node, or its owner died) fails the task with that
error; ``read_reply`` turns it into ``InputsLost`` for lineage recovery. Any other
task error (Ray could not serialize what the batch returned, or an input of it) is
the batch's failure, ``Raised`` with a plain-text cause, handled by the Call's
``RecoveryPolicy``: it never ends the run.
"""

from __future__ import annotations

from typing import Any

import ray
from ray.exceptions import ObjectLostError, OwnerDiedError, RayTaskError

from ..plain_text import strip_ansi
from .protocol import InputsLost, Raised, Reply, Task
from .remote_values import column_boxes

__all__ = ["LOST", "raised_from", "read_reply", "send"]

#: What Ray raises for an object that is gone (its node or its owner died).
LOST = (ObjectLostError, OwnerDiedError)


def send(actor: Any, task: Task) -> tuple[Any, Any]:
    """Submit ``task`` to a worker handle with its input objects as arguments;
    returns ``(report, values)`` references."""
    refs = [box.ref for box in column_boxes(task.columns).values()]
    return actor.run.remote(task, *refs)


def read_reply(report: Any, columns: list[Any]) -> Reply:
    """The reply of a finished batch sent with input ``columns``. A batch whose inputs
    Ray could not resolve reports every input object as lost (Ray does not say which
    one was): the ones still there are recomputed too, which costs work, never
    correctness."""
    try:
        return ray.get(report)
    except LOST:
        pass
    except RayTaskError as exc:
        if not isinstance(exc.cause, LOST):
            return raised_from(exc)
    return InputsLost(tuple(box.ref.hex() for box in column_boxes(columns).values()))


def raised_from(exc: RayTaskError) -> Raised:
    """The batch failure a Ray task error stands for: the innermost cause (an input's
    own task error is followed to its cause), on one line, without ANSI colours."""
    cause: BaseException = exc
    while isinstance(cause, RayTaskError) and cause.cause is not None:
        cause = cause.cause
    if isinstance(cause, RayTaskError):
        lines = [ln.strip() for ln in strip_ansi(str(cause)).splitlines() if ln.strip()]
        text = lines[-1] if lines else type(cause).__name__
    else:
        text = " ".join(strip_ansi(f"{type(cause).__name__}: {cause}").split())
    return Raised(f"Ray could not run the batch: {text}")
