"""The suite's section registry: every need runs before what reads it."""

from __future__ import annotations

import pytest

pytest.importorskip("ray")

from benchmarks.registry import BY_NAME, REGISTRY, SECTIONS, ordered


def test_every_declared_need_is_a_section_and_the_registry_order_honours_it() -> None:
    for i, section in enumerate(REGISTRY):
        for need in section.needs:
            assert need in BY_NAME, (section.name, need)
            assert SECTIONS.index(need) < i, (section.name, need)


def test_ordered_puts_needs_first_whatever_order_they_are_asked_in() -> None:
    names = [s.name for s in ordered(["simulator", "e2e", "overhead", "tuning"])]
    assert names.index("tuning") < names.index("overhead") < names.index("simulator")
    assert names.index("e2e") < names.index("simulator")


def test_ordered_runs_only_what_was_chosen() -> None:
    assert [s.name for s in ordered(["scaling"])] == ["scaling"]


def test_an_unknown_section_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match="'nope'"):
        ordered(["e2e", "nope"])
