#!/usr/bin/env bash
# Create (or reuse) a virtual environment and install the suite into it.
#   VENV=path   where the environment lives (default: .venv in the repository)
#   EXTRA=...   extra pip requirement files or packages (e.g. "-r requirements-test.txt")
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
pkgs=(./mechanism_model_core)
if [ -f mechanism_model_ros/setup.py ]; then pkgs+=(./mechanism_model_ros); fi
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${pkgs[@]}" ${EXTRA:-}
echo "$VENV"
