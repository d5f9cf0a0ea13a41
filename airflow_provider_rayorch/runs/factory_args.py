"""Do a pipeline factory's parameters fit the ``pipeline_kwargs`` given to it?

``Factory(**pipeline_kwargs)`` with a misspelt key is a bare ``TypeError`` ("got an
unexpected keyword argument"), raised wherever the factory is called: in the worker
before submitting, and in the driver. :func:`kwargs_mismatch` says, before the
call, which keys the factory does not take (or which it needs and did not get) and
lists the parameters it does take, so both callers can raise their own error with
the same words.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["kwargs_mismatch"]

_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _describe(param: inspect.Parameter) -> str:
    if param.default is inspect.Parameter.empty:
        return f"{param.name} (required)"
    return f"{param.name}={param.default!r}"


def kwargs_mismatch(
    factory: Callable[..., Any], kwargs: Mapping[str, Any], spec: str
) -> str | None:
    """Why ``factory(**kwargs)`` cannot bind, naming the factory's parameters; None
    when it can (or when the signature cannot tell: ``**kwargs``, no signature)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin or C callable: let the call decide
        return None
    params = [p for p in signature.parameters.values() if p.kind in _KEYWORD_KINDS]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    names = {p.name for p in params}
    unknown = sorted(k for k in kwargs if k not in names)
    missing = [
        p.name for p in params if p.default is inspect.Parameter.empty and p.name not in kwargs
    ]
    if not unknown and not missing:
        return None
    takes = ", ".join(_describe(p) for p in params) or "no parameters"
    problems = []
    if unknown:
        problems.append(f"it takes no {', '.join(map(repr, unknown))}")
    if missing:
        problems.append(f"it needs {', '.join(map(repr, missing))}")
    return (
        f"pipeline_kwargs do not fit pipeline {spec!r}: {'; '.join(problems)}. "
        f"Its parameters: {takes}. Fix the keys of pipeline_kwargs."
    )
