"""The compiled plan: an immutable graph of Domains, Ports and nodes.

Every node fires once per Entity of the Domain it reads (reduce: of the child
Domain it gathers). Plans are produced by :func:`..compiler.compile_pipeline`
only; the runtime core and the executors read them and never change them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .options import CallOptions

__all__ = [
    "DomainSpec",
    "ModuleSpec",
    "Node",
    "NodeKind",
    "Plan",
    "PortSpec",
]


class NodeKind(enum.Enum):
    SOURCE = "source"
    CALL = "call"
    EXPAND = "expand"
    REDUCE = "reduce"
    FILTER = "filter"
    BROADCAST = "broadcast"


@dataclass(frozen=True, slots=True)
class DomainSpec:
    """One hierarchy level. The root Domain holds the sources."""

    id: int
    name: str
    parent: int | None
    #: The EXPAND node that creates this Domain's Entities (None for the root).
    expand: int | None
    depth: int
    #: Port ids that hold one Item per Entity of this Domain, in slot order.
    ports: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PortSpec:
    id: int
    domain: int
    #: Node producing the Port, and which of its outputs it is.
    producer: int
    index: int
    #: Position of the Port among its Domain's ports (an Entity's item slot).
    slot: int
    label: str


@dataclass(frozen=True, slots=True)
class ModuleSpec:
    """A ``RayModule``: one UDF class, its constructor arguments, one actor pool."""

    id: int
    name: str
    udf: Any
    udf_path: str
    init_args: tuple[Any, ...]
    init_kwargs: tuple[tuple[str, Any], ...]
    num_outputs: int
    options: CallOptions

    @property
    def batch_timeout_s(self) -> float | None:
        """Seconds one batch may run before it counts as hung (None: unbounded)."""
        return self.options.batch_timeout_s


@dataclass(frozen=True, slots=True)
class Node:
    """A plan node. Fields that do not apply to a kind are empty or None."""

    id: int
    kind: NodeKind
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    #: The Domain the node fires in (for REDUCE: the parent Domain it writes).
    domain: int
    #: CALL: the module and static keyword arguments.
    module: int | None = None
    kwargs: tuple[tuple[str, Any], ...] = ()
    #: REDUCE: the ``members`` Port, if any (not in ``inputs``).
    members: int | None = None
    #: REDUCE: the child Domain gathered; EXPAND: the child Domain created.
    child_domain: int | None = None


@dataclass(frozen=True)
class Plan:
    """An immutable compiled pipeline."""

    pipeline: str
    domains: tuple[DomainSpec, ...]
    ports: tuple[PortSpec, ...]
    nodes: tuple[Node, ...]
    modules: tuple[ModuleSpec, ...]
    sources: tuple[int, ...]
    outputs: tuple[int, ...]
    output_names: tuple[str, ...]
    fingerprint: str

    @property
    def root(self) -> DomainSpec:
        return self.domains[0]

    @property
    def calls(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.kind is NodeKind.CALL)

    @property
    def semantic_fingerprint(self) -> str:
        """Like ``fingerprint`` without schedule-only options (replicas, batch sizes,
        ``batch_timeout_s``, retry counts, actor options): what a repair may keep."""
        from .semantics import semantic_fingerprint

        return semantic_fingerprint(self)

    def semantic_record(self) -> dict[str, Any]:
        """The JSON record the semantic fingerprint digests (see ``semantics``)."""
        from .semantics import semantic_record

        return semantic_record(self)

    def compile(self, *, optimize: bool = True) -> Plan:
        """A plan is already compiled: itself. So ``run``, ``Executor`` and
        ``Pipeline.run`` take a compiled plan wherever they take a pipeline."""
        return self

    def consumers(self, port: int) -> tuple[Node, ...]:
        """Nodes reading ``port`` (as an input or as a reduce's ``members``)."""
        return tuple(n for n in self.nodes if port in n.inputs or n.members == port)

    def describe(self) -> str:
        """A readable listing of the plan, one node per line."""
        lines = [f"plan {self.pipeline} fingerprint={self.fingerprint[:12]}"]
        for node in self.nodes:
            ins = ", ".join(self.ports[p].label for p in node.inputs)
            outs = ", ".join(self.ports[p].label for p in node.outputs)
            where = self.domains[node.domain].name
            lines.append(f"  {node.kind.value:<9} {node.name:<16} [{where}] ({ins}) -> ({outs})")
        return "\n".join(lines)
