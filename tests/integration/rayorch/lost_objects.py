"""An object whose owner is gone, for the tests of lost payloads.

Ray frees a dead owner's objects asynchronously: for a second or two after
``ray.kill`` (longer on a busy machine) a ``ray.get`` of such an object still finds
its copy in the node's store. A test that hands the object to the engine too early
loses nothing, so :func:`lost_object` returns it only once a ``get`` fails."""

from __future__ import annotations

import time
from typing import Any

import ray
from ray.exceptions import OwnerDiedError

from .udfs import Owner

__all__ = ["lost_object"]


def lost_object(bound_s: float = 60.0) -> Any:
    """A reference whose owner (an actor of its own) was killed and whose object a
    ``get`` can no longer reach; fails if it is still reachable after ``bound_s``."""
    owner = ray.remote(Owner).remote()
    [ref] = ray.get(owner.make.remote())
    ray.kill(owner, no_restart=True)
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        try:
            ray.get(ref, timeout=10)
        except OwnerDiedError:
            return ref
        time.sleep(0.05)
    raise AssertionError(f"the object of a killed owner was still reachable after {bound_s}s")
