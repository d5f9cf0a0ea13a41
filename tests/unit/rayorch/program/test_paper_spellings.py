"""Each public spelling of the paper's package: accepted with the same meaning, or
refused with an error saying what to write instead (docs/engine-api.md,
"Porting from the paper's package")."""

from __future__ import annotations

from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro

F = ro.F


class Pair:
    def run(self, xs: list[Any]) -> tuple[list[Any], list[Any]]:
        return xs, [-x for x in xs]


class Triple:
    def run(self, xs: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
        return xs, xs, xs


class Join:
    def run(self, xs: list[Any], ys: list[Any]) -> list[Any]:
        return [f"{x}:{y}" for x, y in zip(xs, ys, strict=True)]


class KeywordOnly:
    def run(self, xs: list[Any], *, ys: list[Any] | None = None) -> list[Any]:
        return xs


class ThreeColumns:
    def run(self, xs: list[Any], ys: list[Any], zs: list[Any]) -> list[Any]:
        return [f"{x}{y}{z}" for x, y, z in zip(xs, ys, zs, strict=True)]


def pipeline(forward: Any, **modules: ro.RayModule) -> ro.Pipeline:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            for name, module in modules.items():
                setattr(self, name, module)

        def forward(self, doc: ro.Port) -> Any:
            return forward(self, doc)

    return P()


def local(p: ro.Pipeline | ro.Plan, *columns: Any) -> Any:
    return ro.run(p, *columns, backend="local").outputs  # type: ignore[arg-type]


# -- num_outputs ----------------------------------------------------------------
def test_num_outputs_in_the_constructor_is_returns() -> None:
    p = pipeline(lambda s, doc: s.m(doc), m=ro.RayModule(Pair, num_outputs=2))
    assert local(p, [1, 2]) == ([1, 2], [-1, -2])
    assert p.compile().fingerprint == (
        pipeline(lambda s, doc: s.m(doc), m=ro.RayModule(Pair).returns(2)).compile().fingerprint
    )


def test_the_later_declaration_of_the_output_count_wins() -> None:
    three = pipeline(lambda s, doc: s.m(doc), m=ro.RayModule(Triple, num_outputs=2).returns(3))
    assert len(three.compile().outputs) == 3
    one = pipeline(lambda s, doc: s.m(doc), m=ro.RayModule(Pair, num_outputs=2).returns(1))
    assert len(one.compile().outputs) == 1


@pytest.mark.parametrize("k", [0, -1, True, "2"])
def test_a_bad_num_outputs_names_the_spelling_used(k: Any) -> None:
    p = pipeline(lambda s, doc: s.m(doc), m=ro.RayModule(Pair, num_outputs=k))
    with pytest.raises(ro.CompileError, match=r"module 'm': num_outputs=k needs k >= 1"):
        p.compile()


def test_num_outputs_in_ray_options_points_to_returns() -> None:
    module = ro.RayModule(Pair).ray_options(num_outputs=2, batch_size=4)
    with pytest.raises(
        ro.CompileError, match=r"module 'm': ray_options\(num_outputs=.*returns\(k\)"
    ):
        pipeline(lambda s, doc: s.m(doc), m=module).compile()


@pytest.mark.parametrize(
    ("option", "instead"),
    [
        ("max_retries", r"recovery=ro\.RecoveryPolicy\.retry_batch\(max_retries=n\)"),
        ("batching_policy", r'batching="any_parent"'),
        ("batch_scope", r'batching="single_parent"'),
    ],
)
def test_options_the_paper_refuses_are_refused_with_what_to_write(
    option: str, instead: str
) -> None:
    module = ro.RayModule(Join).ray_options(**{option: 2})
    with pytest.raises(ro.CompileError, match=rf"module 'm': ray_options\({option}=.*{instead}"):
        pipeline(lambda s, doc: s.m(doc, doc), m=module).compile()


def test_function_with_num_outputs_plain_and_as_decorators() -> None:
    def pair(xs: list[int]) -> tuple[list[int], list[int]]:
        return xs, [x * 10 for x in xs]

    @ro.function(num_outputs=2)
    def pair_deco(xs: list[int]) -> tuple[list[int], list[int]]:
        return pair(xs)

    @ro.function
    def double(xs: list[int]) -> list[int]:
        return [2 * x for x in xs]

    for module in (ro.function(pair, num_outputs=2), pair_deco):
        assert local(pipeline(lambda s, doc: s.m(doc), m=module), [1, 2]) == ([1, 2], [10, 20])
    assert local(pipeline(lambda s, doc: s.m(doc), m=double), [1, 2]) == [2, 4]
    assert ro.function(pair, num_outputs=2).returns(1).num_outputs == 1
    assert ro.function(num_outputs=2, batch_size=3)(pair).options == {"batch_size": 3}


def test_a_plain_function_given_to_ray_module_points_to_ro_function() -> None:
    with pytest.raises(ro.CompileError, match=r"ro\.function\(fn\)"):
        ro.RayModule(lambda xs: xs)  # type: ignore[arg-type]


# -- Ports passed by keyword ------------------------------------------------------
def test_a_port_passed_by_keyword_fills_the_positional_parameter_of_that_name() -> None:
    neg = ro.function(lambda xs: [-x for x in xs])
    swapped = pipeline(lambda s, doc: s.m(ys=s.neg(doc), xs=doc), m=ro.RayModule(Join), neg=neg)
    assert local(swapped, [1, 2]) == ["1:-1", "2:-2"]
    after = pipeline(lambda s, doc: s.m(doc, ys=s.neg(doc)), m=ro.RayModule(Join), neg=neg)
    assert local(after, [3]) == ["3:-3"]
    assert swapped.compile().fingerprint == (
        pipeline(lambda s, doc: s.m(doc, s.neg(doc)), m=ro.RayModule(Join), neg=neg)
        .compile()
        .fingerprint
    )
    twice = pipeline(lambda s, doc: s.m(s.neg(doc), xs=doc), m=ro.RayModule(Join), neg=neg)
    with pytest.raises(ro.CompileError, match=r"'xs' is given both as a Port and as a keyword"):
        twice.compile()


def test_ports_by_keyword_that_cannot_be_columns_are_refused() -> None:
    with pytest.raises(ro.CompileError, match=r"Port passed as ys=.*'ys' is keyword-only"):
        pipeline(lambda s, doc: s.m(doc, ys=doc), m=ro.RayModule(KeywordOnly)).compile()
    with pytest.raises(ro.CompileError, match=r"Port passed as other=.*not one of its parameters"):
        pipeline(lambda s, doc: s.m(doc, other=doc), m=ro.RayModule(Join)).compile()
    with pytest.raises(ro.CompileError, match=r"positional parameter\(s\) ys without a Port"):
        pipeline(lambda s, doc: s.m(doc, zs=doc), m=ro.RayModule(ThreeColumns)).compile()
    with pytest.raises(ro.CompileError, match=r"static keyword argument 'ys' holds a Port"):
        pipeline(lambda s, doc: s.m(doc, ys=[doc]), m=ro.RayModule(KeywordOnly)).compile()


# -- compile, run, Executor ---------------------------------------------------------
def test_compile_takes_optimize_and_run_and_executor_take_a_compiled_plan() -> None:
    p = pipeline(lambda s, doc: s.m(doc), m=ro.RayModule(Pair, num_outputs=2))
    plan = p.compile(optimize=False)
    assert plan.fingerprint == p.compile(optimize=True).fingerprint == p.compile().fingerprint
    with pytest.raises(ro.UsageError, match=r"optimize=.*True or False"):
        p.compile(optimize="yes")  # type: ignore[arg-type]
    assert local(plan, [1]) == ([1], [-1])
    with ro.Executor(plan, backend="local") as executor:  # type: ignore[arg-type]
        assert executor.run([2], input_batch_size=1, max_active_input_batches=1).outputs == (
            [2],
            [-2],
        )
    assert p.run([5], input_batch_size=1, max_active_input_batches=2, backend="local").outputs == (
        [5],
        [-5],
    )


def test_a_nested_tuple_of_output_ports_is_refused_with_the_flat_form() -> None:
    p = pipeline(lambda s, doc: (doc, (doc, doc)))
    with pytest.raises(ro.CompileError, match=r"return value 1 is a nested tuple.*flatten it"):
        p.compile()


# -- recovery, outcomes, errors -------------------------------------------------------
def test_recovery_policy_keyword_forms() -> None:
    assert ro.RecoveryPolicy.abort(infra_retries=1).describe() == (
        "abort(max_retries=0, infra_retries=1)"
    )
    assert ro.RecoveryPolicy.retry_batch(max_retries=2, infra_retries=1).max_retries == 2
    assert ro.RecoveryPolicy.retry_tail(max_retries=1, infra_retries=0).infra_retries == 0
    assert ro.RecoveryPolicy.isolate_tail(infra_retries=2).max_retries == 1


def test_paper_exception_bases_still_catch() -> None:
    with pytest.raises(ValueError, match="truth value"):
        pipeline(lambda s, doc: doc if doc else None).compile()
    assert issubclass(ro.ExecutionError, RuntimeError)
    assert issubclass(ro.CompileError, ValueError)


def test_the_paper_exports_exist_here() -> None:
    paper_exports = {
        "CompileError", "ExecutionError", "Executor", "F", "GroupFailure", "ItemOutcome",
        "OutputIssue", "Pipeline", "Port", "RayModule", "RecordFailure", "RecoveryPolicy",
        "RunResult", "function", "run",
    }  # fmt: skip
    assert paper_exports <= set(ro.__all__)
    assert {o.name for o in ro.ItemOutcome} == {"PRESENT", "DROPPED", "FAILED", "SUPPRESSED"}
    for name in ("expand", "expand_aligned", "reduce", "reduce_aligned", "broadcast", "filter"):
        assert callable(getattr(F, name))


def test_version_spellings() -> None:
    import airflow_provider_rayorch

    assert ro.__version__ == airflow_provider_rayorch.__version__
    assert ro.version_info == tuple(int(p) for p in ro.__version__.split("."))
    assert all(isinstance(p, int) for p in ro.version_info)
