"""The actor pools of a Ray run: start order, start budget, replacement, run epochs.

One pool of ``PoolWorker`` actors per ``RayModule``. Actors start a few at a
time (as many as the cluster has CPUs), one per pool first: starting them all at
once makes every process share the CPUs and come up together, late. An actor
joins runs once its ``ready()`` answers. One that dies before (its constructor
killed the process, its node went away) or whose constructor runs longer than
``actor_start_timeout_s`` is replaced, up to ``actor_start_retries`` in a row per
pool; then the run fails with ``ExecutionError``. The start timeout counts from
the moment the actor's constructor begins (each constructor first tells the run's
start log), never the time it waits for resources. An actor killed from outside
(``ray.kill``) or lost with its node while starting is replaced without counting
when Ray says so (``actor_watch``: without Ray's state API, ``ray.kill`` is not
told apart and counts, with a WARNING once). A constructor that raises fails at
once: starting it again would raise again.

Modules that share a process (``ray_options(share_process=name)``, and by default
the modules that ask Ray for nothing: ``program/shared_processes.py``) start as one
``SharedProcess`` actor with a slot per replica; each slot is a worker like any
other, but they start, fail to start and die together: a failed start counts once
against each member pool's budget, and a death loses every slot.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..errors import ExecutionError, ResourceUnavailableError
from ..plain_text import strip_ansi
from ..program.shared_processes import process_groups, process_names, shared_actor_options
from ..runtime.lowering import lower
from .actor_start import (
    DEFAULT_ACTOR_START_RETRIES,
    RESOURCE_POLL_S,
    StartBudget,
    StartClock,
    start_order,
)
from .actor_watch import (
    StartLog,
    announcing,
    began_nodes,
    death_cause_outside,
    probe_state_api,
    wait_answering,
)
from .protocol import CallSpec
from .ray_worker import CONCURRENCY_GROUPS, PoolWorker
from .shared_process import SharedProcess, Slot, actor_of

if TYPE_CHECKING:
    from ..program.plan import Plan

__all__ = ["ActorPools", "StartAnswers", "death_message"]

log = logging.getLogger(__name__)

#: Ray options a pool sets unless the user gave them.
_DEFAULT_ACTOR_OPTIONS = {"num_cpus": 0, "max_restarts": 0, "max_task_retries": 0}
#: Seconds ``begin`` waits for the start log's process to answer.
_START_LOG_UP_S = 60.0


@dataclass(slots=True)
class StartAnswers:
    """What resolved ``ready()`` references told (``ActorPools.came_up``)."""

    #: Actors that came up, in that order.
    up: list[str] = field(default_factory=list)
    #: ``(worker, death message)``: a worker that was up and died with its shared
    #: process, seen through a slot of it still starting. Forgotten by ``lost``
    #: (the Ray backend also tells the run's core), not counted as a failed start.
    died: list[tuple[str, str]] = field(default_factory=list)


class ActorPools:
    """Every actor of a plan's pools, from creation to ``close()``."""

    def __init__(
        self,
        plan: Plan,
        *,
        start_timeout_s: float,
        start_retries: int = DEFAULT_ACTOR_START_RETRIES,
        concurrency: int | None = None,
    ) -> None:
        self.plan = plan
        self.start_timeout_s = start_timeout_s
        self.budget = StartBudget(start_retries)
        #: Actors starting at once (None: the cluster's CPUs, at least 2).
        self.concurrency_option = concurrency
        self.concurrency = 2
        #: key -> actor handle, for every actor started and not dead.
        self.actors: dict[str, Any] = {}
        self.module_of: dict[str, int] = {}
        #: Actors that are up, in the order they came up (each run's core gets them).
        self.up: list[str] = []
        #: key -> id of the node its actor runs on (told by its ``ready()``).
        self.node_of: dict[str, str] = {}
        self._addresses: dict[str, str] = {}
        #: ``ready()`` reference -> key of an actor that is starting.
        self.starting: dict[Any, str] = {}
        self._clocks: dict[str, StartClock] = {}
        #: Modules whose next actor is yet to be created, in start order.
        self._to_start: list[int] = []
        self._all: list[Any] = []
        #: The ``StartLog`` actor the constructors report to (made with the first actor).
        self._start_log: Any = None
        self._spawned = 0
        #: Share name of each module (None: a process per replica).
        self._share = process_names(plan.modules)
        self._groups = process_groups(plan.modules)
        #: Slot key -> its shared process; process -> its slot keys.
        self.process_of: dict[str, str] = {}
        self.members: dict[str, list[str]] = {}
        #: One per run: batch ids restart every run, ``(epoch, batch)`` does not.
        self.epoch = 0
        self.losses = 0
        n_outputs = {m.id: m.num_outputs for m in plan.modules}
        needs = lower(plan).needs_by_call()
        self._specs: dict[int, dict[int, CallSpec]] = {m.id: {} for m in plan.modules}
        for node in plan.calls:
            assert node.module is not None
            self._specs[node.module][node.id] = CallSpec(
                node.name, dict(node.kwargs), n_outputs[node.module], needs[node.id]
            )

    # -- starting ----------------------------------------------------------------
    def begin(self) -> list[Any]:
        """Start the first actors; return the ``ready()`` references of one per pool."""
        self._to_start = start_order([m.options.replicas for m in self.plan.modules])
        probe_state_api()
        pools = len(set(self._to_start))
        self.concurrency = self.concurrency_option or max(
            2, int(ray.cluster_resources().get("CPU", 2))
        )
        self.start_more(max(self.concurrency, pools))
        if self._start_log is not None:
            wait_answering(self._start_log, _START_LOG_UP_S)
        firsts: dict[int, Any] = {}
        for ref, key in self.starting.items():
            firsts.setdefault(self.module_of[key], ref)
        return list(firsts.values())

    def start_more(self, n: int | None = None) -> None:
        """Create up to ``n`` more actors from the start order (default: as many as
        keep ``concurrency`` of them starting)."""
        if n is None:
            processes = {self.process_of.get(k, k) for k in self.starting.values()}
            n = self.concurrency - len(processes)
        for _ in range(max(0, n)):
            if not self._to_start:
                return
            for key in self._spawn(self._to_start.pop(0)):
                self.starting[self.actors[key].ready.remote()] = key

    def _waiting(self, refs: list[Any] | None) -> list[Any]:
        """What to wait on: every actor starting (``refs`` None), or every actor
        starting of the pools of ``refs`` that are still starting and have no actor up.
        A pool's first actor to come up counts, whichever replica it is: with scarce
        resources Ray may start a pool's second actor before its first."""
        if refs is None:
            return list(self.starting)
        up = {self.module_of[key] for key in self.up if key in self.module_of}
        pools = {self.module_of[self.starting[r]] for r in refs if r in self.starting} - up
        return [ref for ref, key in self.starting.items() if self.module_of[key] in pools]

    def wait_started(self, timeout_s: float, refs: list[Any] | None = None) -> None:
        """Wait until the actors behind ``refs`` (default: every actor still to
        start), or other actors of their pools, are up (``ResourceUnavailableError``
        after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.start_more()
            waiting = self._waiting(refs)
            if not waiting:
                return
            now = time.monotonic()
            past = now >= deadline
            if past and not self._constructing(waiting):
                names = sorted({self.name_of(self.starting[r]) for r in waiting})
                raise ResourceUnavailableError(
                    f"actors of {', '.join(names)} did not start within {timeout_s:.0f}s; "
                    "the cluster may lack the resources they ask for (see ray status)"
                )
            # Past the deadline, an actor whose constructor runs is timed by its own
            # start clock: it got its resources, so it is no resource shortage.
            if past:
                wait_s = min(max(0.0, self.next_due() - now), RESOURCE_POLL_S)
            else:
                wait_s = max(0.0, min(deadline, self.next_due()) - now)
            done, _ = ray.wait(waiting, num_returns=1, timeout=wait_s)
            for key, _message in self.came_up(done).died:  # no run yet to tell
                self.lost(key)
            self.check_start_clocks()

    def _constructing(self, refs: list[Any]) -> bool:
        """Whether the start log says the constructor of an actor behind ``refs`` began
        (False when it does not answer)."""
        began = began_nodes(self._start_log) if self._start_log is not None else None
        if not began:
            return False
        return any(self.process_of.get(self.starting[r], self.starting[r]) in began for r in refs)

    def came_up(self, refs: list[Any]) -> StartAnswers:
        """Handle ``ready()`` references that resolved: the actors now up, and the
        workers lost with a shared process that died after one of its slots came up."""
        answers = StartAnswers()
        for ref in refs:
            key = self.starting.pop(ref, None)
            if key is None:
                continue
            self._clocks.pop(key, None)
            try:
                answer = ray.get(ref)
            except RayActorError as exc:
                running = self._slot_up_beside(key)
                if running is not None:
                    # The process started (a slot of it is up, maybe running a batch):
                    # its death is a run-time death of that slot, never a failed start.
                    answers.died.append((running, death_message(exc)))
                elif exc.actor_init_failed:
                    raise ExecutionError(
                        f"module {self.name_of(key)!r} failed to start its actor: "
                        f"{death_message(exc, traceback=True)}"
                    ) from exc
                elif death_cause_outside(exc, self._began_on(key)):
                    # ray.kill or its node went away: no sign its constructor is at fault.
                    for k in self._drop(key):
                        self._to_start.insert(0, self.module_of[k])
                else:
                    self._start_failed(key, "died while starting", death_message(exc))
            else:
                self.up.append(key)
                if isinstance(answer, tuple) and len(answer) > 1:  # (pid, node id)
                    self.node_of[key] = str(answer[1])
                self.budget.came_up(self.module_of[key])
                answers.up.append(key)
                for k in self.members.get(self.process_of.get(key, ""), ()):
                    self._clocks.pop(k, None)  # every slot's constructor has run
        self.start_more()
        return answers

    def node_label(self, key: str) -> str | None:
        """``"<node id> at <address>"`` of the node actor ``key`` ran on (the id alone
        when Ray no longer lists it), None when unknown. Ray's node table keeps dead
        nodes; it is read once per node not seen before."""
        node = self.node_of.get(key)
        if node is None:
            return None
        if node not in self._addresses:
            try:
                nodes = ray.nodes()
            except Exception as exc:  # a label without the address
                log.debug("node table unreadable: %s", exc)
                nodes = []
            self._addresses.update({str(n["NodeID"]): str(n["NodeManagerAddress"]) for n in nodes})
        address = self._addresses.get(node)
        return f"{node} at {address}" if address else node

    def _slot_up_beside(self, key: str) -> str | None:
        """A slot that is up in the shared process of starting slot ``key``."""
        process = self.process_of.get(key)
        if process is None or key not in self.actors:
            return None
        return next((k for k in self.members[process] if k in self.up), None)

    def _began_on(self, key: str) -> str | None:
        """The node where the constructor of ``key``'s process began (None: not yet,
        or unknown)."""
        if self._start_log is None:
            return None
        return (began_nodes(self._start_log) or {}).get(self.process_of.get(key, key))

    def check_start_clocks(self) -> None:
        """Replace starting actors whose constructor has run past the start timeout
        (the start log tells which have begun; unknown counts as begun)."""
        now = time.monotonic()
        due = [(r, k) for r, k in self.starting.items() if k in self._clocks]
        due = [(r, k) for r, k in due if self._clocks[k].due <= now]
        began = began_nodes(self._start_log) if due and self._start_log is not None else {}
        for ref, key in due:
            clock = self._clocks.get(key)
            if ref not in self.starting or clock is None:
                continue  # gone with a slot of its process
            constructing = began is None or self.process_of.get(key, key) in began
            if clock.observe(now, constructing=constructing):
                del self.starting[ref]
                del self._clocks[key]
                self.kill(key)
                self._start_failed(
                    key,
                    f"did not start within {self.start_timeout_s:g}s",
                    "its constructor was still running (time waiting for resources does not count)",
                )
        self.start_more()

    def next_due(self) -> float:
        """When ``check_start_clocks`` should run next (``inf``: nothing to watch)."""
        if not self._clocks:
            return float("inf")
        return min(c.due for c in self._clocks.values())

    def _start_failed(self, key: str, what: str, detail: str) -> None:
        """Actor ``key`` failed to start (``what``, with Ray's ``detail``): replace
        it, or raise once the pool's start budget is spent."""
        module = self.module_of[key]
        modules = [self.module_of[k] for k in self._drop(key)]
        exhausted = [m for m in dict.fromkeys(modules) if not self.budget.failed(m)]
        if not exhausted:
            log.warning("actor %s %s (%s); starting another", key, what, detail)
            for m in reversed(modules):
                self._to_start.insert(0, m)
            return
        module = module if module in exhausted else exhausted[0]
        count = self.budget.in_a_row(module)
        raise ExecutionError(
            f"{count} actor{'s' if count != 1 else ''} of module "
            f"{self.plan.modules[module].name!r} "
            f"{what}, one after another (actor_start_retries={self.budget.retries}); "
            f"the last: {detail}. Check what its constructor does "
            "(pre_init arguments, model files, memory: an OOM kill or a crash ends the "
            "process), the resources it asks for, and the actor's log (logs/worker-*.err "
            "in the Ray session directory); raise actor_start_retries= or "
            "actor_start_timeout_s= on ro.run/Executor if starting is just slow or flaky"
        )

    # -- replacing -----------------------------------------------------------------
    def lost(self, key: str) -> list[str]:
        """An actor that was up died (or was killed): forget it, and every slot of its
        process if it shares one, and start others. Returns the workers forgotten
        (none when it already was)."""
        gone = self._drop(key)
        for k in reversed(gone):
            self._to_start.insert(0, self.module_of[k])
        if gone:
            self.start_more()
        return gone

    def _drop(self, key: str) -> list[str]:
        """Forget ``key``'s actor (with a shared process, all its slots): the keys."""
        if key not in self.actors:
            return []
        process = self.process_of.get(key)
        keys = [k for k in self.members[process] if k in self.actors] if process else [key]
        waiting = {k: ref for ref, k in self.starting.items()}
        for k in keys:
            del self.actors[k]
            self.losses += 1
            if k in self.up:
                self.up.remove(k)
            if k in waiting:
                del self.starting[waiting[k]]
            self._clocks.pop(k, None)
        return keys

    def kill(self, key: str) -> None:
        actor = self.actors.get(key)
        if actor is not None:
            try:
                ray.kill(actor_of(actor), no_restart=True)
            except Exception as exc:
                log.debug("killing actor %s failed: %s", key, exc)

    def next_epoch(self) -> int:
        self.epoch += 1
        return self.epoch

    def close(self) -> None:
        for actor in self._all:
            try:
                ray.kill(actor, no_restart=True)
            except Exception as exc:
                log.debug("killing actor failed: %s", exc)
        self._all.clear()
        if self._start_log is not None:
            try:
                ray.kill(self._start_log, no_restart=True)
            except Exception as exc:
                log.debug("killing the start log failed: %s", exc)
            self._start_log = None
        self.actors.clear()
        self.starting.clear()
        self._clocks.clear()
        self.up.clear()
        self._to_start.clear()

    # -- helpers ---------------------------------------------------------------------
    def name_of(self, key: str) -> str:
        return self.plan.modules[self.module_of[key]].name

    def actor_options(self, module_id: int) -> dict[str, Any]:
        """Ray options of the actor (the process) that runs ``module_id``'s workers."""
        module = self.plan.modules[module_id]
        group = self._share[module_id]
        asked = (
            module.options.ray_actor_options
            if group is None
            else shared_actor_options(self._groups[group])
        )
        options = {**_DEFAULT_ACTOR_OPTIONS, **asked}
        options.setdefault("name", None)
        if options["name"] is None:
            del options["name"]
        if "scheduling_strategy" not in options:
            options["scheduling_strategy"] = "SPREAD"
        return options

    def _spawn(self, module_id: int) -> list[str]:
        """Create ``module_id``'s next actor; with a shared process, one that also
        holds every other slot of its members still to start. Returns the keys."""
        group = self._share[module_id]
        if group is None:
            modules = [module_id]
        else:
            modules = [module_id, *(m for m in self._to_start if self._share[m] == group)]
            self._to_start = [m for m in self._to_start if self._share[m] != group]
        keys = []
        for m in modules:
            self._spawned += 1
            keys.append(f"{self.plan.modules[m].name}#{self._spawned}")
        build = {
            k: (
                self.plan.modules[m].udf,
                self.plan.modules[m].init_args,
                dict(self.plan.modules[m].init_kwargs),
                self._specs[m],
            )
            for k, m in zip(keys, modules, strict=True)
        }
        options = self.actor_options(module_id)
        if self._start_log is None:
            # On the driver's node: it lives as long as the run can.
            node = ray.get_runtime_context().get_node_id()
            here = NodeAffinitySchedulingStrategy(node, soft=True)
            self._start_log = (
                _remote_class(StartLog).options(num_cpus=0, scheduling_strategy=here).remote()
            )
        if group is None:
            actor = (
                _remote_class(PoolWorker, announce=True)
                .options(**options)
                .remote(self._start_log, keys[0], *build[keys[0]])
            )
            handles = {keys[0]: actor}
        else:
            # A thread per batch in flight: a slot's lock runs its batches one at a time.
            options["max_concurrency"] = sum(
                self.plan.modules[m].options.max_batches_in_flight for m in modules
            )
            process = f"{group}@{keys[0]}"
            actor = (
                _remote_class(SharedProcess, announce=True)
                .options(**options)
                .remote(self._start_log, process, build)
            )
            self.members[process] = keys
            self.process_of.update(dict.fromkeys(keys, process))
            handles = {k: Slot(actor, k) for k in keys}
        self._all.append(actor)
        now = time.monotonic()
        for k, m in zip(keys, modules, strict=True):
            self.actors[k] = handles[k]
            self.module_of[k] = m
            self._clocks[k] = StartClock(self.start_timeout_s, now)
        return keys


def death_message(exc: BaseException, *, traceback: bool = False) -> str:
    """Ray's account of an actor's death on one line; of a ``traceback``, its first
    line and the exception at its end."""
    lines = [line.strip() for line in strip_ansi(str(exc)).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    text = f"{lines[0]} ... {lines[-1]}" if traceback and len(lines) > 1 else " ".join(lines)
    return text if len(text) <= 600 else text[:600] + "..."


_REMOTE_CLASSES: dict[tuple[type, bool], Any] = {}


def _remote_class(cls: type, *, announce: bool = False) -> Any:
    """``cls`` as a Ray actor class (made once per process); ``announce``: one whose
    constructor first tells the start log (``actor_watch.announcing``)."""
    if (cls, announce) not in _REMOTE_CLASSES:
        actor_cls = announcing(cls) if announce else cls
        groups = CONCURRENCY_GROUPS if announce else None
        _REMOTE_CLASSES[cls, announce] = ray.remote(concurrency_groups=groups)(actor_cls)  # type: ignore[call-overload]
    return _REMOTE_CLASSES[cls, announce]
