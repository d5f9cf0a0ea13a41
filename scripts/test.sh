#!/usr/bin/env bash
# Lint, type-check and run the whole test suite. Fails if pytest collects no test.
# Usage: bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

export RAY_USAGE_STATS_ENABLED=0
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# pytest's exit code 5 (no test collected) fails this script like any other failure.
.venv/bin/pytest "$@"
