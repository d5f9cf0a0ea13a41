"""Build the OpenLineage events the provider's listener would emit, and check them.

No package ships OpenLineage's core JSON schema (``OpenLineage.json``), so an event
is checked the way its own client checks it: built through the OpenLineage
provider's adapter (``start_task`` / ``complete_task`` / ``fail_task``) into the
client's attrs models, whose validators run on construction (UUID run ids, ISO
times with a time, URI producers), then serialized by the client's ``Serde``.
The ``rayorch`` facet is validated against the JSON schema this package ships, with
its ``uri`` and ``date-time`` formats checked (jsonschema checks them only with its
format extras, which the dev extra installs), and every facet's ``_schemaURL`` must
be a URI.
"""

from __future__ import annotations

import json
import uuid
from typing import Any
from unittest import mock

import jsonschema

from airflow_provider_rayorch.lineage.summary import FACET_KEY, facet_schema

WHEN = "2026-12-01T12:00:00+00:00"
#: formats the OpenLineage schemas use that jsonschema skips without its format extras
FORMATS = ("uri", "date-time")


def format_checker() -> jsonschema.FormatChecker:
    """jsonschema's format checker, refusing to run without the ``uri`` and
    ``date-time`` checkers (it would pass any string as either)."""
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    missing = [name for name in FORMATS if name not in checker.checkers]
    assert not missing, (
        f"jsonschema cannot check the formats {missing}: install its format extras "
        "(pip install -e '.[dev]', which has rfc3339-validator and rfc3986-validator)"
    )
    return checker


def build_event(lineage: Any, kind: str, *, job: str = "dag.task") -> dict[str, Any]:
    """The event ``kind`` ("start", "complete" or "fail") of ``lineage``, serialized."""
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter
    from openlineage.client.serde import Serde

    client = mock.MagicMock()
    client.transport.kind = "test"
    adapter = OpenLineageAdapter(client=client)
    common = {
        "run_id": str(uuid.uuid4()),
        "job_name": job,
        "nominal_start_time": None,
        "nominal_end_time": None,
        "owners": ["airflow"],
        "tags": [],
        "job_description": None,
    }
    if kind == "start":
        adapter.start_task(event_time=WHEN, task=lineage, **common)
    elif kind == "complete":
        adapter.complete_task(end_time=WHEN, task=lineage, **common)
    else:
        adapter.fail_task(end_time=WHEN, task=lineage, error=None, **common)
    (emitted,) = client.emit.call_args.args
    return dict(json.loads(Serde.to_json(emitted)))


def check_event(event: dict[str, Any]) -> None:
    """The event has OpenLineage's required shape and a valid ``rayorch`` facet."""
    assert event["eventType"] in ("START", "COMPLETE", "FAIL")
    uuid.UUID(event["run"]["runId"])
    assert event["job"]["namespace"]
    assert event["job"]["name"]
    assert event["schemaURL"].startswith("https://openlineage.io/spec/")
    for dataset in [*event.get("inputs", []), *event.get("outputs", [])]:
        assert dataset["namespace"], dataset
        assert dataset["name"], dataset
        for facets in (dataset.get("facets", {}), dataset.get("inputFacets", {})):
            for facet in facets.values():
                assert "://" in facet["_schemaURL"], facet
    validator = jsonschema.Draft202012Validator(facet_schema(), format_checker=format_checker())
    facet = event["run"]["facets"].get(FACET_KEY)
    if facet is not None:
        validator.validate({FACET_KEY: facet})


def facet_of(event: dict[str, Any]) -> dict[str, Any]:
    return dict(event["run"]["facets"][FACET_KEY])


def inputs_of(event: dict[str, Any]) -> dict[tuple[str, str], int]:
    """``{(namespace, name): fileCount}`` of the event's inputs."""
    return {
        (d["namespace"], d["name"]): d["inputFacets"]["inputStatistics"]["fileCount"]
        for d in event.get("inputs", [])
    }


def outputs_of(event: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in event.get("outputs", [])]
