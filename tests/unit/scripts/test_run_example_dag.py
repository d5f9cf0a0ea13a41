"""The main job's failure output names each failed task's exception, as its
traceback ends, taken from the run's log."""

from __future__ import annotations

from .load_script import load_script

LOG = """\
2026-12-05T10:18:00.000000Z [info     ] Task started [task]
2026-12-05T10:20:15.292994Z [error    ] Task failed with exception [task] loc=task_runner.py:1676
Traceback (most recent call last):
  File "/x/task_runner.py", line 1573, in _run_task_and_map_outcome
    if early_exit := _prepare(ti, log, context):
                     ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/x/_head_start.py", line 300, in _wait_until_up
    raise RayOrchClusterError(
airflow_provider_rayorch.exceptions.RayOrchHeadDied: `ray start --head` exited with 1:
  Local node IP: 127.0.0.1
Its Ray logs say:
raylet.out: [error] Check failed: Timed out waiting for file
2026-12-05T10:20:15.293516Z [info     ] ::group::Post Execute          [task]
2026-12-05T10:20:16.000000Z [error    ] Task failed with exception     [task]
Traceback (most recent call last):
  File "/x/templater.py", line 12, in root
jinja2.exceptions.UndefinedError: 'None' has no attribute 'address'
"""


def _script():
    return load_script("run_example_dag.py", "run_example_dag")


def test_each_failed_task_is_named_by_its_exception() -> None:
    errors = _script().task_errors(LOG)
    assert errors == [
        "airflow_provider_rayorch.exceptions.RayOrchHeadDied: `ray start --head` exited "
        "with 1:\n  Local node IP: 127.0.0.1\nIts Ray logs say:\n"
        "raylet.out: [error] Check failed: Timed out waiting for file",
        "jinja2.exceptions.UndefinedError: 'None' has no attribute 'address'",
    ]


def test_at_most_the_first_few_and_none_for_a_clean_log() -> None:
    script = _script()
    assert len(script.task_errors(LOG, most=1)) == 1
    assert script.task_errors("2026-12-05T10:18:00Z [info ] all fine\n") == []
