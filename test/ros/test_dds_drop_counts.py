"""Issue 10.10: the joint_states drops DDS reports reach the status line, over real Cyclone DDS (two
participants in this process on loopback): a KEEP_ALL reader at its resource limits rejects the excess of a
burst and raises sample-rejected. What DDS does not report (KEEP_LAST overwrites, network loss) is not
counted: see transports.cyclone.DropCounter."""

import pytest

from ros.dds_helpers import two_cyclone_nodes, unique_domain_id, wait_for

pytestmark = pytest.mark.ros


@pytest.fixture
def two_nodes():
    yield from two_cyclone_nodes("robot_model", "driver")


def one_joint_model():
    from mechanism_model_core import Joint, MechanismBuilder
    b = MechanismBuilder("m")
    b.add_body("arm", None, Joint.revolute("arm_yaw", None, axis=(0, 0, 1)))
    return b.build()


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
    pub = b.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.SENSOR_DATA)
    assert wait_for(lambda: pub.subscription_count, 15)
    JS = b.message_class("sensor_msgs/msg/JointState")
    for i in range(200):
        pub.publish(JS(name=["arm_yaw"], position=[float(i)]))
    assert wait_for(lambda: drops.rejected == 180, 15), drops.rejected
    assert drops.lost == 0
    msgs, errors = take_valid(reader)
    assert [m.position[0] for m in msgs] == [float(i) for i in range(20)] and not errors
    # the status line of a joint-state cache reading through this reader shows DDS's count
    from mechanism_model_ros.joint_state_cache import JointStateCache
    from mechanism_model_ros.transports.base import Subscription
    cache = JointStateCache(a, one_joint_model())
    cache.sub = Subscription("joint_states", "sensor_msgs/msg/JointState", reader,
                             samples_lost=lambda: drops.lost + drops.rejected)
    assert cache.status() == "joint_states in: 0 (rejected 0, lost by DDS 180)"


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
    """A reader's listener must never be called after Python freed it (with a per-sample listener it was: a
    segfault within a few dozen subscribe/close cycles under a publishing peer). In a subprocess, so that a
    crash fails this test instead of ending the run."""
    import subprocess
    import sys
    from ros.dds_helpers import dds_env
    p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", CHURN, "40"], env=dds_env(unique_domain_id()),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "survived" in p.stdout, (p.returncode, p.stderr[-3000:])
