"""Modules that share one actor process (``ray_options(share_process=name)``).

Opt-in, for light stages: every replica of every module that gives the same name
runs in one Ray actor process, on a thread of its own. That saves a process start
per replica (most of a cold run's fixed cost on a small machine), and costs
parallelism where a UDF holds the GIL. A process holds no accelerator: a module
that asks for GPUs or custom resources keeps processes of its own, and the members
of one process must agree on its ``runtime_env``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .plan import ModuleSpec

__all__ = ["check_shared_processes", "process_groups", "shared_actor_options"]

#: Ray options a shared process adds up over its members.
SUMMED = ("num_cpus", "memory")


def process_groups(modules: Iterable[ModuleSpec]) -> dict[str, list[ModuleSpec]]:
    """Share name -> its modules, in plan order."""
    groups: dict[str, list[ModuleSpec]] = {}
    for m in modules:
        if m.options.share_process is not None:
            groups.setdefault(m.options.share_process, []).append(m)
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
