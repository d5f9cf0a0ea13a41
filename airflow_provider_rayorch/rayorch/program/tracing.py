"""Symbolic tracing: ``Port``s and the trace that records what ``forward`` builds."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import CompileError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .plan import NodeKind

__all__ = ["Port", "Trace", "TracedDomain", "TracedNode", "active_trace"]

_ACTIVE: contextvars.ContextVar[Trace | None] = contextvars.ContextVar(
    "rayorch_trace", default=None
)


@dataclass(eq=False)
class TracedDomain:
    id: int
    name: str
    parent: TracedDomain | None
    expand: int | None

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth + 1

    def is_ancestor_of(self, other: TracedDomain) -> bool:
        """True if ``self`` is a strict ancestor of ``other``."""
        cursor = other.parent
        while cursor is not None:
            if cursor is self:
                return True
            cursor = cursor.parent
        return False


@dataclass(eq=False)
class TracedNode:
    id: int
    kind: NodeKind
    name: str
    inputs: list[Port]
    domain: TracedDomain
    outputs: list[Port] = field(default_factory=list)
    module: Any = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    members: Port | None = None
    child_domain: TracedDomain | None = None


class Port:
    """A symbolic column of Items in one Domain, as seen while tracing ``forward``.

    Ports carry no values: they only say where values will flow. Truth tests,
    iteration and indexing raise ``CompileError``, since the value is not known.
    """

    __slots__ = ("_domain", "_id", "_index", "_label", "_producer", "_trace")

    def __init__(
        self,
        trace: Trace,
        port_id: int,
        domain: TracedDomain,
        producer: TracedNode,
        index: int,
        label: str,
    ) -> None:
        self._trace = trace
        self._id = port_id
        self._domain = domain
        self._producer = producer
        self._index = index
        self._label = label

    @property
    def domain(self) -> str:
        """The name of the Port's Domain."""
        return self._domain.name

    @property
    def label(self) -> str:
        return self._label

    def __repr__(self) -> str:
        return f"<Port {self._label} in Domain {self._domain.name!r}>"

    def __bool__(self) -> bool:
        raise CompileError(
            f"{self!r} was used as a truth value (if/and/or/not) inside forward(); "
            "Ports are symbolic and have no value while tracing. "
            "Use ro.F.filter(port, mask) to keep or drop Items by a condition."
        )

    def __iter__(self) -> Iterator[Port]:
        raise CompileError(
            f"{self!r} cannot be iterated or unpacked: it is a single output. "
            f"If its Call should have several outputs, declare them with .returns(k)."
        )

    def __len__(self) -> int:
        raise CompileError(f"{self!r} has no length while tracing; Ports are symbolic.")

    def __getitem__(self, key: object) -> Port:
        raise CompileError(
            f"{self!r} cannot be indexed while tracing; Ports are symbolic. "
            "Index values inside a UDF's run() instead."
        )


class CallOutputs(tuple[Port, ...]):
    """The k output Ports of a Call declared with ``returns(k)``."""

    call: str


class Trace:
    """Records the Domains, nodes and Ports that one ``forward`` call builds."""

    def __init__(self) -> None:
        self.domains: list[TracedDomain] = []
        self.nodes: list[TracedNode] = []
        self.ports: list[Port] = []
        self.module_names: dict[int, str] = {}
        self.call_counts: dict[str, int] = {}
        #: Outputs of every Call declared with returns(k), to explain unpacking errors.
        self.multi_outputs: list[CallOutputs] = []

    # -- building -------------------------------------------------------------
    def new_domain(
        self, name: str, parent: TracedDomain | None, expand: int | None
    ) -> TracedDomain:
        taken = {d.name for d in self.domains}
        unique, n = name, 2
        while unique in taken:
            unique, n = f"{name}_{n}", n + 1
        domain = TracedDomain(len(self.domains), unique, parent, expand)
        self.domains.append(domain)
        return domain

    def domain_name_taken(self, name: str) -> bool:
        return any(d.name == name for d in self.domains)

    def new_node(
        self, kind: NodeKind, name: str, inputs: list[Port], domain: TracedDomain, **extra: Any
    ) -> TracedNode:
        node = TracedNode(len(self.nodes), kind, name, list(inputs), domain, **extra)
        self.nodes.append(node)
        return node

    def new_port(self, node: TracedNode, domain: TracedDomain, label: str) -> Port:
        port = Port(self, len(self.ports), domain, node, len(node.outputs), label)
        self.ports.append(port)
        node.outputs.append(port)
        return port

    def call_name(self, base: str) -> str:
        count = self.call_counts.get(base, 0) + 1
        self.call_counts[base] = count
        return base if count == 1 else f"{base}_{count}"

    # -- checks ---------------------------------------------------------------
    def own(self, value: object, where: str) -> Port:
        """Return ``value`` as a Port of this trace, or raise ``CompileError``."""
        if not isinstance(value, Port):
            raise CompileError(
                f"{where}: expected a Port, got {type(value).__name__} {value!r:.60}. "
                "Only Ports (the arguments of forward() and what Calls and ro.F return) "
                "may flow between Calls; pass constants as keyword arguments."
            )
        if value._trace is not self:
            raise CompileError(f"{where}: {value!r} belongs to another pipeline's trace")
        return value

    # -- context --------------------------------------------------------------
    def __enter__(self) -> Trace:
        self._token = _ACTIVE.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.reset(self._token)


def active_trace(what: str) -> Trace:
    """The trace in progress, or ``CompileError`` when ``what`` is used outside one."""
    trace = _ACTIVE.get()
    if trace is None:
        raise CompileError(
            f"{what} can only be used inside a Pipeline's forward() while it is traced "
            "(by Pipeline.compile(), run() or an Executor)."
        )
    return trace
