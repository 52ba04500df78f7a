#!/usr/bin/env bash
# Create (or reuse) a virtual environment and install the suite into it.
#   VENV=path   where the environment lives (default: .venv in the repository)
#   EXTRA=...   extra pip requirement files or packages (e.g. "-r requirements-test.txt")
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
say() { echo "setup_env: $*" >&2; }   # progress on stderr: stdout's last line is the venv path
if [ ! -x "$VENV/bin/python" ]; then
  say "creating the virtual environment $VENV ($(python3 --version 2>&1))"
  python3 -m venv "$VENV"
fi
pip_install() {  # pip, minus the noise some machines' pip configuration prints about index locations
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@" 2> >(grep -v 'is ignored: it is neither' >&2)
}
say "upgrading pip in $VENV"
pip_install --upgrade pip >/dev/null
pkgs=("./mechanism_model_core[collision]")   # collision: check_state_validity, avoid_collisions
if [ -f mechanism_model_ros/setup.py ]; then pkgs+=("./mechanism_model_ros[cyclone]"); fi
say "pip install ${pkgs[*]} ${EXTRA:-} (from PyPI; a first run takes a minute or two, later runs seconds)"
t0=$(date +%s)
# shellcheck disable=SC2086
pip_install "${pkgs[@]}" ${EXTRA:-}
say "installed in $(( $(date +%s) - t0 )) s"
echo "$VENV"
