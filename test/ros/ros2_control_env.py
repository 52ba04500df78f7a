"""ros2_control for tests: the real ``ros2_control_node`` (ROS 2 Humble at /opt/ros/humble, through
:mod:`ros.ros_env`) running the URDF and controller YAML that ``mechanism-model ros2-control`` exports for a
model, with its controllers spawned; or, where ROS 2 is absent and not required, the stand-in of
:mod:`ros.ros2_control_standin` speaking the same topics.

Use::

    with ControlledRobot("mer/mer_idd.xml", domain, tmp_path) as robot:     # spawns every group
        robot.real          # True: ros2_control_node; False: the stand-in
        robot.motors        # the MotorGroups the export was made from
        robot.joint_states  # latest /joint_states as {name: (position, velocity)}, watched in-process
        robot.wait_joints({"idd_azimuth": 0.2}, tol=1e-3, timeout=20)

or the pytest fixture factory :func:`controlled_robot`. Every process started is stopped on exit
(ros2_control_node's process group; the spawner exits by itself).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

from ros import ros_env
from ros.dds_helpers import configure_this_process, dds_env, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
CONTROL_NODE = "/opt/ros/humble/lib/controller_manager/ros2_control_node"


def use_real_ros() -> bool:
    """The real ros2_control where it is installed; where it is required (CI) and missing, fail.
    ``MM_ROS2_CONTROL=standin`` runs the stand-in even where ROS 2 is installed (to test the stand-in)."""
    if os.environ.get("MM_ROS2_CONTROL", "").strip().lower() == "standin":
        return False
    if ros_env.available("humble") and os.path.exists(CONTROL_NODE):
        return True
    if ros_env.required():
        ros_env.require("humble")     # fails with the reason
        import pytest
        pytest.fail(f"{CONTROL_NODE} is missing", pytrace=False)
    return False


def export(model: str, out_dir: str, *extra: str) -> tuple[str, str]:
    """``mechanism-model ros2-control MODEL --urdf .. --controllers ..`` (in-process); returns the paths."""
    from mechanism_model_core.cli import main

    urdf = os.path.join(out_dir, "robot.urdf")
    yaml_path = os.path.join(out_dir, "controllers.yaml")
    code = main(["ros2-control", model, "--urdf", urdf, "--controllers", yaml_path, *extra])
    if code != 0:
        raise RuntimeError(f"mechanism-model ros2-control {model} exited with {code}")
    return urdf, yaml_path


class ControlledRobot:
    """See the module documentation. ``controllers``: the groups to spawn active (default: all);
    ``inactive``: groups to load and configure but not activate."""

    def __init__(self, model: str, domain_id: int, out_dir, controllers=None, inactive=(), motors=None,
                 real: bool | None = None, command_timeout: float | None = None):
        from mechanism_model_core import load_model
        from mechanism_model_core.library import model_path
        from mechanism_model_core.io.motor_groups import load_motor_groups

        self.model = model
        self.domain = domain_id
        self.out_dir = os.fspath(out_dir)
        self.mechanism = load_model(model_path(model))
        self.motors = load_motor_groups(self.mechanism, motors)
        self.motors_file = motors
        #: the export's --command-timeout (None: its default; 0: plain forward_command_controllers)
        self.command_timeout = command_timeout
        self.controllers = list(self.motors) if controllers is None else list(controllers)
        self.inactive = list(inactive)
        self.real = use_real_ros() if real is None else real
        self.proc = None
        self.joint_states: dict[str, tuple[float, float]] = {}
        self.stamps: list[float] = []
        self.history: list = []     # (receive time, {joint: (position, velocity)}) per joint_states message
        self.stamped: list = []     # (header stamp in s since the epoch, {joint: (position, velocity)}), the same
        self._lock = threading.Lock()
        self._ctx = self._node = None

    # ------------------------------------------------------------------ start / stop
    def start(self) -> "ControlledRobot":
        extra = ("--motors", self.motors_file) if self.motors_file else ()
        if self.command_timeout is not None:
            extra += ("--command-timeout", repr(float(self.command_timeout)))
        self.urdf, self.yaml = export(self.model, self.out_dir, *extra)
        configure_this_process(self.domain)
        try:
            if self.real:
                self._start_real()
            else:
                self._start_standin()
            self._watch()
            if not wait_for(lambda: self.joint_states, timeout=30):
                raise RuntimeError(f"no /joint_states from {'ros2_control_node' if self.real else 'the stand-in'}:"
                                   f"\n{self.output()[-3000:]}")
        except BaseException:
            self.stop()
            raise
        return self

    def _start_real(self):
        with open(self.urdf, encoding="utf-8") as fh:
            description = fh.read()
        desc_file = os.path.join(self.out_dir, "robot_description.yaml")
        with open(desc_file, "w", encoding="utf-8") as fh:   # a JSON string is a YAML double-quoted scalar
            fh.write("controller_manager:\n  ros__parameters:\n    robot_description: "
                     + json.dumps(description) + "\n")
        # with the workspace: the exported controllers include mechanism_model_controllers' watchdog controller
        self.proc = ros_env.start([CONTROL_NODE, "--ros-args", "--params-file", desc_file, "--params-file",
                                   self.yaml], self.domain, name="ros2_control_node")
        self.spawn(*self.controllers, jsb=True)
        if self.inactive:
            self.spawn(*self.inactive, inactive=True)

    def spawn(self, *controllers, jsb: bool = False, inactive: bool = False) -> None:
        """Load, configure and (unless ``inactive``) activate ``controllers`` through the spawner."""
        names = (["joint_state_broadcaster"] if jsb else []) + list(controllers)
        if not names:
            return
        cmd = ["ros2", "run", "controller_manager", "spawner", *names, "-c", "/controller_manager",
               "--controller-manager-timeout", "60"]
        if inactive:
            cmd.append("--inactive")
        p = ros_env.run(cmd, self.domain, timeout=120, with_workspace=False)
        if p.returncode != 0:
            raise RuntimeError(f"spawner {names} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
                               f"\nros2_control_node:\n{self.output()[-3000:]}")

    def unspawn(self, *controllers) -> None:
        """Deactivate and unload ``controllers`` (``ros2 run controller_manager unspawner``); real ROS only."""
        if not self.real:
            raise RuntimeError("the stand-in cannot unload controllers")
        p = ros_env.run(["ros2", "run", "controller_manager", "unspawner", *controllers, "-c",
                         "/controller_manager"], self.domain, timeout=60, with_workspace=False)
        if p.returncode != 0:
            raise RuntimeError(f"unspawner {controllers} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")

    def _start_standin(self):
        cmd = [sys.executable, os.path.join(HERE, "ros2_control_standin.py"), self.model]
        if self.motors_file:
            cmd += ["--motors", os.fspath(self.motors_file)]
        if self.command_timeout is not None:
            cmd += ["--command-timeout", repr(float(self.command_timeout))]
        self._log = open(os.path.join(self.out_dir, "standin.log"), "w+")
        self.proc = subprocess.Popen(cmd, env=dds_env(self.domain), stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def _watch(self):
        from mechanism_model_ros.qos import DEFAULT
        from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

        # ros_discovery_info in Humble's layout (24-byte Gids) so that Humble's nodes can read it; only for this
        # context (the process environment stays as it was)
        env = dict(os.environ, ROS_DISTRO="humble") if self.real else None
        self._ctx = CycloneContext(self.domain, env=env)
        self._node = CycloneNode("mm_test_joint_states", context=self._ctx)

        def on_js(msg):
            with self._lock:
                vel = list(msg.velocity) or [0.0] * len(msg.name)
                for n, p, v in zip(msg.name, msg.position, vel):
                    self.joint_states[n] = (float(p), float(v))
                now = time.monotonic()
                self.stamps.append(now)
                self.history.append((now, dict(self.joint_states)))
                st = msg.header.stamp
                self.stamped.append((st.sec + 1e-9 * st.nanosec, dict(self.joint_states)))
        self._node.create_subscription("/joint_states", "sensor_msgs/msg/JointState", DEFAULT, on_js)

    @property
    def node(self):
        """The in-process Cyclone node the test may use to publish commands."""
        return self._node

    def output(self) -> str:
        if self.proc is None:
            return ""
        if self.real:
            return self.proc.output()
        self._log.flush()
        with open(self._log.name, errors="replace") as fh:
            return fh.read()

    def stop(self) -> str:
        out = ""
        if self._node is not None:
            self._node.close()
            self._ctx.close()
            self._node = self._ctx = None
        if self.proc is not None:
            if self.real:
                out = self.proc.stop()
            else:
                from ros.dds_helpers import stop
                stop(self.proc)
                out = self.output()
                self._log.close()
            self.proc = None
        return out

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # ------------------------------------------------------------------ state
    def positions(self, names) -> list[float]:
        with self._lock:
            return [self.joint_states[n][0] for n in names]

    def velocities(self, names) -> list[float]:
        with self._lock:
            return [self.joint_states[n][1] for n in names]

    def wait_joints(self, want: dict, tol: float = 1e-3, timeout: float = 20.0, velocity: bool = False) -> bool:
        """Wait until every joint of ``want`` is within ``tol`` of its value (positions, or velocities)."""
        k = 1 if velocity else 0

        def ok():
            with self._lock:
                return all(n in self.joint_states and abs(self.joint_states[n][k] - v) <= tol
                           for n, v in want.items())
        return wait_for(ok, timeout, 0.02)

    def first_state_after(self, t0: float, predicate):
        """``(t, times)``: receive time of the first joint_states message after ``t0`` whose joint values
        (``{joint: (position, velocity)}``) satisfy ``predicate`` (None if none yet), and the receive times of
        the messages between ``t0`` and it."""
        with self._lock:
            hist = [(t, v) for t, v in self.history if t >= t0]
        times = []
        for t, v in hist:
            if predicate(v):
                return t, times
            times.append(t)
        return None, times

    def first_stamped_after(self, t0: float, predicate=lambda state: True):
        """``(stamp, state)`` of the first joint_states message whose header stamp (s since the epoch: the
        controller manager's clock, the system clock) is ``t0`` or later and whose state satisfies
        ``predicate``; ``(None, None)`` if none yet. Judged by the stamp, not by the time this process received
        it, so a test process that was not scheduled cannot mistake a late delivery for a late stop."""
        with self._lock:
            for t, v in self.stamped:
                if t >= t0 and predicate(v):
                    return t, v
        return None, None

    def publisher(self, topic: str, ros_type: str):
        from mechanism_model_ros.qos import DEFAULT

        pub = self._node.create_publisher(topic, ros_type, DEFAULT)
        wait_for(lambda: pub.subscription_count > 0, 20)
        return pub
