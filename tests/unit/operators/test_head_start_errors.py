"""A loopback head that cannot start fails with a permanent error: the provider's
request retries never take it for a busy cluster."""

from __future__ import annotations

import sys

import pytest

from airflow_provider_rayorch.common.polling import RETRY_POLICY
from airflow_provider_rayorch.exceptions import RayOrchClusterError, RayOrchTransientError
from airflow_provider_rayorch.operators import _head_start

pytestmark = pytest.mark.timeout(60)


def test_a_missing_ray_command_is_permanent_and_never_retried(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(_head_start.shutil, "which", lambda name: None)
    with pytest.raises(RayOrchClusterError, match="`ray` command is not installed") as caught:
        _head_start._ray_executable()
    assert not isinstance(caught.value, RayOrchTransientError)
    assert caught.value.transient is False
    with pytest.raises(RayOrchClusterError) as again:  # the retry rule raises it at once
        RETRY_POLICY.attempts("starting a head").failed(caught.value)
    assert again.value is caught.value
