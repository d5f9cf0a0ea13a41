"""Lost payloads: recomputed from their recipe while the run goes on; output fetch.

Every batch's values object is a ``Box`` with a ``Recipe`` (the module, Call and
input columns that made it). When a worker reports ``InputsLost``, or the
driver cannot fetch a microbatch's outputs, the batches that made the lost
objects run again on an actor of their module; whoever waited (an in-flight
batch, another recomputation, a microbatch's outputs) goes on once every
object it needs is back. Nothing waits on a recomputation: its reply arrives
through the backend's one ``ray.wait`` like any other.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import RayActorError

from .protocol import Done, InputsLost, Task
from .remote_values import Box, collect_boxes, materialize
from .task_inputs import LOST, read_reply, send

if TYPE_CHECKING:
    from .actor_pool import ActorPools

__all__ = ["LineageRecovery", "Recipe", "Waiter"]

log = logging.getLogger(__name__)

#: Recomputations nested deeper than this give up (a chain of lost objects).
MAX_DEPTH = 8
#: Actor deaths one recomputation survives before it gives up.
MAX_ATTEMPTS = 6


@dataclass(frozen=True, slots=True)
class Recipe:
    """How to compute a batch's values again: which module, Call and inputs."""

    module: int
    call: int
    name: str
    columns: list[list[Any]]


@dataclass(eq=False, slots=True)
class Waiter:
    """Something that goes on once the objects ``waiting`` (hex ids) are back:
    ``what`` is the backend's (an in-flight batch, a microbatch) or a ``_Redo``."""

    what: Any
    waiting: set[str]
    failed: str | None = None


@dataclass(eq=False, slots=True)
class _Redo:
    box: Box
    recipe: Recipe
    lost: str
    depth: int
    waiters: list[Waiter] = field(default_factory=list)
    attempts: int = 0
    values: Any = None
    worker: str | None = None


class LineageRecovery:
    """Recomputations in flight and the waiters they release."""

    def __init__(self, pools: ActorPools) -> None:
        self.pools = pools
        self.boxes: weakref.WeakValueDictionary[str, Box] = weakref.WeakValueDictionary()
        #: report reference -> the recomputation it answers.
        self.pending: dict[Any, _Redo] = {}
        self._by_lost: dict[str, _Redo] = {}
        self._turn = 0
        self.recomputed = 0

    def register(self, box: Box) -> None:
        self.boxes[box.ref.hex()] = box

    def busy(self) -> bool:
        return bool(self.pending)

    def wait_for(self, what: Any, lost: list[str], depth: int = 0) -> Waiter:
        """Start recomputing ``lost`` (unless under way) for ``what``. The waiter is
        ``failed`` at once when some object has no recipe or the chain is too deep."""
        waiter = Waiter(what, set(lost))
        for hex_id in lost:
            redo = self._by_lost.get(hex_id)
            if redo is None:
                box = self.boxes.get(hex_id)
                if box is None or not isinstance(box.recipe, Recipe):
                    waiter.failed = f"object {hex_id[:16]} lost and not recoverable (no recipe)"
                    return waiter
                if depth > MAX_DEPTH:
                    waiter.failed = f"lineage recomputation went deeper than {MAX_DEPTH} levels"
                    return waiter
                redo = _Redo(box, box.recipe, hex_id, depth)
                self._by_lost[hex_id] = redo
                if not self._send(redo):
                    waiter.failed = (
                        f"no live actor of Call {box.recipe.name!r} to recompute lost values on"
                    )
                    del self._by_lost[hex_id]
                    return waiter
            redo.waiters.append(waiter)
        return waiter

    def answered(self, ref: Any) -> list[Waiter]:
        """Handle a recomputation's reply: the waiters it released or failed (their
        ``failed`` says why); ``_Redo`` waiters are handled here."""
        redo = self.pending.pop(ref)
        try:
            reply = read_reply(ref, redo.recipe.columns)
        except RayActorError as exc:  # that actor went down (with its node?): another
            redo.attempts += 1
            if redo.attempts < MAX_ATTEMPTS and self._send(redo):
                return []
            return self._finish(
                redo,
                f"could not recompute lost values of Call "
                f"{redo.recipe.name!r}: {type(exc).__name__}",
            )
        if type(reply) is InputsLost:  # its own inputs are gone too: recompute those first
            waiter = self.wait_for(redo, list(reply.refs), redo.depth + 1)
            if waiter.failed:
                return self._finish(redo, waiter.failed)
            return []
        if type(reply) is not Done:
            return self._finish(
                redo,
                f"recomputing lost values of Call {redo.recipe.name!r} "
                f"failed: {getattr(reply, 'error', reply)}",
            )
        self.recomputed += 1
        self.boxes.pop(redo.lost, None)
        redo.box.ref = redo.values
        self.register(redo.box)
        return self._finish(redo, None)

    def _finish(self, redo: _Redo, failure: str | None) -> list[Waiter]:
        self._by_lost.pop(redo.lost, None)
        out: list[Waiter] = []
        for waiter in redo.waiters:
            if waiter.failed:
                continue
            if failure is not None:
                waiter.failed = failure
            else:
                waiter.waiting.discard(redo.lost)
                if waiter.waiting:
                    continue
            if type(waiter.what) is _Redo:  # a recomputation that waited: send it now
                inner: _Redo = waiter.what
                if waiter.failed:
                    out += self._finish(inner, waiter.failed)
                elif not self._send(inner):
                    out += self._finish(inner, "no live actor to recompute lost values on")
            else:
                out.append(waiter)
        return out

    def _send(self, redo: _Redo) -> bool:
        live = [
            k
            for k, m in self.pools.module_of.items()
            if m == redo.recipe.module and k in self.pools.actors
        ]
        if not live:
            return False
        self._turn += 1
        key = live[self._turn % len(live)]
        task = Task(redo.recipe.call, 0, 0, redo.recipe.columns)
        report, values = send(self.pools.actors[key], task)
        redo.values, redo.worker = values, key
        self.pending[report] = redo
        return True

    # -- outputs -----------------------------------------------------------------------
    def fetch(self, outputs: list[list[Any]]) -> tuple[list[list[Any]] | None, list[str]]:
        """``outputs`` with remote values fetched, or ``(None, lost hex ids)`` when
        some objects are lost (each healthy object is fetched at most twice)."""
        boxes: dict[int, Box] = {}
        for column in outputs:
            for value in column:
                collect_boxes(value, boxes)
        if not boxes:
            return outputs, []
        try:
            fetched = dict(zip(boxes, ray.get([b.ref for b in boxes.values()]), strict=True))
        except LOST as exc:
            log.warning("outputs lost (%s); recomputing them", type(exc).__name__)
            lost = []
            for box in boxes.values():
                try:
                    ray.get(box.ref)
                except LOST:
                    lost.append(box.ref.hex())
            return None, lost
        return [[materialize(v, fetched) for v in column] for column in outputs], []
