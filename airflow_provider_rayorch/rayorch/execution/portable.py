"""What Ray can ship: row values, module arguments and UDF classes, judged with
Ray's own pickler (``ray.cloudpickle``).

Every row a UDF returns travels through Ray's object store, and every actor gets its
UDF class, constructor arguments and static ``run()`` keywords pickled. A value Ray
cannot pickle (a generator, a lock, an open file) would fail far from its cause:
a row's value fails that row here (:func:`unsendable_rows`, used by both backends so
they agree), and a module that cannot be shipped fails ``Pipeline.compile()``
(:func:`check_modules`), before any actor starts or any job is submitted.

Rows of plain data (None, numbers, str, bytes, numpy arrays without objects, and
lists, tuples and dicts of them) are recognized by their types and never pickled
here; only other values are, into a sink that keeps nothing (numpy buffers are
left out of band), once per batch, and one by one only when that fails.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from ..outcomes import GroupFailure, RecordFailure
from ..plain_text import strip_ansi

if TYPE_CHECKING:
    from ..program.plan import ModuleSpec, Plan

__all__ = ["check_modules", "pickle_error", "unsendable_rows"]

_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes, bytearray})
_FAILURES = (RecordFailure, GroupFailure)
#: How deep the type walk looks into nested containers before it pickles instead.
_MAX_DEPTH = 6
_PLAIN_DATA = "plain data (lists, dicts, numbers, str, bytes, numpy arrays)"


class _Discard:
    """A file that keeps nothing: pickling into it only checks that it works."""

    def write(self, data: Any) -> int:
        return len(data)


def _pickler_class() -> type:
    from ray import ObjectRef, cloudpickle
    from ray.actor import ActorHandle

    class Checker(cloudpickle.CloudPickler):
        """Ray's pickler, except that Ray's own handles are taken as shippable (Ray
        records the references it serializes: a check must not)."""

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, (ObjectRef, ActorHandle)):
                return (type(None), ())
            return super().reducer_override(obj)

    return Checker


_checker: list[type] = []


def pickle_error(value: Any) -> str | None:
    """Why Ray cannot pickle ``value`` (one line, plain text), or None when it can."""
    if not _checker:
        _checker.append(_pickler_class())
    try:
        _checker[0](_Discard(), protocol=5, buffer_callback=_out_of_band).dump(value)
    except RecursionError:
        return "RecursionError: the value nests too deeply"
    except Exception as exc:
        text = " ".join(strip_ansi(str(exc)).split())
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return None


def _out_of_band(_buffer: Any) -> bool:
    return False


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is plain data by its types alone (no pickling)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if depth >= _MAX_DEPTH:
        return False
    if kind is list or kind is tuple:
        return _SCALARS.issuperset(map(type, value)) or all(_plain(v, depth + 1) for v in value)
    if kind is dict:
        return _SCALARS.issuperset(map(type, value)) and (
            _SCALARS.issuperset(map(type, value.values()))
            or all(_plain(v, depth + 1) for v in value.values())
        )
    if kind.__module__ == "numpy":
        dtype = getattr(value, "dtype", None)
        return dtype is not None and not dtype.hasobject
    return False


def unsendable_rows(rows: list[Any], call: str) -> list[Any]:
    """``rows`` with each value Ray cannot serialize replaced by a ``RecordFailure``
    whose cause names the value's type and the fix; ``rows`` itself (the same list)
    when every value can be serialized."""
    doubtful = [i for i, row in enumerate(rows) if not isinstance(row, _FAILURES)]
    doubtful = [i for i in doubtful if not _plain(rows[i])]
    if not doubtful or pickle_error([rows[i] for i in doubtful]) is None:
        return rows
    checked = list(rows)
    for i in doubtful:
        error = pickle_error(rows[i])
        if error is not None:
            checked[i] = RecordFailure(_row_cause(call, rows[i], error))
    return checked


def _row_cause(call: str, value: Any, error: str) -> str:
    kind = type(value).__name__
    inner = _culprit(value)
    what = f"{kind!r}" if inner is None else f"{kind!r} holding a {inner!r}"
    lazy = "generator" in (kind, inner) or "'generator'" in error
    fix = f"return {_PLAIN_DATA} instead"
    if lazy:
        fix += " of a generator (list(...) turns a generator into a list)"
    return (
        f"{call}.run() returned a value of type {what} that cannot be serialized by Ray "
        f"({error}): {fix}"
    )


def _culprit(value: Any) -> str | None:
    """The type name of the first item of a list, tuple or dict ``value`` that Ray
    cannot pickle (one level down), or None."""
    kind = type(value)
    items = value.values() if kind is dict else value if kind in (list, tuple) else ()
    for item in items:
        if pickle_error(item) is not None:
            return type(item).__name__
    return None


# -- modules, at compile time ------------------------------------------------------
def check_modules(plan: Plan, attributes: set[str] | None = None) -> None:
    """``CompileError`` for the first module whose UDF class, ``pre_init`` arguments or
    static ``run()`` keywords Ray cannot pickle, naming the module, what is at fault
    and the fix. ``attributes``: the pipeline's attribute names (``self.<name>``)."""
    attributes = attributes or set()
    for module in plan.modules:
        where = f"self.{module.name}" if module.name in attributes else repr(module.name)
        where = f"module {where} ({module.udf_path})"
        _check_class(module, where)
        for i, arg in enumerate(module.init_args):
            _check_argument(module, where, f"pre_init argument {i}", arg)
        for key, arg in module.init_kwargs:
            _check_argument(module, where, f"pre_init keyword {key!r}", arg)
    for node in plan.nodes:
        if node.module is None:
            continue
        module = plan.modules[node.module]
        for key, arg in node.kwargs:
            error = pickle_error(arg)
            if error is not None:
                raise CompileError(
                    f"Call {node.name!r} ({module.udf_path}): its run() keyword {key!r} "
                    f"(a {type(arg).__name__}) cannot be serialized by Ray ({error}); every "
                    f"actor receives it pickled: pass {_PLAIN_DATA} and build the object "
                    f"inside {module.udf.__qualname__}.__init__ or run()"
                )


def _check_argument(module: ModuleSpec, where: str, what: str, arg: Any) -> None:
    error = pickle_error(arg)
    if error is None:
        return
    raise CompileError(
        f"{where}: {what} (a {type(arg).__name__}) cannot be serialized by Ray ({error}); "
        f"every actor receives its constructor arguments pickled: pass {_PLAIN_DATA} and "
        f"create the object inside {module.udf.__qualname__}.__init__ "
        f"(e.g. self.lock = threading.Lock())"
    )


def _check_class(module: ModuleSpec, where: str) -> None:
    udf = module.udf
    error = pickle_error(udf)
    if error is None:
        return
    blame = ""
    for cls in udf.__mro__:
        if cls is object or _importable(cls):
            continue
        for name, attribute in vars(cls).items():
            if name in ("__dict__", "__weakref__"):
                continue
            found = pickle_error(attribute)
            if found is not None:
                blame = (
                    f": its class attribute {cls.__qualname__}.{name} "
                    f"(a {type(attribute).__name__}) cannot be pickled ({found})"
                )
                error = found
                break
        if blame:
            break
    blame = blame or f" ({error})"
    raise CompileError(
        f"{where}: UDF class {udf.__qualname__} cannot be serialized by Ray{blame}. "
        f"It is defined where Ray workers cannot import it (in a function, a DAG file or "
        f"__main__), so Ray ships it by value with its class attributes: create such "
        f"objects inside {udf.__qualname__}.__init__ (e.g. self.lock = threading.Lock()), "
        f"or define the class in an importable module"
    )


def _importable(cls: type) -> bool:
    """Whether ``cls`` is found by its module and name (Ray then pickles it by
    reference, without its attributes)."""
    module = sys.modules.get(cls.__module__)
    if module is None or cls.__module__ == "__main__":
        return False
    target: Any = module
    for part in cls.__qualname__.split("."):
        target = getattr(target, part, None)
    return target is cls
