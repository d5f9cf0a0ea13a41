"""A ``rayorch_conn_id`` that names no connection fails saying which, where Airflow
looked, and the fix; a missing ``rayorch_default`` still means embedded Ray."""

from __future__ import annotations

import asyncio

import pytest
from airflow.sdk.exceptions import AirflowNotFoundException

from airflow_provider_rayorch.exceptions import RayOrchConnectionNotFound, RayOrchError
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook, open_run_store

pytestmark = pytest.mark.timeout(60)


def _check(err: pytest.ExceptionInfo[RayOrchConnectionNotFound]) -> None:
    text = str(err.value)
    assert "rayorch_conn_id 'rayorch-typo': no such connection" in text
    assert "AIRFLOW_CONN_RAYORCH_TYPO" in text  # where it was looked up
    assert "metadata database" in text
    assert "airflow connections add rayorch-typo --conn-type rayorch" in text  # the fix
    assert "leave rayorch_conn_id at its default 'rayorch_default'" in text  # or embedded
    assert isinstance(err.value, RayOrchError)
    assert isinstance(err.value, AirflowNotFoundException)  # callers that catch it still do


def test_an_undefined_connection_names_itself_where_it_was_looked_up_and_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_TYPO", raising=False)
    with pytest.raises(RayOrchConnectionNotFound) as err:
        RayOrchHook("rayorch-typo").settings  # noqa: B018
    _check(err)


def test_a_trigger_reading_an_undefined_connection_gets_the_same_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_TYPO", raising=False)
    with pytest.raises(RayOrchConnectionNotFound) as err:
        asyncio.run(RayOrchHook("rayorch-typo").asettings())
    _check(err)


def test_no_default_connection_still_means_embedded_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    assert RayOrchHook().embedded
    assert RayOrchHook().run_store_options == {}
    assert open_run_store("/tmp/runs", "rayorch-typo").options == {}  # a deleted connection
