"""Process-independent JSON tokens of Python values, digested by plan fingerprints."""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

__all__ = ["stable_token"]


def stable_token(value: Any) -> Any:
    """A JSON value that is the same for equal inputs in any process.

    Never uses ``hash()``, ``id()`` or pickles: classes and functions become their
    import paths, and objects whose ``repr`` holds a memory address their type's path.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    if isinstance(value, (list, tuple)):
        return [stable_token(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((stable_token(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {
            str(k): stable_token(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
        }
    if inspect.isclass(value) or inspect.isfunction(value) or inspect.ismethod(value):
        return {"ref": f"{value.__module__}:{value.__qualname__}"}
    text = repr(value)
    kind = f"{type(value).__module__}:{type(value).__qualname__}"
    if " at 0x" in text:
        return {"object": kind}
    return {"object": kind, "repr": text}
