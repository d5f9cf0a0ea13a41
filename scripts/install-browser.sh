#!/usr/bin/env bash
# Install what the browser test (tests/e2e/test_browser.py) needs: Debian's chromium
# and its matching chromedriver (apt-get), and selenium into ./.venv (pip).
# Browsers are never downloaded by a tool (selenium-manager, playwright install):
# only the Debian and PyPI registries are used. Idempotent.
# Usage: bash scripts/install-browser.sh
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else echo "install-browser: need root (or sudo) for: $*" >&2; exit 1
    fi
}

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
fi

PYTHON=${PYTHON:-.venv/bin/python}
"$PYTHON" -m pip install --quiet 'selenium>=4.20'

echo "browser ready: $(chromium --version 2>/dev/null | head -n 1), $(chromedriver --version | head -n 1), selenium $("$PYTHON" -c 'import selenium; print(selenium.__version__)')"
