"""An actor that dies with a batch in flight is recorded with the node it ran on
(``"<node id> at <address>"``), so a run's report can name a node that died."""

from __future__ import annotations

import pytest
import ray

import airflow_provider_rayorch.rayorch as ro

from .fault_udfs import FaultyRun, One

pytestmark = pytest.mark.usefixtures("no_actors_left")


@pytest.mark.timeout(150)
def test_a_lost_batch_names_its_actors_node(tmp_path) -> None:
    pipeline = One(FaultyRun, (str(tmp_path), "exit", 2, 1), batch_size=2, replicas=1)
    result = ro.run(pipeline, [0, 1, 2, 3], backend="ray")
    assert result.outputs == [0, 10, 20, 30]  # the lost batch ran again
    lost = [r for r in result.timeline if r["event"] == "report" and r["outcome"] == "lost"]
    assert lost, result.timeline
    (node,) = [n for n in ray.nodes() if n["Alive"]]
    assert {r["node"] for r in lost} == {f"{node['NodeID']} at {node['NodeManagerAddress']}"}
