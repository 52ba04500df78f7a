"""Sustained joint_states input at up to 500 Hz (5000 messages) on the default rover, over real Cyclone DDS
(loopback): every message's state is published (the first /tf update stamped at or after it: a backlog is
merged and published once, newest first), stamps never go backwards. Counts only; the rate and latency figures are a benchmark
(benchmarks/bench_ros.py, BENCHMARKS.md), never asserted here.

The sender paces itself at 500 Hz but never runs more than WINDOW messages ahead of the /tf updates it has
seen: on a busy machine (CI's 2 cores, or a dozen test processes) the server may be descheduled for longer
than its subscription's queue lasts at 500 Hz, and a best-effort subscription (robot_state_publisher's
SensorDataQoS, our default) then rightly drops samples; that would measure the machine, not the node. The
window is below the depths of both queues, so any message whose state is never published is the node's fault."""

import time

import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import default_model_path

from ros.dds_helpers import configure_this_process, start_serve, stop, unique_domain_id, wait_for

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]

RATE = 500.0
SECONDS = 10.0
#: messages the sender may be ahead of the /tf updates it has seen (below the subscription's depth of 100)
WINDOW = 50


def test_every_joint_state_at_500_hz_is_published_in_order():
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.qos import DEFAULT, QoS
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    model = load_model(default_model_path())
    proc = start_serve(domain)
    ctx = CycloneContext(domain)
    node = CycloneNode("rate_tester", context=ctx)
    try:
        stamps = []         # /tf stamps (ns) in arrival order

        def on_tf(m):
            if m.transforms:
                st = m.transforms[0].header.stamp
                stamps.append(st.sec * 10**9 + st.nanosec)
        tf_reader = node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", QoS(depth=1000), on_tf)
        pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", DEFAULT.with_depth(100))
        assert wait_for(lambda: pub.subscription_count >= 1 and tf_reader.handle.get_matched_publications(), 30), \
            "server did not come up"
        JS = node.message_class("sensor_msgs/msg/JointState")
        names = ["arm_yaw", "arm_shoulder", "left_front_steer", "chassis.x"]
        msg = JS(name=names, position=[0.0] * len(names))

        def send(i):
            """Input ``i``, stamped now as a controller does; returns its stamp (ns)."""
            ns = time.time_ns()
            msg.header.stamp.sec, msg.header.stamp.nanosec = ns // 10**9, ns % 10**9
            msg.position = [0.001 * (i % 1000)] * len(names)
            pub.publish(msg)
            return ns

        def newest():
            return max(stamps, default=0)
        # DDS discovery is asymmetric: publish probes until one's state comes back
        probe = []
        assert wait_for(lambda: probe.append(send(0)) or newest() >= probe[0], 15, period=0.2)
        n = int(RATE * SECONDS)
        sent = []
        t0 = time.perf_counter()
        for i in range(n):
            target = t0 + i / RATE
            delay = target - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            if i >= WINDOW and newest() < sent[i - WINDOW]:
                # flow control: wait (a 30 s safety net) until the state of the message WINDOW back is out
                assert wait_for(lambda: newest() >= sent[i - WINDOW], 30, 0.001), \
                    f"message {i - WINDOW}'s state not published within 30 s"
            sent.append(send(i))
        assert wait_for(lambda: sent[-1] in stamps, 30), "the last input's state was not published"
        elapsed = time.perf_counter() - t0
        assert all(a < b for a, b in zip(stamps, stamps[1:])), "a /tf stamp went backwards"
        inputs = set(sent) | set(probe)
        assert sum(1 for s in stamps if s > probe[0] and s not in inputs) <= 2 + elapsed, \
            "more re-publications (stamped now) than one per idle second"
        print(f"{n} messages in {elapsed:.1f} s ({n / elapsed:.0f} Hz; paced at {RATE:.0f} Hz, window {WINDOW}), "
              f"{len(stamps)} /tf updates")
        assert proc.poll() is None
        assert model.nq == 29
    finally:
        node.close()
        ctx.close()
        stop(proc)
