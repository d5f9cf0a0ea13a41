"""Run one DAG with ``dag.test()`` in this (fresh) process and print the outcome.

Usage: ``python run_dag.py DAG_ID [--use-executor]``; prints one ``E2E_RESULT {json}``
line with the run state, every task instance's state, and every XCom.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    dag_id = sys.argv[1]
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    if bag.import_errors:
        print("E2E_IMPORT_ERRORS", bag.import_errors, flush=True)
    dag = bag.dags[dag_id]
    dr = dag.test(use_executor="--use-executor" in sys.argv)
    with create_session() as session:
        tis = (
            session.query(TaskInstance)
            .filter(TaskInstance.dag_id == dag_id, TaskInstance.run_id == dr.run_id)
            .all()
        )
        tasks = {
            f"{ti.task_id}[{ti.map_index}]": {
                "state": str(getattr(ti.state, "value", ti.state)),
                "try_number": ti.try_number,
                "rendered_map_index": ti.rendered_map_index,
                "end_date": ti.end_date.timestamp() if ti.end_date else None,
            }
            for ti in tis
        }
        rows = (
            session.query(XComModel)
            .filter(XComModel.dag_id == dag_id, XComModel.run_id == dr.run_id)
            .all()
        )
        xcoms = {
            f"{x.task_id}[{x.map_index}].{x.key}": XComModel.deserialize_value(x) for x in rows
        }
    result = {"state": str(dr.state), "run_id": dr.run_id, "tasks": tasks, "xcoms": xcoms}
    print("E2E_RESULT " + json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main()
