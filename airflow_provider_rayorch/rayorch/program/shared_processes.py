"""Modules that share one actor process (``ray_options(share_process=...)``).

Every replica of every module that gives the same name runs in one Ray actor
process, on a thread of its own. That saves a process start per replica (most of a
cold run's fixed cost on a small machine), and costs parallelism where a UDF holds
the GIL. A process holds no accelerator: a module that asks for GPUs or custom
resources keeps processes of its own, and the members of one process must agree on
its ``runtime_env``.

The default (``share_process=None``): the modules that ask Ray for nothing (no
option but ``num_cpus=0``, no ``batch_timeout_s``) share the process
``DEFAULT_PROCESS``, when it would hold at least two workers.
``share_process=False`` opts a module out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .options import CallOptions
    from .plan import ModuleSpec

__all__ = [
    "DEFAULT_PROCESS",
    "asks_for_nothing",
    "check_shared_processes",
    "process_groups",
    "process_names",
    "shared_actor_options",
]

#: Ray options a shared process adds up over its members.
SUMMED = ("num_cpus", "memory")
#: The process that the modules asking for nothing share by default.
DEFAULT_PROCESS = "default"


def asks_for_nothing(options: CallOptions) -> bool:
    """Whether a module asks for nothing a process shared with others could not give:
    no Ray option but ``num_cpus=0``, and no hang bound (a hung batch kills its
    process, and with it the other modules' batches)."""
    ray_options = options.ray_actor_options
    return (
        set(ray_options) <= {"num_cpus"}
        and not ray_options.get("num_cpus")
        and options.batch_timeout_s is None
    )


def process_names(modules: Iterable[ModuleSpec]) -> dict[int, str | None]:
    """Module id -> the name of the process its replicas share (None: processes of
    their own). The one place where ``share_process`` is resolved."""
    modules = list(modules)
    names: dict[int, str | None] = {}
    for m in modules:
        share = m.options.share_process
        if isinstance(share, str):
            names[m.id] = share
        elif share is None and asks_for_nothing(m.options):
            names[m.id] = DEFAULT_PROCESS
        else:
            names[m.id] = None
    # A default process of one worker saves no process start.
    slots = sum(m.options.replicas for m in modules if names[m.id] == DEFAULT_PROCESS)
    if slots < 2:
        for m in modules:
            if names[m.id] == DEFAULT_PROCESS and m.options.share_process is None:
                names[m.id] = None
    return names


def process_groups(modules: Iterable[ModuleSpec]) -> dict[str, list[ModuleSpec]]:
    """Share name -> its modules, in plan order."""
    modules = list(modules)
    names = process_names(modules)
    groups: dict[str, list[ModuleSpec]] = {}
    for m in modules:
        name = names[m.id]
        if name is not None:
            groups.setdefault(name, []).append(m)
    return groups


def check_shared_processes(modules: Iterable[ModuleSpec]) -> None:
    """``CompileError`` for a shared process that could not be one actor."""
    for name, members in process_groups(modules).items():
        envs: dict[str, Any] = {}
        for m in members:
            opts = m.options.ray_actor_options
            held = [k for k in ("num_gpus", "resources", "accelerator_type") if opts.get(k)]
            if held:
                raise CompileError(
                    f"module {m.name!r}: share_process={name!r} cannot hold "
                    f"{', '.join(held)}: a process shared by several modules holds no "
                    "accelerator. Give the module a process of its own (drop share_process)"
                )
            for key in ("max_restarts", "max_concurrency", "scheduling_strategy", "name"):
                if key in opts:
                    raise CompileError(
                        f"module {m.name!r}: share_process={name!r} sets its own {key}; "
                        "a shared process takes it from the engine. Drop one of the two"
                    )
            envs[m.name] = opts.get("runtime_env")
        if len({repr(env) for env in envs.values()}) > 1:
            raise CompileError(
                f"modules {', '.join(map(repr, envs))} share_process={name!r} but ask for "
                "different runtime_env values; one process has one environment: give "
                "them the same runtime_env, or separate processes"
            )


def shared_actor_options(members: Iterable[ModuleSpec]) -> dict[str, Any]:
    """Ray options of the process that runs ``members``: summed CPUs and memory,
    the other options of the first member that sets each."""
    out: dict[str, Any] = {}
    for m in members:
        for key, value in m.options.ray_actor_options.items():
            if key in SUMMED:
                out[key] = out.get(key, 0) + value * m.options.replicas
            else:
                out.setdefault(key, value)
    return out
