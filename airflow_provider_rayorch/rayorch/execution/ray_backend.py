"""The Ray backend: persistent actor pools fed by the core's FIFO dispatch.

One pool of ``PoolWorker`` actors per ``RayModule``; each actor may hold
``max_batches_in_flight`` batches so the next batch is already there when one
ends. Actors start a few at a time (as many as the cluster has CPUs), one per
pool first: starting them all at once makes every process share the CPUs and
come up together, late. ``open()`` returns when every pool has one actor; the
others join the core as they come up, while batches already run.
Completions are awaited with ``ray.wait`` (no polling). Payloads stay in
the object store: the driver keeps ``RemoteValue`` references and the small
per-batch reports. A dead actor is reported to the core as ``WorkerLost`` (its
Grains run again under a new generation) and replaced; a payload lost with its
node is recomputed from its recipe (the batch that produced it) before the
batch that needed it is sent again.
"""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from ..errors import ExecutionError, ResourceUnavailableError
from ..program.plan import NodeKind, Plan
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
from .driving import drive
from .ray_worker import CONCURRENCY_GROUPS, PoolWorker
from .remote_values import Box, RayValues, RemoteValue, collect_boxes, materialize

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..runtime.core import Core, Microbatch

__all__ = ["RayBackend"]

log = logging.getLogger(__name__)

#: Ray options a pool sets unless the user gave them.
_DEFAULT_ACTOR_OPTIONS = {"num_cpus": 0, "max_restarts": 0, "max_task_retries": 0}


@dataclass(frozen=True, slots=True)
class _Recipe:
    """How to compute a batch's values again: which module, Call and inputs."""

    module: int
    call: int
    name: str
    columns: list[list[Any]]


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
    ) -> None:
        self.plan = plan
        self.address = address
        self.ray_init_kwargs = dict(ray_init_kwargs or {})
        self.actor_start_timeout_s = actor_start_timeout_s
        #: Let pools wait for resources the cluster does not have yet (autoscaling).
        self.wait_for_resources = wait_for_resources
        if actor_start_concurrency is not None and actor_start_concurrency < 1:
            raise ValueError(
                f"actor_start_concurrency must be at least 1, got {actor_start_concurrency}"
            )
        #: Actors starting at once (default: the cluster's CPUs, at least 2).
        self.actor_start_concurrency = actor_start_concurrency
        self.values = RayValues(self._fetch_one)
        self._owns_ray = False
        self._actors: dict[str, Any] = {}
        self._module_of: dict[str, int] = {}
        self._all_actors: list[Any] = []
        self._spawned = 0
        #: Actors starting at once, resolved by ``open()``.
        self._concurrency = 2
        #: Modules whose next actor is yet to be created, in start order.
        self._to_start: list[int] = []
        #: ``ready()`` reference -> key of an actor that is starting.
        self._starting: dict[Any, str] = {}
        #: Actors that are up, in the order they came up (each run's core gets them).
        self._up: list[str] = []
        self._facts = _facts_by_call(plan)
        self._boxes: weakref.WeakValueDictionary[str, Box] = weakref.WeakValueDictionary()
        self.losses = 0
        self.recomputed = 0
        #: Rows of queued batches the workers skipped (a sibling's GroupFailure).
        self.skipped = 0

    # -- lifecycle --------------------------------------------------------------
    def open(self) -> None:
        if not ray.is_initialized():
            kwargs = {"address": self.address or "local", **self.ray_init_kwargs}
            ray.init(**kwargs)
            self._owns_ray = True
        try:
            self._check_resources()
            self._to_start = _start_order([m.options.replicas for m in self.plan.modules])
            pools = len(set(self._to_start))
            self._concurrency = self.actor_start_concurrency or max(
                2, int(ray.cluster_resources().get("CPU", 2))
            )
            self._start_more(max(self._concurrency, pools))
            # One actor per pool before any batch: a UDF that cannot start fails here.
            self._wait_started(self.actor_start_timeout_s, list(self._starting)[:pools])
        except BaseException:
            self.close()
            raise

    def warm_up(self, timeout_s: float | None = None) -> None:
        """Block until every actor has started (``ResourceUnavailableError`` after
        ``timeout_s``, default ``actor_start_timeout_s``)."""
        self._wait_started(self.actor_start_timeout_s if timeout_s is None else timeout_s)

    def _wait_started(self, timeout_s: float, refs: list[Any] | None = None) -> None:
        """Wait until the actors behind ``refs`` (``ready()`` references of starting
        actors; default: every actor still to start) are up; each joins ``_up``."""
        deadline = time.monotonic() + timeout_s
        while True:
            waiting = [r for r in (self._starting if refs is None else refs) if r in self._starting]
            if not waiting:
                return
            left = max(0.0, deadline - time.monotonic())
            done, _ = ray.wait(waiting, num_returns=1, timeout=left)
            if not done:
                names = sorted(
                    {self.plan.modules[self._module_of[self._starting[r]]].name for r in waiting}
                )
                raise ResourceUnavailableError(
                    f"actors of {', '.join(names)} did not start within {timeout_s:.0f}s; "
                    "the cluster may lack the resources they ask for (see ray status)"
                )
            self._started(None, done)

    def _start_more(self, n: int | None = None) -> None:
        """Create up to ``n`` more actors from the start order (default: as many as
        keep ``actor_start_concurrency`` of them starting)."""
        if n is None:
            n = self._concurrency - len(self._starting)
        for _ in range(max(0, n)):
            if not self._to_start:
                return
            key = self._spawn(self._to_start.pop(0))
            self._starting[self._actors[key].ready.remote()] = key

    def _started(self, core: Core | None, refs: list[Any]) -> list[Any]:
        """Actors whose ``ready()`` resolved join ``core`` (and every later run's);
        the next ones start."""
        commands: list[Any] = []
        for ref in refs:
            key = self._starting.pop(ref)
            try:
                ray.get(ref)
            except RayActorError as exc:
                if exc.actor_init_failed:
                    name = self.plan.modules[self._module_of[key]].name
                    raise ExecutionError(
                        f"module {name!r} failed to start its actor: {_short(exc)}"
                    ) from exc
                # Killed or lost with its node while starting: start another.
                self.losses += 1
                self._actors.pop(key, None)
                self._to_start.insert(0, self._module_of[key])
            else:
                self._up.append(key)
                if core is not None:
                    commands += core.handle(WorkerAdded(key, self._module_of[key]))
            self._start_more()
        return commands

    def close(self) -> None:
        for actor in self._all_actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception as exc:
                log.debug("killing actor failed: %s", exc)
        self._all_actors.clear()
        self._actors.clear()
        self._starting.clear()
        self._up.clear()
        self._to_start.clear()
        if self._owns_ray:
            self._owns_ray = False
            ray.shutdown()

    def metrics(self) -> dict[str, Any]:
        return {
            "backend": "ray",
            "workers_lost": self.losses,
            "batches_recomputed": self.recomputed,
            "rows_skipped": self.skipped,
        }

    # -- pools ------------------------------------------------------------------
    def _actor_options(self, module_id: int) -> dict[str, Any]:
        module = self.plan.modules[module_id]
        options = {**_DEFAULT_ACTOR_OPTIONS, **module.options.ray_actor_options}
        options.setdefault("name", None)
        if options["name"] is None:
            del options["name"]
        if "scheduling_strategy" not in options:
            options["scheduling_strategy"] = "SPREAD"
        return options

    def _call_specs(
        self, module_id: int
    ) -> dict[int, tuple[str, dict[str, Any], int, tuple[tuple[bool, bool], ...]]]:
        """What each Call of a module needs on its actors, sent once at creation."""
        n_outputs = self.plan.modules[module_id].num_outputs
        return {
            node.id: (node.name, dict(node.kwargs), n_outputs, self._facts[node.id])
            for node in self.plan.calls
            if node.module == module_id
        }

    def _spawn(self, module_id: int) -> str:
        module = self.plan.modules[module_id]
        self._spawned += 1
        key = f"{module.name}#{self._spawned}"
        actor = (
            _remote_worker_class()
            .options(**self._actor_options(module_id))
            .remote(
                module.udf, module.init_args, dict(module.init_kwargs), self._call_specs(module_id)
            )
        )
        self._actors[key] = actor
        self._module_of[key] = module_id
        self._all_actors.append(actor)
        return key

    def _check_resources(self) -> None:
        """Fail fast when no node could host one actor of a module, or when all pools
        together ask for more than the whole cluster has (unless ``wait_for_resources``)."""
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        totals = [n.get("Resources", {}) for n in nodes]
        demand: dict[str, float] = {}
        for module in self.plan.modules:
            need = self._needs(module.id)
            for key, value in need.items():
                demand[key] = demand.get(key, 0.0) + value * module.options.replicas
            if need and not any(
                all(res.get(k, 0.0) >= v for k, v in need.items()) for res in totals
            ):
                raise ResourceUnavailableError(
                    f"module {module.name!r} asks for {need} per actor, but no node of the "
                    f"cluster has that much (nodes: {_describe(totals)}); lower its "
                    "ray_options or add a node that provides them"
                )
        if self.wait_for_resources:
            return
        cluster = ray.cluster_resources()
        short = {
            k: (v, cluster.get(k, 0.0)) for k, v in demand.items() if v > cluster.get(k, 0.0) + 1e-9
        }
        if short:
            listing = ", ".join(
                f"{k}: {want:g} wanted, {have:g} in the cluster"
                for k, (want, have) in sorted(short.items())
            )
            per_module = "; ".join(
                f"{m.name} {m.options.replicas} x {self._needs(m.id)}"
                for m in self.plan.modules
                if self._needs(m.id)
            )
            raise ResourceUnavailableError(
                f"the actor pools together need more than the cluster has ({listing}; "
                f"pools: {per_module}). Lower replicas or per-actor resources, or pass "
                "wait_for_resources=True to wait for an autoscaling cluster"
            )

    def _needs(self, module_id: int) -> dict[str, float]:
        options = self._actor_options(module_id)
        need: dict[str, float] = {k: float(v) for k, v in (options.get("resources") or {}).items()}
        for option, key in (("num_cpus", "CPU"), ("num_gpus", "GPU"), ("memory", "memory")):
            if options.get(option):
                need[key] = float(options[option])
        return need

    # -- driving ------------------------------------------------------------------
    def drive(self, core: Core) -> Iterator[Microbatch]:
        inflight: dict[Any, _InFlight] = {}
        if self._starting:  # actors that came up since the last run
            done, _ = ray.wait(list(self._starting), num_returns=len(self._starting), timeout=0)
            self._started(None, done)
        workers = [(k, self._module_of[k], None) for k in self._up]
        yield from drive(
            core,
            workers,
            submit=lambda command: self._submit(command, inflight),
            advance=lambda: self._collect(core, inflight),
            # An actor still starting counts: its pool may have no other one yet.
            has_work=lambda: bool(inflight) or bool(self._starting),
            deliver=self._materialize_outputs,
            withdraw=self._withdraw,
        )

    def _submit(self, command: Dispatch, inflight: dict[Any, _InFlight], attempts: int = 0) -> None:
        actor = self._actors.get(command.worker)
        if actor is None:  # replaced meanwhile; the core already re-queued its Grains
            return
        # One argument: Ray serializes each argument on its own, at a cost per argument.
        report, values = actor.run.remote((command.node.id, command.batch, command.columns))
        inflight[report] = _InFlight(command.batch, command.worker, values, command, attempts)

    def _withdraw(self, command: Withdraw) -> None:
        actor = self._actors.get(command.worker)
        if actor is not None:  # fire and forget: the batch's own report says what ran
            actor.withdraw.remote(command.batch, list(command.rows))

    def _collect(self, core: Core, inflight: dict[Any, _InFlight]) -> list[Any]:
        refs = [*inflight, *self._starting]
        ready, rest = ray.wait(refs, num_returns=1)
        if rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        commands: list[Any] = []
        started = [ref for ref in ready if ref in self._starting]
        if started:
            commands += self._started(core, started)
        for ref in ready:
            entry = inflight.pop(ref, None)
            if entry is None:
                continue
            try:
                report = ray.get(ref)
            except RayActorError as exc:
                commands += self._replace(core, entry.worker, inflight, _short(exc))
                continue
            event = self._event(entry, report, inflight)
            if event is not None:
                commands += core.handle(event)
        return commands

    def _event(
        self, entry: _InFlight, report: tuple[Any, ...], inflight: dict[Any, _InFlight]
    ) -> Event | None:
        kind = report[0]
        if kind == "ok":
            return BatchFinished(entry.batch, self._rows(entry, report), report[4])
        if kind == "raised":
            return BatchRaised(entry.batch, report[1], report[2], report[3])
        if kind == "rejected":
            return BatchRejected(entry.batch, report[1], report[2])
        # "lost": inputs of this batch vanished with a node; rebuild them, send it again.
        if entry.attempts >= 3:
            return BatchRaised(entry.batch, f"inputs lost and not recoverable: {report[1]}")
        self._recompute(report[1])
        self._submit(entry.dispatch, inflight, entry.attempts + 1)
        return None

    def _rows(self, entry: _InFlight, report: tuple[Any, ...]) -> list[Any]:
        _, status, lengths, truths, _busy = report
        node = entry.dispatch.node
        module = self.plan.modules[node.module]  # type: ignore[index]
        n = len(entry.dispatch.columns[0])
        box = Box(
            entry.values,
            _Recipe(module.id, node.id, node.name, entry.dispatch.columns),
        )
        self._boxes[entry.values.hex()] = box
        k_out = module.num_outputs
        rows: list[Any] = []
        for i in range(n):
            if status is not None and status[i] is not None:
                if type(status[i]) is Withdrawn:
                    self.skipped += 1
                rows.append(status[i])
                continue
            if k_out == 1:
                rows.append(
                    RemoteValue(
                        box,
                        (i,),
                        None if lengths[0] is None else lengths[0][i],
                        None if truths[0] is None else truths[0][i],
                    )
                )
            else:
                rows.append(
                    tuple(
                        RemoteValue(
                            box,
                            (i, k),
                            None if lengths[k] is None else lengths[k][i],
                            None if truths[k] is None else truths[k][i],
                        )
                        for k in range(k_out)
                    )
                )
        return rows

    def _replace(
        self, core: Core, worker: str, inflight: dict[Any, _InFlight], reason: str
    ) -> list[Any]:
        """A worker died: tell the core, forget its batches, start a replacement."""
        if worker not in self._actors:
            return []
        self.losses += 1
        module_id = self._module_of[worker]
        del self._actors[worker]
        self._up.remove(worker)
        for ref in [r for r, e in inflight.items() if e.worker == worker]:
            del inflight[ref]
        commands = core.handle(WorkerLost(worker, f"actor {worker} died: {reason}"))
        if self.losses > 10 * max(1, len(self._module_of)):
            raise ExecutionError(f"too many actors died ({self.losses}); last: {reason}")
        key = self._spawn(module_id)
        self._up.append(key)  # the core may send it batches now: Ray queues them
        commands += core.handle(WorkerAdded(key, module_id))
        return commands

    # -- payloads -----------------------------------------------------------------
    def _recompute(self, lost: list[str], depth: int = 0) -> None:
        """Run again the batches whose values objects were lost (recursively)."""
        if depth > 8:
            raise ExecutionError("lineage recomputation went deeper than 8 levels")
        for hex_id in lost:
            box = self._boxes.get(hex_id)
            if box is None or box.recipe is None:
                continue
            recipe: _Recipe = box.recipe
            candidates = [k for k in self._actors if self._module_of[k] == recipe.module]
            for attempt in range(2 * len(candidates) + 2):
                live = [k for k in candidates if k in self._actors]
                if not live:
                    raise ExecutionError(
                        f"no live actor of Call {recipe.name!r} to recompute lost values on"
                    )
                actor = self._actors[live[attempt % len(live)]]
                report_ref, values_ref = actor.run.remote((recipe.call, 0, recipe.columns))
                try:
                    report = ray.get(report_ref, timeout=600)
                except (RayActorError, GetTimeoutError):
                    continue  # that actor is going down with the node: try another
                if report[0] == "lost":
                    self._recompute(report[1], depth + 1)
                    continue
                self.recomputed += 1
                del self._boxes[hex_id]
                box.ref = values_ref
                self._boxes[values_ref.hex()] = box
                break
            else:
                raise ExecutionError(f"could not recompute lost values of Call {recipe.name!r}")

    def _fetch_one(self, value: RemoteValue) -> Any:
        return materialize(value, {id(value.box): ray.get(value.box.ref)})

    def _materialize_outputs(self, mb: Microbatch) -> None:
        boxes: dict[int, Box] = {}
        for column in mb.outputs:
            for value in column:
                collect_boxes(value, boxes)
        if not boxes:
            return
        for _attempt in range(3):
            try:
                fetched = dict(zip(boxes, ray.get([b.ref for b in boxes.values()]), strict=True))
                break
            except Exception as exc:  # lost with a node: recompute and fetch again
                lost = [b.ref.hex() for b in boxes.values() if not _available(b.ref)]
                if not lost:
                    raise
                log.warning("outputs of microbatch %s lost (%s); recomputing", mb.index, exc)
                self._recompute(lost)
        else:
            raise ExecutionError(f"outputs of microbatch {mb.index} could not be fetched")
        mb.outputs = [[materialize(v, fetched) for v in column] for column in mb.outputs]


_REMOTE_CLASS: Any = None


def _remote_worker_class() -> Any:
    global _REMOTE_CLASS
    if _REMOTE_CLASS is None:
        _REMOTE_CLASS = ray.remote(concurrency_groups=CONCURRENCY_GROUPS)(PoolWorker)  # type: ignore[call-overload]
    return _REMOTE_CLASS


def _start_order(replicas: list[int]) -> list[int]:
    """Module ids in the order their actors start: the first actor of every pool
    (so batches can flow), then the rest interleaved in proportion to pool size."""
    firsts = [m for m, r in enumerate(replicas) if r > 0]
    rest = sorted(
        ((k / r, m) for m, r in enumerate(replicas) for k in range(1, r)),
    )
    return firsts + [m for _, m in rest]


def _describe(totals: list[dict[str, float]]) -> str:
    nodes = [
        "{"
        + ", ".join(f"{k}: {v:g}" for k, v in sorted(r.items()) if not k.startswith("node:"))
        + "}"
        for r in totals
    ]
    return ", ".join(nodes) or "no alive node"


def _available(ref: Any) -> bool:
    try:
        ray.get(ref, timeout=30)
        return True
    except Exception:
        return False


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _facts_by_call(plan: Plan) -> dict[int, tuple[tuple[bool, bool], ...]]:
    """For each Call output Port: does some expand need its length, some filter its truth?"""
    need_length: set[int] = set()
    need_truth: set[int] = set()
    passthrough: dict[int, list[int]] = {}
    for node in plan.nodes:
        if node.kind is NodeKind.EXPAND:
            need_length.update(node.inputs)
        elif node.kind is NodeKind.FILTER:
            need_truth.add(node.inputs[1])
            passthrough.setdefault(node.inputs[0], []).append(node.outputs[0])
        elif node.kind is NodeKind.BROADCAST:
            passthrough.setdefault(node.inputs[0], []).append(node.outputs[0])

    def needs(port: int, wanted: set[int], seen: frozenset[int] = frozenset()) -> bool:
        if port in wanted:
            return True
        return any(
            needs(p, wanted, seen | {port}) for p in passthrough.get(port, ()) if p not in seen
        )

    return {
        node.id: tuple((needs(p, need_length), needs(p, need_truth)) for p in node.outputs)
        for node in plan.nodes
        if node.kind is NodeKind.CALL
    }
