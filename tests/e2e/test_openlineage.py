"""OpenLineage on a real deployment: the listener enabled, its file transport writing
every event the scheduler and the workers emit, a ``RayOrchOperator`` run and a
per-microbatch run (``submit``, mapped ``microbatch`` sensors, ``run``) on the
loopback Ray head, over text files (tests/e2e/openlineage_dags).

Every event in the file is validated against OpenLineage's JSON schema
(tests/e2e/openlineage_spec, with each facet against the schema its ``_schemaURL``
names, the ``rayorch`` facet against the one this package ships); each task's
COMPLETE event names the run's input location with its source count, the run's
outputs folder with its schema, and the ``rayorch`` facet of its run (a microbatch
task: of its microbatch); no secret of the connection is anywhere in the file.

This module starts its own deployment (the session's runs with OpenLineage
disabled); it is named ``airflow_deployment`` here so a failure carries its logs.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest
from deployment import LISTENER_NAMESPACE, listener_events
from e2e_helpers import EXAMPLES, ROOT
from e2e_runs import assert_no_secret, failure_digest, ray_secrets, start_runs
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012
from rest import AirflowRest

from airflow_provider_rayorch.lineage.summary import FACET_KEY, SCHEMA_URL, facet_schema

if TYPE_CHECKING:
    from collections.abc import Iterator

    from deployment import Deployment

pytest.importorskip("airflow.providers.openlineage")
pytestmark = [pytest.mark.slow]

SPEC = Path(__file__).with_name("openlineage_spec")
DAG_FILE = ROOT / "tests" / "e2e" / "openlineage_dags" / "rayorch_openlineage.py"
NAMESPACE = LISTENER_NAMESPACE
OPERATOR, GROUP = "ol_operator", "ol_microbatch"
#: (operator files per folder: b/doc1.txt is poisoned), (microbatch DAG files); both
#: DAGs batch by 2 sources
OPERATOR_FILES, GROUP_FILES, BATCH = {"a": 2, "b": 2}, 5, 2
#: the operator's run fails (one source SUPPRESSED, max_failed_ratio 0): its FAIL event
RUN_STATES = {OPERATOR: "failed", GROUP: "success"}
DEADLINE_S = 180
#: the tasks whose last event (COMPLETE or FAIL) the test waits for (the DAG runs' own,
#: from the scheduler, included)
TASK_JOBS = (f"{OPERATOR}.docs", f"{GROUP}.docs.submit", f"{GROUP}.docs.run")


# -- the deployment, its connection and its two runs ------------------------------------


@pytest.fixture(scope="module")
def airflow_deployment(listener_deployment: Deployment) -> Deployment:
    """The session's deployment with the OpenLineage listener on and the file transport
    (conftest.py)."""
    return listener_deployment


@pytest.fixture(scope="module")
def airflow_rest(airflow_deployment: Deployment) -> AirflowRest:
    return AirflowRest(airflow_deployment.url, on_timeout=airflow_deployment.logs)


@pytest.fixture(scope="module")
def connection_secrets() -> dict[str, str]:
    return {
        "run_store_options secret_key": secrets.token_hex(16),
        "runtime_env env var": secrets.token_hex(16),
    }


def _text_files(folder: Path, count: int, poison: int | None = None) -> list[str]:
    """``count`` two-page text files; file ``poison``'s second page fails."""
    folder.mkdir(parents=True)
    paths = []
    for i in range(count):
        path = folder / f"doc{i}.txt"
        bad = " POISON" if i == poison else ""
        path.write_text(f"document {i} page 0: lorem\fpage 1: ipsum {i}{bad}\n", encoding="utf-8")
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def ol_runs(
    airflow_deployment: Deployment,
    airflow_rest: AirflowRest,
    ray_head: dict[str, Any],
    ray_token: str,
    connection_secrets: dict[str, str],
) -> dict[str, Any]:
    """Both DAGs run to the end, side by side; their events written."""
    root = airflow_deployment.root
    store = root / "store"
    airflow_rest.put_connection(
        {
            "connection_id": "rayorch_ol",
            "conn_type": "rayorch",
            "host": ray_head["address"],
            "password": ray_token,
            "extra": json.dumps(
                {
                    "run_store": str(store),
                    # options do not apply to a local store: here only to be kept secret
                    "run_store_options": {
                        "secret_key": connection_secrets["run_store_options secret_key"]
                    },
                    "runtime_env": {
                        "working_dir": str(EXAMPLES),
                        "env_vars": {"OL_E2E_API_KEY": connection_secrets["runtime_env env var"]},
                    },
                }
            ),
        }
    )
    landing = root / "ol-landing"
    for folder, count in OPERATOR_FILES.items():
        _text_files(landing / "operator" / folder, count, poison=1 if folder == "b" else None)
    files = _text_files(landing / "microbatch", GROUP_FILES)
    runs = start_runs(
        airflow_rest,
        {
            OPERATOR: {"conf": {"glob": str(landing / "operator" / "*" / "*.txt")}},
            GROUP: {"conf": {"files": files}},
        },
    )
    for dag_id, run_id in runs.items():
        run = airflow_rest.wait_for_run(dag_id, run_id, DEADLINE_S)
        assert run["state"] == RUN_STATES[dag_id], failure_digest(airflow_rest, dag_id, run_id)
    events_file = listener_events(airflow_deployment)

    def all_completed() -> list[dict[str, Any]] | None:
        events = _read_events(events_file)
        done = {e["job"]["name"] for e in events if e["eventType"] in ("COMPLETE", "FAIL")}
        wanted = {*TASK_JOBS, OPERATOR, GROUP}
        mapped = _microbatch_completes(events)
        return events if wanted <= done and len(mapped) == _n_microbatches() else None

    airflow_rest.wait(all_completed, 60, "every task's and DAG run's COMPLETE event")
    return {
        "runs": runs,
        "store": store,
        "landing": landing,
        "events_file": events_file,
        "tries": _tries(airflow_rest, runs),
    }


def _n_microbatches() -> int:
    return -(-GROUP_FILES // BATCH)


def _read_events(path: Path) -> list[dict[str, Any]]:
    """The events written so far: complete lines only (one may be being appended)."""
    if not path.exists():
        return []
    text = path.read_text().rpartition("\n")[0]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _tries(rest: AirflowRest, runs: dict[str, str]) -> dict[str, list[str]]:
    """``{"dag.task[map_index]": [state of try 1, try 2, ...]}`` from the REST API."""
    found = {}
    for dag_id, run_id in runs.items():
        for (task_id, index), ti in sorted(rest.task_instances(dag_id, run_id).items()):
            path = f"dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/{index}/tries"
            history = rest.get(path)["task_instances"]
            states = [t["state"] for t in sorted(history, key=lambda t: t["try_number"])]
            found[f"{dag_id}.{task_id}[{index}]"] = states or [ti["state"]]
    return found


# -- OpenLineage's JSON schema ---------------------------------------------------------


def _registry() -> Registry:
    """OpenLineage's spec and facet schemas (by their ``$id``) and the ``rayorch`` one."""
    resources = []
    for path in [SPEC / "OpenLineage.json", *sorted((SPEC / "facets").glob("*.json"))]:
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource(schema, specification=DRAFT202012)))
    ours = facet_schema()
    resources.append((ours["$id"], Resource(ours, specification=DRAFT202012)))
    return Registry().with_resources(resources)


REGISTRY = _registry()
CORE = json.loads((SPEC / "OpenLineage.json").read_text())["$id"]


def _errors(instance: Any, ref: str) -> list[str]:
    validator = jsonschema.Draft202012Validator(
        {"$ref": ref},
        registry=REGISTRY,
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(instance)
    ]


def _facets(event: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every facet of the event, with where it sits."""
    for kind in ("run", "job"):
        for key, facet in (event.get(kind, {}).get("facets") or {}).items():
            yield f"{kind}.facets.{key}", facet
    for side in ("inputs", "outputs"):
        for i, dataset in enumerate(event.get(side) or []):
            for group in ("facets", "inputFacets", "outputFacets"):
                for key, facet in (dataset.get(group) or {}).items():
                    yield f"{side}[{i}].{group}.{key}", facet


def schema_errors(event: dict[str, Any]) -> list[str]:
    """Where ``event`` breaks OpenLineage's schema: the event against the spec
    (``oneOf`` RunEvent, DatasetEvent, JobEvent), each facet against the schema its
    ``_schemaURL`` names, which must be one of the stored spec's or ours.

    The Airflow provider's facets (``airflow``, ``airflowDagRun``, ...) name the
    spec's base ``RunFacet``/``JobFacet``, so that is what they are checked against
    (the schemas apache-airflow-providers-openlineage 2.20.3 ships for them reject
    them: no ``taskInstance.pool`` under Airflow 3, an integer
    ``retry_exponential_backoff``; theirs to fix, not this provider's)."""
    errors = _errors(event, CORE)
    for where, facet in _facets(event):
        url = str(facet.get("_schemaURL", ""))
        try:
            REGISTRY.resolver().lookup(url)
        except Unresolvable:
            errors.append(f"{where}: _schemaURL {url!r} names no stored schema")
            continue
        errors += [f"{where}: {e}" for e in _errors(facet, url)]
    return errors


def test_the_schema_check_rejects_a_broken_event() -> None:
    """The validation is not vacuous: a valid event passes, broken ones do not."""
    good = {
        "eventType": "COMPLETE",
        "eventTime": "2026-12-01T12:00:00.000000+00:00",
        "producer": "https://github.com/apache/airflow/tree/providers-openlineage/2.20.3",
        "schemaURL": f"{CORE}#/$defs/RunEvent",
        "run": {
            "runId": "01936f3c-9a2e-7c61-b5a8-2d4f1e0c9b77",
            "facets": {
                FACET_KEY: {"_producer": "https://x.test", "_schemaURL": SCHEMA_URL, "runId": "r"}
            },
        },
        "job": {"namespace": NAMESPACE, "name": "dag.task"},
        "inputs": [],
        "outputs": [],
    }
    assert schema_errors(good) == []
    no_job = {k: v for k, v in good.items() if k != "job"}
    assert schema_errors(no_job)
    bad_facet = json.loads(json.dumps(good))
    bad_facet["run"]["facets"][FACET_KEY]["sources"] = {"present": 1}  # no total
    assert any(FACET_KEY in e for e in schema_errors(bad_facet))
    unknown = json.loads(json.dumps(good))
    unknown["run"]["facets"]["x"] = {
        "_producer": "https://x.test",
        "_schemaURL": "https://x.test/X.json",
    }
    assert any("names no stored schema" in e for e in schema_errors(unknown))


# -- what the events say -----------------------------------------------------------------


def _completes(events: list[dict[str, Any]], job: str) -> list[dict[str, Any]]:
    return [e for e in events if e["job"]["name"] == job and e["eventType"] == "COMPLETE"]


def _microbatch_completes(events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {
        int(e["run"]["facets"][FACET_KEY]["microbatch"]["index"]): e
        for e in _completes(events, f"{GROUP}.docs.microbatch")
        if FACET_KEY in e["run"]["facets"]
    }


def _inputs(event: dict[str, Any]) -> dict[tuple[str, str], int]:
    return {
        (d["namespace"], d["name"]): d["inputFacets"]["inputStatistics"]["fileCount"]
        for d in event["inputs"]
    }


def _the_outputs(event: dict[str, Any], store: Path) -> dict[str, Any]:
    """The one output: the outputs folder of the event's RayOrch run, with its schema."""
    (output,) = event["outputs"]
    facet = event["run"]["facets"][FACET_KEY]
    assert (output["namespace"], output["name"]) == ("file", f"{store}/{facet['runId']}/outputs")
    fields = output["facets"]["schema"]["fields"]
    assert [f["name"] for f in fields] == ["source", "outcome", "cause", "value"]
    return dict(output)


def _facet(event: dict[str, Any]) -> dict[str, Any]:
    facet = dict(event["run"]["facets"][FACET_KEY])
    assert facet["_schemaURL"] == SCHEMA_URL
    return facet


@pytest.mark.timeout(600)  # starts the deployment (and the session's Ray head) when first
def test_every_event_passes_the_openlineage_schema(ol_runs: dict[str, Any]) -> None:
    events = _read_events(ol_runs["events_file"])
    assert events
    failures = {}
    for i, event in enumerate(events):
        errors = schema_errors(event)
        if errors:
            failures[f"event {i} ({event['job']['name']} {event['eventType']})"] = errors
    assert failures == {}
    # the provider's own tasks all carry its facet, valid by the package's schema
    ours = [e for e in events if FACET_KEY in e["run"].get("facets", {})]
    assert {e["job"]["name"] for e in ours} >= {*TASK_JOBS, f"{GROUP}.docs.microbatch"}
    assert {e["job"]["namespace"] for e in events} == {NAMESPACE}


@pytest.mark.timeout(600)
def test_no_secret_reaches_any_event(
    ol_runs: dict[str, Any],
    airflow_deployment: Deployment,
    ray_token: str,
    connection_secrets: dict[str, str],
) -> None:
    text = ol_runs["events_file"].read_text()
    assert_no_secret(
        {**connection_secrets, "Ray token": ray_token, **ray_secrets(airflow_deployment)},
        **{"OpenLineage events": text},
    )


@pytest.mark.timeout(600)
def test_the_failed_operators_events(ol_runs: dict[str, Any]) -> None:
    events, store = _read_events(ol_runs["events_file"]), ol_runs["store"]
    job = f"{OPERATOR}.docs"
    assert [e["eventType"] for e in events if e["job"]["name"] == job] == ["START", "FAIL"]
    (failed,) = [e for e in events if e["job"]["name"] == job and e["eventType"] == "FAIL"]
    total = sum(OPERATOR_FILES.values())
    assert _inputs(failed) == {("file", str(ol_runs["landing"] / "operator")): total}
    output = _the_outputs(failed, store)
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == total
    facet = _facet(failed)
    assert facet["sources"] == {
        "total": total,
        "present": total - 1,
        "dropped": 0,
        "failed": 0,
        "suppressed": 1,
    }
    assert facet["state"] == "failed"
    assert facet["microbatchCount"] == len(facet["microbatches"]) == 2
    (failure,) = facet["failures"]
    poisoned = sorted(ol_runs["landing"].glob("operator/*/*.txt")).index(
        ol_runs["landing"] / "operator" / "b" / "doc1.txt"
    )
    assert (failure["source"], failure["outcome"]) == (poisoned, "suppressed")
    # the OpenLineage provider's errorMessage (from the task's exception) replaces the
    # provider's own: the verdict, with the first cause
    message = failed["run"]["facets"]["errorMessage"]["message"]
    assert "exceeds max_failed_ratio" in message
    assert failure["cause"] in message


@pytest.mark.timeout(600)
def test_the_microbatch_groups_events(ol_runs: dict[str, Any]) -> None:
    events, store = _read_events(ol_runs["events_file"]), ol_runs["store"]
    location = ("file", str(ol_runs["landing"] / "microbatch"))
    (submit,) = _completes(events, f"{GROUP}.docs.submit")
    assert _inputs(submit) == {location: GROUP_FILES}
    outputs = _the_outputs(submit, store)
    planned = _facet(submit)
    assert planned["sources"] == {"total": GROUP_FILES}
    assert planned["microbatchCount"] == _n_microbatches()

    mapped = _microbatch_completes(events)
    assert sorted(mapped) == list(range(_n_microbatches()))
    for index, event in mapped.items():
        count = min(BATCH, GROUP_FILES - index * BATCH)
        assert _inputs(event) == {location: count}
        assert _the_outputs(event, store)["name"] == outputs["name"]  # the run's, one node
        facet = _facet(event)
        assert facet["microbatch"] == {"index": index, "firstSource": index * BATCH, "count": count}
        assert (facet["state"], facet["sources"]["present"]) == ("success", count)

    runs = _completes(events, f"{GROUP}.docs.run")
    assert len(runs) == 1, [e["eventType"] for e in events if e["job"]["name"].endswith(".run")]
    (run,) = runs
    assert _inputs(run) == {location: GROUP_FILES}
    output = _the_outputs(run, store)
    assert output["name"] == outputs["name"]
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == GROUP_FILES
    facet = _facet(run)
    assert (facet["state"], facet["sources"]["present"]) == ("success", GROUP_FILES)
    assert facet["microbatchCount"] == _n_microbatches()
    assert "microbatch" not in facet


@pytest.mark.timeout(600)
def test_tries_under_the_listener(ol_runs: dict[str, Any], record_property) -> None:
    """Records each task's tries (the sensors may lose one to apache/airflow#72716
    under the listener; the DAG gives them retries); every task of the group ended
    in success."""
    tries = ol_runs["tries"]
    failed = {task: states for task, states in tries.items() if len(states) > 1}
    record_property("openlineage_tries", json.dumps(tries))
    print(f"tries under the listener: {json.dumps(tries)}; retried: {json.dumps(failed)}")
    assert tries.pop(f"{OPERATOR}.docs[-1]") == ["failed"]  # the poisoned run, one try
    assert all(states[-1] == "success" for states in tries.values()), tries


@pytest.mark.timeout(600)
def test_the_ray_jobs_know_their_parent_runs(
    ol_runs: dict[str, Any], airflow_rest: AirflowRest, ray_head: dict[str, Any], ray_token: str
) -> None:
    """Each Ray job's environment names the OpenLineage run of the task that submitted
    it, and of its DAG run, as their events do: what is emitted inside links up."""
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(
        ray_head["address"], headers={"Authorization": f"Bearer {ray_token}"}
    )
    events = _read_events(ol_runs["events_file"])
    for dag_id, task_id in ((OPERATOR, "docs"), (GROUP, "docs.submit")):
        job_id = airflow_rest.xcom(dag_id, ol_runs["runs"][dag_id], task_id, key="rayorch_job_id")
        env = client.get_job_info(job_id).runtime_env["env_vars"]
        task_run = {e["run"]["runId"] for e in events if e["job"]["name"] == f"{dag_id}.{task_id}"}
        dag_run = {e["run"]["runId"] for e in events if e["job"]["name"] == dag_id}
        assert len(task_run) == len(dag_run) == 1
        assert env["OPENLINEAGE_PARENT_ID"] == f"{NAMESPACE}/{dag_id}.{task_id}/{task_run.pop()}"
        assert env["OPENLINEAGE_ROOT_PARENT_ID"] == f"{NAMESPACE}/{dag_id}/{dag_run.pop()}"
