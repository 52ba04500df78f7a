"""Every transport's ``create_subscription`` returns a :class:`~mechanism_model_ros.transports.base.Subscription`
whose optional capabilities are None where the transport lacks them (issue 23: no attributes added to DDS
readers, no ``getattr`` probing in nodes). A node's use of a capability (the joint-state cache's lost and
oversized counts in its status line) is checked over real Cyclone DDS on loopback, over rclpy (ROS 2 Humble,
in a subprocess), and in memory, where the counts are absent and read as 0."""

import json

import pytest

from mechanism_model_core import Joint, MechanismBuilder
from mechanism_model_ros import qos
from mechanism_model_ros.joint_state_cache import JointStateCache
from mechanism_model_ros.transports.base import Subscription
from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode

from ros.dds_helpers import two_cyclone_nodes, unique_domain_id, wait_for

pytestmark = pytest.mark.ros

CAPABILITIES = ("samples_lost", "samples_dropped", "samples_undecodable", "samples_oversized")


def one_joint_model():
    b = MechanismBuilder("m")
    b.add_body("arm", None, Joint.revolute("arm_yaw", None, axis=(0, 0, 1)))
    return b.build()


def test_in_memory_a_subscription_has_no_counters_and_the_cache_reads_them_as_zero():
    bus = MemoryBus()
    a = MemoryNode("a", bus=bus, parameters={"joint_states_max_bytes": 64})
    got = []
    sub = a.create_subscription("chatter", "std_msgs/msg/String", qos.DEFAULT, got.append, max_bytes=10)
    assert isinstance(sub, Subscription) and (sub.topic, sub.ros_type) == ("chatter", "std_msgs/msg/String")
    assert all(getattr(sub, c) is None for c in CAPABILITIES)
    assert sub.publisher_count() == 0
    a.create_publisher("chatter", "std_msgs/msg/String", qos.DEFAULT)
    assert sub.publisher_count() == 1
    cache = JointStateCache(a, one_joint_model())
    assert isinstance(cache.sub, Subscription) and cache.sub.samples_oversized is None
    pub = a.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    JS = a.message_class("sensor_msgs/msg/JointState")
    pub.publish(JS(name=["arm_yaw"], position=[0.5]))
    pub.publish(JS(name=["arm_yaw" + "x" * 200], position=[0.5]))     # longer than 64 bytes: not dropped here
    assert cache.latest() == {"arm_yaw": 0.5} and cache.messages_in == 2
    assert cache.samples_lost() == 0 and cache.samples_dropped() == {} and cache.samples_oversized() == 0
    assert cache.status() == "joint_states in: 2 (rejected 0)"
    a.close()


@pytest.fixture
def two_nodes():
    yield from two_cyclone_nodes("subscription_a", "subscription_b")


def test_on_cyclone_the_counters_are_there_and_the_reader_is_left_alone(two_nodes):
    from cyclonedds.sub import DataReader
    a, b = two_nodes
    a.parameters["joint_states_max_bytes"] = 200
    cache = JointStateCache(a, one_joint_model())
    sub = cache.sub
    assert isinstance(sub, Subscription) and isinstance(sub.handle, DataReader)
    assert all(callable(getattr(sub, c)) for c in CAPABILITIES)
    assert not any(hasattr(sub.handle, c) for c in CAPABILITIES + ("mm_max_bytes", "drop_counter"))
    pub = b.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.SENSOR_DATA.with_depth(100))
    assert wait_for(lambda: pub.subscription_count and sub.publisher_count() == 1, 15)
    JS = b.message_class("sensor_msgs/msg/JointState")
    pub.publish(JS(name=["arm_yaw" + "x" * 300], position=[1.0]))      # over 200 bytes: dropped unread
    pub.publish(JS(name=["arm_yaw"], position=[0.25]))
    assert wait_for(lambda: cache.latest() == {"arm_yaw": 0.25} and cache.samples_oversized() == 1, 15), \
        (cache.latest(), cache.samples_oversized())
    assert cache.messages_in == 1 and cache.samples_lost() == 0
    assert cache.samples_dropped() == {"lost": 0, "rejected": 0} and sub.samples_undecodable() == 0
    assert cache.status() == "joint_states in: 1 (rejected 0, oversized 1)"


def test_the_publisher_capability_is_none_in_memory_and_a_method_on_cyclone(two_nodes):
    """``Publisher.numeric_template`` (the state publisher's fast /tf path) is None in memory, where the state
    publisher takes the generic path, and a method on Cyclone that builds the template (whose bytes
    test_generated_types compares with full serialization)."""
    from mechanism_model_ros.transports.numeric_template import NumericTemplate
    a, _ = two_nodes
    mem = MemoryNode("m").create_publisher("/tf", "tf2_msgs/msg/TFMessage", qos.TF)
    assert mem.numeric_template is None
    pub = a.create_publisher("/tf", "tf2_msgs/msg/TFMessage", qos.TF)
    assert callable(pub.numeric_template)
    TF, TS = a.message_class("tf2_msgs/msg/TFMessage"), a.message_class("geometry_msgs/msg/TransformStamped")
    msg = TF(transforms=[TS()])
    msg.transforms[0].header.frame_id, msg.transforms[0].child_frame_id = "a", "b"
    t = msg.transforms[0]
    template = pub.numeric_template(msg, {"sec": ("i4", [(t.header.stamp, "sec")])})
    assert isinstance(template, NumericTemplate)


RCLPY = r"""
import json, threading, time
from mechanism_model_core import Joint, MechanismBuilder
from mechanism_model_ros import qos
from mechanism_model_ros.joint_state_cache import JointStateCache
from mechanism_model_ros.transports.base import Subscription
from mechanism_model_ros.transports.rclpy_transport import RclpyNode
b = MechanismBuilder("m")
b.add_body("arm", None, Joint.revolute("arm_yaw", None, axis=(0, 0, 1)))
node = RclpyNode("subscription_rclpy", parameters={"joint_states_max_bytes": 200})
cache = JointStateCache(node, b.build())
plain = node.create_subscription("chatter", "std_msgs/msg/String", qos.DEFAULT, lambda m: None)
pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.SENSOR_DATA.with_depth(100))
stop = threading.Event()
spin = threading.Thread(target=node.spin, args=(stop,))
spin.start()
caps = ("samples_lost", "samples_dropped", "samples_undecodable", "samples_oversized")
try:
    JS = node.message_class("sensor_msgs/msg/JointState")
    deadline = time.monotonic() + 30
    while cache.latest() != {"arm_yaw": 0.25} and time.monotonic() < deadline:
        pub.publish(JS(name=["arm_yaw" + "x" * 300], position=[1.0]))
        pub.publish(JS(name=["arm_yaw"], position=[0.25]))
        time.sleep(0.1)
    print(json.dumps({
        "types": [type(s).__name__ for s in (cache.sub, plain)],
        "cache": {c: getattr(cache.sub, c) is not None for c in caps},
        "publishers": cache.sub.publisher_count(),
        "plain": {c: getattr(plain, c) is not None for c in caps},
        "latest": cache.latest(), "oversized": cache.samples_oversized(), "lost": cache.samples_lost(),
        "in": cache.messages_in, "status": cache.status()}))
finally:
    stop.set()
    spin.join()
    node.close()
"""


def test_on_rclpy_only_the_oversized_count_is_there_and_only_with_max_bytes():
    from ros import ros_env
    ros_env.require("humble")
    p = ros_env.run_python(RCLPY, unique_domain_id(), timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["types"] == ["Subscription", "Subscription"]
    assert out["cache"] == {"samples_lost": False, "samples_dropped": False, "samples_undecodable": False,
                            "samples_oversized": True}
    assert not any(out["plain"].values()) and out["publishers"] == 1
    assert out["latest"] == {"arm_yaw": 0.25} and out["lost"] == 0
    assert out["oversized"] >= 1 and out["in"] >= 1          # every long message dropped unread, counted
    assert f"oversized {out['oversized']}" in out["status"] and "lost by DDS" not in out["status"]
