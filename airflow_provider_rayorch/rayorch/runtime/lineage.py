"""Lineage state: Entities with parents and immutable ordinals, Items, causes, Grains."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..outcomes import ItemOutcome
from .phases import GrainPhase, read_story
from .sequences import children_of

if TYPE_CHECKING:
    from .state import CallState, DomainState, Microbatch

__all__ = ["PENDING", "Cause", "Entity", "Grain", "Issue", "PlainValues", "ValueOps"]


class _Pending:
    __slots__ = ()

    def __repr__(self) -> str:
        return "PENDING"


#: The content of an Item slot that has no outcome yet.
PENDING: Any = _Pending()


class Entity:
    """One unit of one Domain: a source row, or a child made by an expand.

    ``items`` has one slot per Port of the Domain, holding ``PENDING``, a value
    (PRESENT) or an ``Issue``. ``ordinal`` never changes once assigned.
    """

    __slots__ = (
        "children",
        "domain",
        "gfail",
        "grains",
        "items",
        "mb",
        "ordinal",
        "parent",
        "source",
        "waits",
    )

    def __init__(
        self, domain: DomainState, parent: Entity | None, ordinal: int, mb: Microbatch, source: int
    ) -> None:
        self.domain = domain
        self.parent = parent
        self.ordinal = ordinal
        self.mb = mb
        self.source = source
        self.items: list[Any] = [PENDING] * domain.n_slots
        #: expand node id -> its children, or the Issue that stopped the expand.
        self.children: dict[int, list[Entity] | Issue] | None = None
        #: node id -> inputs (or child Items) still pending before the node fires.
        self.waits: dict[int, int] | None = None
        #: call node id -> this Entity's Grain for that Call.
        self.grains: dict[int, Grain] | None = None
        #: call node id -> (Cause, failing Grain) of a GroupFailure among its children.
        self.gfail: dict[int, tuple[Cause, Grain]] | None = None

    def path(self) -> str:
        """``doc[17]/page[3]``: Domain names with source index or ordinals."""
        parts = []
        cursor: Entity | None = self
        while cursor is not None:
            index = cursor.source if cursor.parent is None else cursor.ordinal
            parts.append(f"{cursor.domain.name}[{index}]")
            cursor = cursor.parent
        return "/".join(reversed(parts))

    def __repr__(self) -> str:
        return f"<Entity {self.path()}>"


class Cause:
    """Where a failure began: the Entity it happened on, and the message."""

    __slots__ = ("message", "origin", "text")

    def __init__(self, origin: Entity, message: str) -> None:
        self.origin = origin
        self.message = message
        self.text = f"{origin.path()}: {message}"

    def __repr__(self) -> str:
        return f"Cause({self.text!r})"


class Issue:
    """The content of a non-PRESENT Item slot."""

    __slots__ = ("cause", "outcome")

    def __init__(self, outcome: ItemOutcome, cause: Cause) -> None:
        self.outcome = outcome
        self.cause = cause

    def propagated(self) -> Issue:
        """What an Item whose input had this Issue becomes."""
        if self.outcome is ItemOutcome.DROPPED or self.outcome is ItemOutcome.SUPPRESSED:
            return self
        return Issue(ItemOutcome.SUPPRESSED, self.cause)

    def __repr__(self) -> str:
        return f"Issue({self.outcome.value}, {self.cause.text!r})"


class Grain:
    """One Call applied to one Entity: the unit of computation."""

    __slots__ = (
        "call",
        "entity",
        "gen",
        "infra",
        "lost",
        "phase",
        "retries",
        "seq",
        "story",
        "t_ready",
    )

    def __init__(self, call: CallState, entity: Entity, seq: int, now: float) -> None:
        self.call = call
        self.entity = entity
        self.phase = GrainPhase.READY
        #: Dispatch generation: bumped on every dispatch; reports must match it.
        self.gen = 0
        self.retries = 0
        self.infra = 0
        #: Times it was in flight on a worker that died (charged or not): such a Grain
        #: runs alone on an idle worker, so a death it causes is never pinned on another.
        self.lost = 0
        self.seq = seq
        self.t_ready = now
        #: One letter per transition (see ``phases.read_story``): cheap and untracked.
        self.story = ""

    def describe(self) -> str:
        return f"Grain {self.call.name}@{self.entity.path()} (generation {self.gen})"

    def story_lines(self) -> list[str]:
        return read_story(self.story)


class ValueOps:
    """How the core looks inside values it otherwise treats as opaque.

    Executors whose values are references (Ray) override these.
    """

    def split(self, value: Any) -> list[Any] | None:
        """The elements of a sequence value, or None when it is not a sequence
        (the rule is ``sequences.is_expandable``)."""
        return children_of(value)

    def truth(self, value: Any) -> bool:
        return bool(value)

    def gather(self, values: list[Any]) -> Any:
        return values

    def kind(self, value: Any) -> str:
        return type(value).__name__


PlainValues = ValueOps
