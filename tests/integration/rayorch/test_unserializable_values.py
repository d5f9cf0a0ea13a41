"""On Ray, a row whose value cannot be serialized FAILS alone, as on the local
backend (same outcome, same cause); the run goes on."""

from __future__ import annotations

import pytest

import airflow_provider_rayorch.rayorch as ro

from .udfs import Generators

pytestmark = pytest.mark.usefixtures("no_actors_left")

PATHS = ["ab", "gen1", "xyz", "gen22", "q"]


def test_a_generator_row_fails_alone_and_the_run_goes_on() -> None:
    expected = ro.run(Generators(), PATHS, backend="local")
    got = ro.run(Generators(), PATHS, backend="ray", input_batch_size=3)
    assert got.outputs == expected.outputs
    assert [got.outputs[i] for i in (0, 2, 4)] == [2, 3, 1]
    for row in (1, 3):
        issue = got.outputs[row]
        assert isinstance(issue, ro.OutputIssue)
        assert issue.outcome is ro.ItemOutcome.FAILED
        assert "'generator'" in issue.cause
        assert "list(...)" in issue.cause


def test_a_ray_task_error_becomes_a_plain_text_cause() -> None:
    import ray

    from airflow_provider_rayorch.rayorch.execution.task_inputs import raised_from

    @ray.remote
    def fails() -> None:
        raise TypeError("cannot pickle 'generator' object")

    with pytest.raises(ray.exceptions.RayTaskError) as caught:
        ray.get(fails.remote())
    assert "\x1b[" in str(caught.value)  # Ray colours its task errors
    reply = raised_from(caught.value)
    assert "\x1b" not in reply.error
    assert "cannot pickle 'generator' object" in reply.error
