#!/usr/bin/env bash
# Make the Python 3.12 venv that runs the cosmos-xenna peer of the benchmarks (idempotent).
#
# cosmos-xenna ships a cp312 wheel only, and it imports tqdm without declaring it, so it
# gets its own venv; the suite (Python 3.11) runs it as a subprocess
# (benchmarks/systems/xenna_runner.py) and talks to it in JSON.
#
# Python 3.12 comes from pyenv, which this machine image ships (pyenv versions: 3.12.x);
# set XENNA_PYTHON=/path/to/python3.12 to use another one.
# Usage: bash scripts/setup-xenna.sh        -> ./.venv-xenna (or $XENNA_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."

XENNA_VERSION=0.5.12
VENV=${XENNA_VENV:-.venv-xenna}

find_python312() {
    if [ -n "${XENNA_PYTHON:-}" ]; then
        echo "$XENNA_PYTHON"
        return
    fi
    if command -v pyenv >/dev/null 2>&1; then
        local version
        # `pyenv latest 3.12` prints the newest installed 3.12.x, and fails if there is none.
        if version=$(pyenv latest 3.12 2>/dev/null); then
            echo "$(pyenv root)/versions/$version/bin/python3.12"
            return
        fi
    fi
    if command -v python3.12 >/dev/null 2>&1 && python3.12 -c 'import venv' 2>/dev/null; then
        command -v python3.12
        return
    fi
    return 1
}

if ! PY=$(find_python312) || [ ! -x "$PY" ]; then
    echo "setup-xenna: no Python 3.12 found (cosmos-xenna $XENNA_VERSION has cp312 wheels only)." >&2
    echo "  Looked for: \$XENNA_PYTHON, 'pyenv latest 3.12', python3.12 on PATH." >&2
    echo "  Fix: install one (e.g. 'pyenv install 3.12') or set XENNA_PYTHON=/path/to/python3.12." >&2
    exit 1
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))'; then
    echo "setup-xenna: $PY is $("$PY" --version 2>&1), not Python 3.12." >&2
    exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# tqdm: imported by cosmos_xenna but not among its declared requirements.
# numpy: the shared workload modules (benchmarks/nested.py) import it.
"$VENV/bin/python" -m pip install --quiet "cosmos-xenna==$XENNA_VERSION" tqdm numpy
"$VENV/bin/python" -c 'import cosmos_xenna.pipelines.v1 as p; import ray; print("setup-xenna done:", p.__name__, "ray", ray.__version__)'
