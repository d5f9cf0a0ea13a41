"""How a death cause record of Ray's state API is read: the reasons anywhere inside
it, whatever the nesting, and an exception summed up on one line."""

from __future__ import annotations

from airflow_provider_rayorch.rayorch.execution.actor_watch import _reasons, _said


def test_the_reasons_of_a_death_cause_are_found_at_any_depth() -> None:
    killed = {
        "actor_died_error_context": {
            "reason": "RAY_KILL",
            "error_message": "The actor was killed by ray.kill",
            "node_death_info": {"reason": "EXPECTED_TERMINATION"},
        }
    }
    assert sorted(_reasons(killed)) == ["EXPECTED_TERMINATION", "RAY_KILL"]
    assert _reasons({"creation_task_failure_context": {"error_message": "boom"}}) == []
    assert _reasons(None) == []


def test_an_exception_is_said_in_its_first_sentence() -> None:
    exc = ConnectionError("Failed to connect to API server. Please check the log.\nmore")
    assert _said(exc) == "ConnectionError: Failed to connect to API server"
    assert _said(RuntimeError()) == "RuntimeError: "
