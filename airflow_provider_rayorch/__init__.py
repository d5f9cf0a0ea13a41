"""Apache Airflow provider for RayOrch dataflows on Ray.

Kept light on purpose: every Ray actor imports this package, so importing it
(or ``airflow_provider_rayorch.rayorch``) never imports airflow. The version is
the engine's.
"""

from airflow_provider_rayorch.rayorch import __version__

__all__ = ["__version__"]
