"""The nodes take a ``robot_description`` URDF string as robot_state_publisher does (xacro output passed as a
parameter), and republish URDF text verbatim (meshes and materials kept), over real Cyclone DDS (loopback,
multicast off, unique domain). The TF tree of the UR5 is checked against Pinocchio's forward kinematics of
the same URDF (an independent implementation)."""

import os

import numpy as np
import pytest
import yaml

from ros.dds_helpers import (ROS_PKG, configure_this_process, start_serve, stop, transform_to_matrix,
                             unique_domain_id, wait_for)

pytestmark = pytest.mark.ros

UR5 = os.path.join(os.path.dirname(ROS_PKG), "test", "data", "robots", "ur5", "ur5.urdf")
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
          "wrist_3_joint"]


def _pinocchio_pose(q, frame):
    pin = pytest.importorskip("pinocchio")
    model = pin.buildModelFromUrdf(UR5)
    data = model.createData()
    qp = np.zeros(model.nq)
    for name, v in zip(JOINTS, q):
        qp[model.joints[model.getJointId(name)].idx_q] = v
    pin.framesForwardKinematics(model, data, qp)
    return data.oMf[model.getFrameId(frame)].homogeneous


def _serve_and_listen(domain, *args):
    configure_this_process(domain)
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    proc = start_serve(domain, *args)
    ctx = CycloneContext(domain)
    node = CycloneNode("description_tester", context=ctx)
    static, desc, tf = [], [], {}
    node.create_subscription("/tf_static", "tf2_msgs/msg/TFMessage", qos.TF_STATIC_LISTENER, static.append)
    node.create_subscription("robot_description", "std_msgs/msg/String", qos.LATCHED, desc.append)
    node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF,
                             lambda m: tf.setdefault(m.transforms[0].header.stamp.sec, m) if m.transforms else None)
    return proc, ctx, node, static, desc, tf


def test_robot_description_parameter_drives_tf_and_is_republished_verbatim(tmp_path):
    text = open(UR5, encoding="utf-8").read()
    params = tmp_path / "ur5.yaml"
    params.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"robot_description": text}}}))
    proc, ctx, node, static, desc, tf = _serve_and_listen(unique_domain_id(), "--params-file", str(params))
    try:
        assert wait_for(lambda: static and desc, 30), "no /tf_static or robot_description"
        assert desc[0].data == text
        from mechanism_model_ros import qos
        pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
        JS = node.message_class("sensor_msgs/msg/JointState")
        q = [0.3, -1.1, 1.4, -0.6, 0.9, 0.2]
        m = JS(name=JOINTS, position=q)
        m.header.stamp.sec = 42
        assert wait_for(lambda: pub.publish(m) or 42 in tf, 15, period=0.2)
        edges = {t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform))
                 for msg in (static[-1], tf[42]) for t in msg.transforms}
        T, frame = np.eye(4), "tool0"
        while frame in edges:
            parent, Tp = edges[frame]
            T = Tp @ T
            frame = parent
        assert frame == "world"
        np.testing.assert_allclose(T, _pinocchio_pose(q, "tool0"), atol=1e-9)
    finally:
        node.close()
        ctx.close()
        out, err = stop(proc)
    assert "Traceback" not in err, err


def test_a_urdf_model_file_is_republished_verbatim():
    proc, ctx, node, static, desc, tf = _serve_and_listen(unique_domain_id(), "--model", UR5)
    try:
        assert wait_for(lambda: desc, 30)
        assert desc[0].data == open(UR5, encoding="utf-8").read()
    finally:
        node.close()
        ctx.close()
        out, err = stop(proc)
    assert "Traceback" not in err, err


def test_urdf_text_is_kept_only_when_every_link_is_a_model_frame():
    from mechanism_model_core.io.urdf import load_urdf
    from mechanism_model_ros.model_loading import urdf_text_for
    text = open(UR5, encoding="utf-8").read()
    model = load_urdf(UR5)
    assert urdf_text_for(model, text) == text
    other = text.replace('name="tool0"', 'name="tool_renamed"')
    assert urdf_text_for(model, other) is None
    assert urdf_text_for(model, "<robot name='x'><link name='nowhere'/></robot>") is None
    assert urdf_text_for(model, "not xml") is None
