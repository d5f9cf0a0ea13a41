"""``RayModule``: a UDF class with its constructor arguments and actor-pool options."""

from __future__ import annotations

import inspect
import math
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from .call_binding import RunSignature, bind_call
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
    "share_process",
)

#: Options other engines' spellings put in ray_options() that are not Ray options
#: here, with what to write instead. They would otherwise reach Ray and fail there.
_FOREIGN_OPTIONS = {
    "num_outputs": "declare the outputs on the module: RayModule(udf, num_outputs=k) "
    "or RayModule(udf).returns(k)",
    "max_retries": "retries belong to the recovery policy: "
    "recovery=ro.RecoveryPolicy.retry_batch(max_retries=n)",
    "batching_policy": 'use batching="any_parent" (batch ready rows across parents, the '
    'default) or batching="single_parent"',
    "batch_scope": 'use batching="any_parent" (batch ready rows across parents, the '
    'default) or batching="single_parent"',
}


def _refuse_foreign_options(name: str, options: dict[str, Any]) -> None:
    for key, instead in _FOREIGN_OPTIONS.items():
        if key in options:
            raise CompileError(
                f"module {name!r}: ray_options({key}=...) is not an option here; {instead}"
            )


class RayModule:
    """A batch UDF and how to run it: ``RayModule(Udf).pre_init(...).ray_options(...)``.

    The UDF is a plain class: ``__init__`` runs once per actor, ``run(*columns,
    **static_kwargs)`` takes one list per input Port and returns one result per
    row (with ``returns(k)``: a tuple of k such lists). Calling a module inside
    ``forward`` makes a Call; every Call of one module shares its actor pool.
    Options are checked when the pipeline is compiled.
    """

    def __init__(self, udf: type, *, num_outputs: int | None = None) -> None:
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
        #: How the output count was declared, for error messages.
        self._outputs_spelling = "returns(k)"
        self.options: dict[str, Any] = {}
        self._signature_target: Callable[..., Any] = getattr(udf, "run")  # noqa: B009
        self._drops_self = True
        self._label = udf.__name__
        if num_outputs is not None:
            self.returns(num_outputs)
            self._outputs_spelling = "num_outputs=k"

    def pre_init(self, *args: Any, **kwargs: Any) -> RayModule:
        """Arguments for the UDF's constructor, run once per actor."""
        self.init_args, self.init_kwargs = args, kwargs
        return self

    def returns(self, k: int) -> RayModule:
        """Declare that ``run()`` returns a tuple of ``k`` lists (k output Ports).

        ``RayModule(udf, num_outputs=k)`` (the paper package's spelling) means the
        same; the later declaration wins."""
        self.num_outputs = k
        self._outputs_spelling = "returns(k)"
        return self

    def ray_options(self, **options: Any) -> RayModule:
        """Engine options: ``replicas``, ``batch_size``, ``recovery``, ``batching``,
        ``max_batches_in_flight``, ``batch_timeout_s`` (seconds one batch may run,
        default None), ``share_process`` (a name: the modules that give the same one
        run in one actor process, one thread per replica; ``False``: processes of its
        own; ``None``, the default: the modules that ask Ray for nothing share one).
        Every other option (``num_cpus``, ``num_gpus``, ``resources``,
        ``memory``, ``runtime_env``, ...) goes to Ray unchanged."""
        self.options = {**self.options, **options}
        return self

    # -- compile-time views ---------------------------------------------------
    def call_options(self, name: str) -> CallOptions:
        """Validated options, or ``CompileError`` naming the module and the option."""
        opts = dict(self.options)
        _refuse_foreign_options(name, opts)
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
        shared = consumed.get("share_process")
        if (
            shared is not None
            and shared is not False
            and (not isinstance(shared, str) or not shared.strip())
        ):
            raise CompileError(
                f"module {name!r}: share_process must be a non-empty name (the modules "
                "that give the same one share an actor process), False (processes of its "
                f"own) or None (the default), got {shared!r}"
            )
        self.output_count(name)
        return CallOptions(
            replicas=consumed.get("replicas", 1),
            batch_size=consumed.get("batch_size", CallOptions.batch_size),
            batching=batching,
            recovery=recovery,
            max_batches_in_flight=consumed.get(
                "max_batches_in_flight", CallOptions.max_batches_in_flight
            ),
            batch_timeout_s=None if timeout is None else float(timeout),
            share_process=shared,
            ray_actor_options=opts,
        )

    def output_count(self, name: str) -> int:
        """The declared number of output Ports, or ``CompileError`` naming the module."""
        k = self.num_outputs
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise CompileError(f"module {name!r}: {self._outputs_spelling} needs k >= 1, got {k!r}")
        return k

    @property
    def udf_path(self) -> str:
        target = getattr(self, "_function", None) or self.udf
        return f"{target.__module__}:{target.__qualname__}"

    # -- tracing --------------------------------------------------------------
    def __call__(self, *ports: Any, **kwargs: Any) -> Any:
        """Make a Call: returns its output Port, or a tuple of ``k`` Ports with ``returns(k)``.

        Ports are the UDF's columns, positionally or by the name of a positional
        ``run()`` parameter; every other keyword is a static argument of ``run()``.
        """
        trace = active_trace(f"module {self._label!r}")
        base = trace.module_names.get(id(self), self._label)
        name = trace.call_name(base)
        sig = RunSignature.of(self._signature_target, self._drops_self)
        where = f"Call {name!r} ({self.udf_path}" + (f".run{sig.text})" if sig else ")")
        if not ports and not kwargs:
            raise CompileError(f"Call {name!r}: a Call needs at least one input Port")
        columns, static_kwargs = bind_call(where, sig, ports, kwargs)
        if not columns:
            raise CompileError(f"Call {name!r}: a Call needs at least one input Port")
        inputs = [trace.own(p, f"Call {name!r} argument {i}") for i, p in enumerate(columns)]
        domains = {p._domain.id: p._domain for p in inputs}
        if len(domains) > 1:
            listing = ", ".join(f"{p!r}" for p in inputs)
            raise CompileError(
                f"Call {name!r}: inputs come from different Domains ({listing}). "
                "A Call's inputs must share one Domain; bring an ancestor's value down "
                "with ro.F.broadcast(port, like=...) or gather children with ro.F.reduce."
            )
        domain = inputs[0]._domain
        node = trace.new_node(
            NodeKind.CALL, name, inputs, domain, module=self, kwargs=static_kwargs
        )
        k = self.output_count(base)
        if k == 1:
            return trace.new_port(node, domain, name)
        outs = CallOutputs(trace.new_port(node, domain, f"{name}[{i}]") for i in range(k))
        outs.call = name
        trace.multi_outputs.append(outs)
        return outs

    def __repr__(self) -> str:
        return f"RayModule({self.udf_path})"


class FunctionUDF:
    """The UDF behind ``ro.function``: calls a plain batch function."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def run(self, *columns: Any, **kwargs: Any) -> Any:
        return self.fn(*columns, **kwargs)


def function(
    fn: Callable[..., Any] | None = None, *, num_outputs: int | None = None, **ray_options: Any
) -> Any:
    """Adapt a plain batch function ``fn(*columns, **kwargs) -> results`` into a module.

    Usable as ``ro.function(fn)``, ``@ro.function``, ``@ro.function(batch_size=8)``;
    ``num_outputs=k`` declares k output Ports like ``returns(k)``.
    """

    def wrap(f: Callable[..., Any]) -> RayModule:
        if not callable(f):
            raise CompileError(f"ro.function expects a callable, got {f!r}")
        module = RayModule(FunctionUDF, num_outputs=num_outputs).pre_init(f)
        module._signature_target = f
        module._drops_self = False
        module._label = getattr(f, "__name__", "function")
        module._function = f  # type: ignore[attr-defined]
        if ray_options:
            module.ray_options(**ray_options)
        return module

    return wrap if fn is None else wrap(fn)
