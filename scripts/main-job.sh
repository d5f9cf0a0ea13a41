#!/usr/bin/env bash
# The main job: run the document example DAG (real PDFs, OCR, one task per source
# microbatch on a loopback Ray head) with Airflow's default SQLite metadata database,
# then print the recognized text, the corrupt file's failure and its cause, and where
# the kept outputs are. Everything stays under ./rayorch-output (git-ignored):
#   rayorch-output/inputs/     the generated sample PDFs (and clips)
#   rayorch-output/runs/       the run store: per run, Parquet outputs, markdown per
#                              document, the HTML report and the manifests
#   rayorch-output/airflow-home/  this job's Airflow home: its metadata DB and task
#                              logs are made afresh on every run (rayorch_minimal,
#                              which uses the default run store, keeps its runs in
#                              airflow-home/rayorch/runs)
#   rayorch-output/main-job.log   Airflow's and Ray's output of the last run
# Usage: bash scripts/main-job.sh [DAG_ID]   (rayorch_documents by default; also
# rayorch_video, or rayorch_minimal, the fastest smoke example). RAYORCH_OUTPUT names
# another folder for all of it (the tests use that).
set -euo pipefail
cd "$(dirname "$0")/.."

DAG_ID=${1:-rayorch_documents}
OUTPUT="${RAYORCH_OUTPUT:-$PWD/rayorch-output}"
export AIRFLOW_HOME="$OUTPUT/airflow-home"
export RAYORCH_EXAMPLES_OUTPUT="$OUTPUT"
export AIRFLOW__CORE__DAGS_FOLDER="$PWD/dags_examples"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__UNIT_TEST_MODE=False
export RAY_USAGE_STATS_ENABLED=0
export PYTHONPATH="$PWD/dags_examples${PYTHONPATH:+:$PYTHONPATH}"
LOG="$OUTPUT/main-job.log"

rm -rf "$AIRFLOW_HOME/airflow.db" "$AIRFLOW_HOME/logs"
mkdir -p "$AIRFLOW_HOME"
: > "$LOG"
.venv/bin/airflow db migrate >> "$LOG" 2>&1 \
    || { tail -n 40 "$LOG"; echo "airflow db migrate failed; full log: $LOG"; exit 1; }
exec .venv/bin/python scripts/run_example_dag.py "$DAG_ID" --log "$LOG" \
    --result "$OUTPUT/last-run.json"
