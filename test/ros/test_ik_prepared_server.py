"""Issue 20: "caches are built when the model is loaded ..., so the first solve on a model is as fast as the
thousandth". A freshly started kinematics server (``serve --transport rclpy`` under the ROS Python of /opt/ros,
and ``--transport cyclone``; real Cyclone DDS on loopback, a test-unique domain) has prepared IK for its motor groups' tip frames before it
logs that it is serving, and its first ``compute_ik`` request -- the Rocky 8 arm's tool at a reachable pose, the
arm's joints active -- builds nothing (every per-model IK cache counted in the server's process by
build_counting_serve.py) and is answered with a configuration that reaches the target (checked by our forward
kinematics here, the solve's own check being the server's)."""

import json
import os
import re
import sys

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.library import default_model_path

from core.robots import SAFETY
from ros import ros_env
from ros.dds_helpers import configure_this_process, dds_env, unique_domain_id, wait_for

pytestmark = pytest.mark.ros

COUNTING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build_counting_serve.py")


@pytest.mark.parametrize("transport", ["rclpy", "cyclone"])
def test_a_freshly_started_server_answers_its_first_ik_request_without_building(transport):
    from mechanism_model_ros.conversions import fill_pose
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    if transport == "rclpy":
        ros_env.require("humble")
    m = load_model(default_model_path())
    arm = load_motor_groups(m)["arm_controller"]
    q = np.array(m.home, dtype=float)
    rng = np.random.default_rng(20)
    for name, lo, hi in zip(arm.joint_names, arm.lower, arm.upper):
        q[m.coordinate_index(name)] = lo + rng.random() * (hi - lo)
    target = forward_kinematics(m, q).pose("arm_tool")
    domain = unique_domain_id()
    configure_this_process(domain)
    args = [COUNTING, "--transport", transport, "--status-period", "0", "--log-level", "INFO", "--nodes",
            "kinematics_server", "-p", f"max_ik_timeout:={SAFETY}"]     # the IK budget a safety net
    proc = ros_env.start([ros_env.ROS_PYTHON, *args], domain, name="counting_serve") if transport == "rclpy" \
        else ros_env.RosProcess([sys.executable, *args], dds_env(domain), name="counting_serve")
    ctx = node = None
    try:
        assert proc.wait_for_output("serving over", 120), proc.output()[-3000:]
        out = proc.output()
        assert "IK prepared" in out and out.index("IK prepared") < out.index("serving over"), out[-3000:]
        assert "arm_tool" in out[out.index("IK prepared"):out.index("serving over")]
        ctx = CycloneContext(domain)
        node = CycloneNode("ik_prepared_client", context=ctx)
        ik = node.create_client("/compute_ik", "mechanism_model_msgs/srv/ComputeIK")
        assert ik.wait_for_service(60), proc.output()[-3000:]
        PS = node.message_class("geometry_msgs/msg/PoseStamped")
        req = ik.request()
        req.ik_link_names = ["arm_tool"]
        ps = PS()
        fill_pose(ps.pose, target)
        req.pose_stamped_vector = [ps]
        req.active_joints = list(arm.joint_names)
        req.timeout.sec = int(SAFETY)
        rep = ik.call(req, 2 * SAFETY)
        assert rep.error_code.val == 1, (rep.error_code.val, rep.message)
        assert wait_for(lambda: "IK-BUILDS" in proc.output(), 10), proc.output()[-3000:]
        builds = [json.loads(b) for b in re.findall(r"IK-BUILDS (\{.*\})", proc.output())]
        assert builds == [{}], builds
        solution = dict(zip(rep.solution.name, rep.solution.position))
        qs = np.array([solution.get(n, h) for n, h in zip(m.coordinate_names, m.home)])
        F = forward_kinematics(m, qs).pose("arm_tool")
        assert np.linalg.norm(F[:3, 3] - target[:3, 3]) < 1e-5
        for name in arm.joint_names:
            i = m.coordinate_index(name)
            assert m.lower_limits[i] - 1e-12 <= qs[i] <= m.upper_limits[i] + 1e-12, name
    finally:
        if node is not None:
            node.close()
        if ctx is not None:
            ctx.close()
        out = proc.stop()
    assert "Traceback" not in out, out[-3000:]
