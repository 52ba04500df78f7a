"""Type hashes of our Cyclone-transport endpoints in a real Jazzy graph.

``serve`` over the Cyclone transport with ``ROS_DISTRO=jazzy`` and a Jazzy rclpy node (with the
rosidl-generated ``mechanism_model_msgs`` of the test workspace) in one loopback domain. The rclpy node makes
its own endpoints of the same types (a ``tf2_msgs/msg/TFMessage`` publisher, a ``sensor_msgs/msg/JointState``
subscription, a ``mechanism_model_msgs/srv/ComputeFK`` client) and reads from its graph the
``topic_type_hash`` of ours (``/tf`` writer, ``/joint_states`` reader, the ``compute_fk`` request reader and
reply writer, ``ros_discovery_info`` writer) and of its own. Ours must equal what rmw_cyclonedds_cpp derives from the type support, and
not be the unset hash.
"""

import json

import pytest

from ros import ros_env
from ros.dds_helpers import start_serve, stop, unique_domain_id, wait_for

pytestmark = [pytest.mark.ros, pytest.mark.rclpy]

PEER = r"""
import json, time, rclpy
from rclpy.qos import QoSProfile
from tf2_msgs.msg import TFMessage
from sensor_msgs.msg import JointState
from mechanism_model_msgs.srv import ComputeFK

rclpy.init()
node = rclpy.create_node("mm_hash_peer")
node.create_publisher(TFMessage, "/mm_ref_tf", 10)
node.create_subscription(JointState, "/mm_ref_joint_states", lambda m: None, 10)
node.create_client(ComputeFK, "/mm_ref_compute_fk")

OURS = {"state_publisher", "kinematics_server"}      # serve's nodes, announced on ros_discovery_info

def hashes(infos, ours):
    return sorted({str(i.topic_type_hash) for i in infos if i.node_name in (OURS if ours else {"mm_hash_peer"})})

QUERIES = {
    "tf": (node.get_publishers_info_by_topic, "/tf", False),
    "joint_states": (node.get_subscriptions_info_by_topic, "/joint_states", False),
    "fk_request": (node.get_subscriptions_info_by_topic, "rq/compute_fkRequest", True),
    "fk_reply": (node.get_publishers_info_by_topic, "rr/compute_fkReply", True),
    "ref_tf": (node.get_publishers_info_by_topic, "/mm_ref_tf", False),
    "ref_joint_states": (node.get_subscriptions_info_by_topic, "/mm_ref_joint_states", False),
    "ref_fk_request": (node.get_publishers_info_by_topic, "rq/mm_ref_compute_fkRequest", True),
    "ref_fk_reply": (node.get_subscriptions_info_by_topic, "rr/mm_ref_compute_fkReply", True),
}
end = time.monotonic() + 60
while True:
    rclpy.spin_once(node, timeout_sec=0.1)
    out = {k: hashes(f(name, no_mangle=raw) if raw else f(name), not k.startswith("ref_"))
           for k, (f, name, raw) in QUERIES.items()}
    # ros_discovery_info writers: ours and the one of this rclpy process
    discovery = node.get_publishers_info_by_topic("ros_discovery_info", no_mangle=True)
    out["discovery"] = sorted(str(i.topic_type_hash) for i in discovery)
    if (all(out.values()) and len(out["discovery"]) >= 2) or time.monotonic() > end:
        break
print("HASHES " + json.dumps(out), flush=True)
node.destroy_node()
rclpy.shutdown()
"""

UNSET = "INVALID"      # str() of rclpy's TypeHash when the endpoint carries none


def test_jazzy_graph_reports_our_endpoint_type_hashes():
    from mechanism_model_ros.transports.cyclone.type_hash import type_hash

    ros_env.require("jazzy")
    ros_env.workspace("jazzy")          # the peer imports the rosidl-generated mechanism_model_msgs
    d = unique_domain_id()
    server = start_serve(d, env={"ROS_DISTRO": "jazzy"})
    cli = {}
    try:
        p = ros_env.run_python(PEER, d, "jazzy", timeout=120)

        def cli_shows_hash():   # what a user sees: `ros2 topic info -v /tf`
            cli["p"] = ros_env.ros2("topic", "info", "-v", "/tf", "--no-daemon", domain_id=d, distro="jazzy",
                                    timeout=60, with_workspace=False)
            return f"Topic type hash: {type_hash('tf2_msgs/msg/TFMessage')}" in cli["p"].stdout
        cli_ok = wait_for(cli_shows_hash, 60, 0.5)
    finally:
        out, err = stop(server)
    assert cli_ok, (cli["p"].stdout[-2000:], cli["p"].stderr[-2000:])
    assert "Traceback" not in err, err
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("HASHES ")]
    assert p.returncode == 0 and lines, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    got = json.loads(lines[-1][len("HASHES "):])
    # each endpoint of ours was seen, with one hash, equal to the one rmw_cyclonedds gives rclpy's endpoint
    for ours, theirs in (("tf", "ref_tf"), ("joint_states", "ref_joint_states"), ("fk_request", "ref_fk_request"),
                         ("fk_reply", "ref_fk_reply")):
        assert len(got[theirs]) == 1 and got[theirs][0] != UNSET, (theirs, got)
        assert got[ours] == got[theirs], (ours, got)
    # ros_discovery_info: our writer's hash equals the rclpy process's own
    assert len(got["discovery"]) >= 2 and len(set(got["discovery"])) == 1, got["discovery"]
    assert got["discovery"][0] == type_hash("rmw_dds_common/msg/ParticipantEntitiesInfo"), got["discovery"]
    # and the reference is the hash we compute
    ref = {"tf": "tf2_msgs/msg/TFMessage", "joint_states": "sensor_msgs/msg/JointState",
           "fk_request": "mechanism_model_msgs/srv/ComputeFK_Request",
           "fk_reply": "mechanism_model_msgs/srv/ComputeFK_Response"}
    for key, ros_type in ref.items():
        assert got[key] == [type_hash(ros_type)], (key, got[key])
