"""RayOrchNewSourcesTrigger's contract under any order of writes, listings, re-checks,
acknowledgements and restarts (a hypothesis state machine over an in-memory folder
and an injected clock):

* a file is announced only once nothing has touched it for the quiet period;
* no file is announced again once an event holding it is stored, nor while an
  event holding it awaits its outcome;
* once writes stop, listings two quiet periods later have announced every file.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from airflow.triggers.shared_stream import AdvanceItem, AdvanceOutcome
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from airflow_provider_rayorch.assets.watch_state import ListedFile
from airflow_provider_rayorch.triggers import sources
from airflow_provider_rayorch.triggers.sources import QUIET_PERIOD_S, NewSourcesProducer
from tests.unit.rayorch.support import HYPOTHESIS

Q = QUIET_PERIOD_S
POLL = 30.0
T0 = 1_000_000_000.0
GLOB = "/in/*.txt"
NAMES = [f"/in/{c}.txt" for c in "abcde"]


class _Folder:
    """The listed folder: ``{uri: (size, mtime)}``; a file's mtime is its last change."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[int, float]] = {}

    def list(self, uri_glob: str) -> list[ListedFile]:
        return [ListedFile(u, s, m) for u, (s, m) in sorted(self.files.items())]

    def stat(self, uri_glob: str, uris: list[str]) -> list[ListedFile]:
        return [ListedFile(u, *self.files[u]) for u in uris if u in self.files]


class _State:
    """An asset state store in memory; values go through JSON as to the database."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    async def aget(self, key: str, default: Any = None) -> Any:
        return json.loads(self.rows[key]) if key in self.rows else default

    async def aset(self, key: str, value: Any) -> None:
        self.rows[key] = json.dumps(value)


class Watch(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = _Folder()
        self.state = _State()
        self.now = T0
        self.stored: set[str] = set()
        self.producer = self._start()
        self.unresolved: list[tuple[ListedFile, ...]] = []
        self._real = (sources._list_files, sources._stat_files)
        sources._list_files = self.folder.list  # type: ignore[assignment]
        sources._stat_files = self.folder.stat  # type: ignore[assignment]

    def teardown(self) -> None:
        sources._list_files, sources._stat_files = self._real  # type: ignore[assignment]

    def _start(self) -> NewSourcesProducer:
        return NewSourcesProducer(
            uri_glob=GLOB,
            asset_name="inbox",
            poll_interval=POLL,
            max_files_per_event=2,
            state=self.state,
            clock=lambda: self.now,
        )

    def _look(self, whole: bool) -> None:
        p = self.producer
        batch, token = asyncio.run(p.poll() if whole else p.recheck())
        in_flight = {f.uri for t in self.unresolved for f in t}
        for f in batch.files:
            assert f.uri not in self.stored, f"{f.uri} announced again after its event was stored"
            assert f.uri not in in_flight, f"{f.uri} announced while its event awaits an outcome"
            size, mtime = self.folder.files[f.uri]
            assert f.size == size
            assert self.now - mtime >= Q, f"{f.uri} announced {self.now - mtime}s after a write"
        self.unresolved.append(token)

    def _resolve(self, clean: bool) -> None:
        token = self.unresolved.pop(0)
        outcome = AdvanceOutcome(acked=1, failed=0) if clean else AdvanceOutcome(acked=0, failed=1)
        asyncio.run(self.producer.advance([AdvanceItem(token, outcome)]))
        if clean:
            self.stored.update(f.uri for f in token)

    @rule(uri=st.sampled_from(NAMES))
    def move_a_finished_file_in(self, uri: str) -> None:
        if uri not in self.folder.files:
            self.folder.files[uri] = (10, self.now - 10 * Q)

    @rule(uri=st.sampled_from(NAMES))
    def write(self, uri: str) -> None:
        size = self.folder.files.get(uri, (0, 0.0))[0]
        self.folder.files[uri] = (size + 1, self.now)

    @rule(seconds=st.sampled_from([0.25, Q / 2, Q, POLL]))
    def time_passes(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def listing(self) -> None:
        self._look(whole=True)

    @rule()
    def recheck(self) -> None:
        self._look(whole=False)

    @rule(clean=st.booleans())
    def outcome(self, clean: bool) -> None:
        if self.unresolved:
            self._resolve(clean)

    @rule()
    def restart(self) -> None:
        """The triggerer dies: events not resolved are lost with it."""
        self.unresolved = []
        self.producer = self._start()

    @rule()
    def writes_stop_and_everything_lands(self) -> None:
        while self.unresolved:
            self._resolve(clean=True)
        self.now += Q
        self._look(whole=True)  # a look that saw a file change counts a quiet period from it
        self._resolve(clean=True)
        self.now += Q
        for _ in range(len(NAMES)):
            self._look(whole=True)
            self._resolve(clean=True)
        assert self.stored == set(self.folder.files)


Watch.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=30,
    **HYPOTHESIS,
    suppress_health_check=[HealthCheck.too_slow],
)
test_new_sources_watch = Watch.TestCase
