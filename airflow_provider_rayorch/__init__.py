"""Apache Airflow provider for RayOrch dataflows on Ray.

Kept light on purpose: every Ray actor imports this package, so importing it
(or ``airflow_provider_rayorch.rayorch``) never imports airflow.
"""

__version__ = "0.1.0"
