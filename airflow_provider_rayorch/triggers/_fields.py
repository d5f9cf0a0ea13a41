"""The triggers' serialization, declared once per class."""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["DeclaredFields"]


class DeclaredFields:
    """Mixed into a trigger: ``serialize()`` hands Airflow the class's path and the
    attributes named in :attr:`serialized`, which are its constructor's keywords, so
    the triggerer rebuilds it with ``cls(**kwargs)``."""

    #: the constructor keywords, each kept as an attribute of the same name
    serialized: ClassVar[tuple[str, ...]] = ()

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs = {name: getattr(self, name) for name in self.serialized}
        return f"{type(self).__module__}.{type(self).__qualname__}", kwargs
