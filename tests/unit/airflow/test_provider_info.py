"""Provider registration: the entry point, the runtime schema, conn-fields."""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
from pathlib import Path

import jsonschema
import pytest

from airflow_provider_rayorch.get_provider_info import get_provider_info

pytestmark = pytest.mark.timeout(60)

AIRFLOW_DIR = Path(__import__("airflow").__file__).parent


def test_entry_point_is_declared() -> None:
    [ep] = [e for e in entry_points(group="apache_airflow_provider") if "rayorch" in e.value]
    assert ep.load() is get_provider_info


def test_matches_airflow_runtime_schema() -> None:
    schema = json.loads((AIRFLOW_DIR / "provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)


def test_conn_fields_match_provider_yaml_schema() -> None:
    schema = json.loads((AIRFLOW_DIR / "provider.yaml.schema.json").read_text())
    item = schema["properties"]["connection-types"]["items"]
    [conn] = get_provider_info()["connection-types"]
    jsonschema.validate(conn, item)
    assert conn["connection-type"] == "rayorch"
    assert {"run_store", "runtime_env", "namespace"} <= set(conn["conn-fields"])


def test_providers_manager_sees_connection_type_and_hook() -> None:
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    pm = ProvidersManager()
    assert "airflow-provider-rayorch" in pm.providers
    hook = ProvidersManagerTaskRuntime().hooks["rayorch"]
    assert hook is not None
    assert hook.hook_class_name == "airflow_provider_rayorch.hooks.rayorch.RayOrchHook"
    widgets = pm.connection_form_widgets
    assert "extra__rayorch__run_store" in widgets
    assert "airflow_provider_rayorch.links.rayorch.RayJobLink" in pm.extra_links_class_names


@pytest.mark.parametrize(
    "dotted",
    [
        "airflow_provider_rayorch.hooks.rayorch.RayOrchHook",
        "airflow_provider_rayorch.links.rayorch.RayJobLink",
        "airflow_provider_rayorch.links.report.RayOrchReportLink",
        "airflow_provider_rayorch.operators.rayorch.RayOrchOperator",
        "airflow_provider_rayorch.operators.microbatch.RayOrchSubmitOperator",
        "airflow_provider_rayorch.operators.local_head.RayLocalHeadStartOperator",
        "airflow_provider_rayorch.sensors.rayorch.RayOrchMicrobatchSensor",
        "airflow_provider_rayorch.triggers.rayorch.RayOrchJobTrigger",
        "airflow_provider_rayorch.triggers.rayorch.RayOrchMicrobatchTrigger",
        "airflow_provider_rayorch.triggers.sources.RayOrchNewSourcesTrigger",
        "airflow_provider_rayorch.operators.local_head.RayLocalHeadStopOperator",
        "airflow_provider_rayorch.sensors.rayorch.RayOrchRunSensor",
    ],
)
def test_declared_classes_import(dotted: str) -> None:
    from airflow.sdk.module_loading import import_string

    assert import_string(dotted) is not None


def test_package_root_does_not_import_airflow() -> None:
    import subprocess
    import sys

    code = "import airflow_provider_rayorch, sys; print('airflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _conn() -> dict:
    [conn] = get_provider_info()["connection-types"]
    return dict(conn)


def test_form_shows_verify_as_text_for_a_boolean_or_a_ca_bundle() -> None:
    verify = _conn()["conn-fields"].get("verify")
    assert verify is not None, "the connection form has no 'verify' field"
    # a text field: "true", "false" or a CA bundle path (empty: verification on)
    assert verify["schema"]["type"] == ["string", "null"]
    assert "CA" in verify["description"]
    assert "false" in verify["description"]


def test_connection_docs_match_the_form() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "airflow" / "connection.md").read_text()
    conn = _conn()
    behaviour = conn["ui-field-behaviour"]
    rows = re.findall(r"^\| ([^|]+?) \|", doc, re.M)
    extras = {m.group(1) for r in rows if (m := re.fullmatch(r"Extra `(\w+)`", r))}
    assert extras == set(conn["conn-fields"]), "documented extras differ from the form's fields"
    # the form's fields under the labels the form shows them with
    for field, label in behaviour["relabeling"].items():
        assert any(label in r and field.capitalize() in r for r in rows), (field, label)
    # hidden fields are not presented as something to fill in
    for field in behaviour["hidden-fields"]:
        assert not any(r.strip().lower() == field for r in rows), field
    assert not re.search(r"`port` / `schema` fill in", doc)
    # the Test button is disabled by Airflow's default; the docs say how to enable it
    assert "AIRFLOW__CORE__TEST_CONNECTION=Enabled" in doc


def test_form_keeps_the_port_so_the_test_button_works() -> None:
    """Airflow 3.3.2's Test action posts port 0 for a connection without a port, which
    its API refuses as another endpoint ("Bad Request"): the port must be storable."""
    behaviour = _conn()["ui-field-behaviour"]
    assert "port" not in behaviour["hidden-fields"]
    assert behaviour["relabeling"]["port"] == "Ray Jobs API port"
    assert {"login", "schema"} <= set(behaviour["hidden-fields"])


def test_a_connection_saved_by_the_form_with_empty_fields_works(monkeypatch) -> None:
    """The form stores every empty extra field as null (seen on Airflow 3.3.2)."""
    from airflow_provider_rayorch.hooks.rayorch import RayOrchHook

    extra = dict.fromkeys(_conn()["conn-fields"])
    conn = {"conn_type": "rayorch", "host": "http://127.0.0.1:1", "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_FORM_MADE", json.dumps(conn))
    hook = RayOrchHook("form_made")
    assert hook.settings.timeout == 10.0
    ok, message = hook.test_connection()
    assert not ok
    assert "cannot reach the Ray Jobs API" in message  # not a complaint about `verify`
    assert "verify" not in message


PACKAGE_DIR = Path(__file__).parents[3] / "airflow_provider_rayorch"


def _public_modules(kind: str) -> set[str]:
    return {
        f"airflow_provider_rayorch.{kind}.{p.stem}"
        for p in (PACKAGE_DIR / kind).glob("*.py")
        if not p.stem.startswith("_")
    }


def _listed(kind: str) -> set[str]:
    return {m for item in get_provider_info()[kind] for m in item["python-modules"]}


@pytest.mark.parametrize("kind", ["operators", "sensors", "triggers"])
def test_every_module_on_disk_is_listed(kind: str) -> None:
    assert _public_modules(kind) == _listed(kind)


def test_every_hook_module_on_disk_is_listed() -> None:
    """A module in hooks/ that defines a hook is listed; request helpers need not be."""
    import importlib

    from airflow.sdk import BaseHook

    with_hooks = {
        name
        for name in _public_modules("hooks")
        if any(
            isinstance(v, type) and issubclass(v, BaseHook) and v.__module__ == name
            for v in vars(importlib.import_module(name)).values()
        )
    }
    assert with_hooks == _listed("hooks")
    [conn] = get_provider_info()["connection-types"]
    assert conn["hook-class-name"].rsplit(".", 1)[0] in with_hooks


def test_every_link_class_on_disk_is_listed() -> None:
    import importlib

    from airflow.sdk import BaseOperatorLink

    found = {
        f"{name}.{v.__name__}"
        for name in _public_modules("links")
        for v in vars(importlib.import_module(name)).values()
        if isinstance(v, type) and issubclass(v, BaseOperatorLink) and v.__module__ == name
    }
    assert {m.rsplit(".", 1)[0] for m in found} == _public_modules("links")
    assert found == set(get_provider_info()["extra-links"])


@pytest.mark.parametrize("kind", ["operators", "sensors", "triggers"])
def test_listed_modules_import(kind: str) -> None:
    import importlib

    for name in _listed(kind):
        assert importlib.import_module(name) is not None
