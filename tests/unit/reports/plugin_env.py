"""Make the RayOrch plugin visible to Airflow processes started by tests.

Installed with the ``airflow.plugins`` entry point it needs nothing; until then a
one-line module in ``$AIRFLOW_HOME/plugins`` imports it (the directory loader
registers every ``AirflowPlugin`` subclass it finds).
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

PLUGIN_CLASS = "airflow_provider_rayorch.plugins.plugin:RayOrchPlugin"


def entry_point_installed() -> bool:
    return any(ep.value == PLUGIN_CLASS for ep in entry_points(group="airflow.plugins"))


def plugins_folder(home: Path) -> Path:
    """``home/plugins``, holding the shim module unless the entry point is installed."""
    folder = home / "plugins"
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "rayorch_plugin_shim.py"
    if entry_point_installed():
        shim.unlink(missing_ok=True)
    else:
        shim.write_text("from airflow_provider_rayorch.plugins.plugin import RayOrchPlugin\n")
    return folder
