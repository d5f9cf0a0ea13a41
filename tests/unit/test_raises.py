"""Every ``raise`` in the package raises a ``RayOrchError`` subclass, or re-raises.

Each ``.py`` file of the package is read as source (AST). A raise names its class
directly (``raise UsageError(...)``, ``raise UsageError``), through a function whose
return annotation is the class (``raise self._unwritable(...)``), or through a value:
a caught exception (``except ... as exc: raise exc``), a parameter or a local whose
annotation or assigned call says the class. Names resolve as the module resolves them:
its globals (the module is imported), then its imports (those inside functions and
under ``TYPE_CHECKING`` too), then builtins. Bare ``raise`` re-raises and is fine.

A raise the framework requires to be of another type (a module ``__getattr__``, a
sequence's ``__getitem__``, Airflow's skip, pydantic validators) is listed in
``ALLOWED`` with its reason; an entry no raise uses any more fails the test too.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import types
import typing
from dataclasses import dataclass, field
from typing import Any

import pytest

from airflow_provider_rayorch.rayorch.errors import RayOrchError
from tests.unit.package_imports import ROOT, module_name, package_modules

pytestmark = pytest.mark.timeout(120)

_PYDANTIC = "a pydantic validator: pydantic turns its ValueError into a ValidationError"
_SKIP = "Airflow skips a task only on AirflowSkipException"

#: (file under the package, enclosing function's qualified name, class) -> why
ALLOWED: dict[tuple[str, str, str], str] = {
    ("rayorch/__init__.py", "__getattr__", "AttributeError"): (
        "a module's __getattr__ must raise AttributeError for a name it does not have"
    ),
    ("runs/sources.py", "SourceColumns.__getitem__", "IndexError"): (
        "the sequence protocol: iteration and slicing stop on IndexError"
    ),
    ("runs/records.py", "PlanRecord._count_inline", "ValueError"): _PYDANTIC,
    ("runs/records.py", "_not_null", "ValueError"): _PYDANTIC,
    ("common/sources.py", "_skip_empty_glob", "AirflowSkipException"): _SKIP,
    ("sensors/rayorch.py", "RayOrchRunSensor.execute", "AirflowSkipException"): _SKIP,
    ("rayorch/execution/driving.py", "drive", "<command.error>"): (
        "re-raises the ExecutionError an Abort command carries (built by the core)"
    ),
}


@dataclass(frozen=True)
class Finding:
    """A raise of a class outside the root, or one whose class cannot be told."""

    file: str
    line: int
    function: str
    raised: str  # the class's name, or ``<expression>`` when it cannot be resolved

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.function} raises {self.raised}"


@dataclass
class Scope:
    """How a module resolves a name: its globals, then its imports, then builtins."""

    package: str  # the package relative imports resolve against
    namespace: dict[str, Any]
    imports: dict[str, str] = field(default_factory=dict)  # bound name -> dotted target

    @classmethod
    def of_source(cls, tree: ast.Module, package: str, namespace: dict[str, Any]) -> Scope:
        scope = cls(package, namespace)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.partition(".")[0]
                    scope.imports[bound] = alias.name if alias.asname else bound
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                for alias in node.names:
                    scope.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        return scope

    def lookup(self, name: str) -> Any:
        if name in self.namespace:
            return self.namespace[name]
        if name in self.imports:
            return _load(self.imports[name])
        return getattr(builtins, name, None)


def _load(dotted: str) -> Any:
    """The object ``dotted`` names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            value = getattr(value, attr, None)
        return value
    return None


_SCOPES: dict[str, Scope] = {}


def module_scope(name: str) -> Scope:
    """The scope of the package module ``name`` (imported, its source parsed)."""
    if name not in _SCOPES:
        module = importlib.import_module(name)
        path = inspect.getsourcefile(module) or ""
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        tree = ast.parse(inspect.getsource(module))
        _SCOPES[name] = Scope.of_source(tree, package, vars(module))
    return _SCOPES[name]


def _classes_of_annotation(node: ast.expr, scope: Scope) -> list[Any] | None:
    """The classes an annotation names (``A | B`` gives both); None if it cannot tell."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _classes_of_annotation(ast.parse(node.value, mode="eval").body, scope)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _classes_of_annotation(node.left, scope)
        right = _classes_of_annotation(node.right, scope)
        return None if left is None or right is None else left + right
    value = _resolve(node, scope)
    return [value] if isinstance(value, type) else None


def _returned_classes(func: Any) -> list[Any] | None:
    """The classes a function's return annotation names; a string annotation is read
    in the scope of the function's own package module."""
    func = inspect.unwrap(getattr(func, "__func__", func))
    note = getattr(func, "__annotations__", {}).get("return")
    if isinstance(note, type):
        return [note]
    if isinstance(note, types.UnionType):
        return list(typing.get_args(note))
    module = getattr(func, "__module__", None) or ""
    if not isinstance(note, str) or not module.startswith(f"{ROOT.name}."):
        return None
    return _classes_of_annotation(ast.parse(note, mode="eval").body, module_scope(module))


def _resolve(node: ast.expr, scope: Scope, cls: Any = None) -> Any:
    """The object a name or dotted expression stands for here; None if unknown."""
    if isinstance(node, ast.Name):
        if node.id in ("self", "cls") and cls is not None:
            return cls
        return scope.lookup(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, scope, cls)
        if isinstance(base, types.ModuleType):  # a lazy facade's names load on access
            return getattr(base, node.attr, None)
        return None if base is None else inspect.getattr_static(base, node.attr, None)
    return None


def _local_classes(name: str, scope: Scope, cls: Any, stack: list[ast.AST]) -> list[Any] | None:
    """What a local of the enclosing function holds: a parameter's annotation, or the
    classes of the call it is assigned from."""
    func = next(
        (n for n in reversed(stack) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None
    )
    if func is None:
        return None
    args = func.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.arg == name and arg.annotation is not None:
            return _classes_of_annotation(arg.annotation, scope)
    for node in ast.walk(func):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return _classes_of_annotation(node.annotation, scope)
        if (
            isinstance(node, ast.Assign)
            and any(getattr(t, "id", None) == name for t in node.targets)
            and isinstance(node.value, ast.Call)
        ):
            return _classes_of_callee(node.value.func, scope, cls)
    return None


def _classes_of_callee(func: ast.expr, scope: Scope, cls: Any) -> list[Any] | None:
    """``X(...)``: the class ``X``, or the classes the function ``X`` returns."""
    target = _resolve(func, scope, cls)
    if isinstance(target, type):
        return [target]
    if isinstance(target, staticmethod | classmethod):
        target = target.__func__
    return _returned_classes(target) if callable(target) else None


class _Raises(ast.NodeVisitor):
    def __init__(self, file: str, scope: Scope) -> None:
        self.file = file
        self.scope = scope
        self.stack: list[ast.AST] = []  # enclosing classes, functions and handlers
        self.findings: list[Finding] = []

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(
            node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | ast.ExceptHandler
        ):
            self.stack.append(node)
            super().generic_visit(node)
            self.stack.pop()
        else:
            super().generic_visit(node)

    def _qualname(self) -> str:
        names = [
            n.name
            for n in self.stack
            if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        return ".".join(names) or "<module>"

    def _enclosing_class(self) -> Any:
        """The class ``self`` and ``cls`` stand for; None inside a class defined in a
        function (not reachable by name)."""
        path: list[str] = []
        in_function = False
        for node in self.stack:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                in_function = True
            elif isinstance(node, ast.ClassDef):
                if in_function:
                    return None
                path.append(node.name)
        value: Any = self.scope.namespace.get(path[0]) if path else None
        for name in path[1:]:
            value = getattr(value, name, None)
        return value

    def _caught(self, name: str) -> bool:
        return any(isinstance(n, ast.ExceptHandler) and n.name == name for n in self.stack)

    def visit_Raise(self, node: ast.Raise) -> None:
        self.generic_visit(node)
        exc = node.exc
        if exc is None:
            return  # a bare raise re-raises
        cls = self._enclosing_class()
        if isinstance(exc, ast.Call):
            classes = _classes_of_callee(exc.func, self.scope, cls)
        elif isinstance(exc, ast.Name) and self._caught(exc.id):
            return  # ``except ... as exc: raise exc``
        else:
            value = _resolve(exc, self.scope, cls)
            if isinstance(value, type):
                classes = [value]
            elif isinstance(exc, ast.Name):
                classes = _local_classes(exc.id, self.scope, cls, self.stack)
            else:
                classes = None
        if classes is None:
            shown = ast.unparse(exc.func if isinstance(exc, ast.Call) else exc)
            self.findings.append(Finding(self.file, node.lineno, self._qualname(), f"<{shown}>"))
            return
        for raised in classes:
            if not (isinstance(raised, type) and issubclass(raised, RayOrchError)):
                name = getattr(raised, "__name__", repr(raised))
                self.findings.append(Finding(self.file, node.lineno, self._qualname(), name))


def unrooted_raises(source: str, file: str, scope: Scope) -> list[Finding]:
    """Every raise in ``source`` of a class that is not a ``RayOrchError`` subclass
    (nor a re-raise), or whose class cannot be told."""
    visitor = _Raises(file, scope)
    visitor.visit(ast.parse(source))
    return visitor.findings


@functools.cache
def package_findings() -> tuple[Finding, ...]:
    """The findings of every module of the package (read once per test session)."""
    found: list[Finding] = []
    for name, path in package_modules().items():
        file = path.relative_to(ROOT).as_posix()
        found += unrooted_raises(path.read_text(encoding="utf-8"), file, module_scope(name))
    return tuple(found)


def _key(finding: Finding) -> tuple[str, str, str]:
    return (finding.file, finding.function, finding.raised)


def test_every_raise_in_the_package_has_the_one_root() -> None:
    bad = [str(f) for f in package_findings() if _key(f) not in ALLOWED]
    assert not bad, "raises outside RayOrchError (raise a RayOrchError subclass):\n" + "\n".join(
        bad
    )


def test_every_allowed_raise_is_still_there() -> None:
    used = {_key(f) for f in package_findings()}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"ALLOWED lists raises the package no longer has: {stale}"


def _synthetic(source: str) -> list[str]:
    """The checker's findings on ``source``, run as a module of ``common``."""
    namespace: dict[str, Any] = {
        "__name__": "airflow_provider_rayorch.common.new",
        "__package__": "airflow_provider_rayorch.common",
    }
    exec(compile(source, "new.py", "exec"), namespace)
    scope = Scope.of_source(ast.parse(source), "airflow_provider_rayorch.common", namespace)
    _SCOPES[namespace["__name__"]] = scope  # its functions' annotations read here
    try:
        return [str(f) for f in unrooted_raises(source, "common/new.py", scope)]
    finally:
        del _SCOPES[namespace["__name__"]]


def test_the_check_catches_a_builtin_raise() -> None:
    source = 'def check(x):\n    if x:\n        raise ValueError("x")\n'
    assert _synthetic(source) == ["common/new.py:3: check raises ValueError"]


def test_the_check_catches_a_builtin_raised_bare_through_a_factory_or_a_local() -> None:
    source = (
        "class Job:\n"
        "    def _error(self) -> KeyError:\n"
        "        return KeyError('k')\n"
        "    def run(self):\n"
        "        raise self._error()\n"
        "def stop(flag):\n"
        "    if flag:\n"
        "        raise RuntimeError\n"
        "    error = TypeError('t')\n"
        "    raise error\n"
        "def unknown(thing):\n"
        "    raise thing.error\n"
    )
    assert _synthetic(source) == [
        "common/new.py:5: Job.run raises KeyError",
        "common/new.py:8: stop raises RuntimeError",
        "common/new.py:10: stop raises TypeError",
        "common/new.py:12: unknown raises <thing.error>",
    ]


def test_the_check_accepts_the_root_and_re_raises() -> None:
    source = (
        "from airflow_provider_rayorch.rayorch.errors import UsageError\n"
        "from ..exceptions import RayOrchClusterError, RayOrchClusterUnavailable\n"
        "class Api:\n"
        "    def _down(self) -> RayOrchClusterUnavailable | RayOrchClusterError:\n"
        "        return RayOrchClusterUnavailable('no answer')\n"
        "    def call(self):\n"
        "        raise self._down()\n"
        "def check(x, exc: RayOrchClusterError):\n"
        "    try:\n"
        "        int(x)\n"
        "    except ValueError as bad:\n"
        "        if x:\n"
        "            raise bad\n"
        "        raise UsageError(f'x must be an int, got {x!r}') from bad\n"
        "    except TypeError:\n"
        "        raise\n"
        "    raise exc\n"
    )
    assert _synthetic(source) == []


def test_a_module_scope_resolves_names_as_the_module_does() -> None:
    from airflow_provider_rayorch import exceptions
    from airflow_provider_rayorch.hooks.jobs_api import JobsApi

    scope = module_scope(module_name(ROOT / "hooks" / "jobs_api.py"))
    assert scope.lookup("RayOrchClusterError") is exceptions.RayOrchClusterError
    assert scope.lookup("ValueError") is ValueError
    call = ast.parse("self.transport_error", mode="eval").body
    factory = _classes_of_callee(call, scope, JobsApi)  # a method's return annotation
    assert factory == [exceptions.RayOrchClusterError]
