"""How a driver learns that batches finished: driver CPU per batch, three ways.

    python -m benchmarks.driver_wait --actors 16 --batches 3000 --rounds 3

A driver keeps two batches in flight on each of ``--actors`` echo actors (the
engine's default ``max_batches_in_flight``) and sends the next one as each
finishes, ``--batches`` in all, the same way the Ray backend's loop does. It
measures the driver process's CPU per batch (every thread of it, Ray's included)
for three ways of finding the finished ones:

- ``wait``: the engine's way, one blocking ``ray.wait`` for the first reference
  and a non-blocking one over the rest;
- ``poll_first``: one non-blocking ``ray.wait`` over every reference first, the
  blocking one only when nothing was ready;
- ``future``: a completion callback per reference (``ObjectRef.future()``) that
  puts it on a queue the driver blocks on, so nothing is scanned.

The variants alternate within each round. Ray is started here, on this machine's
CPUs, and stopped at the end (``ray.shutdown`` of this driver's own cluster).
"""

from __future__ import annotations

import argparse
import queue
import time
from typing import TYPE_CHECKING, Any

import ray

if TYPE_CHECKING:
    from collections.abc import Callable


class Echo:
    """An actor that answers at once with a small reply and a value left remote."""

    def ready(self) -> bool:
        return True

    @ray.method(num_returns=2)
    def run(self, batch: int) -> tuple[int, None]:
        return batch, None


def _drive(
    actors: list[Any],
    batches: int,
    take: Callable[[list[Any]], list[Any]],
    sent_one: Callable[[Any], None] | None = None,
) -> None:
    """Keep two batches in flight per actor until ``batches`` finished; ``take`` gets
    the references in flight and returns those that finished (their replies read);
    ``sent_one`` sees each reference as it is sent."""
    inflight: dict[Any, Any] = {}
    sent = done = 0

    def send(actor: Any) -> None:
        nonlocal sent
        report, _values = actor.run.remote(sent)
        inflight[report] = actor
        sent += 1
        if sent_one is not None:
            sent_one(report)

    for actor in [*actors, *actors]:
        send(actor)
    while done < batches:
        for ref in take(list(inflight)):
            actor = inflight.pop(ref)
            done += 1
            if sent < batches:
                send(actor)


def _wait(refs: list[Any]) -> list[Any]:
    ready, rest = ray.wait(refs, num_returns=1, timeout=None)
    if rest:
        more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
        ready += more
    ray.get(ready)
    return ready


def _poll_first(refs: list[Any]) -> list[Any]:
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
    if not ready:
        ready, _ = ray.wait(refs, num_returns=1, timeout=None)
    ray.get(ready)
    return ready


class _Futures:
    """Completion callbacks: each reference registers one as it is sent (``watch``)
    and the driver blocks on the queue they feed (``take``), scanning nothing."""

    def __init__(self) -> None:
        self.finished: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def watch(self, ref: Any) -> None:
        ref.future().add_done_callback(lambda fut: self.finished.put((ref, fut)))

    def take(self, _refs: list[Any]) -> list[Any]:
        got = [self.finished.get()]
        while True:
            try:
                got.append(self.finished.get_nowait())
            except queue.Empty:
                break
        for _ref, fut in got:
            fut.result()
        return [ref for ref, _ in got]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--actors", type=int, default=16)
    parser.add_argument("--batches", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ray.init(include_dashboard=False, log_to_driver=False)
    try:
        remote: Any = ray.remote(num_cpus=0)(Echo)
        actors = [remote.remote() for _ in range(args.actors)]
        ray.get([a.ready.remote() for a in actors])
        futures = _Futures()
        variants = {
            "wait": lambda: _drive(actors, args.batches, _wait),
            "poll_first": lambda: _drive(actors, args.batches, _poll_first),
            "future": lambda: _drive(actors, args.batches, futures.take, futures.watch),
        }
        for round_ in range(1, args.rounds + 1):
            for name, variant in variants.items():
                cpu, wall = time.process_time(), time.perf_counter()
                variant()
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                print(
                    f"round {round_} {name:10s} driver CPU per batch "
                    f"{1000 * cpu / args.batches:.3f} ms, wall per batch "
                    f"{1000 * wall / args.batches:.3f} ms",
                    flush=True,
                )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
