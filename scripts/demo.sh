#!/usr/bin/env bash
# Newcomer command 1: set everything up and run the main job on the built-in default model: the ROS 2
# state publisher, kinematics server and statics server (`mechanism-model serve`) on the Rocky 8-style
# rover, over plain Cyclone DDS, printing a status line every few seconds. Stop it with Ctrl-C.
# Extra arguments go to `serve` (e.g. --model fido/fido_rover.xml, --duration 30).
#
# The demo keeps DDS traffic on this machine: scripts/demo_env.sh sets ROS_DOMAIN_ID (default 42) and, unless
# CYCLONEDDS_URI is already set, configures Cyclone for the loopback interface with multicast off. It says
# which domain it uses; source the same file in another shell to call the services:
#   . scripts/demo_env.sh && mechanism-model call compute_fk "{fk_link_names: [arm_turret]}"
set -euo pipefail
cd "$(dirname "$0")/.."
# MM_DEMO_VENV: an environment that already has the packages (skips the installation; the tests use it)
VENV=${MM_DEMO_VENV:-$(EXTRA="matplotlib" bash scripts/setup_env.sh | tail -n 1)}
export VENV
# shellcheck source=scripts/demo_env.sh
. scripts/demo_env.sh
echo "demo: ROS 2 domain ${ROS_DOMAIN_ID}, loopback only. From another shell:" >&2
echo "demo:   . scripts/demo_env.sh && mechanism-model call compute_fk \"{fk_link_names: [arm_turret]}\"" >&2
exec "$VENV/bin/mechanism-model" serve "$@"
