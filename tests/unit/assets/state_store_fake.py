"""An in-memory stand-in for the supervisor behind Airflow's asset state store.

The code under test uses the real Task SDK accessors (``AssetStateStoreAccessor``);
only the process that answers their messages is replaced. Values go through JSON,
as they do on the way to the metadata database.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest


class FakeStateStoreComms:
    """Answers Get/SetAssetStateStoreByName like the triggerer's or a worker's supervisor."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], Any] = {}
        self.writes: list[tuple[str, str]] = []

    def value(self, asset: str, key: str) -> Any:
        return self.rows.get((asset, key))

    def _answer(self, msg: Any) -> Any:
        from airflow.sdk.exceptions import ErrorType
        from airflow.sdk.execution_time.comms import (
            AssetStateStoreResult,
            ErrorResponse,
            GetAssetStateStoreByName,
            SetAssetStateStoreByName,
        )

        if isinstance(msg, GetAssetStateStoreByName):
            if (msg.name, msg.key) not in self.rows:
                return ErrorResponse(error=ErrorType.ASSET_STORE_NOT_FOUND)
            return AssetStateStoreResult(value=self.rows[(msg.name, msg.key)])
        if isinstance(msg, SetAssetStateStoreByName):
            self.rows[(msg.name, msg.key)] = json.loads(json.dumps(msg.value))
            self.writes.append((msg.name, msg.key))
            return None
        raise AssertionError(f"unexpected message to the supervisor: {msg!r}")

    def send(self, msg: Any) -> Any:
        return self._answer(msg)

    async def asend(self, msg: Any) -> Any:
        return self._answer(msg)


def install(monkeypatch: pytest.MonkeyPatch) -> FakeStateStoreComms:
    from airflow.sdk.execution_time import task_runner

    comms = FakeStateStoreComms()
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", comms, raising=False)
    return comms
