"""Admission and completion of microbatches: slices of the sources in, outputs out.

At most ``max_active`` microbatches are admitted at once, in index order; one
completes when none of its Item slots is PENDING, and its outputs are then
read off its root Entities, whose lineage is released. A finished microbatch
leaves with its ``MicrobatchDone`` command: admission keeps only counters, so a
run holds what is in flight, however many sources it streams.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..outcomes import ItemOutcome, OutputIssue
from .events import Command, MicrobatchDone, RunFinished
from .items import settle
from .lineage import Entity, Issue
from .state import Microbatch

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from ..program.plan import Plan
    from .state import DomainState

__all__ = ["Admission", "check_columns", "check_limits", "layout"]

_DROPPED, _FAILED, _SUPPRESSED = ItemOutcome.DROPPED, ItemOutcome.FAILED, ItemOutcome.SUPPRESSED
_RANK = {ItemOutcome.DROPPED: 1, ItemOutcome.SUPPRESSED: 2, ItemOutcome.FAILED: 3}


class Admission:
    __slots__ = (
        "_columns",
        "_layout",
        "_output_slots",
        "_root",
        "_source_slots",
        "active",
        "admitted",
        "finished",
        "just_done",
        "max_active",
        "microbatches_done",
        "out",
        "sources_done",
    )

    def __init__(
        self,
        columns: list[Sequence[Any]],
        layout: list[tuple[int, int, int]],
        max_active: int,
        root: DomainState,
        source_slots: tuple[int, ...],
        output_slots: tuple[int, ...],
        out: list[Command],
    ) -> None:
        self._columns = columns
        #: (index, first source, count) of the microbatches still to admit, last first.
        self._layout = list(reversed(layout))
        self.max_active = max_active
        self._root = root
        self._source_slots = source_slots
        self._output_slots = output_slots
        self.out = out
        self.active: list[Microbatch] = []
        #: Microbatches admitted, and finished, so far; sources of the finished ones.
        self.admitted = self.microbatches_done = self.sources_done = 0
        #: Weak references to those finished by the current event, for ``validation``
        #: (cleared before each event): the core holds no finished microbatch.
        self.just_done: list[weakref.ref[Microbatch]] = []
        #: RunFinished was emitted.
        self.finished = False

    def admit_more(self, now: float) -> None:
        """Admit microbatches up to ``max_active``; emit RunFinished when all are done."""
        layout, active, root = self._layout, self.active, self._root
        while layout and len(active) < self.max_active:
            index, first, count = layout.pop()
            mb = Microbatch(index, first, count, now)
            active.append(mb)
            self.admitted += 1
            mb.entity_counts[root.name] = count
            mb.outstanding = count * root.n_slots
            mb.roots = [Entity(root, None, first + i, mb, first + i) for i in range(count)]
            cols = self._columns
            for i, entity in enumerate(mb.roots):
                for k, slot in enumerate(self._source_slots):
                    settle(entity, slot, cols[k][first + i])
        if not active and not layout and not self.finished:
            self.finished = True
            self.out.append(RunFinished())

    def complete_finished(self, now: float) -> bool:
        """Close every microbatch with no PENDING Item and admit more; False if none."""
        finished = [mb for mb in self.active if mb.outstanding == 0]
        if not finished:
            return False
        for mb in finished:
            self.active.remove(mb)
            self._close(mb, now)
            self.microbatches_done += 1
            self.sources_done += mb.count
            self.just_done.append(weakref.ref(mb))
            self.out.append(MicrobatchDone(mb))
        self.admit_more(now)
        return True

    def _close(self, mb: Microbatch, now: float) -> None:
        mb.finished = now
        outputs: list[list[Any]] = [[] for _ in self._output_slots]
        outcomes = []
        failures = []
        for entity in mb.roots:
            worst: tuple[int, OutputIssue] | None = None
            for k, slot in enumerate(self._output_slots):
                content = entity.items[slot]
                if type(content) is Issue:
                    issue = _output_issue(content, entity)
                    outputs[k].append(issue)
                    rank = _RANK[issue.outcome]
                    if worst is None or rank > worst[0]:
                        worst = (rank, issue)
                else:
                    outputs[k].append(content)
            if worst is None:
                outcomes.append(ItemOutcome.PRESENT)
            else:
                issue = worst[1]
                outcomes.append(issue.outcome)
                if issue.outcome is not _DROPPED:
                    failures.append(
                        {
                            "source": entity.source,
                            "outcome": issue.outcome.value,
                            "cause": issue.cause,
                        }
                    )
        mb.outputs = outputs
        mb.source_outcomes = outcomes
        mb.failures = failures
        _release(mb.roots)
        mb.roots = []


def layout(n: int, size: int, skip: Collection[int]) -> list[tuple[int, int, int]]:
    """(index, first source, count) of each microbatch of ``size`` not in ``skip``."""
    skipped = set(skip)
    return [
        (i, first, min(size, n - first))
        for i, first in enumerate(range(0, n, size))
        if i not in skipped
    ]


def check_limits(input_batch_size: Any, max_active_input_batches: Any) -> None:
    if input_batch_size is not None and (
        not isinstance(input_batch_size, int)
        or isinstance(input_batch_size, bool)
        or input_batch_size < 1
    ):
        raise UsageError(f"input_batch_size must be an int >= 1 or None, got {input_batch_size!r}")
    if not isinstance(max_active_input_batches, int) or max_active_input_batches < 1:
        raise UsageError(
            f"max_active_input_batches must be an int >= 1, got {max_active_input_batches!r}"
        )


def check_columns(plan: Plan, columns: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
    expected = len(plan.sources)
    if len(columns) != expected:
        names = ", ".join(plan.ports[p].label for p in plan.sources)
        raise UsageError(
            f"{plan.pipeline} takes {expected} source column(s) ({names}); got {len(columns)}"
        )
    checked: list[Sequence[Any]] = []
    for port, column in zip(plan.sources, columns, strict=True):
        if isinstance(column, (str, bytes)) or not hasattr(column, "__len__"):
            raise UsageError(
                f"source column {plan.ports[port].label!r} must be a sequence of rows, "
                f"got {type(column).__name__}"
            )
        checked.append(column if isinstance(column, (list, tuple)) else list(column))
    lengths = {len(c) for c in checked}
    if len(lengths) > 1:
        raise UsageError(f"source columns have different lengths: {sorted(lengths)}")
    return checked


def _output_issue(issue: Issue, root: Entity) -> OutputIssue:
    """How a non-PRESENT output Item of source ``root`` is reported."""
    if issue.outcome is _DROPPED:
        return OutputIssue(ItemOutcome.DROPPED, issue.cause.text)
    outcome = _FAILED if issue.cause.origin is root else _SUPPRESSED
    return OutputIssue(outcome, issue.cause.text)


def _release(roots: list[Entity]) -> None:
    """Break the parent/child cycles of a finished microbatch's lineage.

    Reference counting then frees it at once, without waiting for a full
    garbage collection (which executors keep rare; see ``execution.gc_policy``).
    """
    stack = list(roots)
    while stack:
        e = stack.pop()
        children = e.children
        if children:
            for kids in children.values():
                if type(kids) is list:
                    stack.extend(kids)
        e.children = e.grains = e.gfail = e.waits = None
