"""Scenario tests of the semantic contract on ``backend="local"``.

Each rule of API.md section 1 is a table of small pipelines with the exact
outputs (values, outcomes and causes) they must give.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.local import Chaos

P, D, FL, S = (
    ro.ItemOutcome.PRESENT,
    ro.ItemOutcome.DROPPED,
    ro.ItemOutcome.FAILED,
    ro.ItemOutcome.SUPPRESSED,
)


def issue(outcome: ro.ItemOutcome, cause: str) -> ro.OutputIssue:
    return ro.OutputIssue(outcome, cause)


def local(pipeline: ro.Pipeline, *columns: Any, **options: Any) -> ro.RunResult:
    return ro.run(pipeline, *columns, backend="local", **options)


# -- recording UDFs -------------------------------------------------------------
class Log:
    """Batches each UDF saw, per UDF name, in order."""

    batches: ClassVar[dict[str, list[list[Any]]]] = {}

    @classmethod
    def add(cls, name: str, rows: list[Any]) -> None:
        cls.batches.setdefault(name, []).append(list(rows))


@pytest.fixture(autouse=True)
def _clear_log() -> None:
    Log.batches = {}
    Flaky.seen = set()


class Split:
    """n -> [0..n-1]; a str row is returned as is (not a sequence of rows)."""

    def run(self, xs: list[Any]) -> list[Any]:
        Log.add("split", xs)
        return [list(range(x)) if isinstance(x, int) and x >= 0 else 7 for x in xs]


class Rows:
    """Per-row behaviour from the value: 'rf:..', 'gf:..', 'boom:..' or a value."""

    name = "rows"

    def run(self, xs: list[Any]) -> list[Any]:
        Log.add(self.name, xs)
        out: list[Any] = []
        for x in xs:
            if isinstance(x, str) and x.startswith("boom"):
                raise ValueError(x)
            if isinstance(x, str) and x.startswith("rf"):
                out.append(ro.RecordFailure(x))
            elif isinstance(x, str) and x.startswith("gf"):
                out.append(ro.GroupFailure(x))
            else:
                out.append(x)
        return out


class Rows2(Rows):
    name = "rows2"


class Pass:
    def run(self, xs: list[Any]) -> list[Any]:
        Log.add("pass", xs)
        return list(xs)


class Flaky:
    """Raises once for each value it has not raised for yet ('flaky' rows)."""

    seen: ClassVar[set[Any]] = set()

    def run(self, xs: list[Any]) -> list[Any]:
        Log.add("flaky", xs)
        new = [x for x in xs if isinstance(x, str) and x.startswith("flaky") and x not in self.seen]
        if new:
            self.seen.update(new)
            raise RuntimeError(f"transient {new[0]}")
        return list(xs)


class IsEven:
    def run(self, xs: list[Any]) -> list[Any]:
        return [isinstance(x, int) and x % 2 == 0 for x in xs]


class Tag:
    """Page value -> (page value, tag) as a row value."""

    def run(self, xs: list[Any], tags: list[Any]) -> list[Any]:
        return [f"{t}:{x}" for x, t in zip(xs, tags, strict=True)]


# -- pipelines --------------------------------------------------------------------
class Flat(ro.Pipeline):
    """pdf -> rows(pdf): one root Call."""

    def __init__(self, **opts: Any) -> None:
        self.rows = ro.RayModule(Rows).ray_options(**opts)

    def forward(self, pdf: ro.Port) -> ro.Port:
        return self.rows(pdf)


class Pages(ro.Pipeline):
    """doc -> expand into pages of values given by a lookup -> rows -> reduce."""

    def __init__(self, pages: dict[int, list[Any]], domain: str | None = "page", **opts: Any):
        self.lookup = ro.function(lambda xs: [pages[x] for x in xs], batch_size=4)
        self.rows = ro.RayModule(Rows).ray_options(**opts)
        self.domain = domain

    def forward(self, doc: ro.Port) -> ro.Port:
        kids = ro.F.expand(self.lookup(doc), domain=self.domain)
        return ro.F.reduce(self.rows(kids))


# =============================================================================
# Causes and naming
# =============================================================================
def test_root_domain_is_named_after_forwards_first_parameter() -> None:
    out = local(Flat(), [1, "rf:x", 3]).outputs
    assert out == [1, issue(FL, "pdf[1]: rf:x"), 3]


def test_cause_uses_global_source_index_across_microbatches() -> None:
    result = local(Flat(), [0, 1, 2, 3, "rf:late"], input_batch_size=2)
    assert result.outputs[4] == issue(FL, "pdf[4]: rf:late")
    assert [b["first_source"] for b in result.input_batches] == [0, 2, 4]


@pytest.mark.parametrize(
    ("domain", "name"),
    [
        pytest.param("page", "page", id="explicit-domain"),
        pytest.param(None, "lookup", id="default-is-producing-call"),
    ],
)
def test_child_domain_name_in_causes(domain: str | None, name: str) -> None:
    out = local(Pages({0: [1, "rf:blank", 3]}, domain=domain), [0]).outputs
    assert out == [issue(S, f"doc[0]/{name}[1]: rf:blank")]


def test_default_child_domain_of_a_non_call_port() -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.rows = ro.RayModule(Rows)

        def forward(self, doc: ro.Port) -> ro.Port:
            return ro.F.reduce(self.rows(ro.F.expand(doc)))

    assert local(P(), [["a", "rf:b"]]).outputs == [issue(S, "doc[0]/doc_item[1]: rf:b")]


def test_nested_cause_path_has_every_level() -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.split = ro.RayModule(Split)
            self.rows = ro.RayModule(Rows)

        def forward(self, doc: ro.Port) -> ro.Port:
            pages = ro.F.expand(self.split(doc), domain="page")
            lines = ro.F.expand(self.split(pages), domain="line")
            return ro.F.reduce(ro.F.reduce(self.rows(lines)))

    # doc 3 -> pages 0,1,2 -> page 2 has lines 0,1 ; the value ("boom") is never hit
    out = local(P(), [3, -1]).outputs
    assert out[0] == [[], [0], [0, 1]]
    # -1 is not a sequence for the split: the doc's own expand fails
    assert out[1] == issue(FL, "doc[1]: F.expand into 'page' needs a sequence, got int")


@pytest.mark.parametrize(
    ("rows", "policy", "cause"),
    [
        pytest.param(
            ["boom:bad"],
            ro.RecoveryPolicy.retry_batch(max_retries=1),
            "pdf[0]: ValueError: boom:bad",
            id="retry_batch-exhausted",
        ),
        pytest.param(
            ["boom:bad"],
            ro.RecoveryPolicy.isolate_tail(),
            "pdf[0]: ValueError: boom:bad",
            id="isolate_tail",
        ),
        pytest.param(
            ["boom:bad"],
            ro.RecoveryPolicy.retry_tail(max_retries=0),
            "pdf[0]: ValueError: boom:bad",
            id="retry_tail-no-retries",
        ),
    ],
)
def test_exception_cause_is_type_and_message(
    rows: list[Any], policy: ro.RecoveryPolicy, cause: str
) -> None:
    assert local(Flat(recovery=policy), rows).outputs == [issue(FL, cause)]


# =============================================================================
# Structural primitives
# =============================================================================
@pytest.mark.parametrize(
    ("pages", "expected"),
    [
        pytest.param({0: [1, 2, 3]}, [[1, 2, 3]], id="ordinal-order"),
        pytest.param({0: []}, [[]], id="empty-group"),
        pytest.param({0: (5, 6)}, [[5, 6]], id="tuple-is-a-sequence"),
        pytest.param(
            {0: 4},
            [issue(FL, "doc[0]: F.expand into 'page' needs a sequence, got int")],
            id="not-a-sequence",
        ),
        pytest.param(
            {0: "abc"},
            [issue(FL, "doc[0]: F.expand into 'page' needs a sequence, got str")],
            id="str-is-not-a-sequence",
        ),
        pytest.param(
            {0: [1, "rf:a", "rf:b"]}, [issue(S, "doc[0]/page[1]: rf:a")], id="lowest-ordinal"
        ),
    ],
)
def test_expand_and_reduce(pages: dict[int, Any], expected: list[Any]) -> None:
    assert local(Pages(pages), [0]).outputs == expected


def test_reduce_gathers_per_parent_with_mixed_batches() -> None:
    pages = {i: [f"{i}.{k}" for k in range(i)] for i in range(6)}
    result = local(Pages(pages, batch_size=4, replicas=2), list(range(6)))
    assert result.outputs == [pages[i] for i in range(6)]
    # batches mix pages of several docs
    assert any(len({r.split(".")[0] for r in b}) > 1 for b in Log.batches["rows"])


class Aligned(ro.Pipeline):
    """A returns(2) Call expanded together, optionally filtered, reduced aligned."""

    def __init__(self, table: dict[int, tuple[Any, Any]], members: bool = False) -> None:
        self.pair = ro.function(
            lambda xs: ([table[x][0] for x in xs], [table[x][1] for x in xs])
        ).returns(2)
        self.rows = ro.RayModule(Rows)
        self.rows2 = ro.RayModule(Rows2)
        self.even = ro.RayModule(IsEven)
        self.members = members

    def forward(self, doc: ro.Port) -> tuple[ro.Port, ro.Port]:
        a, b = self.pair(doc)
        ka, kb = ro.F.expand_aligned(a, b, domain="item")
        fa = ro.F.filter(self.rows(ka), self.even(ka))
        fb = self.rows2(kb)
        if self.members:
            return ro.F.reduce_aligned(fa, fb, members=fa)
        return ro.F.reduce_aligned(fa, fb)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        pytest.param({0: ([0, 2], ["x", "y"])}, ([[0, 2]], [["x", "y"]]), id="aligned"),
        pytest.param(
            {0: ([0, 1, 2], ["x", "y", "z"])},
            ([[0, 2]], [["x", "z"]]),
            id="dropped-in-one-excluded-from-all",
        ),
        pytest.param(
            {0: ([0, 2], ["x", "rf:y"])},
            (
                [issue(S, "doc[0]/item[1]: rf:y")],
                [issue(S, "doc[0]/item[1]: rf:y")],
            ),
            id="failed-in-one-suppresses-parent",
        ),
        pytest.param(
            {0: ([0, 2], ["x"])},
            (
                [
                    issue(
                        FL,
                        "doc[0]: F.expand_aligned into 'item': sequences of different "
                        "lengths (2, 1)",
                    )
                ],
                [
                    issue(
                        FL,
                        "doc[0]: F.expand_aligned into 'item': sequences of different "
                        "lengths (2, 1)",
                    )
                ],
            ),
            id="unequal-lengths-fail-parent",
        ),
        pytest.param({0: ([], [])}, ([[]], [[]]), id="empty"),
    ],
)
def test_expand_and_reduce_aligned(table: dict[int, Any], expected: Any) -> None:
    assert local(Aligned(table), [0]).outputs == expected


def test_failure_beats_drop_in_aligned_reduce() -> None:
    # item 1: dropped in fa (odd) and FAILED in fb: the failure wins
    out = local(Aligned({0: ([0, 1], ["x", "rf:y"])}), [0]).outputs
    assert out == ([issue(S, "doc[0]/item[1]: rf:y")], [issue(S, "doc[0]/item[1]: rf:y")])


class Members(ro.Pipeline):
    """reduce(values, members=mask-filtered Port)."""

    def __init__(self, pages: dict[int, list[Any]]) -> None:
        self.lookup = ro.function(lambda xs: [pages[x] for x in xs])
        self.rows = ro.RayModule(Rows)
        self.rows2 = ro.RayModule(Rows2)
        self.even = ro.RayModule(IsEven)

    def forward(self, doc: ro.Port) -> ro.Port:
        kids = ro.F.expand(self.lookup(doc), domain="page")
        keep = ro.F.filter(self.rows2(kids), self.even(kids))
        return ro.F.reduce(self.rows(kids), members=keep)


@pytest.mark.parametrize(
    ("pages", "expected"),
    [
        pytest.param({0: [0, 1, 2, 3]}, [[0, 2]], id="dropped-members-excluded"),
        pytest.param({0: [1, 3]}, [[]], id="no-members"),
        pytest.param(
            {0: [0, "rf:m"]}, [issue(S, "doc[0]/page[1]: rf:m")], id="failed-member-suppresses"
        ),
    ],
)
def test_reduce_members(pages: dict[int, list[Any]], expected: list[Any]) -> None:
    assert local(Members(pages), [0]).outputs == expected


def test_reduce_members_excludes_even_a_failed_value() -> None:
    """A child outside the member set does not count, even when its value FAILED."""

    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.rows = ro.RayModule(Rows)
            self.even = ro.RayModule(IsEven)
            self.ident = ro.function(lambda xs: list(xs))

        def forward(self, doc: ro.Port) -> ro.Port:
            kids = ro.F.expand(doc, domain="page")
            keep = ro.F.filter(self.ident(kids), self.even(kids))
            return ro.F.reduce(self.rows(kids), members=keep)

    assert local(P(), [[0, "rf:odd", 2]]).outputs == [[0, 2]]


class FilterRoot(ro.Pipeline):
    def __init__(self) -> None:
        self.even = ro.RayModule(IsEven)
        self.rows = ro.RayModule(Rows)
        self.pair = ro.RayModule(Tag)

    def forward(self, doc: ro.Port) -> tuple[ro.Port, ro.Port, ro.Port]:
        kept = ro.F.filter(doc, self.even(doc))
        failed = self.rows(doc)
        return self.rows(kept), self.pair(kept, failed), self.pair(failed, kept)


def test_filter_drop_and_propagation() -> None:
    out = local(FilterRoot(), [2, 3, "rf:x"]).outputs
    dropped = issue(D, "doc[1]: dropped by filter")
    assert out[0] == [2, dropped, issue(D, "doc[2]: dropped by filter")]
    # an input DROPPED -> DROPPED; FAILED beats DROPPED whatever the input order
    assert out[1] == ["2:2", dropped, issue(FL, "doc[2]: rf:x")]
    assert out[2] == ["2:2", dropped, issue(FL, "doc[2]: rf:x")]


def test_failed_input_suppresses_downstream_at_child_level() -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.rows = ro.RayModule(Rows)
            self.rows2 = ro.RayModule(Rows2)

        def forward(self, doc: ro.Port) -> ro.Port:
            kids = ro.F.expand(doc, domain="page")
            return ro.F.reduce(self.rows2(self.rows(kids)))

    result = local(P(), [["a", "rf:b", "c"]])
    assert result.outputs == [issue(S, "doc[0]/page[1]: rf:b")]
    # the SUPPRESSED page never reached the second Call
    assert sorted(x for b in Log.batches["rows2"] for x in b) == ["a", "c"]


class Broadcast(ro.Pipeline):
    def __init__(self) -> None:
        self.rows = ro.RayModule(Rows)
        self.tag = ro.RayModule(Tag)

    def forward(self, doc: ro.Port, label: ro.Port) -> ro.Port:
        kids = ro.F.expand(doc, domain="page")
        lab = ro.F.broadcast(self.rows(label), like=kids)
        return ro.F.reduce(self.tag(kids, lab))


@pytest.mark.parametrize(
    ("docs", "labels", "expected"),
    [
        pytest.param([[1, 2]], ["A"], [["A:1", "A:2"]], id="value-reaches-children"),
        pytest.param([[]], ["A"], [[]], id="empty-group"),
        pytest.param(
            [[1, 2]], ["rf:L"], [issue(FL, "doc[0]: rf:L")], id="failed-ancestor-is-own-failure"
        ),
    ],
)
def test_broadcast(docs: list[Any], labels: list[Any], expected: list[Any]) -> None:
    assert local(Broadcast(), docs, labels).outputs == expected


def test_reduce_cause_prefers_own_failure_over_inherited() -> None:
    """Page 0 is bad only through its line; page 1 FAILED itself: the doc's cause is
    page 1's (the lowest-ordinal member whose failure began on itself)."""

    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.rows = ro.RayModule(Rows)
            self.check = ro.function(
                lambda xs: [ro.RecordFailure("own") if x == ["ok"] else x for x in xs]
            )
            self.tag = ro.RayModule(Tag)

        def forward(self, doc: ro.Port) -> ro.Port:
            pages = ro.F.expand(doc, domain="page")
            lines = ro.F.expand(pages, domain="line")
            per_page = ro.F.reduce(self.rows(lines))
            return ro.F.reduce(self.tag(self.check(pages), per_page))

    out = local(P(), [[["rf:deep"], ["ok"]], [["rf:deep"], ["fine"]]]).outputs
    assert out[0] == issue(S, "doc[0]/page[1]: own")
    # with no own failure, the lowest-ordinal bad member's cause
    assert out[1] == issue(S, "doc[1]/page[0]/line[0]: rf:deep")


# =============================================================================
# Source outcomes
# =============================================================================
@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(2, [0, 1], id="present"),
        pytest.param(3, issue(D, "doc[0]: dropped by filter"), id="dropped"),
        pytest.param("rf:root", issue(FL, "doc[0]: rf:root"), id="failed-on-own-entity"),
        pytest.param(
            "gf:root", issue(FL, "doc[0]: gf:root"), id="root-group-failure-is-record-failure"
        ),
        pytest.param(
            -4,
            issue(FL, "doc[0]: F.expand into 'page' needs a sequence, got int"),
            id="failed-own-expand",
        ),
    ],
)
def test_source_outcome(doc: Any, expected: Any) -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.rows = ro.RayModule(Rows)
            self.split = ro.RayModule(Split)
            self.even = ro.function(lambda xs: [not (isinstance(x, int) and x % 2) for x in xs])

        def forward(self, doc: ro.Port) -> ro.Port:
            kept = ro.F.filter(self.rows(doc), self.even(doc))
            return ro.F.reduce(ro.F.expand(self.split(kept), domain="page"))

    result = local(P(), [doc])
    assert result.outputs == [expected]
    summary = result.lineage()
    outcome = (
        ro.ItemOutcome.PRESENT if not isinstance(expected, ro.OutputIssue) else (expected.outcome)
    )
    assert summary["sources"][outcome.value] == 1


def test_source_suppressed_when_failure_began_in_descendant() -> None:
    result = local(Pages({0: ["rf:p"], 1: [1]}), [0, 1])
    assert result.outputs == [issue(S, "doc[0]/page[0]: rf:p"), [1]]
    assert result.lineage()["failures"] == [
        {"source": 0, "outcome": "suppressed", "cause": "doc[0]/page[0]: rf:p"}
    ]


def test_several_output_ports_give_a_tuple() -> None:
    out = local(FilterRoot(), [2]).outputs
    assert isinstance(out, tuple)
    assert len(out) == 3


# =============================================================================
# GroupFailure
# =============================================================================
def test_group_failure_suppresses_queued_siblings_only() -> None:
    # batch_size=1: doc 0's pages run one by one; page 1's GroupFailure finds
    # pages 2 and 3 still queued. Page 0 committed before; doc 1 is unrelated.
    pages = {0: ["a", "gf:stop", "c", "d"], 1: ["e", "f"]}
    result = local(Pages(pages, batch_size=1, max_batches_in_flight=1), [0, 1])
    assert result.outputs == [issue(S, "doc[0]/page[1]: gf:stop"), ["e", "f"]]
    seen = [x for b in Log.batches["rows"] for x in b]
    assert "c" not in seen
    assert "d" not in seen
    assert sorted(seen) == ["a", "e", "f", "gf:stop"]
    rows = next(c for c in result.calls if c["name"] == "rows")
    assert rows["suppressed"] == 2
    assert rows["failed"] == 1
    assert result.lineage()["grains"]["suppressed"] == 2


def test_group_failure_suppresses_siblings_in_the_same_batch() -> None:
    # the whole group is one batch: siblings are in flight, and may not commit
    result = local(Pages({0: ["a", "gf:stop", "c"]}, batch_size=8), [0])
    assert result.outputs == [issue(S, "doc[0]/page[1]: gf:stop")]
    rows = next(c for c in result.calls if c["name"] == "rows")
    assert rows["suppressed"] == 2


def test_group_failure_suppresses_siblings_ready_later(core_invariants: list) -> None:
    """Siblings that become ready for the Call after the GroupFailure are suppressed
    too, and the ready counters stay exact."""

    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.first = ro.RayModule(Pass).ray_options(batch_size=1, max_batches_in_flight=1)
            self.rows = ro.RayModule(Rows).ray_options(batch_size=1, max_batches_in_flight=1)

        def forward(self, doc: ro.Port) -> ro.Port:
            kids = ro.F.expand(doc, domain="page")
            return ro.F.reduce(self.rows(self.first(kids)))

    executor = ro.Executor(P(), backend="local")
    result = executor.run([["gf:0", "b", "c", "d"]])
    assert result.outputs == [issue(S, "doc[0]/page[0]: gf:0")]
    core = executor.last_core
    assert [c.ready for c in core.calls] == [0, 0]
    assert "d" not in [x for b in Log.batches["rows"] for x in b]


def test_group_failure_leaves_other_calls_siblings_alone() -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.rows = ro.RayModule(Rows).ray_options(batch_size=1)
            self.rows2 = ro.RayModule(Rows2).ray_options(batch_size=1)

        def forward(self, doc: ro.Port) -> tuple[ro.Port, ro.Port]:
            kids = ro.F.expand(doc, domain="page")
            return ro.F.reduce(self.rows(kids)), ro.F.reduce(self.rows2(kids))

    out = local(P(), [["gf:a", "b"]]).outputs
    assert out[0] == [issue(S, "doc[0]/page[0]: gf:a")]
    # rows2 sees the same values: its own GroupFailure on page 0 is its own
    assert out[1] == [issue(S, "doc[0]/page[0]: gf:a")]
    assert Log.batches["rows2"][0] == ["gf:a"]


# =============================================================================
# Exceptions and recovery policies
# =============================================================================
def test_abort_raises_execution_error() -> None:
    with pytest.raises(ro.ExecutionError, match=r"rows.*abort.*ValueError: boom:x"):
        local(Flat(recovery=ro.RecoveryPolicy.abort()), [1, "boom:x"])


def test_abort_chains_the_udf_exception() -> None:
    with pytest.raises(ro.ExecutionError) as info:
        local(Flat(recovery=ro.RecoveryPolicy.abort()), ["boom:x"])
    assert isinstance(info.value.__cause__, ValueError)


def test_an_executor_is_usable_after_an_aborted_run() -> None:
    with ro.Executor(Flat(recovery=ro.RecoveryPolicy.abort()), backend="local") as executor:
        with pytest.raises(ro.ExecutionError):
            executor.run([1, "boom:x"])
        assert executor.run([1, 2]).outputs == [1, 2]


def test_default_policy_retries_a_batch_once() -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.flaky = ro.RayModule(Flaky)

        def forward(self, pdf: ro.Port) -> ro.Port:
            return self.flaky(pdf)

    result = local(P(), [1, "flaky:a", 3])
    assert result.outputs == [1, "flaky:a", 3]
    assert Log.batches["flaky"] == [[1, "flaky:a", 3], [1, "flaky:a", 3]]
    assert result.calls[0]["retries"] == 3
    assert result.lineage()["grains"]["retried"] == 3


def test_retry_batch_exhausted_splits_the_batch_and_fails_only_the_raising_row() -> None:
    result = local(Flat(recovery=ro.RecoveryPolicy.retry_batch(max_retries=2)), [1, "boom:x", 3])
    assert result.outputs == [1, issue(FL, "pdf[1]: ValueError: boom:x"), 3]
    # the same batch, pinned, 1 + 2 times; then halves, pinned ahead, until it raises alone
    assert Log.batches["rows"] == [[1, "boom:x", 3]] * 3 + [[1, "boom:x"], [1], ["boom:x"], [3]]


def test_retry_batch_is_pinned_and_immediate() -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.flaky = ro.RayModule(Flaky).ray_options(
                batch_size=2,
                max_batches_in_flight=1,
                recovery=ro.RecoveryPolicy.retry_batch(max_retries=1),
            )

        def forward(self, pdf: ro.Port) -> ro.Port:
            return self.flaky(pdf)

    out = local(P(), ["flaky:a", 2, 3, 4, 5]).outputs
    assert out == ["flaky:a", 2, 3, 4, 5]
    assert Log.batches["flaky"] == [["flaky:a", 2], ["flaky:a", 2], [3, 4], [5]]


def test_retry_tail_requeues_behind_the_queue() -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.flaky = ro.RayModule(Flaky).ray_options(
                batch_size=2,
                max_batches_in_flight=1,
                recovery=ro.RecoveryPolicy.retry_tail(max_retries=1),
            )

        def forward(self, pdf: ro.Port) -> ro.Port:
            return self.flaky(pdf)

    out = local(P(), ["flaky:a", 2, 3, 4, 5]).outputs
    assert out == ["flaky:a", 2, 3, 4, 5]
    # loose behind the queue: the retried rows may share a batch with others
    assert Log.batches["flaky"] == [["flaky:a", 2], [3, 4], [5, "flaky:a"], [2]]


@pytest.mark.parametrize("batch_size", [1, 2, 3, 8])
def test_isolate_tail_fails_only_the_poisoned_rows(batch_size: int) -> None:
    rows = [1, "boom:a", 3, 4, "boom:b", 6, 7]
    result = local(Flat(recovery=ro.RecoveryPolicy.isolate_tail(), batch_size=batch_size), rows)
    assert result.outputs == [
        1,
        issue(FL, "pdf[1]: ValueError: boom:a"),
        3,
        4,
        issue(FL, "pdf[4]: ValueError: boom:b"),
        6,
        7,
    ]
    # a poisoned row always fails alone
    assert ["boom:a"] in Log.batches["rows"]
    assert ["boom:b"] in Log.batches["rows"]


@pytest.mark.parametrize(
    ("udf_result", "reason"),
    [
        pytest.param(lambda xs: xs[:-1], "returned 2 results for a batch of 3 rows", id="short"),
        pytest.param(lambda xs: [*xs, 0], "returned 4 results for a batch of 3 rows", id="long"),
        pytest.param(lambda xs: None, "not a list", id="none"),
        pytest.param(lambda xs: "abc", "not a list", id="str"),
    ],
)
def test_wrong_result_length_fails_the_batch_without_retry(udf_result: Any, reason: str) -> None:
    calls = []

    def fn(xs: list[Any]) -> Any:
        calls.append(list(xs))
        return udf_result(xs)

    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.bad = ro.function(fn)

        def forward(self, pdf: ro.Port) -> ro.Port:
            return self.bad(pdf)

    out = local(P(), [1, 2, 3]).outputs
    assert [o.outcome for o in out] == [FL, FL, FL]
    assert all(o.cause.startswith(f"pdf[{i}]: ") and reason in o.cause for i, o in enumerate(out))
    assert calls == [[1, 2, 3]]


@pytest.mark.parametrize(
    "udf_result",
    [
        pytest.param(lambda xs: list(xs), id="one-list-for-returns-2"),
        pytest.param(lambda xs: (xs, xs, xs), id="three-lists"),
        pytest.param(lambda xs: (xs, xs[:-1]), id="short-second"),
    ],
)
def test_wrong_arity_fails_the_batch(udf_result: Any) -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.two = ro.function(udf_result).returns(2)

        def forward(self, pdf: ro.Port) -> tuple[ro.Port, ro.Port]:
            a, b = self.two(pdf)
            return a, b

    out = local(P(), [1, 2]).outputs
    assert [o.outcome for port in out for o in port] == [FL] * 4
    assert "two.run()" in out[0][0].cause


# =============================================================================
# Determinism across schedules (outputs never depend on the schedule)
# =============================================================================
class Judge:
    """Line-level rows: a deterministic mix of values, RecordFailures and poison."""

    def run(self, lines: list[Any], labels: list[Any]) -> list[Any]:
        keys = [f"{lab}/{line}" for line, lab in zip(lines, labels, strict=True)]
        marks = [sum(map(ord, k)) % 11 for k in keys]
        for k, m in zip(keys, marks, strict=True):
            if m == 5:
                raise ValueError(k)
        return [ro.RecordFailure(k) if m == 3 else k for k, m in zip(keys, marks, strict=True)]


class Mixed(ro.Pipeline):
    """Values, drops, broadcasts, RecordFailures, poisoned rows; two levels deep."""

    def __init__(self, batch_size: int, replicas: int, batching: str) -> None:
        opts = {"batch_size": batch_size, "replicas": replicas, "batching": batching}
        self.split = ro.RayModule(Split).ray_options(**opts)
        self.judge = ro.RayModule(Judge).ray_options(
            recovery=ro.RecoveryPolicy.isolate_tail(), **opts
        )
        self.tag = ro.RayModule(Tag).ray_options(**opts)
        self.even = ro.RayModule(IsEven).ray_options(**opts)

    def forward(self, doc: ro.Port) -> ro.Port:
        pages = ro.F.expand(self.split(doc), domain="page")
        label = self.tag(pages, ro.F.broadcast(doc, like=pages))
        kept = ro.F.filter(label, self.even(pages))
        lines = ro.F.expand(self.split(pages), domain="line")
        per_page = ro.F.reduce(self.judge(lines, ro.F.broadcast(kept, like=lines)))
        return ro.F.reduce(per_page)


MIXED_DOCS = [0, 1, 2, 3, 4, 5, 6, -1, 7, 8]


def test_mixed_baseline_has_every_outcome() -> None:
    out = local(Mixed(1, 1, "any_parent"), MIXED_DOCS).outputs
    kinds = {o.outcome if isinstance(o, ro.OutputIssue) else P for o in out}
    assert kinds == {P, FL, S}
    causes = [o.cause for o in out if isinstance(o, ro.OutputIssue)]
    assert any("ValueError" in c for c in causes)


SCHEDULES = [
    pytest.param(dict(batch_size=1, replicas=1, batching="any_parent"), {}, id="serial"),
    pytest.param(dict(batch_size=3, replicas=2, batching="any_parent"), {}, id="mixed-batches"),
    pytest.param(dict(batch_size=2, replicas=3, batching="single_parent"), {}, id="single-parent"),
    pytest.param(
        dict(batch_size=4, replicas=1, batching="any_parent"),
        {"input_batch_size": 2, "max_active_input_batches": 3},
        id="microbatches",
    ),
    pytest.param(
        dict(batch_size=2, replicas=2, batching="any_parent"),
        {"chaos": Chaos(seed=1, duplicate=0.5)},
        id="chaos-duplicates",
    ),
    pytest.param(
        dict(batch_size=3, replicas=2, batching="single_parent"),
        {"chaos": Chaos(seed=2, lose_worker=0.3, max_losses=3), "input_batch_size": 3},
        id="chaos-losses",
    ),
]


@pytest.mark.parametrize(("opts", "run_opts"), SCHEDULES)
def test_outputs_do_not_depend_on_the_schedule(opts: dict, run_opts: dict) -> None:
    baseline = local(Mixed(1, 1, "any_parent"), MIXED_DOCS).outputs
    assert local(Mixed(**opts), MIXED_DOCS, **run_opts).outputs == baseline


# =============================================================================
# Running: Executor, stream, metrics, lineage, worker loss
# =============================================================================
class Counted:
    inits: ClassVar[list[Any]] = []

    def __init__(self, scale: int = 1) -> None:
        self.scale = scale
        Counted.inits.append(scale)

    def run(self, xs: list[Any], *, offset: int = 0) -> list[Any]:
        return [x * self.scale + offset for x in xs]


class Scaled(ro.Pipeline):
    def __init__(self, replicas: int = 2) -> None:
        self.scale = (
            ro.RayModule(Counted).pre_init(scale=10).ray_options(replicas=replicas, batch_size=2)
        )

    def forward(self, x: ro.Port) -> ro.Port:
        return self.scale(x, offset=1)


def test_executor_keeps_udf_instances_warm_across_runs() -> None:
    Counted.inits = []
    with ro.Executor(Scaled(replicas=3), backend="local") as executor:
        assert executor.run([1, 2]).outputs == [11, 21]
        assert executor.run([3]).outputs == [31]
    assert Counted.inits == [10, 10, 10]  # pre_init args, once per replica


def test_run_sets_up_each_replica_once() -> None:
    Counted.inits = []
    assert local(Scaled(replicas=2), [1, 2, 3, 4, 5]).outputs == [11, 21, 31, 41, 51]
    assert Counted.inits == [10, 10]


def test_stream_yields_each_microbatch() -> None:
    with ro.Executor(Scaled(), backend="local") as executor:
        parts = list(executor.stream([1, 2, 3, 4, 5], input_batch_size=2))
    assert [(p.index, p.first_source, p.count) for p in parts] == [(0, 0, 2), (1, 2, 2), (2, 4, 1)]
    assert [p.outputs for p in parts] == [[11, 21], [31, 41], [51]]
    assert parts[0].lineage()["microbatch"] == {"index": 0, "first_source": 0, "count": 2}


def test_several_source_columns() -> None:
    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.tag = ro.RayModule(Tag)

        def forward(self, page: ro.Port, label: ro.Port) -> ro.Port:
            return self.tag(page, label)

    assert local(P(), [1, 2], ["a", "b"]).outputs == ["a:1", "b:2"]


def test_call_metrics_and_lineage_summary() -> None:
    import json

    result = local(Pages({0: [1, "rf:x"], 1: [2, 3, 4]}, batch_size=2), [0, 1])
    rows = next(c for c in result.calls if c["name"] == "rows")
    assert rows["grains_dispatched"] == 5
    assert rows["rpcs"] == 3
    assert rows["batch_sizes"] == {"1": 1, "2": 2}
    assert rows["failed"] == 1
    summary = result.lineage()
    assert json.loads(json.dumps(summary)) == summary
    assert summary["sources"] == {
        "total": 2,
        "present": 1,
        "dropped": 0,
        "failed": 0,
        "suppressed": 1,
    }
    assert summary["entities"] == {"doc": 2, "page": 5}
    assert summary["failures"] == [
        {"source": 0, "outcome": "suppressed", "cause": "doc[0]/page[1]: rf:x"}
    ]
    assert summary["state"] == "failed"
    assert result.lineage(max_failed_ratio=0.5)["state"] == "success"


def test_chaos_reports_are_counted_never_raised() -> None:
    chaos = Chaos(seed=7, duplicate=0.9, lose_worker=0.3, max_losses=3)
    result = local(
        Pages({i: list(range(i)) for i in range(8)}, batch_size=2, replicas=2),
        list(range(8)),
        chaos=chaos,
    )
    assert result.outputs == [list(range(i)) for i in range(8)]
    assert result.metrics["duplicate_reports"] > 0
    assert result.metrics["workers_lost"] == 3


def test_infra_retries_exhausted_fail_the_lost_rows() -> None:
    # every step loses the worker of the first pending batch, once: its rows FAIL
    chaos = Chaos(seed=0, shuffle=False, lose_worker=1.0, max_losses=1)
    result = local(
        Flat(batch_size=2, recovery=ro.RecoveryPolicy.retry_batch(infra_retries=0)),
        [1, 2, 3],
        chaos=chaos,
    )
    cause = "worker killed by chaos (infra_retries=0 exhausted)"
    assert result.outputs == [issue(FL, f"pdf[0]: {cause}"), issue(FL, f"pdf[1]: {cause}"), 3]


def test_within_the_infra_budget_worker_loss_changes_nothing() -> None:
    chaos = Chaos(seed=0, shuffle=False, lose_worker=1.0, max_losses=3)
    result = local(Flat(batch_size=2), [1, "rf:x", 3], chaos=chaos)
    assert result.outputs == [1, issue(FL, "pdf[1]: rf:x"), 3]
    assert result.metrics["workers_lost"] == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"input_batch_size": 0}, "input_batch_size", id="input_batch_size-0"),
        pytest.param({"input_batch_size": "2"}, "input_batch_size", id="input_batch_size-str"),
        pytest.param({"max_active_input_batches": 0}, "max_active_input_batches", id="active-0"),
    ],
)
def test_run_options_are_validated(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        local(Flat(), [1], **options)


def test_source_columns_must_have_one_length() -> None:
    class P(ro.Pipeline):
        def forward(self, a: ro.Port, b: ro.Port) -> ro.Port:
            return a

    with pytest.raises(ValueError, match="different lengths"):
        local(P(), [1, 2], [1])


def test_unknown_backend() -> None:
    with pytest.raises(ValueError, match="backend must be one of"):
        ro.Executor(Flat(), backend="spark")


def test_skipped_microbatches_are_not_run() -> None:
    with ro.Executor(Flat(), backend="local") as executor:
        parts = list(executor.stream([1, 2, 3, 4], input_batch_size=2, skip_microbatches={0}))
    assert [(p.index, p.outputs) for p in parts] == [(1, [3, 4])]
    assert Log.batches["rows"] == [[3, 4]]


def test_two_calls_of_one_module_share_its_instances() -> None:
    class Twice(ro.Pipeline):
        def __init__(self) -> None:
            self.scale = ro.RayModule(Counted).pre_init(scale=2).ray_options(replicas=2)

        def forward(self, x: ro.Port) -> ro.Port:
            return self.scale(self.scale(x))

    Counted.inits = []
    result = local(Twice(), [1, 2])
    assert result.outputs == [4, 8]
    assert Counted.inits == [2, 2]  # one pool for both Calls
    assert [c["name"] for c in result.calls] == ["scale", "scale_2"]
    assert [c["replicas"] for c in result.calls] == [2, 2]


def test_input_batches_report_each_microbatch() -> None:
    result = local(Flat(), [1, "rf:x", 3], input_batch_size=2)
    batches = [
        {k: b[k] for k in ("index", "first_source", "count", "present", "failed")}
        for b in result.input_batches
    ]
    assert batches == [
        {"index": 0, "first_source": 0, "count": 2, "present": 1, "failed": 1},
        {"index": 1, "first_source": 2, "count": 1, "present": 1, "failed": 0},
    ]
    assert result.lineage()["microbatches"] == [
        {"index": 0, "first_source": 0, "count": 2, "state": "failed"},
        {"index": 1, "first_source": 2, "count": 1, "state": "success"},
    ]


def test_chaos_is_reproducible_from_its_seed() -> None:
    def once(seed: int) -> tuple[Any, ...]:
        chaos = Chaos(seed=seed, duplicate=0.5, lose_worker=0.2, max_losses=3)
        result = local(
            Pages({i: list(range(i)) for i in range(6)}, batch_size=2, replicas=2),
            list(range(6)),
            chaos=chaos,
        )
        rows = next(c for c in result.calls if c["name"] == "rows")
        return (
            result.metrics["duplicate_reports"],
            result.metrics["stale_reports"],
            result.metrics["workers_lost"],
            rows["rpcs"],
            tuple(rows["batch_sizes"].items()),
        )

    assert once(3) == once(3)
    assert len({once(s) for s in range(6)}) > 1  # ... and the seed matters


class CorruptsTheCore:
    """Breaks the core's ready counter from inside a batch (a buggy backend would)."""

    core: ClassVar[Any] = None

    def run(self, xs: list[Any]) -> list[Any]:
        CorruptsTheCore.core.calls[0].ready += 1
        return list(xs)


@pytest.mark.no_core_invariants
def test_chaos_validates_the_core_after_every_event() -> None:
    from airflow_provider_rayorch.rayorch.execution.local import LocalBackend
    from airflow_provider_rayorch.rayorch.runtime.core import Core
    from airflow_provider_rayorch.rayorch.runtime.validation import BrokenInvariant

    class Corrupted(ro.Pipeline):
        def __init__(self) -> None:
            self.rows = ro.RayModule(CorruptsTheCore).ray_options(batch_size=1)

        def forward(self, doc: ro.Port) -> ro.Port:
            return self.rows(doc)

    plan = Corrupted().compile()
    backend = LocalBackend(plan, Chaos(seed=0, shuffle=False))
    backend.open()
    core = CorruptsTheCore.core = Core(plan, [[1, 2, 3]])
    runs = backend.drive(core)
    with pytest.raises(BrokenInvariant) as info:
        next(runs)
    assert info.value.invariant == "ready counter"
    assert "rows: ready=" in str(info.value)


def test_an_executor_passes_its_ready_queue_factory_to_each_run() -> None:
    from airflow_provider_rayorch.rayorch.runtime.queues import ReadyQueue

    made: list[bool] = []

    def factory(single_parent: bool) -> ReadyQueue:
        made.append(single_parent)
        return ReadyQueue(single_parent)

    pipeline = Flat(batch_size=2, batching="single_parent")
    with ro.Executor(pipeline, backend="local", progress=False, ready_queue=factory) as ex:
        assert ex.run([1, 2, 3]).outputs == [1, 2, 3]
        assert ex.run([4]).outputs == [4]
    assert made == [True, True]
