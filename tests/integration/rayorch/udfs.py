"""UDFs and pipelines for the Ray integration tests (importable by Ray workers)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import airflow_provider_rayorch.rayorch as ro


class Split:
    """A document is an int n: its pages are n, n+1, ... (n % 7 pages)."""

    def run(self, docs: list[int]) -> list[Any]:
        return [list(range(d, d + d % 7)) if d >= 0 else ro.RecordFailure("negative") for d in docs]


class Page:
    """Pages divisible by 13 FAIL; pages ending in 9 raise (poison); others double."""

    def run(self, pages: list[int]) -> list[Any]:
        if any(p % 10 == 9 for p in pages):
            raise ValueError(f"poisoned page in {pages}")
        return [ro.RecordFailure(f"bad page {p}") if p % 13 == 0 else 2 * p for p in pages]


class Join:
    def run(self, groups: list[list[int]], docs: list[int]) -> list[str]:
        return [f"{d}:{sum(g)}" for g, d in zip(groups, docs, strict=True)]


class Docs(ro.Pipeline):
    """``share``: every module's ``share_process`` (None: the engine's default, which
    puts these three modules, asking Ray for nothing, in one process)."""

    def __init__(
        self,
        batch: int = 4,
        replicas: int = 2,
        batching: str = "any_parent",
        in_flight: int = 2,
        share: str | bool | None = None,
    ) -> None:
        self.split = ro.RayModule(Split).ray_options(batch_size=3, share_process=share)
        self.page = ro.RayModule(Page).ray_options(
            replicas=replicas,
            batch_size=batch,
            batching=batching,
            max_batches_in_flight=in_flight,
            recovery=ro.RecoveryPolicy.isolate_tail(),
            share_process=share,
        )
        self.join = ro.RayModule(Join).ray_options(batch_size=5, share_process=share)

    def forward(self, doc: Any) -> Any:
        pages = ro.F.expand(self.split(doc), domain="page")
        return self.join(ro.F.reduce(self.page(pages)), doc)


class Identity:
    def run(self, items: list[Any]) -> list[Any]:
        return items


class Die:
    """Kills its own actor process the first time it sees a row listed in ``marker_dir``.

    Each row in ``rows`` dies once per marker directory; with ``always`` it dies every
    time (to exhaust ``infra_retries``).
    """

    def __init__(self, marker_dir: str, rows: tuple[int, ...], always: bool = False) -> None:
        self.marker_dir = Path(marker_dir)
        self.rows = set(rows)
        self.always = always

    def run(self, items: list[int]) -> list[int]:
        for item in items:
            if item in self.rows:
                marker = self.marker_dir / f"died-{item}"
                if self.always or not marker.exists():
                    marker.touch()
                    os._exit(1)
        return [i * 10 for i in items]


class DiePipeline(ro.Pipeline):
    def __init__(
        self,
        marker_dir: str,
        rows: tuple[int, ...],
        always: bool = False,
        infra_retries: int = 3,
        batch: int = 4,
    ) -> None:
        self.die = (
            ro.RayModule(Die)
            .pre_init(marker_dir, rows, always)
            .ray_options(
                replicas=2,
                batch_size=batch,
                recovery=ro.RecoveryPolicy.retry_batch(1, infra_retries=infra_retries),
            )
        )

    def forward(self, x: Any) -> Any:
        return self.die(x)


class Slow:
    """Sleeps ``delay`` per batch, standing in for a model: gives kills time to land."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def run(self, items: list[int]) -> list[int]:
        import time

        time.sleep(self.delay)
        return [i + 1 for i in items]


class FanSlow(ro.Pipeline):
    def __init__(self, delay: float = 0.01) -> None:
        self.split = ro.RayModule(Split).ray_options(batch_size=4)
        self.slow = (
            ro.RayModule(Slow)
            .pre_init(delay)
            .ray_options(
                replicas=2,
                batch_size=4,
                recovery=ro.RecoveryPolicy.retry_batch(1, infra_retries=50),
            )
        )

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.slow(ro.F.expand(self.split(doc))))


class GroupPages:
    """Page values divisible by 5 raise a GroupFailure (their siblings are moot)."""

    def run(self, pages: list[int]) -> list[Any]:
        return [ro.GroupFailure(f"doomed page {p}") if p % 5 == 0 else p for p in pages]


class Grouped(ro.Pipeline):
    def __init__(self) -> None:
        self.split = ro.RayModule(Split).ray_options(batch_size=8)
        self.page = ro.RayModule(GroupPages).ray_options(
            replicas=1, batch_size=2, max_batches_in_flight=1
        )

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.page(ro.F.expand(self.split(doc), domain="page")))


class Megabyte:
    """Each source n expands to n children of 1 MB each."""

    def run(self, docs: list[int]) -> list[list[bytes]]:
        return [[bytes([k % 251]) * (1 << 20) for k in range(d)] for d in docs]


class Size:
    def run(self, blobs: list[bytes]) -> list[int]:
        return [len(b) + b[0] for b in blobs]


class BigPayloads(ro.Pipeline):
    def __init__(self) -> None:
        self.make = ro.RayModule(Megabyte).ray_options(batch_size=1, replicas=2)
        self.size = ro.RayModule(Size).ray_options(batch_size=16, replicas=2)

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.size(ro.F.expand(self.make(doc))))


class Twice(ro.Pipeline):
    """expand -> render -> measure -> reduce: measure reads render's remote payloads."""

    def __init__(self) -> None:
        self.pages = ro.RayModule(Split).ray_options(batch_size=4)
        self.render = ro.RayModule(Slow).pre_init(0.0).ray_options(batch_size=4)
        self.measure = ro.RayModule(Identity).ray_options(batch_size=4)

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.measure(self.render(ro.F.expand(self.pages(doc)))))


class Owner:
    """Owns an object in its own process; when it dies, the object is lost."""

    def make(self) -> list[Any]:
        import ray

        return [ray.put(b"x" * 1024)]


class Gate:
    """A named actor a UDF waits on, opened by the test (no sleeping on luck)."""

    def __init__(self) -> None:
        self.opened = False

    def open(self) -> None:
        self.opened = True

    def is_open(self) -> bool:
        return self.opened


class GatedPages:
    """``"fail"`` is a GroupFailure, ``"wait"`` blocks until the gate opens, any
    other page comes back upper-cased."""

    def run(self, pages: list[str]) -> list[Any]:
        import time

        import ray

        out: list[Any] = []
        for page in pages:
            if page == "fail":
                out.append(ro.GroupFailure("torn"))
                continue
            if page == "wait":
                gate = ray.get_actor("gate")
                deadline = time.monotonic() + 120
                while not ray.get(gate.is_open.remote()):
                    if time.monotonic() > deadline:
                        raise TimeoutError("the test never opened the gate")
                    time.sleep(0.01)
            out.append(page.upper())
        return out


class Gated(ro.Pipeline):
    """doc (a list of page strings) -> pages on one actor, one page per batch,
    three batches queued at once -> reduce."""

    def __init__(self) -> None:
        self.page = ro.RayModule(GatedPages).ray_options(
            replicas=1, batch_size=1, max_batches_in_flight=3
        )

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.page(ro.F.expand(doc, domain="page")))


class ExitOnInit:
    """Its constructor kills its own process, like a model load that segfaults."""

    def __init__(self) -> None:
        os._exit(1)

    def run(self, items: list[Any]) -> list[Any]:
        return items


class RaiseOnInit:
    """Its constructor raises: a configuration error, not an infrastructure fault."""

    def __init__(self) -> None:
        raise RuntimeError("model weights not found")

    def run(self, items: list[Any]) -> list[Any]:
        return items


class StuckOnInit:
    """Its constructor never returns (a model load that deadlocks)."""

    def __init__(self) -> None:
        import threading

        threading.Event().wait()

    def run(self, items: list[Any]) -> list[Any]:
        return items


class OneModule(ro.Pipeline):
    """One Call of ``udf`` named ``model`` (extra ``ray_options`` pass through)."""

    def __init__(self, udf: type, **options: Any) -> None:
        self.model = ro.RayModule(udf).ray_options(**options)

    def forward(self, x: Any) -> Any:
        return self.model(x)


class HangOn:
    """Rows equal to ``"hang"`` block forever (a deadlocked decoder); others upper-case."""

    def run(self, items: list[str]) -> list[str]:
        import threading

        if "hang" in items:
            threading.Event().wait()
        return [i.upper() for i in items]


class Nest:
    """n -> n lists of words, and a keep flag per list (lists of odd index are dropped)."""

    def run(self, docs: list[int]) -> tuple[list[Any], list[Any]]:
        lists = [[[f"w{d}.{j}.{k}" for k in range(j + 1)] for j in range(d)] for d in docs]
        flags = [[j % 2 == 0 for j in range(d)] for d in docs]
        return lists, flags


class Nested(ro.Pipeline):
    """expand_aligned + filter on remote flags, then a nested expand of remote lists."""

    def __init__(self) -> None:
        self.nest = ro.RayModule(Nest).returns(2).ray_options(batch_size=2)
        self.leaf = ro.RayModule(Identity).ray_options(batch_size=3)

    def forward(self, doc: Any) -> Any:
        lists, flags = self.nest(doc)
        line, keep = ro.F.expand_aligned(lists, flags, domain="line")
        words = ro.F.expand(ro.F.filter(line, keep), domain="word")
        return ro.F.reduce(ro.F.reduce(self.leaf(words)))


class Chars:
    """'gen' rows become a generator (which Ray cannot pickle), others a list."""

    def run(self, paths: list[str]) -> list[Any]:
        return [(c for c in p) if p.startswith("gen") else list(p) for p in paths]


class CountChars:
    def run(self, values: list[Any]) -> list[int]:
        return [len(list(v)) for v in values]


class Generators(ro.Pipeline):
    """A Call whose UDF returns a generator for some rows, then one that reads them."""

    def __init__(self, batch: int = 4) -> None:
        self.chars = ro.RayModule(Chars).ray_options(batch_size=batch)
        self.count = ro.RayModule(CountChars).ray_options(batch_size=batch)

    def forward(self, paths: Any) -> Any:
        return self.count(self.chars(paths))
