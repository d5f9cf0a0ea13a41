"""OpenLineage's ``uri`` and ``date-time`` formats are checked: an event whose time or
producer is not one, or a ``rayorch`` facet whose ``_schemaURL`` is not a URI, fails
validation against OpenLineage's schema (tests/e2e/openlineage_spec) and the facet
schema this package ships."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from airflow_provider_rayorch.lineage.summary import FACET_KEY, SCHEMA_URL, facet_schema
from tests.unit.lineage.events import format_checker

SPEC = Path(__file__).parents[2] / "e2e" / "openlineage_spec"


def _spec_validator() -> jsonschema.Draft202012Validator:
    resources = []
    for path in [SPEC / "OpenLineage.json", *sorted((SPEC / "facets").glob("*.json"))]:
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema, DRAFT202012)))
    core = json.loads((SPEC / "OpenLineage.json").read_text())["$id"]
    return jsonschema.Draft202012Validator(
        {"$ref": f"{core}#/$defs/RunEvent"},
        registry=Registry().with_resources(resources),
        format_checker=format_checker(),
    )


def _event(**changes: Any) -> dict[str, Any]:
    event = {
        "eventType": "COMPLETE",
        "eventTime": "2026-12-01T12:00:00.000000+00:00",
        "producer": "https://github.com/apache/airflow/tree/providers-openlineage/2.20.3",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "01936f3c-9a2e-7c61-b5a8-2d4f1e0c9b77"},
        "job": {"namespace": "airflow", "name": "dag.task"},
        "inputs": [],
        "outputs": [],
    }
    return {**event, **changes}


def _messages(validator: jsonschema.Draft202012Validator, instance: Any) -> list[str]:
    return [e.message for e in validator.iter_errors(instance)]


def test_an_event_is_checked_for_its_time_and_uri_formats() -> None:
    validator = _spec_validator()
    assert _messages(validator, _event()) == []
    assert _messages(validator, _event(eventTime="2026-12-01 noon")) == [
        "'2026-12-01 noon' is not a 'date-time'"
    ]
    assert _messages(validator, _event(eventTime="2026-12-01")) == [
        "'2026-12-01' is not a 'date-time'"  # a date-time needs its time and offset
    ]
    assert _messages(validator, _event(producer="airflow provider")) == [
        "'airflow provider' is not a 'uri'"
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("_schemaURL", "RayOrchRunFacet.json", id="relative-schema-url"),
        pytest.param("_producer", "https://x.test/a b", id="producer-with-a-space"),
    ],
)
def test_a_rayorch_facet_with_a_field_that_is_no_uri_fails_its_schema(
    field: str, value: str
) -> None:
    validator = jsonschema.Draft202012Validator(facet_schema(), format_checker=format_checker())
    facet = {"_producer": "https://x.test", "_schemaURL": SCHEMA_URL, "runId": "r"}
    assert _messages(validator, {FACET_KEY: facet}) == []
    assert _messages(validator, {FACET_KEY: {**facet, field: value}}) == [
        f"{value!r} is not a 'uri'"
    ]
