#!/usr/bin/env bash
# Validate every .msg/.srv of mechanism_model_msgs with ROS 2's IDL tools and with rosbags.
#
# Needs:
#   * a Python with ROS 2's rosidl_adapter and rosidl_parser: Debian/Ubuntu package python3-rosidl
#     (`sudo apt-get install python3-rosidl`; on a ROS 2 machine, the sourced ROS environment);
#     set ROSIDL_PYTHON to choose it (default: /usr/bin/python3);
#   * a Python with rosbags (pip install rosbags): set PYTHON (default: python3 on PATH, e.g. the venv).
# Steps: rosidl_adapter translates each file to IDL (as rosidl_generate_interfaces does), rosidl_parser
# parses the IDL, then rosbags parses both the .msg/.srv and the generated IDL and they must agree.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROSIDL_PYTHON="${ROSIDL_PYTHON:-/usr/bin/python3}"
PYTHON="${PYTHON:-python3}"
idl_dir="$(mktemp -d)"
trap 'rm -rf "$idl_dir"' EXIT

if ! "$ROSIDL_PYTHON" -c "import rosidl_adapter, rosidl_parser" 2>/dev/null; then
  echo "error: $ROSIDL_PYTHON has no rosidl_adapter/rosidl_parser; install python3-rosidl (apt) or" \
       "source a ROS 2 installation, or set ROSIDL_PYTHON" >&2
  exit 2
fi
"$ROSIDL_PYTHON" "$here/check_interfaces.py" --step rosidl --idl-dir "$idl_dir"
"$PYTHON" "$here/check_interfaces.py" --step rosbags --idl-dir "$idl_dir"
