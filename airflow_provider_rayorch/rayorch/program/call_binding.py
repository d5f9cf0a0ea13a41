"""Binding a Call's arguments to its UDF's ``run()`` signature, at compile time.

Ports reach ``run()`` as positional columns. A Port passed by keyword
(``self.assemble(groups, pdfs=pdfs)``, as the paper's package allows) is placed
in the column of the positional parameter of that name; every other keyword is
a static argument, given unchanged to every ``run()`` of the Call.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from .tracing import Port

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["RunSignature", "bind_call"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True)
class RunSignature:
    """The parameters of a UDF's ``run()`` (without ``self``)."""

    text: str
    params: tuple[inspect.Parameter, ...]

    @classmethod
    def of(cls, target: Callable[..., Any], drops_self: bool) -> RunSignature | None:
        """``None`` for callables without a signature (some builtins)."""
        try:
            sig = inspect.signature(target)
        except (TypeError, ValueError):
            return None
        params = tuple(sig.parameters.values())
        return cls(str(sig), params[1:] if drops_self and params else params)

    @property
    def positional(self) -> list[inspect.Parameter]:
        return [p for p in self.params if p.kind in _POSITIONAL]

    def has(self, kind: inspect._ParameterKind) -> bool:
        return any(p.kind is kind for p in self.params)


def bind_call(
    where: str, sig: RunSignature | None, ports: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """Split ``kwargs`` into Ports and static arguments; return the Call's inputs in
    column order and its static keyword arguments, or raise ``CompileError``."""
    port_kwargs = {k: v for k, v in kwargs.items() if isinstance(v, Port)}
    static = {k: v for k, v in kwargs.items() if k not in port_kwargs}
    for key, value in static.items():
        if _holds_port(value):
            raise CompileError(
                f"{where}: static keyword argument {key!r} holds a Port inside "
                f"{type(value).__name__}; pass each Port as its own argument"
            )
    inputs = list(ports) + _keyword_columns(where, sig, len(ports), port_kwargs)
    if sig is not None:
        _check_fit(where, sig, len(inputs), static)
    return inputs, static


def _keyword_columns(
    where: str, sig: RunSignature | None, n_positional: int, port_kwargs: dict[str, Port]
) -> list[Port]:
    """Ports passed by keyword, in the column order of ``run()``'s parameters."""
    if not port_kwargs:
        return []
    if sig is None:
        raise CompileError(
            f"{where}: Ports passed by keyword ({', '.join(port_kwargs)}) need run() to have "
            "a signature; pass them positionally"
        )
    names = [p.name for p in sig.positional]
    by_name = {p.name: p for p in sig.params}
    slots: dict[int, Port] = {}
    for key, port in port_kwargs.items():
        if key not in names:
            kind = "is keyword-only" if key in by_name else "is not one of its parameters"
            raise CompileError(
                f"{where}: a Port passed as {key}= must fill a positional parameter of run(), "
                f"but {key!r} {kind}; Ports reach run() as positional columns "
                f"({', '.join(names) or 'none'}): pass it positionally or make {key!r} "
                "a positional parameter"
            )
        index = names.index(key)
        if index < n_positional:
            raise CompileError(f"{where}: {key!r} is given both as a Port and as a keyword")
        slots[index] = port
    wanted = range(n_positional, max(slots) + 1)
    gaps = [names[i] for i in wanted if i not in slots]
    if gaps:
        raise CompileError(
            f"{where}: Ports passed by keyword ({', '.join(port_kwargs)}) leave run()'s "
            f"positional parameter(s) {', '.join(gaps)} without a Port; pass them too"
        )
    return [slots[i] for i in wanted]


def _check_fit(where: str, sig: RunSignature, n_ports: int, kwargs: dict[str, Any]) -> None:
    positional = sig.positional
    var_kw = sig.has(inspect.Parameter.VAR_KEYWORD)
    if n_ports > len(positional) and not sig.has(inspect.Parameter.VAR_POSITIONAL):
        raise CompileError(
            f"{where}: {n_ports} Ports passed but run() takes at most {len(positional)}"
        )
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    filled = {p.name for p in positional[:n_ports]}
    missing = [p.name for p in required[n_ports:] if p.name not in kwargs]
    if missing:
        raise CompileError(
            f"{where}: {n_ports} Ports passed but run() also needs {', '.join(missing)}"
        )
    by_name = {p.name: p for p in sig.params}
    for key in kwargs:
        param = by_name.get(key)
        if key in filled:
            raise CompileError(f"{where}: {key!r} is given both as a Port and as a keyword")
        if (param is None or param.kind is inspect.Parameter.POSITIONAL_ONLY) and not var_kw:
            raise CompileError(f"{where}: run() takes no keyword argument {key!r}")


def _holds_port(value: Any) -> bool:
    if isinstance(value, Port):
        return True
    if isinstance(value, dict):
        return any(_holds_port(v) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_port(v) for v in value)
    return False
