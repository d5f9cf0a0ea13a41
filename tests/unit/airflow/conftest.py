from __future__ import annotations

import os
import tempfile

# Airflow reads AIRFLOW_HOME when first imported: keep unit tests out of ~/airflow.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="rayorch-unit-airflow-"))
