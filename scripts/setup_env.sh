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
pip_install() {  # pip, minus the noise some machines' pip configuration prints about index locations
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@" 2> >(grep -v 'is ignored: it is neither' >&2)
}
pip_install --upgrade pip >/dev/null
pkgs=(./mechanism_model_core)
if [ -f mechanism_model_ros/setup.py ]; then pkgs+=("./mechanism_model_ros[cyclone]"); fi
# shellcheck disable=SC2086
pip_install "${pkgs[@]}" ${EXTRA:-}
echo "$VENV"
