"""The Ray backend: persistent actor pools fed by the core's FIFO dispatch.

Each actor may hold ``max_batches_in_flight`` batches so the next batch is
already there when one ends (``actor_pool`` starts, budgets and replaces the
actors). Everything the driver waits for (batch replies, actors coming up,
recomputations, hang probes) goes through one ``ray.wait`` whose timeout is the
next start or batch deadline: the loop never blocks on ``ray.get`` of anything
not ready. Payloads stay in the object store: the driver keeps ``RemoteValue``
references and the facts the workers report (``facts``). A dead actor is
reported to the core as ``WorkerLost`` (its Grains run again under a new
generation) and replaced; a batch past ``batch_timeout_s`` counts as raised and
its actor is killed; a payload lost with its node is recomputed from its recipe
(``lineage_recovery``) while other batches go on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import RayActorError

from ..errors import ExecutionError, UsageError
from ..runtime.events import (
    BatchFinished,
    BatchRaised,
    BatchRejected,
    Dispatch,
    Event,
    Withdraw,
    Withdrawn,
    WorkerAdded,
    WorkerLost,
)
from .actor_pool import ActorPools, death_message
from .actor_start import DEFAULT_ACTOR_START_RETRIES
from .driving import Delivery, drive
from .hang_watch import HangWatch
from .lineage_recovery import LineageRecovery, Recipe, Waiter
from .protocol import Done, Raised, Rejected, Reply, Task
from .remote_values import Box, RayValues, RemoteValue, materialize, pack_column
from .resources import check_resources
from .task_inputs import read_reply, send

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..program.plan import Plan
    from ..runtime.core import Core, Microbatch

__all__ = ["RayBackend"]

_NEVER = float("inf")
#: Times an in-flight batch may find its inputs lost before it counts as raised.
_MAX_INPUT_LOSSES = 3


@dataclass(slots=True)
class _InFlight:
    batch: int
    worker: str
    values: Any
    dispatch: Dispatch
    attempts: int = 0


class RayBackend:
    """Runs Calls on persistent Ray actor pools."""

    def __init__(
        self,
        plan: Plan,
        *,
        address: str | None = None,
        ray_init_kwargs: dict[str, Any] | None = None,
        actor_start_timeout_s: float = 600.0,
        wait_for_resources: bool = False,
        actor_start_concurrency: int | None = None,
        actor_start_retries: int = DEFAULT_ACTOR_START_RETRIES,
    ) -> None:
        self.plan = plan
        self.address = address
        self.ray_init_kwargs = dict(ray_init_kwargs or {})
        self.actor_start_timeout_s = actor_start_timeout_s
        #: Let pools wait for resources the cluster does not have yet (autoscaling).
        self.wait_for_resources = wait_for_resources
        if actor_start_concurrency is not None and actor_start_concurrency < 1:
            raise UsageError(
                f"RayBackend(actor_start_concurrency={actor_start_concurrency!r}): give at least "
                "1 (how many actors start at once), or None for no limit"
            )
        self.pools = ActorPools(
            plan,
            start_timeout_s=actor_start_timeout_s,
            start_retries=actor_start_retries,
            concurrency=actor_start_concurrency,
        )
        self.recovery = LineageRecovery(self.pools)
        self.hangs = HangWatch()
        self.values = RayValues(self._fetch_one)
        self._owns_ray = False
        self._timeouts = [m.options.batch_timeout_s for m in plan.modules]
        self._epoch = 0
        #: Hang probe reference -> the worker asked.
        self._probes: dict[Any, str] = {}
        #: Microbatches whose outputs wait for a recomputation, and the deliveries
        #: of those whose outputs came back since.
        self._held: dict[int, Microbatch] = {}
        self._released: list[Delivery] = []
        self._output_losses: dict[int, int] = {}
        #: Rows of queued batches the workers skipped (a sibling's GroupFailure).
        self.skipped = 0
        self.timed_out = 0

    # The pools' state, by the names the tests and the chaos benchmark use.
    @property
    def _actors(self) -> dict[str, Any]:
        return self.pools.actors

    @property
    def _up(self) -> list[str]:
        return self.pools.up

    @property
    def _starting(self) -> dict[Any, str]:
        return self.pools.starting

    @property
    def _boxes(self) -> Any:
        return self.recovery.boxes

    @property
    def losses(self) -> int:
        return self.pools.losses

    @property
    def recomputed(self) -> int:
        return self.recovery.recomputed

    # -- lifecycle --------------------------------------------------------------
    def open(self) -> None:
        if not ray.is_initialized():
            kwargs = {"address": self.address or "local", **self.ray_init_kwargs}
            ray.init(**kwargs)
            self._owns_ray = True
        try:
            check_resources(
                self.plan, self.pools.actor_options, wait_for_resources=self.wait_for_resources
            )
            # One actor per pool before any batch: a UDF that cannot start fails here.
            self.pools.wait_started(self.actor_start_timeout_s, self.pools.begin())
        except BaseException:
            self.close()
            raise

    def warm_up(self, timeout_s: float | None = None) -> None:
        """Block until every actor has started (``ResourceUnavailableError`` after
        ``timeout_s``, default ``actor_start_timeout_s``)."""
        self.pools.wait_started(self.actor_start_timeout_s if timeout_s is None else timeout_s)

    def close(self) -> None:
        self.pools.close()
        self._probes.clear()
        if self._owns_ray:
            self._owns_ray = False
            ray.shutdown()

    def metrics(self) -> dict[str, Any]:
        return {
            "backend": "ray",
            "workers_lost": self.losses,
            "batches_recomputed": self.recomputed,
            "rows_skipped": self.skipped,
            "actor_start_failures": self.pools.budget.total,
            "batches_timed_out": self.timed_out,
        }

    # -- driving ------------------------------------------------------------------
    def drive(self, core: Core) -> Iterator[Delivery]:
        self._epoch = self.pools.next_epoch()
        inflight: dict[Any, _InFlight] = {}
        if self.pools.starting:  # actors that came up since the last run
            refs = list(self.pools.starting)
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            for key, _message in self.pools.came_up(done).died:  # not in a core yet
                self.pools.lost(key)
        workers = [self._worker(k) for k in self.pools.up]
        for delivery in drive(
            core,
            workers,
            submit=lambda command: self._submit(command, inflight),
            advance=lambda: self._collect(core, inflight),
            # An actor still starting counts: its pool may have no other one yet.
            has_work=lambda: bool(inflight or self.pools.starting or self.recovery.busy()),
            deliver=self._deliver,
            withdraw=self._withdraw,
        ):
            yield delivery
            yield from self._take_released()
        while self._held:  # outputs still being recomputed: nothing else to do now
            if not self.recovery.busy():
                raise ExecutionError("outputs wait for a recomputation that is not running")
            self._collect(core, inflight)
            yield from self._take_released()

    def _submit(self, command: Dispatch, inflight: dict[Any, _InFlight], attempts: int = 0) -> None:
        actor = self.pools.actors.get(command.worker)
        if actor is None:  # replaced meanwhile; the core already re-queued its Grains
            return
        # One argument: Ray serializes each argument on its own, at a cost per argument.
        columns = [pack_column(column) for column in command.columns]
        task = Task(command.node.id, self._epoch, command.batch, columns)
        report, values = send(actor, task)
        inflight[report] = _InFlight(command.batch, command.worker, values, command, attempts)
        timeout = self._timeouts[command.node.module]  # type: ignore[index]
        if timeout is not None:
            self.hangs.dispatched(command.worker, timeout, time.monotonic())

    def _withdraw(self, command: Withdraw) -> None:
        actor = self.pools.actors.get(command.worker)
        if actor is not None:  # fire and forget: the batch's own report says what ran
            self._withdraw_call(actor, command)

    def _withdraw_call(self, actor: Any, command: Withdraw) -> Any:
        return actor.withdraw.remote(self._epoch, command.batch, list(command.rows))

    def _collect(self, core: Core, inflight: dict[Any, _InFlight]) -> list[Any]:
        refs = [*inflight, *self.pools.starting]
        if self._probes:
            refs += self._probes
        if self.recovery.pending:
            refs += self.recovery.pending
        due = min(self.pools.next_due(), self.hangs.next_due())
        timeout = None if due == _NEVER else max(0.0, due - time.monotonic())
        ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        commands: list[Any] = []
        # Replies first, deaths after: a batch that finished on an actor before it died
        # commits, and only the batches really lost with the actor are charged for it.
        deaths: dict[str, str] = {}
        started = [ref for ref in ready if ref in self.pools.starting]
        if started:
            answers = self.pools.came_up(started)
            for key in answers.up:
                commands += core.handle(WorkerAdded(*self._worker(key)))
            deaths.update(answers.died)
        for ref in ready:
            entry = inflight.get(ref)
            if entry is not None:
                try:
                    reply = read_reply(ref, entry.dispatch.columns)
                except RayActorError as exc:
                    deaths.setdefault(entry.worker, death_message(exc))
                    continue
                del inflight[ref]
                event = self._event(entry, reply)
                if event is not None:
                    commands += core.handle(event)
            elif ref in self._probes:
                commands += self._probed(core, ref, inflight)
            elif ref in self.recovery.pending:
                for waiter in self.recovery.answered(ref):
                    commands += self._resume(core, waiter, inflight)
        for worker, message in deaths.items():
            commands += self._lost(core, worker, inflight, message)
        if due != _NEVER:
            now = time.monotonic()
            if self.pools.next_due() <= now:
                self.pools.check_start_clocks()
            if self.hangs.next_due() <= now:
                commands += self._look_for_hangs(core, inflight, now)
        return commands

    def _event(self, entry: _InFlight, reply: Reply) -> Event | None:
        if isinstance(reply, Done):
            return BatchFinished(entry.batch, self._rows(entry, reply), reply.busy_s)
        if isinstance(reply, Raised):
            return BatchRaised(entry.batch, reply.error, reply.busy_s, reply.exception)
        if isinstance(reply, Rejected):
            return BatchRejected(entry.batch, reply.reason, reply.busy_s)
        # InputsLost: inputs of this batch vanished with a node; rebuild them, send it again.
        lost = list(reply.refs)
        if entry.attempts >= _MAX_INPUT_LOSSES:
            return BatchRaised(entry.batch, f"inputs lost and not recoverable: {lost}")
        waiter = self.recovery.wait_for(entry, lost)
        if waiter.failed:
            return BatchRaised(entry.batch, waiter.failed)
        return None

    def _resume(self, core: Core, waiter: Waiter, inflight: dict[Any, _InFlight]) -> list[Any]:
        """A recomputation that ``waiter`` needed ended (or failed)."""
        what = waiter.what
        if type(what) is _InFlight:
            if what.worker not in self.pools.actors:  # its worker died: the core knows
                return []
            if waiter.failed:
                return core.handle(BatchRaised(what.batch, waiter.failed))
            self._submit(what.dispatch, inflight, what.attempts + 1)
            return []
        if waiter.failed:
            raise ExecutionError(f"outputs of microbatch {what.index} lost: {waiter.failed}")
        delivery = self._deliver(what)
        if delivery is not None:
            self._released.append(delivery)
        return []

    def _rows(self, entry: _InFlight, reply: Done) -> list[Any]:
        node = entry.dispatch.node
        module = self.plan.modules[node.module]  # type: ignore[index]
        n = len(entry.dispatch.columns[0])
        box = Box(entry.values, Recipe(module.id, node.id, node.name, entry.dispatch.columns))
        self.recovery.register(box)
        status, lengths, truths, inner = reply.status, reply.lengths, reply.truths, reply.inner
        rows: list[Any] = []
        for i in range(n):
            if status is not None and status[i] is not None:
                if type(status[i]) is Withdrawn:
                    self.skipped += 1
                rows.append(status[i])
                continue
            if module.num_outputs == 1:
                rows.append(
                    RemoteValue(
                        box,
                        (i,),
                        None if lengths[0] is None else lengths[0][i],
                        None if truths[0] is None else truths[0][i],
                        None if inner[0] is None else inner[0][i],
                    )
                )
                continue
            rows.append(
                tuple(
                    RemoteValue(
                        box,
                        (i, k),
                        None if lengths[k] is None else lengths[k][i],  # type: ignore[index]
                        None if truths[k] is None else truths[k][i],  # type: ignore[index]
                        None if inner[k] is None else inner[k][i],  # type: ignore[index]
                    )
                    for k in range(module.num_outputs)
                )
            )
        return rows

    # -- faults -------------------------------------------------------------------
    def _lost(
        self, core: Core, worker: str, inflight: dict[Any, _InFlight], reason: str
    ) -> list[Any]:
        """A worker died: tell the core, forget its batches, start a replacement."""
        if not self._forget(worker, inflight):
            return []
        node = self.pools.node_label(worker)
        return core.handle(WorkerLost(worker, f"actor {worker} died: {reason}", node=node))

    def _forget(self, worker: str, inflight: dict[Any, _InFlight]) -> bool:
        """Forget a dead worker (with a shared process, all its slots) and what was
        sent to it; False when it already was forgotten."""
        gone = set(self.pools.lost(worker))
        for ref in [r for r, e in inflight.items() if e.worker in gone]:
            del inflight[ref]
        for key in gone:
            self.hangs.forget(key)
        for ref in [r for r, w in self._probes.items() if w in gone]:
            del self._probes[ref]
        return bool(gone)

    def _worker(self, key: str) -> tuple[Any, ...]:
        """``WorkerAdded`` fields of an actor that came up: a slot of a shared process
        holds its pool's batches in flight like any worker, and the core knows which
        process it shares."""
        module = self.pools.module_of[key]
        process = self.pools.process_of.get(key)
        return (key, module) if process is None else (key, module, None, process)

    def _look_for_hangs(self, core: Core, inflight: dict[Any, _InFlight], now: float) -> list[Any]:
        probe, silent = self.hangs.due(now)
        for worker in probe:
            actor = self.pools.actors.get(worker)
            if actor is None:
                self.hangs.forget(worker)
                continue
            self._probes[actor.running.remote()] = worker
            self.hangs.asked(worker, now)
        commands: list[Any] = []
        for worker in silent:  # it does not even answer: its oldest batch hangs
            batches = [e.batch for e in inflight.values() if e.worker == worker]
            if batches:
                timeout = self._timeouts[self.pools.module_of[worker]]
                commands += self._hung(core, worker, min(batches), timeout or 0.0, inflight)
            else:  # nothing of this run left on it: stop asking
                self.hangs.forget(worker)
                for ref in [r for r, w in self._probes.items() if w == worker]:
                    del self._probes[ref]
        return commands

    def _probed(self, core: Core, ref: Any, inflight: dict[Any, _InFlight]) -> list[Any]:
        worker = self._probes.pop(ref)
        try:
            running = ray.get(ref)
        except RayActorError:
            return []  # dead: its batch replies say so
        batches = {e.batch for e in inflight.values() if e.worker == worker}
        verdict = self.hangs.answered(worker, running, self._epoch, batches, time.monotonic())
        if verdict.hung is None:
            return []
        if verdict.hung == 0:  # a recomputation hangs: it is sent to another actor
            timeout = self._timeouts[self.pools.module_of[worker]]
            self.timed_out += 1
            what = f"a recomputation exceeded batch_timeout_s={timeout:g}"
            return self._kill_timed_out(core, worker, what, inflight)
        return self._hung(core, worker, verdict.hung, verdict.elapsed_s, inflight)

    def _hung(
        self, core: Core, worker: str, batch: int, elapsed_s: float, inflight: dict[Any, _InFlight]
    ) -> list[Any]:
        """Batch ``batch`` ran past its timeout: it failed (under its Call's
        RecoveryPolicy); its actor is killed and replaced, and the batches queued
        there run again without an infra-retry charge."""
        timeout = self._timeouts[self.pools.module_of[worker]]
        self.timed_out += 1
        cause = f"batch_timeout_s={timeout:g} exceeded"
        commands = core.handle(BatchRaised(batch, cause, elapsed_s))
        return commands + self._kill_timed_out(core, worker, f"its batch {cause}", inflight)

    def _kill_timed_out(
        self, core: Core, worker: str, what: str, inflight: dict[Any, _InFlight]
    ) -> list[Any]:
        """Kill ``worker`` (``what`` ran past its timeout) and replace it; the
        batches left on it run again without an infra-retry charge."""
        self.pools.kill(worker)
        if not self._forget(worker, inflight):
            return []
        return core.handle(WorkerLost(worker, f"actor {worker} killed: {what}", charge=False))

    # -- payloads -----------------------------------------------------------------
    def _fetch_one(self, value: RemoteValue) -> Any:
        return materialize(value, {id(value.box): ray.get(value.box.ref)})

    def _deliver(self, mb: Microbatch) -> Delivery | None:
        """Fetch a finished microbatch's outputs; lost ones are recomputed first (the
        microbatch is held until then, while the run goes on: None)."""
        outputs, lost = self.recovery.fetch(mb.outputs)
        if outputs is not None:
            self._held.pop(id(mb), None)
            self._output_losses.pop(id(mb), None)
            return Delivery(mb, outputs)
        tries = self._output_losses.get(id(mb), 0) + 1
        waiter = self.recovery.wait_for(mb, lost)
        if waiter.failed or tries > _MAX_INPUT_LOSSES:
            raise ExecutionError(
                f"outputs of microbatch {mb.index} could not be fetched: "
                f"{waiter.failed or 'lost again after recomputing'}"
            )
        self._output_losses[id(mb)] = tries
        self._held[id(mb)] = mb
        return None

    def _take_released(self) -> Iterator[Delivery]:
        while self._released:
            yield self._released.pop(0)
