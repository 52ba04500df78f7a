"""Motor groups and the FollowJointTrajectory client: what the safety checks cost per command, and the action
round trip of the Cyclone transport next to rclpy's ActionClient against the same real C++
joint_trajectory_controller (ros2_control_node running the exported MER arm, mock hardware).

    python benchmarks/bench_motors.py            # measure, print the section, update BENCHMARKS.md
    python benchmarks/bench_motors.py --no-write

Per-command checks run in this process (median of interleaved repetitions). The action part needs ROS 2
Humble at /opt/ros/humble (skipped otherwise): both clients send the same goal (one point, 0.2 s ahead,
alternating between two poses) N times; "accepted" is send_goal -> the server's acceptance, "result" is
send_goal -> the result (the 0.2 s of motion included), rclpy measured in a ROS 2 Python subprocess on the
same domain.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test"))
sys.path.insert(0, os.path.join(ROOT, "mechanism_model_ros"))
from bench_kinematics import _fmt_t, machine  # noqa: E402

from mechanism_model_core import load_model  # noqa: E402
from mechanism_model_core.library import model_path  # noqa: E402
from mechanism_model_core.io.motor_groups import load_motor_groups  # noqa: E402

BEGIN, END = "<!-- bench_motors:begin -->", "<!-- bench_motors:end -->"
GOALS = 30


def timeit(fn, reps=2000):
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return float(np.median(out))


def core_rows():
    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    motors = load_motor_groups(rover)
    wheels, arm = motors["wheel_controller"], motors["arm_controller"]
    cmd = [1.0, 4.0, 1.0, -1.0, -4.0, 1.0]
    prev = np.zeros(6)
    lo, hi = wheels.limits_of()
    raw = timeit(lambda: np.clip(np.asarray(cmd, float), lo, hi))
    clamp = timeit(lambda: wheels.clamp(cmd))
    slew = timeit(lambda: wheels.slew(prev, cmd, 0.02))
    t = np.linspace(0.1, 10, 100)
    P = np.outer(np.sin(t / 10), [0.3, -0.2, 0.4, 0.1, -0.1])
    check = timeit(lambda: arm.check_trajectory(t, P, start=np.zeros(5)), reps=500)
    return [("clamp of a 6-wheel velocity command (report included)", _fmt_t(clamp)),
            ("  plain numpy.clip of the same (the floor), ratio", f"{_fmt_t(raw)}, x{clamp / raw:.1f}"),
            ("slew (clamp + acceleration limit) of the same", _fmt_t(slew)),
            ("check_trajectory, 100 points x 5 joints, from a start state", _fmt_t(check))]


RCLPY = r"""
import json, sys, threading, time
from mechanism_model_ros.transports.rclpy_transport import RclpyNode
from trajectory_msgs.msg import JointTrajectoryPoint
names, poses, n = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
node = RclpyNode("bench_rclpy_action")
stop = threading.Event(); th = threading.Thread(target=node.spin, args=(stop,)); th.start()
c = node.create_action_client("/arm_controller/follow_joint_trajectory", "control_msgs/action/FollowJointTrajectory")
assert c.wait_for_server(30)
acc, res = [], []
for k in range(n):
    g = c.goal(); g.trajectory.joint_names = names
    p = JointTrajectoryPoint(positions=poses[k % 2]); p.time_from_start.nanosec = 200_000_000
    g.trajectory.points = [p]
    t0 = time.perf_counter(); h = c.send_goal(g); t1 = time.perf_counter(); r = h.get_result(30); t2 = time.perf_counter()
    assert h.accepted and r.status == 4
    acc.append(t1 - t0); res.append(t2 - t0)
stop.set(); th.join(); node.close()
print(json.dumps({"accepted": acc, "result": res}))
"""


def action_rows():
    from ros import ros_env
    from ros.dds_helpers import unique_domain_id
    from ros.ros2_control_env import ControlledRobot

    if not ros_env.available("humble"):
        return [("FollowJointTrajectory round trip", "skipped: no ROS 2 Humble here")]
    with tempfile.TemporaryDirectory() as tmp, \
            ControlledRobot("mer/mer_idd.xml", unique_domain_id(), tmp, real=True) as mer:
        names = list(mer.motors["arm_controller"].joint_names)
        poses = [[0.02, -0.02, 0.02, 0.01, -0.01], [0.0] * 5]
        from mechanism_model_ros.transports.typegen import message_class
        Point = message_class("trajectory_msgs/msg/JointTrajectoryPoint")
        client = mer.node.create_action_client("/arm_controller/follow_joint_trajectory",
                                               "control_msgs/action/FollowJointTrajectory")
        assert client.wait_for_server(30)
        cy = {"accepted": [], "result": []}
        for k in range(GOALS):
            g = client.goal()
            g.trajectory.joint_names = names
            p = Point(positions=poses[k % 2])
            p.time_from_start.nanosec = 200_000_000
            g.trajectory.points = [p]
            t0 = time.perf_counter()
            h = client.send_goal(g)
            t1 = time.perf_counter()
            r = h.get_result(30)
            t2 = time.perf_counter()
            assert h.accepted and r.succeeded
            cy["accepted"].append(t1 - t0)
            cy["result"].append(t2 - t0)
        p = ros_env.run_python(RCLPY, mer.domain, timeout=300, with_workspace=False,
                               args=(json.dumps(names), json.dumps(poses), str(GOALS)))
        if p.returncode != 0:
            raise RuntimeError(p.stdout + p.stderr)
        rc = json.loads(p.stdout.strip().splitlines()[-1])
    rows = []
    for key, what in (("accepted", "send_goal -> accepted"), ("result", "send_goal -> result (0.2 s motion)")):
        a, b = float(np.median(cy[key])), float(np.median(rc[key]))
        rows.append((f"{what}, median of {GOALS}: Cyclone / rclpy (ratio)",
                     f"{_fmt_t(a)} / {_fmt_t(b)} (x{a / b:.2f})"))
    return rows


def section(rows) -> str:
    lines = [BEGIN, "## Motor groups and the trajectory action client (`benchmarks/bench_motors.py`)", "",
             "Per-command safety checks of `locomotion.motor_group` (Rocky 8's wheel and arm groups) in one "
             "process, and the `FollowJointTrajectory` round trip of the Cyclone transport's action client next "
             "to rclpy's `ActionClient`, both against the real C++ joint_trajectory_controller of "
             "`ros2_control_node` (Humble, mock hardware, the exported MER arm) on loopback.", "",
             f"Machine: {machine()}", "", "| measurement | value |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in rows]
    lines += ["", END]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("MM_TEST_DOMAINS", "80-99")
    rows = core_rows() + action_rows()
    text = section(rows)
    print(text)
    if not args.no_write:
        path = os.path.join(ROOT, "BENCHMARKS.md")
        with open(path) as fh:
            doc = fh.read()
        if BEGIN in doc:
            doc = doc[:doc.index(BEGIN)] + text + doc[doc.index(END) + len(END):]
        else:
            doc = doc.rstrip() + "\n\n" + text + "\n"
        with open(path, "w") as fh:
            fh.write(doc)


if __name__ == "__main__":
    main()
