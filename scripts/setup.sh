#!/usr/bin/env bash
# Install everything this project needs into ./.venv (idempotent).
# Usage: bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# The package, its test tools and the two built-in workloads' libraries.
.venv/bin/python -m pip install --quiet -e '.[dev,documents,video]'
# Debian's chromium and chromedriver plus selenium, for the browser test of the UI plugin.
bash scripts/install-browser.sh
# The VLM adapter's test builds a tiny random model: it needs torch and transformers.
# torch==2.13.0 is pinned so pip takes the machine's CPU build (a plain `torch` pulls
# a multi-GB CUDA build); it is never part of the dev extra.
if [ "${RAYORCH_SKIP_TORCH:-0}" != "1" ]; then
    .venv/bin/python -m pip install --quiet 'torch==2.13.0' 'transformers>=4.56'
fi
echo "setup done: $(.venv/bin/python --version), ray $(.venv/bin/python -c 'import ray; print(ray.__version__)'), airflow $(.venv/bin/airflow version 2>/dev/null | tail -n 1)"
