#!/usr/bin/env bash
# Build the ament_python packages (mechanism_model_core, mechanism_model_ros) with colcon into a
# temporary directory and check that the install tree is what `ros2 run` / `ros2 launch` expect:
#   share/ament_index/resource_index/packages/<pkg>      (ament index marker)
#   share/<pkg>/package.xml
#   lib/mechanism_model_ros/{state_publisher,kinematics_server,mechanism-model-serve}
#   share/mechanism_model_ros/{launch/bringup.launch.py,config/*.yaml,models/...}
#   the interface files shipped inside the Python package (for the Cyclone transport)
# mechanism_model_msgs (ament_cmake + rosidl) needs a ROS 2 installation and is built only when
# ament_cmake is available (a sourced ROS 2 environment).
#
# Needs: colcon (PyPI: colcon-common-extensions); PYTHON: a Python with the runtime dependencies.
# Set COLCON to its executable, or the script installs it
# into a throw-away virtual environment (needs network access to PyPI).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(dirname "$here")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

COLCON="${COLCON:-$(command -v colcon || true)}"
if [ -z "$COLCON" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet colcon-common-extensions
  COLCON="$work/venv/bin/colcon"
fi

select=(--packages-select mechanism_model_core mechanism_model_ros)
if [ -n "${AMENT_PREFIX_PATH:-}" ] && ls "${AMENT_PREFIX_PATH%%:*}/share/ament_cmake" >/dev/null 2>&1; then
  select+=(mechanism_model_msgs)
else
  # without ROS 2 the interface package cannot be built; leave it out of the workspace entirely
  select+=(--packages-ignore mechanism_model_msgs)
fi

cd "$work"
"$COLCON" --log-base "$work/log" build --base-paths "$top" "${select[@]}" \
  --build-base "$work/build" --install-base "$work/install" --event-handlers console_cohesion+ >"$work/build.log" 2>&1 \
  || { cat "$work/build.log"; echo "colcon build failed" >&2; exit 1; }

inst="$work/install"
fail=0
check() {  # check <description> <test args...>
  local what="$1"; shift
  if "$@"; then echo "ok: $what"; else echo "MISSING: $what" >&2; fail=1; fi
}
quietly() { "$@" >/dev/null; }
for p in mechanism_model_core mechanism_model_ros; do
  check "$p ament index marker" test -f "$inst/$p/share/ament_index/resource_index/packages/$p"
  check "$p package.xml" test -f "$inst/$p/share/$p/package.xml"
done
# every node the launch files start (robot.launch.py: the kind's node too)
for exe in state_publisher kinematics_server statics_server locomotor legged manipulator mechanism-model-serve \
    mechanism-model-call mechanism-model-echo; do
  check "executable lib/mechanism_model_ros/$exe" test -x "$inst/mechanism_model_ros/lib/mechanism_model_ros/$exe"
done
share="$inst/mechanism_model_ros/share/mechanism_model_ros"
for f in launch/bringup.launch.py launch/robot.launch.py launch/rover.launch.py launch/walker.launch.py \
         launch/arm.launch.py rviz/rover.rviz rviz/walker.rviz rviz/arm.rviz; do
  check "$f" test -f "$share/$f"
done
check "config/rocky8.yaml" test -f "$share/config/rocky8.yaml"
check "models/rocky8/rocky8_rover.xml" test -f "$share/models/rocky8/rocky8_rover.xml"
check "interface files in the Python package" \
  bash -c "ls '$inst'/mechanism_model_ros/lib/python3*/site-packages/mechanism_model_ros/interfaces/srv/ComputeIK.srv >/dev/null"
check "executable mechanism-model in mechanism_model_core" test -x "$inst/mechanism_model_core/lib/mechanism_model_core/mechanism-model"
# on PATH after sourcing the workspace: colcon adds <prefix>/bin when it exists
check "bin/mechanism-model (PATH)" test -x "$inst/mechanism_model_core/bin/mechanism-model"
# the installed executables run (help only: no DDS traffic)
pp="$(ls -d "$inst"/mechanism_model_core/lib/python3*/site-packages):$(ls -d "$inst"/mechanism_model_ros/lib/python3*/site-packages)"
# (run with $PYTHON, a Python that has numpy/scipy/lxml/cyclonedds: the colcon venv may not)
for exe in state_publisher kinematics_server mechanism-model-serve mechanism-model-call mechanism-model-echo; do
  check "$exe --help runs" quietly env PYTHONPATH="$pp${PYTHONPATH:+:$PYTHONPATH}" \
    "${PYTHON:-python3}" "$inst/mechanism_model_ros/lib/mechanism_model_ros/$exe" --help
done
exit $fail
