"""Compiling pipelines: every structural violation is a CompileError, raised before
anything runs, in the user's terms; the plan is immutable and its fingerprint stable."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro

from .pipelines import Doc


class One:
    def run(self, xs: list[Any]) -> list[Any]:
        return xs


class Two:
    def run(self, xs: list[Any], ys: list[Any]) -> list[Any]:
        return xs


class Kw:
    def run(self, xs: list[Any], *, lang: str = "en") -> list[Any]:
        return xs


def pipeline(forward: Any, **modules: ro.RayModule) -> ro.Pipeline:
    """A pipeline whose forward(doc) is ``forward(self, doc)``."""

    class P(ro.Pipeline):
        def __init__(self) -> None:
            for name, module in modules.items():
                setattr(self, name, module)

        def forward(self, doc: ro.Port) -> Any:
            return forward(self, doc)

    return P()


def one(**opts: Any) -> ro.RayModule:
    return ro.RayModule(One).ray_options(**opts)


F = ro.F

# (forward, modules, message regex)
BAD_STRUCTURE = [
    pytest.param(
        lambda s, doc: s.two(F.expand(doc, domain="page"), doc),
        {"two": ro.RayModule(Two)},
        r"Call 'two'.*different Domains.*'page'.*'doc'",
        id="call-inputs-from-different-domains",
    ),
    pytest.param(
        lambda s, doc: F.reduce(s.one(doc)),
        {"one": one()},
        r"F.reduce.*root Domain 'doc'",
        id="reduce-of-a-root-port",
    ),
    pytest.param(
        lambda s, doc: F.reduce(F.reduce(F.expand(doc))),
        {},
        r"F.reduce.*root Domain",
        id="reduce-without-matching-expand",
    ),
    pytest.param(
        lambda s, doc: F.expand_aligned(s.one(doc), s.one_b(doc)),
        {"one": one(), "one_b": one()},
        r"F.expand_aligned.*different producers",
        id="expand-aligned-of-different-producers",
    ),
    pytest.param(
        lambda s, doc: F.expand_aligned(*([s.two_out(doc)[0]] * 2)),
        {"two_out": ro.RayModule(One).returns(2)},
        r"same Port is given twice",
        id="expand-aligned-same-port-twice",
    ),
    pytest.param(
        lambda s, doc: F.reduce(F.filter(F.expand(doc, domain="page"), s.one(doc))),
        {"one": one()},
        r"F.filter: mask .*Domain 'doc'.*'page'",
        id="filter-mask-from-another-domain",
    ),
    pytest.param(
        lambda s, doc: F.broadcast(doc, like=s.one(doc)),
        {"one": one()},
        r"F.broadcast: like=.*not a descendant",
        id="broadcast-into-the-same-domain",
    ),
    pytest.param(
        lambda s, doc: F.broadcast(F.expand(doc, domain="page"), like=doc),
        {},
        r"F.broadcast: like=.*'doc'.*not a descendant.*'page'",
        id="broadcast-upwards",
    ),
    pytest.param(
        lambda s, doc: F.broadcast(F.expand(doc, domain="a"), like=F.expand(doc, domain="b")),
        {},
        r"F.broadcast.*not a descendant",
        id="broadcast-to-a-sibling-domain",
    ),
    pytest.param(
        lambda s, doc: F.reduce(F.expand(doc, domain="a"), members=F.expand(doc, domain="b")),
        {},
        r"members=.*Domain 'b'.*not in 'a'",
        id="reduce-members-from-another-domain",
    ),
    pytest.param(
        lambda s, doc: s.two(doc)[0],
        {"two": ro.RayModule(Two).returns(2)},
        r"Call 'two'.*2 Ports? passed|run\(\) takes at most 1|1 Ports passed",
        id="fewer-ports-than-run-needs",
    ),
    pytest.param(
        lambda s, doc: s.one(doc, doc),
        {"one": one()},
        r"Call 'one'.*2 Ports passed but run\(\) takes at most 1",
        id="more-ports-than-run-takes",
    ),
    pytest.param(
        lambda s, doc: s.kw(doc, langg="fr"),
        {"kw": ro.RayModule(Kw)},
        r"Call 'kw'.*no keyword argument 'langg'",
        id="unknown-static-kwarg",
    ),
    pytest.param(
        lambda s, doc: s.kw(doc, xs=1),
        {"kw": ro.RayModule(Kw)},
        r"'xs' is given both as a Port and as a keyword",
        id="kwarg-duplicates-a-port",
    ),
    pytest.param(
        lambda s, doc: s.one(),
        {"one": one()},
        r"Call 'one': a Call needs at least one input Port",
        id="call-without-ports",
    ),
    pytest.param(
        lambda s, doc: s.one(3),
        {"one": one()},
        r"Call 'one' argument 0: expected a Port, got int",
        id="call-on-a-constant",
    ),
    pytest.param(
        lambda s, doc: s.one(doc) if s.one(doc) else doc,
        {"one": one()},
        r"truth value",
        id="bool-of-a-port",
    ),
    pytest.param(
        lambda s, doc: [p for p in s.one(doc)],
        {"one": one()},
        r"cannot be iterated or unpacked",
        id="iterating-a-port",
    ),
    pytest.param(
        lambda s, doc: s.one(doc)[0],
        {"one": one()},
        r"cannot be indexed",
        id="indexing-a-port",
    ),
    pytest.param(
        lambda s, doc: 42,
        {},
        r"forward return value is int, not a Port",
        id="forward-returns-a-non-port",
    ),
    pytest.param(
        lambda s, doc: (doc, "x"),
        {},
        r"forward return value 1 is str, not a Port",
        id="forward-returns-a-tuple-with-a-non-port",
    ),
    pytest.param(
        lambda s, doc: (),
        {},
        r"returned no Port",
        id="forward-returns-nothing",
    ),
    pytest.param(
        lambda s, doc: F.expand(doc, domain="page"),
        {},
        r"Domain 'page', not the root Domain 'doc'.*F.reduce",
        id="forward-returns-a-child-port",
    ),
    pytest.param(
        lambda s, doc: F.expand(doc, domain="not an identifier"),
        {},
        r"domain= must be an identifier",
        id="domain-name-not-an-identifier",
    ),
    pytest.param(
        lambda s, doc: F.expand(doc, domain="doc"),
        {},
        r"Domain named 'doc' already exists",
        id="domain-name-taken",
    ),
]


@pytest.mark.parametrize(("forward", "modules", "message"), BAD_STRUCTURE)
def test_structural_violations_raise_compile_error(
    forward: Any, modules: dict[str, ro.RayModule], message: str
) -> None:
    with pytest.raises(ro.CompileError, match=message):
        pipeline(forward, **modules).compile()


@pytest.mark.parametrize(
    ("unpack", "message"),
    [
        pytest.param(3, r"Call 'two' returns 2 Ports \(returns\(2\)\).*unpacked", id="three"),
        pytest.param(1, r"Call 'two' returns 2 Ports \(returns\(2\)\).*unpacked", id="one"),
    ],
)
def test_unpacking_a_different_number_of_outputs(unpack: int, message: str) -> None:
    def forward(s: Any, doc: ro.Port) -> Any:
        if unpack == 3:
            a, _b, _c = s.two(doc)
        else:
            (a,) = s.two(doc)
        return a

    with pytest.raises(ro.CompileError, match=message):
        pipeline(forward, two=ro.RayModule(One).returns(2)).compile()


def test_unpacking_names_the_call_unpacked_not_the_last_one() -> None:
    def forward(s: Any, doc: ro.Port) -> Any:
        first = s.two(doc)
        s.three(doc)
        a, _b, _c = first
        return a

    with pytest.raises(ro.CompileError, match=r"Call 'two' returns 2 Ports"):
        pipeline(
            forward, two=ro.RayModule(One).returns(2), three=ro.RayModule(One).returns(3)
        ).compile()


def test_unpacking_a_single_port() -> None:
    def forward(s: Any, doc: ro.Port) -> Any:
        a, _b = s.one(doc)
        return a

    with pytest.raises(ro.CompileError, match=r"cannot be iterated or unpacked.*returns\(k\)"):
        pipeline(forward, one=one()).compile()


def test_returns_k_gives_k_ports() -> None:
    plan = pipeline(lambda s, doc: s.two(doc), two=ro.RayModule(One).returns(2)).compile()
    assert plan.output_names == ("out0", "out1")
    assert len(plan.outputs) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"batch_size": 0}, r"module 'one': batch_size must be an int >= 1", id="bs0"),
        pytest.param({"batch_size": 1.5}, r"batch_size must be an int >= 1", id="bs-float"),
        pytest.param({"batch_size": True}, r"batch_size must be an int >= 1", id="bs-bool"),
        pytest.param({"replicas": 0}, r"module 'one': replicas must be an int >= 1", id="rep0"),
        pytest.param({"max_batches_in_flight": 0}, r"max_batches_in_flight", id="inflight0"),
        pytest.param(
            {"batching": "round_robin"},
            r"unknown batching policy 'round_robin'.*'any_parent', 'single_parent'",
            id="batching",
        ),
        pytest.param({"recovery": "retry"}, r"recovery must be a ro.RecoveryPolicy", id="recovery"),
    ],
)
def test_invalid_options_fail_at_compile_not_at_ray_options(
    options: dict[str, Any], message: str
) -> None:
    module = ro.RayModule(One).ray_options(**options)  # accepted here ...
    with pytest.raises(ro.CompileError, match=message):  # ... refused here
        pipeline(lambda s, doc: s.one(doc), one=module).compile()


def test_returns_zero_is_refused() -> None:
    def forward(s: Any, doc: ro.Port) -> ro.Port:
        s.one(doc)
        return doc

    with pytest.raises(ro.CompileError, match=r"returns\(k\) needs k >= 1"):
        pipeline(forward, one=ro.RayModule(One).returns(0)).compile()


def test_compile_error_comes_from_run_and_executor_before_anything_runs() -> None:
    ran: list[Any] = []

    def fn(xs: list[Any]) -> list[Any]:
        ran.append(xs)
        return xs

    bad = pipeline(lambda s, doc: s.fn(doc, doc), fn=ro.function(fn))
    with pytest.raises(ro.CompileError):
        ro.run(bad, [1], backend="local")
    with pytest.raises(ro.CompileError):
        ro.Executor(bad, backend="local")
    with pytest.raises(ro.CompileError):
        bad.run([1], backend="local")
    assert ran == []


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda: ro.RayModule(lambda xs: xs), r"expects a UDF class", id="not-a-class"),
        pytest.param(lambda: ro.RayModule(int), r"no run\(\) method", id="no-run"),
        pytest.param(lambda: ro.function(3), r"expects a callable", id="function-of-non-callable"),
    ],
)
def test_module_construction_errors(make: Any, message: str) -> None:
    with pytest.raises(ro.CompileError, match=message):
        make()


def test_structural_primitives_outside_forward() -> None:
    with pytest.raises(ro.CompileError, match="inside a Pipeline's forward"):
        F.expand(None)  # type: ignore[arg-type]
    with pytest.raises(ro.CompileError, match="inside a Pipeline's forward"):
        one()(None)


def test_a_port_from_another_trace_is_refused() -> None:
    leaked: list[ro.Port] = []

    def first(s: Any, doc: ro.Port) -> ro.Port:
        leaked.append(doc)
        return doc

    pipeline(first).compile()
    with pytest.raises(ro.CompileError, match="another pipeline's trace"):
        pipeline(lambda s, doc: s.one(leaked[0]), one=one()).compile()


@pytest.mark.parametrize(
    "forward_src",
    [
        pytest.param("def forward(self, *cols): return cols[0]", id="varargs"),
        pytest.param("def forward(self): return None", id="no-columns"),
        pytest.param("def forward(self, doc, *, k=1): return doc", id="keyword-only"),
    ],
)
def test_forward_signature_must_be_plain_positional(forward_src: str) -> None:
    namespace: dict[str, Any] = {}
    exec(forward_src, namespace)
    P = type("P", (ro.Pipeline,), {"forward": namespace["forward"]})
    with pytest.raises(ro.CompileError, match="forward"):
        P().compile()


def test_columns_must_match_forward_parameters() -> None:
    two_cols = pipeline(lambda s, doc: doc)
    with pytest.raises(ValueError, match="takes 1 source column"):
        ro.run(two_cols, [1], [2], backend="local")
    with pytest.raises(ValueError, match="must be a sequence of rows"):
        ro.run(two_cols, "abc", backend="local")


# =============================================================================
# The plan
# =============================================================================
def test_the_plan_is_immutable() -> None:
    plan = Doc().compile()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.fingerprint = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.nodes[0].name = "x"  # type: ignore[misc]
    assert isinstance(plan.nodes, tuple)


def test_calling_a_module_twice_makes_two_calls_sharing_one_pool() -> None:
    plan = pipeline(lambda s, doc: s.one(s.one(doc)), one=one(replicas=3)).compile()
    assert [c.name for c in plan.calls] == ["one", "one_2"]
    assert len(plan.modules) == 1
    assert {c.module for c in plan.calls} == {0}


def test_options_pass_through_to_ray() -> None:
    plan = Doc(num_cpus=0.5).compile()
    render = next(m for m in plan.modules if m.name == "render")
    assert render.options.ray_actor_options == {"num_cpus": 0.5}
    assert render.options.batch_size == 2
    assert render.init_kwargs == (("dpi", 150), ("langs", frozenset({"en", "fr", "de"})))


def test_default_names() -> None:
    plan = Doc().compile()
    assert [d.name for d in plan.domains] == ["pdfs", "render"]
    assert Doc(domain="page").compile().domains[1].name == "page"


def test_function_modules_check_the_functions_signature() -> None:
    def fn(xs: list[Any]) -> list[Any]:
        return xs

    with pytest.raises(ro.CompileError, match=r"Call 'fn'.*2 Ports passed"):
        pipeline(lambda s, doc: s.fn(doc, doc), fn=ro.function(fn)).compile()
    assert ro.function(batch_size=3)(fn).options == {"batch_size": 3}


# =============================================================================
# Fingerprints
# =============================================================================
BASE = Doc().compile().fingerprint


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(lambda: Doc(dpi=300), id="pre_init-kwarg"),
        pytest.param(lambda: Doc(langs=frozenset({"en"})), id="pre_init-set"),
        pytest.param(lambda: Doc(batch_size=16), id="batch_size"),
        pytest.param(lambda: Doc(replicas=3), id="replicas"),
        pytest.param(lambda: Doc(batching="single_parent"), id="batching"),
        pytest.param(lambda: Doc(recovery=ro.RecoveryPolicy.retry_tail()), id="recovery"),
        pytest.param(
            lambda: Doc(recovery=ro.RecoveryPolicy.isolate_tail(infra_retries=5)),
            id="infra_retries",
        ),
        pytest.param(lambda: Doc(num_cpus=2), id="ray-actor-option"),
        pytest.param(lambda: Doc(lang="fr"), id="static-kwarg"),
        pytest.param(lambda: Doc(domain="page"), id="domain-name"),
        pytest.param(lambda: Doc(filtered=True), id="structure"),
    ],
)
def test_fingerprint_changes_with_structure_and_options(changed: Any) -> None:
    assert changed().compile().fingerprint != BASE


def test_fingerprint_is_the_same_for_the_same_pipeline() -> None:
    assert Doc().compile().fingerprint == BASE
    assert Doc(langs=frozenset({"de", "fr", "en"})).compile().fingerprint == BASE
    assert len(BASE) == 64
    int(BASE, 16)


def test_fingerprint_depends_on_udf_import_paths() -> None:
    class Other(Doc):
        pass

    assert Other().compile().fingerprint != BASE


def test_fingerprint_is_stable_across_processes() -> None:
    module = Doc.__module__
    package_root = Path(sys.modules[module].__file__).parents[module.count(".")]  # type: ignore[arg-type]
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(package_root)!r})\n"
        f"from {module} import Doc\n"
        "import airflow_provider_rayorch.rayorch as ro\n"
        "print(json.dumps([Doc().compile().fingerprint,"
        " Doc(recovery=ro.RecoveryPolicy.retry_tail(2), num_cpus=0.5).compile().fingerprint]))\n"
    )
    expected = [
        BASE,
        Doc(recovery=ro.RecoveryPolicy.retry_tail(2), num_cpus=0.5).compile().fingerprint,
    ]
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        assert json.loads(out.stdout) == expected
