"""``F``: the structural primitives that move Items between Domains."""

from __future__ import annotations

from ..errors import CompileError
from .plan import NodeKind
from .tracing import Port, Trace, TracedDomain, active_trace

__all__ = ["F"]


def _same_domain(trace: Trace, ports: tuple[object, ...], what: str) -> list[Port]:
    owned = [trace.own(p, f"{what} argument {i}") for i, p in enumerate(ports)]
    if not owned:
        raise CompileError(f"{what} needs at least one Port")
    first = owned[0]._domain
    for port in owned[1:]:
        if port._domain is not first:
            raise CompileError(
                f"{what}: {owned[0]!r} and {port!r} are in different Domains "
                f"({first.name!r} vs {port._domain.name!r}); they must share one Domain"
            )
    return owned


def _child_name(trace: Trace, port: Port, domain: str | None) -> str:
    if domain is not None:
        if not isinstance(domain, str) or not domain.isidentifier():
            raise CompileError(f"F.expand: domain= must be an identifier string, got {domain!r}")
        if trace.domain_name_taken(domain):
            raise CompileError(f"F.expand: a Domain named {domain!r} already exists")
        return domain
    producer = port._producer
    base = producer.name if producer.kind is NodeKind.CALL else f"{port._domain.name}_item"
    return base.replace("[", "_").replace("]", "")


class F:
    """Structural primitives: expand, reduce, filter and broadcast."""

    @staticmethod
    def expand(port: Port, *, domain: str | None = None) -> Port:
        """Each Item's value (a sequence) becomes child Entities with ordinals 0..n-1.

        The child Domain is named ``domain``, or by default after the Call that
        produced ``port`` (``render`` for ``F.expand(self.render(x))``), or
        ``<parent>_item`` when ``port`` is not a Call output.
        """
        return F.expand_aligned(port, domain=domain)[0]

    @staticmethod
    def expand_aligned(*ports: Port, domain: str | None = None) -> tuple[Port, ...]:
        """Expand several outputs of one Call together: child i holds element i of each.

        Sequences of unequal length make that parent's Item FAIL.
        """
        trace = active_trace("F.expand_aligned" if len(ports) != 1 else "F.expand")
        owned = _same_domain(trace, ports, "F.expand_aligned")
        producers = {p._producer.id for p in owned}
        if len(producers) > 1:
            listing = ", ".join(repr(p) for p in owned)
            raise CompileError(
                f"F.expand_aligned: Ports come from different producers ({listing}); "
                "aligned Ports must be outputs of one Call (declared with returns(k))"
            )
        if len({p._id for p in owned}) != len(owned):
            raise CompileError("F.expand_aligned: the same Port is given twice")
        parent = owned[0]._domain
        node = trace.new_node(NodeKind.EXPAND, "", owned, parent)
        child = trace.new_domain(_child_name(trace, owned[0], domain), parent, node.id)
        node.child_domain = child
        node.name = f"expand:{child.name}"
        return tuple(trace.new_port(node, child, f"{child.name}.{p.label}") for p in owned)

    @staticmethod
    def reduce(port: Port, members: Port | None = None) -> Port:
        """Gather children back to their parent: the list of PRESENT values in ordinal order.

        DROPPED children are left out; a FAILED or SUPPRESSED child makes the parent's
        Item SUPPRESSED. With ``members``, only children whose ``members`` Item is
        PRESENT belong to the group.
        """
        return F.reduce_aligned(port, members=members)[0]

    @staticmethod
    def reduce_aligned(*ports: Port, members: Port | None = None) -> tuple[Port, ...]:
        """Reduce several Ports of one child Domain together, keeping them aligned:
        a child is kept in every list only if it is PRESENT in all of them."""
        trace = active_trace("F.reduce_aligned" if len(ports) != 1 else "F.reduce")
        owned = _same_domain(trace, ports, "F.reduce")
        child: TracedDomain = owned[0]._domain
        if child.parent is None or child.expand is None:
            raise CompileError(
                f"F.reduce: {owned[0]!r} is in the root Domain {child.name!r}; a reduce "
                "gathers the children of an F.expand and matches no expand here"
            )
        member_port = None
        if members is not None:
            member_port = trace.own(members, "F.reduce members=")
            if member_port._domain is not child:
                raise CompileError(
                    f"F.reduce: members={member_port!r} is in Domain "
                    f"{member_port._domain.name!r}, not in {child.name!r} like the reduced Ports"
                )
        node = trace.new_node(
            NodeKind.REDUCE,
            f"reduce:{child.name}",
            owned,
            child.parent,
            members=member_port,
            child_domain=child,
        )
        return tuple(trace.new_port(node, child.parent, f"reduce({p.label})") for p in owned)

    @staticmethod
    def filter(port: Port, mask: Port) -> Port:
        """Keep Items whose ``mask`` Item is truthy; the others are DROPPED."""
        trace = active_trace("F.filter")
        value = trace.own(port, "F.filter port")
        flag = trace.own(mask, "F.filter mask")
        if flag._domain is not value._domain:
            raise CompileError(
                f"F.filter: mask {flag!r} is in Domain {flag._domain.name!r} but the "
                f"filtered {value!r} is in {value._domain.name!r}; they must share one Domain"
            )
        node = trace.new_node(NodeKind.FILTER, "filter", [value, flag], value._domain)
        return trace.new_port(node, value._domain, f"filter({value.label})")

    @staticmethod
    def broadcast(port: Port, like: Port) -> Port:
        """Repeat an ancestor's Item for every descendant Entity in ``like``'s Domain."""
        trace = active_trace("F.broadcast")
        value = trace.own(port, "F.broadcast port")
        target = trace.own(like, "F.broadcast like=")
        if not value._domain.is_ancestor_of(target._domain):
            raise CompileError(
                f"F.broadcast: like={target!r} (Domain {target._domain.name!r}) is not a "
                f"descendant of {value!r} (Domain {value._domain.name!r}); broadcast only "
                "brings an ancestor's value down into a descendant Domain"
            )
        node = trace.new_node(
            NodeKind.BROADCAST, f"broadcast:{target._domain.name}", [value], target._domain
        )
        return trace.new_port(node, target._domain, f"broadcast({value.label})")
