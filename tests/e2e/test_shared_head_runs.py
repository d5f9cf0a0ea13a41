"""Eight runs started together on one machine under two CPU burners: they find (or
start, once) the machine's shared loopback head and all succeed, from no head at all.
One round per suite run; ``RAYORCH_SHARED_HEAD_ROUNDS=3`` repeats it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest
from e2e_helpers import heads_of, live_members
from e2e_runs import finish_run
from load import cpu_burners

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.operators.local_head import stop_shared_head

if TYPE_CHECKING:
    from deployment import Deployment
    from rest import AirflowRest

pytestmark = [pytest.mark.slow]

DAG_ID = "e2e_shared_head"
RUNS = 8
#: Eight runs with a head start on two busy cores (a watchdog, not a speed claim).
DEADLINE_S = 900
#: Rounds of eight runs, each from no head.
ROUNDS = int(os.environ.get("RAYORCH_SHARED_HEAD_ROUNDS", "1"))


@pytest.mark.timeout(2 * DEADLINE_S + 300)
@pytest.mark.parametrize("round_", range(1, ROUNDS + 1))
def test_eight_runs_started_together_share_one_head(
    airflow_deployment: Deployment, airflow_rest: AirflowRest, round_: int
) -> None:
    rest = airflow_rest
    rest.wait_for_dag(DAG_ID)
    with heads_of(airflow_deployment):
        stop_shared_head()  # every round starts from no head: the runs race to start it
    with cpu_burners():
        run_ids = [rest.trigger(DAG_ID)["dag_run_id"] for _ in range(RUNS)]
        rest.unpause(DAG_ID)
        heads: list[dict[str, Any]] = []
        for run_id in run_ids:
            tis = finish_run(rest, DAG_ID, run_id, DEADLINE_S)
            assert ("docs.stop_ray_head", -1) not in tis
            heads.append(rest.xcom(DAG_ID, run_id, "docs.ray_head"))
            summary = rest.xcom(DAG_ID, run_id, "docs.run")
            assert summary["sources"]["present"] == 8, summary
    with heads_of(airflow_deployment):
        shared = local_heads.read_shared()
        started = local_heads.started_heads(local_heads.SHARED_KEY)
    assert shared is not None
    assert {(h["pgid"], h["address"]) for h in heads} == {(shared["pgid"], shared["address"])}
    assert [h.pgid for h in started] == [shared["pgid"]], "the runs started more than one head"
    assert live_members(int(shared["pgid"])) != []
