"""Trace a ``Pipeline`` and lower it into an immutable ``Plan``."""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from typing import Any, Protocol

from ..errors import CompileError
from .module import RayModule
from .plan import DomainSpec, ModuleSpec, Node, NodeKind, Plan, PortSpec
from .shared_processes import check_shared_processes
from .tokens import stable_token
from .tracing import Port, Trace

__all__ = ["Traceable", "compile_pipeline"]


class Traceable(Protocol):
    """What the compiler traces: a ``forward`` taking one Port per source column (a
    ``Pipeline``), whose attributes hold its ``RayModule``s."""

    def forward(self, *ports: Any) -> Any: ...


def compile_pipeline(pipeline: Traceable) -> Plan:
    """Trace ``pipeline.forward`` once with symbolic Ports and lower the result."""
    owner = f"{type(pipeline).__module__}:{type(pipeline).__qualname__}"
    params = _source_parameters(pipeline, owner)
    trace = Trace()
    trace.module_names = _module_names(pipeline)
    root = trace.new_domain(params[0], None, None)
    with trace:
        source = trace.new_node(NodeKind.SOURCE, "sources", [], root)
        ports = [trace.new_port(source, root, name) for name in params]
        try:
            returned = pipeline.forward(*ports)
        except CompileError:  # a ValueError too: already says what is wrong
            raise
        except ValueError as exc:
            blamed = _unpacked_calls(trace, str(exc))
            if blamed:
                raise CompileError(
                    f"{blamed} but forward() unpacked a different number: {exc}"
                ) from None
            raise
    outputs = _outputs(trace, returned, owner)
    return _lower(trace, outputs, owner)


def _unpacked_calls(trace: Trace, message: str) -> str | None:
    """Which returns(k) Call(s) a failed unpacking (``message``) can be about."""
    if "unpack" not in message or not trace.multi_outputs:
        return None
    numbers = [int(n) for n in re.findall(r"\d+", message)]
    if "not enough" in message and len(numbers) >= 2:
        fits = [o for o in trace.multi_outputs if len(o) == numbers[-1]]
    elif "too many" in message and numbers:
        fits = [o for o in trace.multi_outputs if len(o) > numbers[0]]
    else:
        fits = []
    fits = fits or trace.multi_outputs
    calls = " or ".join(f"Call {o.call!r} returns {len(o)} Ports (returns({len(o)}))" for o in fits)
    return calls


def _source_parameters(pipeline: Traceable, owner: str) -> list[str]:
    forward = getattr(pipeline, "forward", None)
    if forward is None or not callable(forward):
        raise CompileError(f"{owner} defines no forward(self, ...) method")
    names = []
    for param in inspect.signature(forward).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.KEYWORD_ONLY):
            raise CompileError(
                f"{owner}.forward: parameter {param.name!r} must be a plain positional "
                "parameter (one per source column)"
            )
        names.append(param.name)
    if not names:
        raise CompileError(f"{owner}.forward takes no source column; give it at least one")
    return names


def _module_names(pipeline: Traceable) -> dict[int, str]:
    """Name modules after the attributes that hold them (``self.ocr`` -> ``ocr``)."""
    names: dict[int, str] = {}
    for attr, value in vars(pipeline).items():
        items: list[tuple[str, Any]] = [(attr, value)]
        if isinstance(value, (list, tuple)):
            items = [(f"{attr}_{i}", v) for i, v in enumerate(value)]
        elif isinstance(value, dict):
            items = [(f"{attr}_{k}", v) for k, v in value.items()]
        for name, candidate in items:
            if isinstance(candidate, RayModule) and id(candidate) not in names:
                names[id(candidate)] = name
    return names


def _outputs(trace: Trace, returned: object, owner: str) -> list[Port]:
    many = isinstance(returned, (tuple, list)) and not isinstance(returned, Port)
    values = list(returned) if many else [returned]  # type: ignore[call-overload]
    if not values:
        raise CompileError(f"{owner}.forward returned no Port")
    ports = []
    for i, value in enumerate(values):
        where = f"{owner}.forward return value" + (f" {i}" if many else "")
        if many and isinstance(value, (tuple, list)):
            raise CompileError(
                f"{where} is a nested {type(value).__name__}; forward returns one Port or a "
                "flat tuple of Ports (outputs is then a tuple of one list per Port): "
                "flatten it, e.g. return (a, b, c) instead of (a, (b, c))"
            )
        if not isinstance(value, Port):
            raise CompileError(
                f"{where} is {type(value).__name__}, not a Port; forward must return the "
                "Port(s) whose Items are the run's outputs"
            )
        port = trace.own(value, where)
        if port._domain.parent is not None:
            raise CompileError(
                f"{where}: {port!r} is in Domain {port._domain.name!r}, not the root Domain "
                f"{trace.domains[0].name!r}; gather it back with ro.F.reduce first"
            )
        ports.append(port)
    return ports


def _lower(trace: Trace, outputs: list[Port], owner: str) -> Plan:
    modules: dict[int, ModuleSpec] = {}
    for tnode in trace.nodes:
        module = tnode.module
        if module is not None and id(module) not in modules:
            name = trace.module_names.get(id(module), module._label)
            modules[id(module)] = ModuleSpec(
                id=len(modules),
                name=name,
                udf=module.udf,
                udf_path=module.udf_path,
                init_args=tuple(module.init_args),
                init_kwargs=tuple(sorted(module.init_kwargs.items())),
                num_outputs=module.num_outputs,
                options=module.call_options(name),
            )
    slots: dict[int, int] = {}
    domain_ports: dict[int, list[int]] = {d.id: [] for d in trace.domains}
    for port in trace.ports:
        slots[port._id] = len(domain_ports[port._domain.id])
        domain_ports[port._domain.id].append(port._id)
    domains = tuple(
        DomainSpec(
            id=d.id,
            name=d.name,
            parent=None if d.parent is None else d.parent.id,
            expand=d.expand,
            depth=d.depth,
            ports=tuple(domain_ports[d.id]),
        )
        for d in trace.domains
    )
    ports = tuple(
        PortSpec(
            id=p._id,
            domain=p._domain.id,
            producer=p._producer.id,
            index=p._index,
            slot=slots[p._id],
            label=p.label,
        )
        for p in trace.ports
    )
    nodes = tuple(
        Node(
            id=n.id,
            kind=n.kind,
            name=n.name,
            inputs=tuple(p._id for p in n.inputs),
            outputs=tuple(p._id for p in n.outputs),
            domain=n.domain.id,
            module=None if n.module is None else modules[id(n.module)].id,
            kwargs=tuple(sorted(n.kwargs.items())),
            members=None if n.members is None else n.members._id,
            child_domain=None if n.child_domain is None else n.child_domain.id,
        )
        for n in trace.nodes
    )
    module_specs = tuple(sorted(modules.values(), key=lambda m: m.id))
    check_shared_processes(module_specs)
    output_ids = tuple(p._id for p in outputs)
    names = ("out",) if len(outputs) == 1 else tuple(f"out{i}" for i in range(len(outputs)))
    sources = tuple(p._id for p in trace.nodes[0].outputs)
    body = {
        "pipeline": owner,
        "domains": [[d.name, d.parent, d.expand] for d in domains],
        "nodes": [
            [
                n.kind.value,
                n.name,
                list(n.inputs),
                list(n.outputs),
                n.domain,
                n.module,
                stable_token(dict(n.kwargs)),
                n.members,
                n.child_domain,
            ]
            for n in nodes
        ],
        "modules": [
            [
                m.name,
                m.udf_path,
                stable_token(list(m.init_args)),
                stable_token(dict(m.init_kwargs)),
                m.num_outputs,
                _options_token(m),
            ]
            for m in module_specs
        ],
        "sources": list(sources),
        "outputs": list(output_ids),
    }
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return Plan(
        pipeline=owner,
        domains=domains,
        ports=ports,
        nodes=nodes,
        modules=module_specs,
        sources=sources,
        outputs=output_ids,
        output_names=names,
        fingerprint=digest,
    )


def _options_token(module: ModuleSpec) -> Any:
    o = module.options
    return [
        o.replicas,
        o.batch_size,
        o.batching.value,
        o.recovery.describe(),
        o.max_batches_in_flight,
        o.batch_timeout_s,
        stable_token(o.ray_actor_options),
        # Only when given (a name or False): the default leaves fingerprints as they were.
        *([o.share_process] if o.share_process is not None else []),
    ]
