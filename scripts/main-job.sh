#!/usr/bin/env bash
# The main job: run the minimal example DAG on an embedded local Ray with Airflow's
# default SQLite metadata database, in a throw-away AIRFLOW_HOME, and print its
# lineage summary. Usage: bash scripts/main-job.sh [DAG_ID]
set -euo pipefail
cd "$(dirname "$0")/.."

DAG_ID=${1:-rayorch_minimal}
AIRFLOW_HOME=$(mktemp -d -t rayorch-airflow-XXXXXX)
export AIRFLOW_HOME
export AIRFLOW__CORE__DAGS_FOLDER="$PWD/dags_examples"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__UNIT_TEST_MODE=False
export RAY_USAGE_STATS_ENABLED=0
export PYTHONPATH="$PWD/dags_examples${PYTHONPATH:+:$PYTHONPATH}"
trap 'rm -rf "$AIRFLOW_HOME"' EXIT

.venv/bin/airflow db migrate > "$AIRFLOW_HOME/db-migrate.log" 2>&1 \
    || { cat "$AIRFLOW_HOME/db-migrate.log"; exit 1; }
.venv/bin/python tests/e2e/run_dag.py "$DAG_ID" | tee "$AIRFLOW_HOME/run.log" | grep -v '^E2E_RESULT' || true
.venv/bin/python - "$AIRFLOW_HOME/run.log" <<'PY'
import json, sys
line = next((l for l in open(sys.argv[1]) if l.startswith("E2E_RESULT ")), None)
if line is None:
    sys.exit("the DAG run printed no result")
result = json.loads(line[len("E2E_RESULT "):])
print(f"\nDAG run {result['run_id']}: {result['state']}")
for key, value in result["xcoms"].items():
    if key.endswith(".return_value") and isinstance(value, dict) and "sources" in value:
        print(f"lineage summary of {key.rsplit('.', 1)[0]}:")
        print(json.dumps(value, indent=2))
sys.exit(0 if result["state"].endswith("success") else 1)
PY
