"""Issue 10.10: joint states that reach the node but are never delivered are counted, over real Cyclone DDS
(two participants in this process on loopback).

* A burst against the best-effort depth-100 ``joint_states`` reader (robot_state_publisher's SensorDataQoS)
  while the node is busy: the KEEP_LAST history overwrites samples, which DDS reports in no status; the
  transport counts them (stored minus taken) and the status line shows the count, exactly.
* A KEEP_ALL reader at its resource limits: DDS rejects the excess and raises sample-rejected, which the
  same counter reports.
"""

import threading
import time

import pytest

from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for

pytestmark = pytest.mark.ros


@pytest.fixture
def two_nodes():
    d = unique_domain_id()
    configure_this_process(d)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx_a, ctx_b = CycloneContext(d), CycloneContext(d)
    a, b = CycloneNode("robot_model", context=ctx_a), CycloneNode("driver", context=ctx_b)
    yield a, b
    for n, c in ((a, ctx_a), (b, ctx_b)):
        n.close()
        c.close()


def one_joint_model():
    from mechanism_model_core import Joint, MechanismBuilder
    b = MechanismBuilder("m")
    b.add_body("arm", None, Joint.revolute("arm_yaw", None, axis=(0, 0, 1)))
    return b.build()


def test_burst_against_a_busy_node_counts_every_overwritten_sample(two_nodes):
    from mechanism_model_ros import qos
    from mechanism_model_ros.joint_state_cache import JointStateCache
    a, b = two_nodes
    cache = JointStateCache(a, one_joint_model())          # best effort, KEEP_LAST 100
    first, release = threading.Event(), threading.Event()

    def busy(update):                                      # the node is stuck on the first message
        first.set()
        release.wait(60)
    cache.add_listener(busy)
    pub = b.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.SENSOR_DATA)
    assert wait_for(lambda: pub.subscription_count, 15)
    JS = b.message_class("sensor_msgs/msg/JointState")
    pub.publish(JS(name=["arm_yaw"], position=[-1.0]))
    assert first.wait(15)
    N = 1000
    for i in range(N):
        pub.publish(JS(name=["arm_yaw"], position=[float(i)]))
    release.set()
    total = N + 1
    # every sample either reached the node or is counted as overwritten (in-process delivery loses none)
    assert wait_for(lambda: cache.messages_in + cache.samples_dropped()["overwritten"] == total, 30), (
        cache.messages_in, cache.samples_dropped())
    assert wait_for(lambda: cache.latest().get("arm_yaw") == float(N - 1), 10)      # the newest survives
    over = cache.samples_dropped()["overwritten"]
    # the history holds 100: all but about 100 of the burst were overwritten while the node was busy
    assert N - 100 - 1 <= over <= N - 100 + 1, over
    assert cache.samples_lost() == over
    line = cache.status()
    assert line.startswith(f"joint_states in: {cache.messages_in} (rejected 0")
    assert f"overwritten before taken {over}" in line and "lost by DDS" not in line
    time.sleep(0.3)                                        # idle: the count stays exact
    assert cache.messages_in + cache.samples_dropped()["overwritten"] == total


def test_a_reader_at_its_resource_limits_reports_rejected_samples(two_nodes):
    """DDS's own sample-rejected status reaches the counter (KEEP_ALL, max 20 samples, nobody taking)."""
    from cyclonedds.core import Policy, Qos
    from cyclonedds.sub import DataReader
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import DropCounter, message_class, take_valid
    a, b = two_nodes
    cls = message_class("sensor_msgs/msg/JointState")
    drops = DropCounter()
    reader = DataReader(a.ctx.participant, a.ctx.topic("rt/joint_states", cls),
                        qos=Qos(Policy.History.KeepAll, Policy.Reliability.BestEffort,
                                Policy.ResourceLimits(max_samples=20, max_instances=-1,
                                                      max_samples_per_instance=-1),
                                Policy.DataRepresentation(use_cdrv0_representation=True)),
                        listener=drops)
    reader.drop_counter = drops
    pub = b.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.SENSOR_DATA)
    assert wait_for(lambda: pub.subscription_count, 15)
    JS = b.message_class("sensor_msgs/msg/JointState")
    for i in range(200):
        pub.publish(JS(name=["arm_yaw"], position=[float(i)]))
    assert wait_for(lambda: drops.rejected == 180, 15), (drops.rejected, drops.arrived)
    assert drops.arrived == 20 and drops.lost == 0
    msgs, errors = take_valid(reader)
    assert [m.position[0] for m in msgs] == [float(i) for i in range(20)] and not errors
    assert drops.overwritten == 0                          # rejected, not overwritten: nothing counted twice


CHURN = """
import gc, sys, threading, time
from mechanism_model_core import Joint, MechanismBuilder
from mechanism_model_ros import qos
from mechanism_model_ros.joint_state_cache import JointStateCache
from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
b = MechanismBuilder("m")
b.add_body("arm", None, Joint.revolute("arm_yaw", None, axis=(0, 0, 1)))
mech = b.build()
ctx_p = CycloneContext()
driver = CycloneNode("driver", context=ctx_p)
pub = driver.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.SENSOR_DATA)
JS = driver.message_class("sensor_msgs/msg/JointState")
stop = []

def publish():
    i = 0
    while not stop:
        pub.publish(JS(name=["arm_yaw"], position=[float(i)]))
        i += 1
t = threading.Thread(target=publish)
t.start()
for k in range(int(sys.argv[1])):
    ctx = CycloneContext()
    node = CycloneNode(f"model{k}", context=ctx)
    caches = [JointStateCache(node, mech) for _ in range(3)]
    time.sleep(0.1)
    node.close()
    ctx.close()
    del caches, node, ctx
    gc.collect()
stop.append(1)
t.join()
driver.close()
ctx_p.close()
print("survived", flush=True)
"""


def test_nodes_that_subscribe_can_come_and_go_while_a_peer_publishes():
    """The per-sample listener that counts overwrites must never be called after Python freed it (it was:
    a segfault within a few dozen subscribe/close cycles under a publishing peer). In a subprocess, so that
    a crash fails this test instead of ending the run."""
    import subprocess
    import sys
    from ros.dds_helpers import dds_env
    p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", CHURN, "40"], env=dds_env(unique_domain_id()),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "survived" in p.stdout, (p.returncode, p.stderr[-3000:])
