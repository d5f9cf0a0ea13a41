"""``RayModule``: a UDF class with its constructor arguments and actor-pool options."""

from __future__ import annotations

import inspect
import math
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from .options import Batching, CallOptions, RecoveryPolicy
from .plan import NodeKind
from .tracing import CallOutputs, active_trace

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["FunctionUDF", "RayModule", "function"]

_CONSUMED = (
    "replicas",
    "batch_size",
    "recovery",
    "batching",
    "max_batches_in_flight",
    "batch_timeout_s",
)


class RayModule:
    """A batch UDF and how to run it: ``RayModule(Udf).pre_init(...).ray_options(...)``.

    The UDF is a plain class: ``__init__`` runs once per actor, ``run(*columns,
    **static_kwargs)`` takes one list per input Port and returns one result per
    row (with ``returns(k)``: a tuple of k such lists). Calling a module inside
    ``forward`` makes a Call; every Call of one module shares its actor pool.
    Options are checked when the pipeline is compiled.
    """

    def __init__(self, udf: type) -> None:
        if not inspect.isclass(udf):
            raise CompileError(
                f"RayModule expects a UDF class with a run() method, got {udf!r}; "
                "wrap a plain batch function with ro.function(fn)."
            )
        if not callable(getattr(udf, "run", None)):
            raise CompileError(f"UDF class {udf.__qualname__} has no run() method")
        self.udf = udf
        self.init_args: tuple[Any, ...] = ()
        self.init_kwargs: dict[str, Any] = {}
        self.num_outputs = 1
        self.options: dict[str, Any] = {}
        self._signature_target: Callable[..., Any] = getattr(udf, "run")  # noqa: B009
        self._drops_self = True
        self._label = udf.__name__

    def pre_init(self, *args: Any, **kwargs: Any) -> RayModule:
        """Arguments for the UDF's constructor, run once per actor."""
        self.init_args, self.init_kwargs = args, kwargs
        return self

    def returns(self, k: int) -> RayModule:
        """Declare that ``run()`` returns a tuple of ``k`` lists (k output Ports)."""
        self.num_outputs = k
        return self

    def ray_options(self, **options: Any) -> RayModule:
        """Engine options: ``replicas``, ``batch_size``, ``recovery``, ``batching``,
        ``max_batches_in_flight``, ``batch_timeout_s`` (seconds one batch may run,
        default None). Every other option (``num_cpus``, ``num_gpus``, ``resources``,
        ``memory``, ``runtime_env``, ...) goes to Ray unchanged."""
        self.options = {**self.options, **options}
        return self

    # -- compile-time views ---------------------------------------------------
    def call_options(self, name: str) -> CallOptions:
        """Validated options, or ``CompileError`` naming the module and the option."""
        opts = dict(self.options)
        consumed = {k: opts.pop(k) for k in _CONSUMED if k in opts}
        for key in ("replicas", "batch_size", "max_batches_in_flight"):
            if key in consumed:
                value = consumed[key]
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise CompileError(f"module {name!r}: {key} must be an int >= 1, got {value!r}")
        batching = consumed.get("batching", Batching.ANY_PARENT)
        try:
            batching = Batching(batching)
        except ValueError:
            allowed = ", ".join(repr(b.value) for b in Batching)
            raise CompileError(
                f"module {name!r}: unknown batching policy {batching!r}; use one of {allowed}"
            ) from None
        recovery = consumed.get("recovery", RecoveryPolicy())
        if not isinstance(recovery, RecoveryPolicy):
            raise CompileError(
                f"module {name!r}: recovery must be a ro.RecoveryPolicy, got {recovery!r}"
            )
        timeout = consumed.get("batch_timeout_s")
        if timeout is not None and (
            not isinstance(timeout, (int, float))
            or isinstance(timeout, bool)
            or not 0 < timeout < math.inf
        ):
            raise CompileError(
                f"module {name!r}: batch_timeout_s must be a number of seconds > 0 or None, "
                f"got {timeout!r}"
            )
        if not isinstance(self.num_outputs, int) or self.num_outputs < 1:
            raise CompileError(
                f"module {name!r}: returns(k) needs k >= 1, got {self.num_outputs!r}"
            )
        return CallOptions(
            replicas=consumed.get("replicas", 1),
            batch_size=consumed.get("batch_size", CallOptions.batch_size),
            batching=batching,
            recovery=recovery,
            max_batches_in_flight=consumed.get(
                "max_batches_in_flight", CallOptions.max_batches_in_flight
            ),
            batch_timeout_s=None if timeout is None else float(timeout),
            ray_actor_options=opts,
        )

    @property
    def udf_path(self) -> str:
        target = getattr(self, "_function", None) or self.udf
        return f"{target.__module__}:{target.__qualname__}"

    # -- tracing --------------------------------------------------------------
    def __call__(self, *ports: Any, **static_kwargs: Any) -> Any:
        """Make a Call: returns its output Port, or a tuple of ``k`` Ports with ``returns(k)``."""
        trace = active_trace(f"module {self._label!r}")
        base = trace.module_names.get(id(self), self._label)
        name = trace.call_name(base)
        if not ports:
            raise CompileError(f"Call {name!r}: a Call needs at least one input Port")
        inputs = [trace.own(p, f"Call {name!r} argument {i}") for i, p in enumerate(ports)]
        domains = {p._domain.id: p._domain for p in inputs}
        if len(domains) > 1:
            listing = ", ".join(f"{p!r}" for p in inputs)
            raise CompileError(
                f"Call {name!r}: inputs come from different Domains ({listing}). "
                "A Call's inputs must share one Domain; bring an ancestor's value down "
                "with ro.F.broadcast(port, like=...) or gather children with ro.F.reduce."
            )
        self._check_signature(name, len(inputs), static_kwargs)
        domain = inputs[0]._domain
        node = trace.new_node(
            NodeKind.CALL, name, inputs, domain, module=self, kwargs=dict(static_kwargs)
        )
        k = self.num_outputs
        if k == 1:
            return trace.new_port(node, domain, name)
        outs = CallOutputs(trace.new_port(node, domain, f"{name}[{i}]") for i in range(k))
        outs.call = name
        trace.multi_outputs.append(outs)
        return outs

    def _check_signature(self, name: str, n_ports: int, kwargs: dict[str, Any]) -> None:
        try:
            sig = inspect.signature(self._signature_target)
        except (TypeError, ValueError):  # builtins without a signature: trust the user
            return
        params = list(sig.parameters.values())
        if self._drops_self and params:
            params = params[1:]
        positional = [
            p
            for p in params
            if p.kind
            in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ]
        var_pos = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
        var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        required = [p for p in positional if p.default is inspect.Parameter.empty]
        where = f"Call {name!r} ({self.udf_path}.run{sig})"
        if n_ports > len(positional) and not var_pos:
            raise CompileError(
                f"{where}: {n_ports} Ports passed but run() takes at most {len(positional)}"
            )
        filled = {p.name for p in positional[:n_ports]}
        missing = [p.name for p in required[n_ports:] if p.name not in kwargs]
        if missing:
            raise CompileError(
                f"{where}: {n_ports} Ports passed but run() also needs {', '.join(missing)}"
            )
        by_name = {p.name: p for p in params}
        for key in kwargs:
            param = by_name.get(key)
            if key in filled:
                raise CompileError(f"{where}: {key!r} is given both as a Port and as a keyword")
            if (param is None or param.kind is inspect.Parameter.POSITIONAL_ONLY) and not var_kw:
                raise CompileError(f"{where}: run() takes no keyword argument {key!r}")

    def __repr__(self) -> str:
        return f"RayModule({self.udf_path})"


class FunctionUDF:
    """The UDF behind ``ro.function``: calls a plain batch function."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def run(self, *columns: Any, **kwargs: Any) -> Any:
        return self.fn(*columns, **kwargs)


def function(fn: Callable[..., Any] | None = None, **ray_options: Any) -> Any:
    """Adapt a plain batch function ``fn(*columns, **kwargs) -> results`` into a module.

    Usable as ``ro.function(fn)``, ``@ro.function`` or ``@ro.function(batch_size=8)``.
    """

    def wrap(f: Callable[..., Any]) -> RayModule:
        if not callable(f):
            raise CompileError(f"ro.function expects a callable, got {f!r}")
        module = RayModule(FunctionUDF).pre_init(f)
        module._signature_target = f
        module._drops_self = False
        module._label = getattr(f, "__name__", "function")
        module._function = f  # type: ignore[attr-defined]
        if ray_options:
            module.ray_options(**ray_options)
        return module

    return wrap if fn is None else wrap(fn)
