"""Our Cyclone-transport nodes in a real ROS 2 graph (Humble and Jazzy): with ``ROS_DISTRO`` naming the peers'
distribution, ``ros2 node list`` shows them beside an rclpy node; with ``ROS_DISTRO`` unset they stay off
``ros_discovery_info`` and never break the graph of the other nodes (the defect: Humble's ``ros2 node list``
failed for every node of the domain, "empty node name returned by the RMW layer")."""

import pytest

from ros import ros_env
from ros.dds_helpers import start_serve, stop, unique_domain_id, wait_for

pytestmark = [pytest.mark.ros, pytest.mark.rclpy]

TALKER = """
import time, rclpy
rclpy.init()
node = rclpy.create_node("mm_graph_peer")
print("up", flush=True)
end = time.monotonic() + 60
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.1)
"""


@pytest.mark.parametrize("distro", ["humble", "jazzy"])
@pytest.mark.parametrize("announce", [True, False])
def test_ros2_node_list_with_our_cyclone_nodes(distro, announce):
    ros_env.require(distro)
    d = unique_domain_id()
    server = start_serve(d, env={"ROS_DISTRO": distro if announce else None})
    peer = ros_env.start([ros_env.ROS_PYTHON, "-c", TALKER], d, distro, with_workspace=False, name="peer")
    try:
        assert peer.wait_for_output("up", 30), peer.output()
        expected = {"/mm_graph_peer"} | ({"/state_publisher", "/kinematics_server"} if announce else set())
        last = {}

        def listed():
            p = ros_env.ros2("node", "list", "--no-daemon", domain_id=d, distro=distro, timeout=60,
                             with_workspace=False)
            last["p"] = p
            return p.returncode == 0 and expected <= set(p.stdout.split())
        assert wait_for(listed, 60, 1.0), (last["p"].returncode, last["p"].stdout, last["p"].stderr[-1500:])
        p = last["p"]
        assert "empty node name" not in p.stderr and "error" not in p.stderr.lower(), p.stderr
        if not announce:
            assert "/state_publisher" not in p.stdout.split()
    finally:
        peer.stop()
        out, err = stop(server)
    assert "Traceback" not in err, err
