#!/usr/bin/env bash
# Newcomer command 1: set everything up and run the main job on the built-in default model.
# Extra arguments go to the command (e.g. --model models/fido/fido_rover.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(EXTRA="matplotlib" bash scripts/setup_env.sh | tail -n 1)
exec "$VENV/bin/mechanism-model" demo "$@"
