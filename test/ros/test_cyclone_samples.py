"""What reaches node code from the Cyclone transport's readers, over real Cyclone DDS in this process (two
participants on loopback): a peer leaving delivers "instance unregistered" notices that must never reach a
callback or a service handler; one sample that does not deserialize (invalid UTF-8) is dropped alone,
counted and logged, and the good samples around it all arrive."""

import time

import pytest

from ros.dds_helpers import configure_this_process, two_cyclone_nodes, unique_domain_id, wait_for

pytestmark = pytest.mark.ros


@pytest.fixture
def two_participants():
    yield from two_cyclone_nodes("a", "b")


PEER = """
import sys, time
from mechanism_model_ros import qos
from mechanism_model_ros.transports.cyclone import CycloneNode
node = CycloneNode("peer")
if sys.argv[1] == "publish":
    pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    end = time.monotonic() + 20
    while not pub.subscription_count and time.monotonic() < end:
        time.sleep(0.02)
    JS = node.message_class("sensor_msgs/msg/JointState")
    pub.publish(JS(name=["arm_yaw"], position=[0.1]))
    time.sleep(0.5)
else:
    fk = node.create_client("compute_fk", "mechanism_model_msgs/srv/ComputeFK")
    assert fk.wait_for_service(20)
    r = fk.request()
    r.fk_link_names = ["arm_turret"]
    print("reply", fk.call(r, 20).error_code.val, flush=True)
node.close()
"""


def _peer(domain, what):
    """A peer process that publishes one joint state (or makes one FK call) and exits, as `ros2 topic pub
    --once` or `ros2 service call` do."""
    import subprocess
    import sys
    from ros.dds_helpers import dds_env
    return subprocess.run([sys.executable, "-c", PEER, what], env=dds_env(domain), capture_output=True, text=True,
                          timeout=60)


def test_a_publisher_leaving_delivers_nothing_to_the_callback():
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneNode
    d = unique_domain_id()
    configure_this_process(d)
    node = CycloneNode("listener")
    try:
        got, errors = [], []

        def callback(msg):
            try:
                got.append(list(msg.name))
            except Exception as exc:      # an InvalidSample has no 'name'
                errors.append(exc)
        reader = node.create_subscription("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT, callback)
        p = _peer(d, "publish")
        assert p.returncode == 0, p.stderr
        assert wait_for(lambda: got and not reader.handle.get_matched_publications(), 15)   # received, peer gone
        time.sleep(0.5)
        assert got == [["arm_yaw"]] and not errors
    finally:
        node.close()


def test_a_client_leaving_is_not_a_failed_call():
    from mechanism_model_core import load_model
    from mechanism_model_core.library import default_model_path
    from mechanism_model_ros.kinematics_server import KinematicsServer
    from mechanism_model_ros.transports.cyclone import CycloneNode
    d = unique_domain_id()
    configure_this_process(d)
    node = CycloneNode("kinematics_server")
    try:
        server = KinematicsServer(node, load_model(default_model_path()))
        p = _peer(d, "call")
        assert "reply 1" in p.stdout, p.stderr
        assert wait_for(lambda: not server.services[0].reader.get_matched_publications(), 15)   # client gone
        time.sleep(0.5)
        assert server.calls["compute_fk"] == 1 and server.failures == 0
    finally:
        node.close()


def test_one_undecodable_sample_is_dropped_alone_and_counted(two_participants, caplog):
    from cyclonedds._clayer import ddspy_write
    from mechanism_model_ros import qos
    a, b = two_participants
    got = []
    reader = a.create_subscription("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT.with_depth(100),
                                   lambda m: got.append(m.name[0]))
    pub = b.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT.with_depth(100))
    assert wait_for(lambda: pub.subscription_count and reader.handle.get_matched_publications(), 15)
    JS = b.message_class("sensor_msgs/msg/JointState")
    good = JS(name=["joint_ok"], position=[0.0]).serialize(use_version_2=False)
    bad = good.replace(b"joint_ok", b"joint\xff\xfeX")          # same length: valid CDR, invalid UTF-8
    assert len(bad) == len(good)
    with caplog.at_level("WARNING"):
        for i in range(21):
            ddspy_write(pub.writer._ref, bad if i == 10 else good)
        assert wait_for(lambda: len(got) >= 20, 15)
        time.sleep(0.3)
    assert got == ["joint_ok"] * 20
    assert reader.samples_undecodable() == 1
    assert "do not deserialize" in caplog.text and "UnicodeDecodeError" in caplog.text
