#!/usr/bin/env bash
# Newcomer command 2: set everything up and run the whole test suite (extra arguments go to pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(EXTRA="-r requirements-test.txt" bash scripts/setup_env.sh | tail -n 1)
exec "$VENV/bin/pytest" "$@"
