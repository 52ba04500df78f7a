#!/usr/bin/env bash
# Newcomer command 1: set everything up and run the main job on the built-in default model: the ROS 2
# state publisher and kinematics server (`mechanism-model serve`) on the Rocky 8-style rover, over plain
# Cyclone DDS, printing a status line every few seconds. Stop it with Ctrl-C.
# Extra arguments go to `serve` (e.g. --model fido/fido_rover.xml, --duration 30).
#
# The demo keeps DDS traffic on this machine: unless CYCLONEDDS_URI is already set, Cyclone is configured
# for the loopback interface with multicast off; ROS_DOMAIN_ID defaults to 42. On a robot, set both
# yourself (or use the ROS 2 launch file, see README).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(EXTRA="matplotlib" bash scripts/setup_env.sh | tail -n 1)
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-42}
export CYCLONEDDS_URI=${CYCLONEDDS_URI:-'<CycloneDDS><Domain id="any"><General><Interfaces><NetworkInterface name="lo"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>32</MaxAutoParticipantIndex><Peers><Peer address="127.0.0.1"/></Peers></Discovery></Domain></CycloneDDS>'}
exec "$VENV/bin/mechanism-model" serve "$@"
