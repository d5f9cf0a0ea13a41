"""The semantic contract as a property: the engine equals a naive evaluator.

Hypothesis draws a random pipeline (nesting up to 3 levels below the sources,
empty groups, filters, broadcasts, aligned expands and reduces, ``members=``),
random per-row behaviour (values, drops through filter masks, RecordFailure,
GroupFailure, poisoned rows under every retrying policy, transient exceptions
that a retry cures, non-sequence and unequal-length expands) and a random schedule
(batch sizes, batching policy, replicas, recovery policy, ``input_batch_size``,
``max_active_input_batches``, and a ``Chaos`` that shuffles completions,
duplicates reports and kills workers within the infra budget).

The oracle below evaluates the same program recursively, one Item at a time,
straight from the contract; it never looks at the engine. Every per-row
outcome is a function of the row's value (a CRC of it), so the oracle knows it.

GroupFailure is the one rule whose effect on siblings depends on the schedule
(queued siblings are suppressed, committed ones are not): the oracle tracks
such Items as *uncertain* and only checks what the contract fixes (a parent
that gathers a GroupFailure is SUPPRESSED). Causes are compared wherever the
oracle knows them exactly, which includes every source with a single failure.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.local import Chaos

from .support import HYPOTHESIS, check_core

ROOT = "doc"
INFRA = 8  # infra_retries of every generated Call
CI = bool(os.environ.get("CI"))


# =============================================================================
# Per-row behaviour: a pure function of (call, row values)
# =============================================================================
def crc(*parts: Any) -> int:
    return zlib.crc32(repr(parts).encode())


@dataclass(frozen=True)
class Rates:
    """Per-mille rates of each row behaviour of one Call."""

    rf: int = 0
    gf: int = 0
    poison: int = 0
    transient: int = 0
    bad_split: int = 0


@dataclass(frozen=True)
class Behaviour:
    """What one row of one Call does."""

    kind: str  # "value" | "rf" | "gf" | "poison"
    value: Any = None
    message: str = ""
    transient: bool = False


def behave(cid: int, kind: str, rates: Rates, args: tuple[Any, ...]) -> Behaviour:
    h = crc(cid, args)
    roll = h % 1000
    transient = (h // 1000) % 1000 < rates.transient
    tag = (h // 7) % 100
    cut = 0
    for name, rate in (("rf", rates.rf), ("gf", rates.gf), ("poison", rates.poison)):
        cut += rate
        if roll < cut:
            return Behaviour(name, message=f"{name}{cid}:{tag}", transient=transient)
    if kind == "map":
        value: Any = (h // 13) % 97
    elif kind == "mask":
        value = (h // 17) % 2 == 0
    elif kind in ("split", "split2"):
        n = (h // 19) % 4  # 0..3: empty groups included
        first = [(h // (23 + k)) % 50 for k in range(n)]
        if (h // 29) % 1000 < rates.bad_split:
            # a non-sequence (split) or sequences of unequal length (split2)
            value = (h % 9) if kind == "split" else (first, [*first, 1])
        elif kind == "split":
            value = first
        else:
            value = (first, [(h // (31 + k)) % 50 for k in range(n)])
    else:  # pragma: no cover
        raise AssertionError(kind)
    return Behaviour("value", value=value, transient=transient)


class Marks:
    """Values whose transient exception already fired (shared by a run's replicas)."""

    def __init__(self) -> None:
        self.fired: set[tuple[int, str]] = set()


class SpecUDF:
    """Every Call of a generated pipeline: ``run(*columns)`` per ``behave``."""

    def __init__(self, cid: int, kind: str, rates: Rates, marks: Marks) -> None:
        self.cid, self.kind, self.rates, self.marks = cid, kind, rates, marks

    def run(self, *columns: list[Any]) -> Any:
        rows = list(zip(*columns, strict=True))
        behaviours = [behave(self.cid, self.kind, self.rates, row) for row in rows]
        unfired = [
            (self.cid, repr(row))
            for row, b in zip(rows, behaviours, strict=True)
            if b.transient and (self.cid, repr(row)) not in self.marks.fired
        ]
        if unfired:
            self.marks.fired.update(unfired)
            raise RuntimeError(f"transient c{self.cid}")
        poisoned = [b for b in behaviours if b.kind == "poison"]
        if poisoned:
            raise ValueError(poisoned[0].message)
        out: list[Any] = []
        for b in behaviours:
            if b.kind == "rf":
                out.append(ro.RecordFailure(b.message))
            elif b.kind == "gf":
                out.append(ro.GroupFailure(b.message))
            else:
                out.append(b.value)
        if self.kind == "split2":
            firsts = [v[0] if isinstance(v, tuple) else v for v in out]
            seconds = [v[1] if isinstance(v, tuple) else v for v in out]
            return firsts, seconds
        return out


# =============================================================================
# Program spec and its Pipeline
# =============================================================================
@dataclass
class Domain:
    id: int
    name: str
    parent: int | None
    expand_op: int | None = None  # index of the expand op in Spec.ops


@dataclass
class Spec:
    domains: list[Domain] = field(default_factory=list)
    port_domain: list[int] = field(default_factory=list)
    # ops, in forward order:
    #   ("call", cid, kind, [in ports], [out ports])
    #   ("filter", port, mask, out)
    #   ("expand", [in ports], [out ports], domain id, explicit name or None)
    #   ("reduce", [in ports], members or None, [out ports], child domain id)
    #   ("broadcast", port, like, out)
    ops: list[tuple[Any, ...]] = field(default_factory=list)
    calls: dict[int, tuple[str, Rates, ro.RecoveryPolicy, dict[str, Any]]] = field(
        default_factory=dict
    )
    sources: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    producer: dict[int, int] = field(default_factory=dict)  # port -> op index

    def new_port(self, domain: int, op: int) -> int:
        self.port_domain.append(domain)
        self.producer[len(self.port_domain) - 1] = op
        return len(self.port_domain) - 1

    def describe(self) -> str:
        lines = [f"domains: {[(d.id, d.name, d.parent) for d in self.domains]}"]
        lines += [f"  {op}" for op in self.ops]
        for cid, (kind, rates, policy, opts) in self.calls.items():
            lines.append(f"  c{cid}: {kind} {rates} {policy.describe()} {opts}")
        lines.append(f"outputs: {self.outputs}")
        return "\n".join(lines)


def build_pipeline(spec: Spec, marks: Marks) -> ro.Pipeline:
    class Generated(ro.Pipeline):
        def __init__(self) -> None:
            for cid, (kind, rates, policy, opts) in spec.calls.items():
                module = ro.RayModule(SpecUDF).pre_init(cid, kind, rates, marks)
                if kind == "split2":
                    module.returns(2)
                setattr(
                    self,
                    f"c{cid}",
                    module.ray_options(recovery=policy, **opts),
                )

        def forward(self, doc: ro.Port, extra: ro.Port) -> Any:
            ports: dict[int, ro.Port] = {spec.sources[0]: doc, spec.sources[1]: extra}
            for op in spec.ops:
                if op[0] == "call":
                    _, cid, _kind, ins, outs = op
                    res = getattr(self, f"c{cid}")(*[ports[p] for p in ins])
                    if len(outs) == 1:
                        ports[outs[0]] = res
                    else:
                        a, b = res
                        ports[outs[0]], ports[outs[1]] = a, b
                elif op[0] == "filter":
                    _, p, mask, out = op
                    ports[out] = ro.F.filter(ports[p], ports[mask])
                elif op[0] == "expand":
                    _, ins, outs, _dom, name = op
                    if len(ins) == 1:
                        ports[outs[0]] = ro.F.expand(ports[ins[0]], domain=name)
                    else:
                        got = ro.F.expand_aligned(*[ports[p] for p in ins], domain=name)
                        for o, port in zip(outs, got, strict=True):
                            ports[o] = port
                elif op[0] == "reduce":
                    _, ins, members, outs, _child = op
                    m = None if members is None else ports[members]
                    if len(ins) == 1:
                        ports[outs[0]] = ro.F.reduce(ports[ins[0]], members=m)
                    else:
                        got = ro.F.reduce_aligned(*[ports[p] for p in ins], members=m)
                        for o, port in zip(outs, got, strict=True):
                            ports[o] = port
                elif op[0] == "broadcast":
                    _, p, like, out = op
                    ports[out] = ro.F.broadcast(ports[p], like=ports[like])
            outs = [ports[p] for p in spec.outputs]
            return outs[0] if len(outs) == 1 else tuple(outs)

    return Generated()


# =============================================================================
# Strategies
# =============================================================================
rates_st = st.builds(
    Rates,
    rf=st.sampled_from([0, 100, 300]),
    gf=st.sampled_from([0, 0, 0, 150, 400]),
    poison=st.sampled_from([0, 0, 0, 150]),
    transient=st.sampled_from([0, 0, 200]),
    bad_split=st.sampled_from([0, 0, 200]),
)


RETRYING = [
    ro.RecoveryPolicy.retry_batch,
    ro.RecoveryPolicy.retry_tail,
    ro.RecoveryPolicy.isolate_tail,
]


def draw_call_options(data: st.DataObject, rates: Rates) -> tuple[ro.RecoveryPolicy, dict]:
    if rates.poison:
        # Deterministic per-row exceptions: every retrying policy splits a batch until
        # a row raises alone before it FAILS one, so outputs are schedule-free.
        make = data.draw(st.sampled_from(RETRYING))
        policy = make(max_retries=data.draw(st.integers(0, 2)), infra_retries=INFRA)
    else:
        # Only transient exceptions: every raise marks its values, so retries are
        # bounded by the number of transient rows; the budget is never the limit.
        make = data.draw(st.sampled_from(RETRYING))
        policy = make(max_retries=1000, infra_retries=INFRA)
    opts = {
        "batch_size": data.draw(st.integers(1, 5)),
        "replicas": data.draw(st.integers(1, 3)),
        "batching": data.draw(st.sampled_from(["any_parent", "single_parent"])),
        "max_batches_in_flight": data.draw(st.integers(1, 3)),
    }
    return policy, opts


class Builder:
    def __init__(self, data: st.DataObject, group_failures: bool = True) -> None:
        self.data = data
        self.group_failures = group_failures
        self.spec = Spec()
        self.cid = 0

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def call(self, kind: str, ins: list[int], domain: int) -> list[int]:
        cid = self.cid = self.cid + 1
        rates = self.draw(rates_st)
        if not self.group_failures:
            rates = Rates(rates.rf, 0, rates.poison, rates.transient, rates.bad_split)
        if kind == "mask":
            rates = Rates(rf=rates.rf // 2, transient=rates.transient)
        elif rates.poison:
            # A retry must not be spent on a transient: the policy may have 0 retries.
            rates = Rates(rates.rf, rates.gf, rates.poison, 0, rates.bad_split)
        policy, opts = draw_call_options(self.data, rates)
        self.spec.calls[cid] = (kind, rates, policy, opts)
        op = len(self.spec.ops)
        outs = [self.spec.new_port(domain, op) for _ in range(2 if kind == "split2" else 1)]
        self.spec.ops.append(("call", cid, kind, list(ins), outs))
        return outs

    def ancestors(self, domain: int) -> list[int]:
        out = []
        cursor = self.spec.domains[domain].parent
        while cursor is not None:
            out.append(cursor)
            cursor = self.spec.domains[cursor].parent
        return out

    def ports_of(self, domain: int) -> list[int]:
        return [p for p, d in enumerate(self.spec.port_domain) if d == domain]

    def body(self, domain: int, depth: int) -> None:
        steps = self.draw(st.integers(1, 3 if depth < 2 else 2))
        for _ in range(steps):
            action = self.draw(
                st.sampled_from(
                    ["map", "map", "filter", "filter", "nest", "nest"]
                    if depth < 3
                    else ["map", "filter"]
                )
            )
            ports = self.ports_of(domain)
            # favour recent Ports, so chains (drop -> call -> reduce) are common
            pick = st.one_of(st.sampled_from(ports[-3:]), st.sampled_from(ports))
            if action == "map":
                ins = self.draw(st.lists(pick, min_size=1, max_size=3))
                self.call("map", ins, domain)
            elif action == "filter":
                port = self.draw(pick)
                mask = self.call("mask", [self.draw(pick)], domain)[0]
                op = len(self.spec.ops)
                out = self.spec.new_port(domain, op)
                self.spec.ops.append(("filter", port, mask, out))
            else:
                self.nest(domain, depth)

    def nest(self, domain: int, depth: int) -> None:
        spec = self.spec
        port = self.draw(st.sampled_from(self.ports_of(domain)))
        aligned = self.draw(st.booleans())
        split = self.call("split2" if aligned else "split", [port], domain)
        if aligned:
            # expand both outputs together, or only one of them
            split = self.draw(st.sampled_from([split, split[:1], split[1:]]))
        explicit = self.draw(st.booleans())
        child = len(spec.domains)
        name = f"d{child}" if explicit else None
        cid = self.cid
        spec.domains.append(Domain(child, name or f"c{cid}", domain, len(spec.ops)))
        op = len(spec.ops)
        outs = [spec.new_port(child, op) for _ in split]
        spec.ops.append(("expand", split, outs, child, name))
        like = outs[0]
        # broadcast something from an ancestor (or the parent) into the child
        if self.draw(st.booleans()):
            source_domain = self.draw(st.sampled_from([domain, *self.ancestors(domain)]))
            src = self.draw(st.sampled_from(self.ports_of(source_domain)))
            op = len(spec.ops)
            out = spec.new_port(child, op)
            spec.ops.append(("broadcast", src, like, out))
        self.body(child, depth + 1)
        # gather back: one or two Ports, maybe with members=
        child_ports = self.ports_of(child)
        ins = self.draw(st.lists(st.sampled_from(child_ports), min_size=1, max_size=2, unique=True))
        members = self.draw(st.one_of(st.none(), st.sampled_from(child_ports)))
        op = len(spec.ops)
        outs = [spec.new_port(domain, op) for _ in ins]
        spec.ops.append(("reduce", ins, members, outs, child))

    def build(self) -> Spec:
        spec = self.spec
        spec.domains.append(Domain(0, ROOT, None))
        spec.sources = [spec.new_port(0, -1), spec.new_port(0, -1)]
        self.body(0, 0)
        roots = self.ports_of(0)
        last = roots[-1]
        extra = self.draw(st.lists(st.sampled_from(roots), max_size=1))
        spec.outputs = [last, *extra]
        return spec


@dataclass(frozen=True)
class Schedule:
    input_batch_size: int | None
    max_active: int
    chaos: Chaos | None


schedule_st = st.builds(
    Schedule,
    input_batch_size=st.one_of(st.none(), st.integers(1, 5)),
    max_active=st.integers(1, 3),
    chaos=st.one_of(
        st.none(),
        st.builds(
            Chaos,
            seed=st.integers(0, 2**16),
            shuffle=st.booleans(),
            duplicate=st.sampled_from([0.0, 0.2, 0.5]),
            lose_worker=st.sampled_from([0.0, 0.05, 0.2]),
            # within the infra budget: a Grain is lost at most max_losses times
            max_losses=st.integers(0, INFRA),
        ),
    ),
)


# =============================================================================
# The oracle
# =============================================================================
# Items: ("P", value) present; ("D", cause) dropped; ("X", cause) failed or
# suppressed (cause None: not fixed by the contract); ("U", value, cause)
# present or suppressed (by a sibling's GroupFailure), depending on the
# schedule; ("Q",) anything. A cause is (entity, message).
Q = ("Q",)


def first_issue(items: list[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    """Engine rule: the first failure in input order wins, else the first drop."""
    drop = None
    uncertain = None
    for item in items:
        tag = item[0]
        if tag == "P":
            continue
        if tag == "X":
            if uncertain is None:
                return item
            return ("X", None)  # an earlier U may have been the suppression
        if tag == "D":
            drop = drop or item
        elif tag == "U":
            uncertain = item if uncertain is None else ("U", None, None)
        else:
            return Q
    if uncertain is not None:
        return Q if drop is not None else ("U?",)
    return drop


class Oracle:
    def __init__(self, spec: Spec, columns: list[list[Any]]) -> None:
        self.spec = spec
        self.columns = columns
        self.memo: dict[tuple[int, tuple[int, ...]], tuple[Any, ...]] = {}
        self.children_memo: dict[tuple[int, tuple[int, ...]], Any] = {}
        self.call_memo: dict[tuple[int, tuple[int, ...]], list[tuple[Any, ...]]] = {}

    # an Entity is (domain id, key); key = (source index, ordinal, ordinal, ...)
    def path(self, domain: int, key: tuple[int, ...]) -> str:
        chain = []
        d: int | None = domain
        while d is not None:
            chain.append(self.spec.domains[d].name)
            d = self.spec.domains[d].parent
        chain.reverse()
        return "/".join(f"{name}[{i}]" for name, i in zip(chain, key, strict=True))

    def item(self, port: int, key: tuple[int, ...]) -> tuple[Any, ...]:
        memo_key = (port, key)
        if memo_key not in self.memo:
            self.memo[memo_key] = self._item(port, key)
        return self.memo[memo_key]

    def _item(self, port: int, key: tuple[int, ...]) -> tuple[Any, ...]:
        spec = self.spec
        domain = spec.port_domain[port]
        if port in spec.sources:
            return ("P", self.columns[spec.sources.index(port)][key[0]])
        op = spec.ops[spec.producer[port]]
        kind = op[0]
        if kind == "call":
            k = op[4].index(port)
            if spec.domains[domain].parent is None:
                return self.call_row(spec.producer[port], key, domain)[k]
            return self.call_items(spec.producer[port], key[:-1], domain)[key[-1]][k]
        if kind == "filter":
            _, value, mask, _ = op
            items = [self.item(value, key), self.item(mask, key)]
            issue = first_issue(items)
            if issue is None:
                if items[1][1]:
                    return items[0]
                return ("D", (self.path(domain, key), "dropped by filter"))
            if issue[0] == "U?":
                # present-or-suppressed inputs: kept (if present) or dropped
                causes = {i[2] for i in items if i[0] == "U"}
                cause = causes.pop() if len(causes) == 1 else None
                return ("U", items[0][1], cause) if items[1][1] else Q
            return issue
        if kind == "expand":
            # key = parent key + ordinal; the child exists, so the split succeeded
            parts = self.children(spec.producer[port], key[:-1])
            assert isinstance(parts, list)
            return ("P", parts[op[2].index(port)][key[-1]])
        if kind == "reduce":
            return self.reduce(op, port, key)
        if kind == "broadcast":
            _, src, _, _ = op
            depth = len(self.path_domains(spec.port_domain[src]))
            return self.item(src, key[:depth])
        raise AssertionError(op)

    def path_domains(self, domain: int) -> list[int]:
        chain = []
        d: int | None = domain
        while d is not None:
            chain.append(d)
            d = self.spec.domains[d].parent
        return chain

    # -- calls -------------------------------------------------------------------
    def call_row(self, op_index: int, key: tuple[int, ...], domain: int) -> list[tuple]:
        """A Call's output Items for one Entity, ignoring siblings' GroupFailures."""
        _, cid, kind, ins, outs = self.spec.ops[op_index]
        rates = self.spec.calls[cid][1]
        items = [self.item(p, key) for p in ins]
        issue = first_issue(items)
        n = len(outs)
        if issue is not None and issue[0] != "U?":
            return [issue] * n
        args = tuple(i[1] for i in items)
        b = behave(cid, kind, rates, args)
        if issue is None:
            if b.kind == "value":
                values = list(b.value) if n == 2 else [b.value]
                return [("P", v) for v in values]
            return [("X", (self.path(domain, key), self.message(b)))] * n
        # inputs present-or-suppressed: the row runs only if they were present
        causes = {i[2] for i in items if i[0] == "U"}
        cause = causes.pop() if len(causes) == 1 else None
        if b.kind == "value":
            values = list(b.value) if n == 2 else [b.value]
            return [("U", v, cause) for v in values]
        return [("X", None)] * n

    @staticmethod
    def message(b: Behaviour) -> str:
        if b.kind == "poison":
            return f"ValueError: {b.message}"
        return b.message

    def call_items(self, op_index: int, parent_key: tuple[int, ...], domain: int):
        """Output Items of a Call for every child of one parent (GroupFailure aware)."""
        memo_key = (op_index, parent_key)
        if memo_key in self.call_memo:
            return self.call_memo[memo_key]
        _, cid, kind, ins, _outs = self.spec.ops[op_index]
        rates = self.spec.calls[cid][1]
        parts = self.children(self.spec.domains[domain].expand_op, parent_key)
        assert isinstance(parts, list)
        n_kids = len(parts[0])
        rows = []
        gf_certain: list[int] = []
        gf_maybe = False
        grains: list[bool] = []  # has (maybe) a Grain
        for o in range(n_kids):
            key = (*parent_key, o)
            items = [self.item(p, key) for p in ins]
            issue = first_issue(items)
            row = self.call_row(op_index, key, domain)
            rows.append(row)
            if issue is None:
                grains.append(True)
                if behave(cid, kind, rates, tuple(i[1] for i in items)).kind == "gf":
                    gf_certain.append(o)
            elif issue[0] == "U?":
                grains.append(True)
                if behave(cid, kind, rates, tuple(i[1] for i in items)).kind == "gf":
                    gf_maybe = True
            elif issue[0] == "Q":
                grains.append(True)
                gf_maybe = True
            else:
                grains.append(False)
        if not gf_certain and not gf_maybe:
            self.call_memo[memo_key] = rows
            return rows
        single = len(gf_certain) == 1 and not gf_maybe
        gf_cause = rows[gf_certain[0]][0][1] if single else None
        result = []
        for o, row in enumerate(rows):
            if not grains[o]:
                result.append(row)
            elif single and o == gf_certain[0]:
                result.append(row)  # the GroupFailure row itself FAILS
            else:
                new = []
                for item in row:
                    if item[0] == "P":
                        new.append(("U", item[1], gf_cause))
                    elif item[0] == "U":
                        new.append(("U", item[1], item[2] if item[2] == gf_cause else None))
                    elif item[0] == "X":
                        new.append(("X", None))
                    else:
                        new.append(Q)
                result.append(new)
        self.call_memo[memo_key] = result
        return result

    # -- expand/reduce -----------------------------------------------------------
    def children(self, expand_op: int, key: tuple[int, ...]) -> Any:
        """The split parts of an Entity for an expand, or the Item that stopped it."""
        memo_key = (expand_op, key)
        if memo_key in self.children_memo:
            return self.children_memo[memo_key]
        _, ins, _outs, child, _ = self.spec.ops[expand_op]
        parent = self.spec.domains[child].parent
        assert parent is not None
        items = [self.item(p, key) for p in ins]
        issue = first_issue(items)
        result: Any
        if issue is not None:
            result = Q if issue[0] == "U?" else issue
        else:
            parts = []
            result = None
            for item in items:
                v = item[1]
                if not isinstance(v, list):
                    name = self.spec.domains[child].name
                    result = (
                        "X",
                        (
                            self.path(parent, key),
                            f"F.expand into {name!r} needs a sequence, got {type(v).__name__}",
                        ),
                    )
                    break
                parts.append(v)
            if result is None and len({len(p) for p in parts}) > 1:
                name = self.spec.domains[child].name
                lengths = ", ".join(str(len(p)) for p in parts)
                result = (
                    "X",
                    (
                        self.path(parent, key),
                        f"F.expand_aligned into {name!r}: sequences of different "
                        f"lengths ({lengths})",
                    ),
                )
            if result is None:
                result = parts
        self.children_memo[memo_key] = result
        return result

    def reduce(self, op: tuple[Any, ...], port: int, key: tuple[int, ...]) -> tuple:
        _, ins, members, outs, child = op
        parts = self.children(self.spec.domains[child].expand_op, key)
        if not isinstance(parts, list):
            return parts  # the expand's issue, propagated
        lists: list[list[Any]] = [[] for _ in ins]
        bad: tuple | None = None  # (cause, own) the engine picks among certain bads
        known = True  # that pick is fixed by the contract
        maybe_bad = False  # some member may be bad (never on its own Entity)
        maybe_any = False  # some member may be anything
        for o in range(len(parts[0])):
            kid = (*key, o)
            kid_path = self.path(child, kid)
            items = [self.item(p, kid) for p in ins]
            issue = first_issue(items)
            if members is not None:
                m = self.item(members, kid)
                if m[0] == "D":
                    continue
                if m[0] == "X":
                    bad, known = self.pick(bad, known, m, kid_path)
                    continue
                if m[0] == "Q":
                    maybe_any = True
                    continue
                if m[0] == "U":
                    if issue is not None and issue[0] == "X":
                        bad, known = self.pick(bad, known, ("X", None), kid_path)
                    elif issue is not None and issue[0] == "Q":
                        maybe_any = True
                    else:
                        maybe_bad = True  # suppressed member, or a present/dropped kid
                    continue
            if issue is None:
                for values, item in zip(lists, items, strict=True):
                    values.append(item[1])
            elif issue[0] == "D":
                continue
            elif issue[0] == "X":
                bad, known = self.pick(bad, known, issue, kid_path)
            elif issue[0] == "U?":
                maybe_bad = True
            else:
                maybe_any = True
        if bad is not None:
            if maybe_any or (maybe_bad and not bad[1]):
                known = False
            return ("X", bad[0] if known else None)
        if maybe_bad or maybe_any:
            return Q
        return ("P", lists[outs.index(port)])

    @staticmethod
    def pick(current: tuple | None, known: bool, issue: tuple, kid_path: str) -> tuple:
        """Engine rule: lowest-ordinal member whose failure began on itself, else the
        lowest-ordinal bad member. An unknown cause leaves the pick unknown."""
        cause = issue[1]
        if current is not None and current[1] and known:
            return current, known  # an own failure at a lower ordinal already won
        if cause is None:
            return (current or (None, False)), False
        own = cause[0] == kid_path
        if current is None or (own and not current[1]):
            return (cause, own), known
        return current, known

    # -- results -----------------------------------------------------------------
    def outputs(self) -> list[list[tuple[Any, ...]]]:
        n = len(self.columns[0])
        return [[self.item(p, (i,)) for i in range(n)] for p in self.spec.outputs]


# =============================================================================
# The property
# =============================================================================
def compare(expected: tuple[Any, ...], got: Any, where: str) -> None:
    tag = expected[0]
    if tag in ("Q", "U"):
        return
    if tag == "P":
        assert not isinstance(got, ro.OutputIssue), f"{where}: expected {expected[1]!r}, got {got}"
        assert got == expected[1], f"{where}: expected {expected[1]!r}, got {got!r}"
        return
    assert isinstance(got, ro.OutputIssue), f"{where}: expected {expected}, got value {got!r}"
    if tag == "D":
        assert got.outcome is ro.ItemOutcome.DROPPED, f"{where}: expected DROPPED, got {got}"
        assert got.cause == f"{expected[1][0]}: {expected[1][1]}", where
        return
    assert got.outcome in (ro.ItemOutcome.FAILED, ro.ItemOutcome.SUPPRESSED), (
        f"{where}: expected a failure, got {got}"
    )
    cause = expected[1]
    if cause is None:
        return
    assert got.cause == f"{cause[0]}: {cause[1]}", f"{where}: cause {got.cause!r} != {cause}"
    root = where.split(" ")[0]
    want = ro.ItemOutcome.FAILED if cause[0] == root else ro.ItemOutcome.SUPPRESSED
    assert got.outcome is want, f"{where}: expected {want} (cause {cause}), got {got}"


RANK = {"present": 0, "dropped": 1, "suppressed": 2, "failed": 3}


def check_summary(result: ro.RunResult, got: tuple[list[Any], ...], n: int) -> None:
    """The lineage summary counts each source once, by its worst output."""
    summary = result.lineage()
    counts = dict.fromkeys(RANK, 0)
    failures = []
    for i in range(n):
        worst = max(
            (
                v.outcome.value if isinstance(v, ro.OutputIssue) else "present"
                for v in (port[i] for port in got)
            ),
            key=RANK.__getitem__,
        )
        counts[worst] += 1
        if worst in ("failed", "suppressed"):
            failures.append((i, worst))
    assert summary["sources"] == {"total": n, **counts}
    assert [(f["source"], f["outcome"]) for f in summary["failures"]] == failures[:100]
    assert sum(b["count"] for b in result.input_batches) == n


def check_run(spec: Spec, columns: list[list[Any]], schedule: Schedule, cores: list) -> None:
    oracle = Oracle(spec, columns).outputs()
    options = {} if schedule.chaos is None else {"chaos": schedule.chaos}
    executor = ro.Executor(build_pipeline(spec, Marks()), backend="local", **options)
    result = executor.run(
        *columns,
        input_batch_size=schedule.input_batch_size,
        max_active_input_batches=schedule.max_active,
    )
    check_core(executor.last_core)
    cores.clear()  # checked here; the autouse fixture need not keep them
    got = result.outputs if len(spec.outputs) > 1 else (result.outputs,)
    assert len(got) == len(oracle)
    check_summary(result, got, len(columns[0]))
    for k, (exp_port, got_port) in enumerate(zip(oracle, got, strict=True)):
        assert len(got_port) == len(exp_port)
        for i, (exp, value) in enumerate(zip(exp_port, got_port, strict=True)):
            compare(exp, value, f"{ROOT}[{i}] output {k}")


sources_st = st.lists(st.integers(0, 49), min_size=0, max_size=10)


SETTINGS = settings(
    max_examples=300 if CI else 150,
    **HYPOTHESIS,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@SETTINGS
@given(data=st.data(), sources=sources_st, schedule=schedule_st)
def test_engine_equals_oracle(
    data: st.DataObject, sources: list[int], schedule: Schedule, core_invariants: list
) -> None:
    """Values, drops, RecordFailure, poisoned rows, transients, bad expands."""
    spec = Builder(data, group_failures=False).build()
    note(spec.describe())
    columns = [sources, [crc("extra", s) % 5 for s in sources]]
    check_run(spec, columns, schedule, core_invariants)


@SETTINGS
@given(data=st.data(), sources=sources_st, schedule=schedule_st)
def test_engine_equals_oracle_with_group_failures(
    data: st.DataObject, sources: list[int], schedule: Schedule, core_invariants: list
) -> None:
    """The same, with GroupFailure rows: parents of a GroupFailure are SUPPRESSED (the
    late-sibling case also has a scenario of its own:
    execution/test_local.py::test_group_failure_suppresses_siblings_ready_later)."""
    spec = Builder(data, group_failures=True).build()
    note(spec.describe())
    columns = [sources, [crc("extra", s) % 5 for s in sources]]
    check_run(spec, columns, schedule, core_invariants)
