"""Sustained joint_states input at 500 Hz for 10 s on the default rover, over real Cyclone DDS (loopback):
every message yields its /tf update. Counts only; the latency figures are a benchmark
(benchmarks/bench_ros.py, BENCHMARKS.md), never asserted here."""

import time

import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import default_model_path

from ros.dds_helpers import configure_this_process, start_serve, stop, unique_domain_id, wait_for

pytestmark = [pytest.mark.ros, pytest.mark.slow]

RATE = 500.0
SECONDS = 10.0


def test_every_joint_state_at_500_hz_yields_its_tf_update():
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.qos import DEFAULT, QoS
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    model = load_model(default_model_path())
    proc = start_serve(domain)
    ctx = CycloneContext(domain)
    node = CycloneNode("rate_tester", context=ctx)
    try:
        seen = set()
        tf_reader = node.create_subscription(
            "/tf", "tf2_msgs/msg/TFMessage", QoS(depth=1000),
            lambda m: seen.add(m.transforms[0].header.stamp.sec) if m.transforms else None)
        pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", DEFAULT.with_depth(100))
        assert wait_for(lambda: pub.subscription_count >= 1 and tf_reader.get_matched_publications(), 30), \
            "server did not come up"
        JS = node.message_class("sensor_msgs/msg/JointState")
        # DDS discovery is asymmetric: publish a probe until its /tf update comes back
        probe = JS()
        probe.header.stamp.sec = 1
        assert wait_for(lambda: pub.publish(probe) or 1 in seen, 15, period=0.2)
        names = ["arm_yaw", "arm_shoulder", "left_front_steer", "chassis.x"]
        n = int(RATE * SECONDS)
        msg = JS(name=names, position=[0.0] * len(names))
        t0 = time.perf_counter()
        for i in range(n):
            target = t0 + i / RATE
            delay = target - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            msg.header.stamp.sec = 100_000 + i
            msg.position = [0.001 * (i % 1000)] * len(names)
            pub.publish(msg)
        sent = set(range(100_000, 100_000 + n))
        wait_for(lambda: sent <= seen, 30)
        missing = sent - seen
        assert not missing, f"{len(missing)} of {n} joint_states messages got no /tf update"
        assert proc.poll() is None
        assert model.nq == 29
    finally:
        node.close()
        ctx.close()
        stop(proc)
