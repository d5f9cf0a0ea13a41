"""What the pools learn about starting actors through Ray's public API.

- Whether a constructor has begun: every pool actor is created from an
  ``announcing`` subclass whose constructor first tells the run's ``StartLog``
  actor (its key and node), then runs the real constructor. The start clock counts
  from that word only, so time spent waiting for resources (no process yet) does
  not count. It works on any Ray, with or without its dashboard.
- Why an actor died while starting: ``ray.util.state`` (Ray's actor table, served
  by the dashboard) tells ``ray.kill`` and node loss from a death of the actor's own
  process; without the state API, ``ray.nodes()`` still tells a node loss when the
  constructor had begun, and Ray's ``preempted`` flag a drained node. What the pools
  cannot read is logged as a WARNING once per process, with its effect.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import ray

__all__ = [
    "StartLog",
    "announcing",
    "began_nodes",
    "death_cause_outside",
    "probe_state_api",
    "wait_answering",
]

log = logging.getLogger(__name__)

#: Seconds to wait for the state API's first answer, or for the start log's.
_ANSWER_S = 5.0
#: Death reasons (of Ray's actor table) that say nothing about the constructor.
_OUTSIDE_REASONS = frozenset({"RAY_KILL", "NODE_DIED"})


class StartLog:
    """The actors whose constructor has begun, with their node (a Ray actor)."""

    def __init__(self) -> None:
        self.began: dict[str, str] = {}

    def begin(self, key: str, node: str) -> None:
        self.began[key] = node

    def nodes(self) -> dict[str, str]:
        return dict(self.began)


def announcing(cls: type) -> type:
    """``cls`` with a constructor that takes ``(start_log, key, *args)``: it tells
    ``start_log`` that ``key`` began on this node, then runs ``cls(*args)``."""

    class Announcing(cls):
        def __init__(self, start_log: Any, key: str, *args: Any) -> None:
            start_log.begin.remote(key, ray.get_runtime_context().get_node_id())
            super().__init__(*args)

    Announcing.__name__ = cls.__name__
    Announcing.__doc__ = cls.__doc__
    return Announcing


def wait_answering(start_log: Any, timeout_s: float) -> None:
    """Wait until ``start_log`` answers (its process is up), at most ``timeout_s``: a
    constructor's word reaches it only then, so an earlier look could take an actor
    that began for one waiting for resources."""
    ray.wait([start_log.nodes.remote()], timeout=timeout_s)


def began_nodes(start_log: Any) -> dict[str, str] | None:
    """Key -> node of every actor whose constructor has begun; None when the start
    log does not answer in time (a WARNING once per process)."""
    ref = start_log.nodes.remote()
    try:
        ready, _ = ray.wait([ref], timeout=_ANSWER_S)
        if ready:
            return dict(ray.get(ready[0]))
        problem = f"no answer within {_ANSWER_S:g}s"
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
    _warn_once(
        "start-log",
        "cannot tell whether starting actors' constructors have begun (%s): the start "
        "timeout counts their time waiting for resources too",
        problem,
    )
    return None


# -- death causes ---------------------------------------------------------------------
_STATE_API: dict[str, tuple[threading.Event, list[BaseException]]] = {}
_STATE_API_LOCK = threading.Lock()
_WARNED: set[str] = set()
_ASKED: dict[str, bool] = {}


def probe_state_api() -> None:
    """Start asking, once per process and cluster, whether ``ray.util.state`` answers
    (it needs Ray's dashboard; without it Ray spends about 40s finding out)."""
    address = _gcs_address()
    with _STATE_API_LOCK:
        if address in _STATE_API:
            return
        done, failure = _STATE_API[address] = (threading.Event(), [])
        if not address:
            failure.append(RuntimeError("this process's Ray names no GCS address"))
            done.set()
            return

    def probe() -> None:
        from ray.util.state import list_actors

        try:
            list_actors(address=address, limit=1, timeout=10, raise_on_missing_output=False)
        except Exception as exc:
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=probe, name="rayorch-state-api-probe", daemon=True).start()


def _gcs_address() -> str:
    """The GCS address this process's Ray is connected to ("" when it names none)."""
    try:
        return str(ray.get_runtime_context().gcs_address or "")
    except Exception as exc:
        log.debug("no GCS address: %s", exc)
        return ""


def _state_api_problem(address: str) -> str | None:
    """Why the state API cannot be read (None: it can)."""
    probe_state_api()
    done, failure = _STATE_API[address]
    # Waited for once: without a dashboard the probe takes about 40s to fail.
    first, _ASKED[address] = address not in _ASKED, True
    if not done.wait(_ANSWER_S if first else 0):
        return "Ray's state API has not answered yet"
    if failure:
        return f"Ray's state API: {_said(failure[0])}"
    return None


def _reasons(value: Any) -> list[str]:
    """Every ``reason`` string inside a death cause record."""
    if isinstance(value, dict):
        found = [str(v) for k, v in value.items() if k == "reason" and isinstance(v, str)]
        return found + [r for v in value.values() for r in _reasons(v)]
    return []


def death_cause_outside(exc: Any, node: str | None) -> bool:
    """Whether actor death ``exc`` (a ``RayActorError``) came from outside the actor's
    own process: ``ray.kill``, its node lost or drained. ``node``: where its
    constructor began (None: it had not). Unknown counts as the actor's own death."""
    if getattr(exc, "preempted", False):
        return True
    if node is not None:
        try:
            alive = {str(n["NodeID"]) for n in ray.nodes() if n.get("Alive")}
        except Exception as exc_nodes:
            log.debug("node table unreadable: %s", exc_nodes)
        else:
            if node not in alive:
                return True
    actor_id = getattr(exc, "actor_id", None)
    address = _gcs_address()
    problem = _state_api_problem(address) if actor_id else "Ray named no actor id"
    if problem is None:
        try:
            from ray.util.state import get_actor

            state = get_actor(str(actor_id), address=address, timeout=10)
            return bool(set(_reasons(getattr(state, "death_cause", None))) & _OUTSIDE_REASONS)
        except Exception as exc_state:
            problem = f"Ray's state API: {_said(exc_state)}"
    _warn_once(
        "death-cause",
        "cannot read Ray's actor table (%s; it needs Ray's dashboard): an actor that "
        "dies while starting counts against actor_start_retries even when it was killed "
        "from outside (ray.kill); a lost node is still told apart once its constructor began",
        problem,
    )
    return False


def _said(exc: BaseException) -> str:
    """An exception's type and first sentence."""
    first = str(exc).strip().split(". ")[0].splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:200]}"


def _warn_once(what: str, message: str, *args: Any) -> None:
    level = logging.DEBUG if what in _WARNED else logging.WARNING
    _WARNED.add(what)
    log.log(level, message, *args)
