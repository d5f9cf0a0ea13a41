"""A row whose value Ray cannot serialize FAILS alone, with a cause naming its type
and the fix; the other rows and the run go on (``backend="local"``, which judges
values as the Ray backend does)."""

from __future__ import annotations

import threading
from typing import Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.worker import run_batch
from tests.integration.rayorch.udfs import Chars, CountChars

P, FL, S = ro.ItemOutcome.PRESENT, ro.ItemOutcome.FAILED, ro.ItemOutcome.SUPPRESSED


class Locks:
    """'lock' rows return a dict holding a lock; others a plain dict."""

    def run(self, xs: list[str]) -> list[Any]:
        return [{"x": x, "lock": threading.Lock()} if x == "lock" else {"x": x} for x in xs]


class Pages:
    def run(self, xs: list[int]) -> list[list[int]]:
        return [list(range(x)) for x in xs]


class GenOnThree:
    def run(self, pages: list[int]) -> list[Any]:
        return [(i for i in range(p)) if p == 3 else p for p in pages]


class Chained(ro.Pipeline):
    def __init__(self) -> None:
        self.chars = ro.RayModule(Chars).ray_options(batch_size=4)
        self.count = ro.RayModule(CountChars).ray_options(batch_size=4)

    def forward(self, paths: ro.Port) -> ro.Port:
        return self.count(self.chars(paths))


class Nested(ro.Pipeline):
    def __init__(self) -> None:
        self.locks = ro.RayModule(Locks).ray_options(batch_size=8)

    def forward(self, xs: ro.Port) -> ro.Port:
        return self.locks(xs)


class PerPage(ro.Pipeline):
    def __init__(self) -> None:
        self.pages = ro.RayModule(Pages)
        self.gen = ro.RayModule(GenOnThree).ray_options(batch_size=16)

    def forward(self, docs: ro.Port) -> ro.Port:
        return ro.F.reduce(self.gen(ro.F.expand(self.pages(docs))))


def test_a_generator_row_fails_alone_with_its_type_and_the_fix() -> None:
    result = ro.run(Chained(), ["ab", "gen1", "xyz", "gen22"], backend="local")
    assert result.outputs[0] == 2
    assert result.outputs[2] == 3
    for row in (1, 3):
        issue = result.outputs[row]
        assert isinstance(issue, ro.OutputIssue)
        assert issue.outcome is FL  # a root-Domain Call: the source itself FAILS
        assert "'generator'" in issue.cause
        assert "cannot be serialized" in issue.cause
        assert "list(...)" in issue.cause
    summary = result.lineage()
    assert summary["sources"]["present"] == 2


def test_a_generator_as_the_output_fails_that_source() -> None:
    class Last(ro.Pipeline):
        def __init__(self) -> None:
            self.chars = ro.RayModule(Chars)

        def forward(self, paths: ro.Port) -> ro.Port:
            return self.chars(paths)

    result = ro.run(Last(), ["ab", "gen"], backend="local")
    assert result.outputs[0] == ["a", "b"]
    issue = result.outputs[1]
    assert isinstance(issue, ro.OutputIssue)
    assert issue.outcome is FL
    assert "'generator'" in issue.cause
    assert "chars" in issue.cause


def test_a_lock_inside_a_dict_fails_its_row_naming_the_lock() -> None:
    result = ro.run(Nested(), ["a", "lock", "b"], backend="local")
    assert result.outputs[0] == {"x": "a"}
    assert result.outputs[2] == {"x": "b"}
    issue = result.outputs[1]
    assert isinstance(issue, ro.OutputIssue)
    assert issue.outcome is FL
    assert "of type 'dict' holding a 'lock'" in issue.cause


def test_a_child_with_a_generator_suppresses_only_its_parent() -> None:
    result = ro.run(PerPage(), [2, 5, 3], backend="local")
    assert result.outputs[0] == [0, 1]
    assert result.outputs[2] == [0, 1, 2]
    issue = result.outputs[1]
    assert isinstance(issue, ro.OutputIssue)
    assert issue.outcome is S
    assert "'generator'" in issue.cause


def test_plain_rows_come_back_as_the_same_objects() -> None:
    import numpy as np

    rows = [{"a": [1, 2.0, "x", b"y", None]}, np.arange(4), (1, "t"), ro.RecordFailure("no")]

    class Same:
        def run(self, xs: list[Any]) -> list[Any]:
            return xs

    outcome = run_batch(Same(), "same", [rows], {}, 1)
    assert outcome.rows is not None
    assert all(a is b for a, b in zip(outcome.rows, rows, strict=True))


class TwoOut:
    """Two outputs; row 'gen' puts a generator in the second one."""

    def run(self, xs: list[str]) -> tuple[list[Any], list[Any]]:
        return list(xs), [(c for c in x) if x == "gen" else len(x) for x in xs]


class BothOutputs(ro.Pipeline):
    def __init__(self) -> None:
        self.two = ro.RayModule(TwoOut).returns(2)

    def forward(self, xs: ro.Port) -> tuple[ro.Port, ro.Port]:
        return self.two(xs)


def test_an_unserializable_value_in_one_output_fails_the_row_on_every_output() -> None:
    first, second = ro.run(BothOutputs(), ["ab", "gen"], backend="local").outputs
    assert (first[0], second[0]) == ("ab", 2)
    for issue in (first[1], second[1]):
        assert isinstance(issue, ro.OutputIssue)
        assert issue.outcome is FL
        assert "of type 'tuple' holding a 'generator'" in issue.cause
        assert "list(...)" in issue.cause


def test_an_exception_text_with_ansi_colours_becomes_a_plain_cause() -> None:
    class Coloured:
        def run(self, xs: list[Any]) -> list[Any]:
            raise RuntimeError("\x1b[36mray::Model.run()\x1b[39m (pid=1)\n\x1b[31mboom\x1b[0m")

    outcome = run_batch(Coloured(), "coloured", [[1]], {}, 1)
    assert outcome.error == "RuntimeError: ray::Model.run() (pid=1)\nboom"
