"""Provider metadata read by Airflow through the ``apache_airflow_provider`` entry point.

Kept free of imports so ``airflow providers list`` never loads Ray.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_provider_info"]


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-provider-rayorch",
        "name": "RayOrch",
        "description": "Run lineage-controlled multi-grain RayOrch dataflows on Ray from Airflow.",
        "versions": ["0.1.0"],
        "integrations": [
            {
                "integration-name": "RayOrch",
                "external-doc-url": "https://docs.ray.io/en/latest/cluster/running-applications/job-submission/index.html",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": "RayOrch",
                "python-modules": [
                    "airflow_provider_rayorch.operators.rayorch",
                    "airflow_provider_rayorch.operators.microbatch",
                    "airflow_provider_rayorch.operators.local_head",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": "RayOrch",
                "python-modules": ["airflow_provider_rayorch.sensors.rayorch"],
            }
        ],
        "hooks": [
            {
                "integration-name": "RayOrch",
                "python-modules": ["airflow_provider_rayorch.hooks.rayorch"],
            }
        ],
        "triggers": [
            {
                "integration-name": "RayOrch",
                "python-modules": [
                    "airflow_provider_rayorch.triggers.rayorch",
                    "airflow_provider_rayorch.triggers.sources",
                ],
            }
        ],
        "connection-types": [
            {
                "connection-type": "rayorch",
                "hook-class-name": "airflow_provider_rayorch.hooks.rayorch.RayOrchHook",
                "hook-name": "RayOrch",
                "conn-fields": {
                    "run_store": {
                        "label": "Run store URI",
                        "description": "Filesystem URI for plans, manifests and outputs "
                        "(local path, s3://, gs://); shared by the workers and the cluster.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "run_store_options": {
                        "label": "Run store options",
                        "description": "JSON object of pyarrow filesystem options for the "
                        "run store: endpoint_override, scheme, region, access_key, "
                        "secret_key, session_token, ... (secret values are masked). Never put "
                        "credentials in the URI; empty uses the credential chain.",
                        "schema": {"type": ["object", "null"], "format": "json"},
                    },
                    "runtime_env": {
                        "label": "Ray runtime_env",
                        "description": "JSON object merged under each operator's runtime_env "
                        "(py_modules / working_dir ship pipeline code to the cluster).",
                        "schema": {"type": ["object", "null"], "format": "json"},
                    },
                    "namespace": {
                        "label": "Ray namespace",
                        "schema": {"type": ["string", "null"]},
                    },
                    "dashboard_url": {
                        "label": "Dashboard URL for links",
                        "description": "Browser address of the Ray dashboard when it differs "
                        "from the Ray Jobs API address.",
                        "schema": {"type": ["string", "null"], "format": "url"},
                    },
                    "ray_init_kwargs": {
                        "label": "Embedded Ray options",
                        "description": "JSON object passed to ray.init() when the Ray Jobs API "
                        "address is empty.",
                        "schema": {"type": ["object", "null"], "format": "json"},
                    },
                    "timeout": {
                        "label": "Request timeout (s)",
                        "schema": {"type": ["number", "null"], "default": 10},
                    },
                    "verify": {
                        "label": "TLS verification",
                        "description": "For an https:// address: empty or true verifies the "
                        "server against the system CAs, a path to a CA bundle (PEM) verifies "
                        "it against that bundle, false turns verification off (the token is "
                        "then sent to any server).",
                        "schema": {"type": ["string", "null"]},
                    },
                },
                # Port stays visible: Airflow 3.3's Test action sends port 0 for a
                # connection without one, which its API refuses ("Bad Request").
                "ui-field-behaviour": {
                    "hidden-fields": ["login", "schema"],
                    "relabeling": {
                        "host": "Ray Jobs API address",
                        "port": "Ray Jobs API port",
                        "password": "Ray auth token",
                    },
                    "placeholders": {
                        "host": "http://head:8265 (empty: embedded local Ray)",
                        "port": "8265",
                    },
                },
            }
        ],
        "extra-links": [
            "airflow_provider_rayorch.links.rayorch.RayJobLink",
            "airflow_provider_rayorch.links.report.RayOrchReportLink",
        ],
    }
