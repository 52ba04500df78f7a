"""Our state publisher against the C++ robot_state_publisher (ROS 2 Humble), same URDF, same joint_states.

For each publisher -- robot_state_publisher (``publish_frequency`` 1 kHz, so it does not throttle these rates), ours over
the Cyclone transport, ours over rclpy -- in a domain of its own: publish ``joint_states`` (every moving,
non-mimic joint of the URDF, our export of the default rover) at 500 Hz and 1 kHz for ``--seconds`` s from
this process over Cyclone, stamp = send time, and record per message the time to the arrival of its /tf
update here (matched by stamp). Reports the share of messages answered, and median / p90 latency. Needs
ROS 2 Humble (test/ros/ros_env.py). Not a test: figures go to BENCHMARKS.md.

    python benchmarks/bench_tf_publishers.py --seconds 5
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "mechanism_model_ros"))
sys.path.insert(0, os.path.join(TOP, "test"))

from ros import ros_env  # noqa: E402
from ros.dds_helpers import configure_this_process, start_serve, stop, unique_domain_id, wait_for  # noqa: E402


def run_rate(domain, moving, rate, seconds):
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    configure_this_process(domain)
    ctx = CycloneContext(domain)
    node = CycloneNode("bench_tf", context=ctx)
    got = {}
    try:
        def on_tf(m):
            if m.transforms:
                s = m.transforms[0].header.stamp
                got.setdefault((s.sec, s.nanosec), time.time_ns())
        tf_reader = node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.QoS(depth=1000), on_tf)
        pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT.with_depth(100))
        JS = node.message_class("sensor_msgs/msg/JointState")
        msg = JS(name=list(moving), position=[0.0] * len(moving))
        # discovery: publish until the publisher answers
        def probe():
            ns = time.time_ns()
            msg.header.stamp.sec, msg.header.stamp.nanosec = ns // 10**9, ns % 10**9
            pub.publish(msg)
            return bool(got)
        if not wait_for(lambda: pub.subscription_count and tf_reader.get_matched_publications() and probe(), 60, 0.2):
            return None
        time.sleep(0.5)
        got.clear()
        sent = {}
        n = int(rate * seconds)
        t0 = time.perf_counter()
        for i in range(n):
            delay = t0 + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            ns = time.time_ns()
            key = (ns // 10**9, ns % 10**9)
            msg.header.stamp.sec, msg.header.stamp.nanosec = key
            msg.position = [0.001 * (i % 1000)] * len(moving)
            pub.publish(msg)
            sent[key] = ns
        time.sleep(1.0)
        lat = np.array([(got[k] - v) * 1e-6 for k, v in sent.items() if k in got])
        return len(lat) / n, (np.median(lat) if len(lat) else float("nan")), \
            (np.percentile(lat, 90) if len(lat) else float("nan"))
    finally:
        node.close()
        ctx.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    from lxml import etree
    from mechanism_model_core import load_model
    from mechanism_model_core.io.urdf import to_urdf
    from mechanism_model_core.library import default_model_path
    urdf = to_urdf(load_model(default_model_path()))
    moving = [j.get("name") for j in etree.fromstring(urdf.encode()).iter("joint")
              if j.get("type") != "fixed" and j.find("mimic") is None]
    work = tempfile.mkdtemp()
    urdf_path = os.path.join(work, "robot.urdf")
    with open(urdf_path, "w") as fh:
        fh.write(urdf)
    params = os.path.join(work, "rsp.yaml")
    with open(params, "w") as fh:
        yaml.safe_dump({"robot_state_publisher": {"ros__parameters": {"robot_description": urdf,
                                                                      "publish_frequency": 1000.0}}}, fh)
    rows = []
    for who in ("robot_state_publisher (C++)", "ours, Cyclone transport", "ours, rclpy"):
        d = unique_domain_id()
        if who.startswith("robot"):
            proc = ros_env.start(["ros2", "run", "robot_state_publisher", "robot_state_publisher", "--ros-args",
                                  "--params-file", params], d, with_workspace=False, name="rsp")
            stopper = proc.stop
        elif "Cyclone" in who:
            p = start_serve(d, "--model", urdf_path, "--nodes", "state_publisher", "-p", "floating_joints:=always")
            stopper = lambda p=p: stop(p)   # noqa: E731
        else:
            proc = ros_env.start_serve(d, "--model", urdf_path, "--nodes", "state_publisher", "-p",
                                       "floating_joints:=always")
            stopper = proc.stop
        try:
            for rate in (500.0, 1000.0):
                r = run_rate(d, moving, rate, args.seconds)
                rows.append((who, rate, r))
                print(who, rate, r, flush=True)
        finally:
            stopper()
    print(f"\n{len(moving)} joints per message, {args.seconds:.0f} s per rate, os load {os.getloadavg()[0]:.1f}\n")
    print("| publisher | rate | /tf answered | latency median | latency p90 |")
    print("| --- | --- | --- | --- | --- |")
    for who, rate, r in rows:
        if r is None:
            print(f"| {who} | {rate:.0f} Hz | no answer | | |")
        else:
            print(f"| {who} | {rate:.0f} Hz | {100 * r[0]:.1f} % | {r[1]:.2f} ms | {r[2]:.2f} ms |")


if __name__ == "__main__":
    main()
