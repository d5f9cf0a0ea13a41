"""Read back each variable an `exports` doc block exported, the way Airflow reads it
(tests/docs/doc_blocks.py, kind `exports`); exits non-zero naming each one it does not
read as exported. Usage: python exported_check.py NAME...
"""

import os
import sys

from airflow.configuration import conf


def check(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None:
        return f"{name} is not exported"
    if name.startswith("AIRFLOW__"):
        section, _, key = name.removeprefix("AIRFLOW__").lower().partition("__")
        options = conf.configuration_description.get(section, {}).get("options", {})
        if key not in options:
            return f"{name}: Airflow has no option [{section}] {key}"
        got = conf.get(section, key)
        return None if got == value else f"{name}: Airflow reads [{section}] {key} = {got!r}"
    if name.startswith("AIRFLOW_CONN_"):
        from airflow.models.connection import Connection

        conn_id = name.removeprefix("AIRFLOW_CONN_").lower()
        conn = Connection.get_connection_from_secrets(conn_id)
        if conn.conn_type != "rayorch":
            return f"{name}: connection {conn_id} has type {conn.conn_type!r}, not 'rayorch'"
        from airflow_provider_rayorch.hooks.rayorch import RayOrchHook

        settings = RayOrchHook(conn_id).settings  # the hook reads it, or raises
        return None if settings is not None else f"{name}: RayOrchHook read no settings"
    return f"{name}: neither an AIRFLOW__SECTION__KEY option nor an AIRFLOW_CONN_<ID> connection"


problems = [p for p in map(check, sys.argv[1:]) if p]
if problems:
    sys.exit("\n".join(problems))
