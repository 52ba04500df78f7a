"""The live description (issue 25): nodes started with only a ``robot_description`` topic (reliable, transient
local, as a running robot_state_publisher offers it) publish the same TF as when started from the file, over
both transports; ``mechanism-model info --from-topic`` reads it over Cyclone without ROS.

Each case: a URDF of our own (an arm with revolute, continuous and prismatic joints, a mimic joint and fixed
frames) is published on ``/robot_description`` in a fresh domain; ``serve`` starts with
``--robot-description-topic /robot_description`` (the state publisher, the kinematics server); the same
``serve`` starts from the URDF file in another domain; the test publishes the same joint states to both and
compares every transform on /tf and /tf_static (1e-12). With rclpy the description comes from a real
robot_state_publisher, whose own /tf is a third opinion."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from docs_text import doc_lines, venv_argv
from ros.dds_helpers import (configure_this_process, dds_env, start_serve, stop, transform_to_matrix,
                             unique_domain_id, wait_for)

pytestmark = [pytest.mark.ros, pytest.mark.serial]

URDF = """\
<?xml version="1.0"?>
<!-- a test arm -- with a comment urdfdom reads and XML does not -->
<robot name="desc_arm">
  <link name="base"/>
  <link name="turret"/>
  <link name="upper"/>
  <link name="slider"/>
  <link name="finger"/>
  <link name="tool"/>
  <joint name="yaw" type="continuous">
    <parent link="base"/><child link="turret"/><origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>
  </joint>
  <joint name="shoulder" type="revolute">
    <parent link="turret"/><child link="upper"/><origin xyz="0.05 0 0.2" rpy="0.1 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" effort="10" velocity="1"/>
  </joint>
  <joint name="extend" type="prismatic">
    <parent link="upper"/><child link="slider"/><origin xyz="0.3 0 0"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.2" effort="10" velocity="0.1"/>
  </joint>
  <joint name="finger_joint" type="revolute">
    <parent link="slider"/><child link="finger"/><origin xyz="0.1 0.02 0"/><axis xyz="0 0 1"/>
    <limit lower="-0.5" upper="0.5" effort="1" velocity="1"/>
    <mimic joint="shoulder" multiplier="-0.5" offset="0.1"/>
  </joint>
  <joint name="tool_joint" type="fixed">
    <parent link="slider"/><child link="tool"/><origin xyz="0.12 0 0" rpy="0 1.5707963267948966 0"/>
  </joint>
</robot>
"""

VALUES = {"yaw": 0.7, "shoulder": -0.4, "extend": 0.13, "finger_joint": 0.3}


def _collect_tf(domain, publish_joint_states=True, prefix=""):
    """``{(parent, child): 4x4}`` of /tf_static and of a /tf message that reflects VALUES, in ``domain``."""
    from mechanism_model_ros import qos
    from mechanism_model_ros.conversions import set_stamp
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    configure_this_process(domain)
    ctx = CycloneContext(domain)
    node = CycloneNode("tf_listener", context=ctx)
    static, moving = [], []
    try:
        node.create_subscription("/tf_static", "tf2_msgs/msg/TFMessage", qos.TF_STATIC_LISTENER, static.append)
        node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, moving.append)
        # reliable: robot_state_publisher subscribes reliably; the state publisher's best-effort subscription hears it too
        pub = node.create_publisher("/joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
        JointState = node.message_class("sensor_msgs/msg/JointState")

        def reflecting():
            """The /tf messages of the joint values (the one home-pose message a starting state publisher
            sends may arrive after them)."""
            return [m for m in moving if any(t.child_frame_id == prefix + "slider"
                                             and abs(t.transform.translation.x - 0.3 - 0.13) < 1e-9
                                             for t in m.transforms)]

        def reflects_values():
            return bool(reflecting())

        def send_and_check():
            if publish_joint_states:
                js = JointState(name=list(VALUES), position=list(VALUES.values()))
                set_stamp(js.header.stamp, node.now())   # robot_state_publisher drops unstamped states
                pub.publish(js)
            has_static = any(t.child_frame_id == prefix + "tool" for m in static for t in m.transforms)
            return has_static and reflects_values()

        ok = wait_for(send_and_check, 30, 0.05)
        xs = [t.transform.translation.x for m in moving for t in m.transforms
              if t.child_frame_id == prefix + "slider"]
        static_frames = sorted({t.child_frame_id for m in static for t in m.transforms})
        assert ok, (f"no /tf_static or no /tf with the joint values: {len(static)} /tf_static (child frames "
                    f"{static_frames}), {len(moving)} /tf, slider x: {xs[-5:]}")
        out = {}
        for msg in static:
            for t in msg.transforms:
                out[(t.header.frame_id, t.child_frame_id)] = transform_to_matrix(t.transform)
        last = reflecting()[-1]
        for t in last.transforms:
            out[(t.header.frame_id, t.child_frame_id)] = transform_to_matrix(t.transform)
        return {(p[len(prefix):], c[len(prefix):]): T for (p, c), T in out.items()
                if p.startswith(prefix) and c.startswith(prefix) and (prefix or "/" not in c)}
    finally:
        node.close()
        ctx.close()


def _same_tf(a, b):
    assert set(a) == set(b), (sorted(set(a) ^ set(b)))
    for k in a:
        np.testing.assert_allclose(a[k], b[k], atol=1e-12, err_msg=str(k))


@pytest.fixture()
def urdf_file(tmp_path):
    path = tmp_path / "desc_arm.urdf"
    path.write_text(URDF)
    return str(path)


def _publish_description(domain):
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    configure_this_process(domain)
    ctx = CycloneContext(domain)
    node = CycloneNode("bringup", context=ctx)
    pub = node.create_publisher("/robot_description", "std_msgs/msg/String", qos.LATCHED)
    pub.publish(node.message_class("std_msgs/msg/String")(data=URDF))
    return ctx, node


# docs/urdf.md's "The live description" lines, run as written by the two tests below
URDF_DOC_SERVE, URDF_DOC_INFO = (doc_lines(os.path.join("docs", "urdf.md"), p, heading="## The live description")[0]
                                 for p in ("mechanism-model serve --robot-description-topic",
                                           "mechanism-model info --from-topic"))


def test_cyclone_nodes_from_the_topic_publish_the_same_tf_as_from_the_file(urdf_file):
    d_topic, d_file = unique_domain_id(), unique_domain_id()
    ctx, node = _publish_description(d_topic)           # published before serve subscribes: transient local
    # docs/urdf.md's serve line as written, then the test's timeout and nodes
    from_topic = subprocess.Popen(venv_argv(URDF_DOC_SERVE) + ["--description-timeout", "60", "--nodes",
                                  "state_publisher,kinematics_server"], env=dds_env(d_topic),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    from_file = start_serve(d_file, "--model", urdf_file, "--nodes", "state_publisher,kinematics_server")
    try:
        tf_topic = _collect_tf(d_topic)
        tf_file = _collect_tf(d_file)
    finally:
        node.close()
        ctx.close()
        _, err_topic = stop(from_topic)
        _, err_file = stop(from_file)
    assert "Traceback" not in err_topic + err_file, err_topic + err_file
    _same_tf(tf_topic, tf_file)
    assert {c for _, c in tf_topic} == {"turret", "upper", "slider", "finger", "tool"}
    # and it is forward kinematics: the mimic joint followed its master
    from mechanism_model_core import forward_kinematics
    from mechanism_model_core.io.urdf import load_urdf
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_urdf(urdf_file)
    fk = forward_kinematics(m, {k: v for k, v in VALUES.items() if k != "finger_joint"})
    np.testing.assert_allclose(tf_topic[("slider", "finger")], fk.pose("finger", "slider"), atol=1e-12)


def test_serve_without_a_description_on_the_topic_says_so():
    d = unique_domain_id()
    proc = start_serve(d, "--robot-description-topic", "/robot_description", "--description-timeout", "1")
    try:
        proc.wait(60)
    finally:
        out, err = stop(proc)
    assert proc.returncode == 2
    assert "no robot description on /robot_description within 1 s" in err


def test_info_reads_the_live_description_over_cyclone():
    d = unique_domain_id()
    ctx, node = _publish_description(d)
    try:
        # docs/urdf.md's info line as written, then the test's timeout
        p = subprocess.run(venv_argv(URDF_DOC_INFO) + ["--timeout", "60"], env=dds_env(d), capture_output=True,
                           text=True, timeout=120, cwd=os.path.dirname(__file__))
    finally:
        node.close()
        ctx.close()
    assert p.returncode == 0, p.stderr
    assert "mechanism 'desc_arm' from robot_description topic /robot_description" in p.stdout
    assert "finger_joint" in p.stdout and "comment" in p.stderr     # the urdfdom-tolerated comment is said
    q = subprocess.run([sys.executable, "-m", "mechanism_model_core", "info", "--from-topic", "/nothing_here",
                        "--timeout", "0.5"], env=dds_env(unique_domain_id()), capture_output=True, text=True,
                       timeout=120, cwd=os.path.dirname(__file__))
    assert q.returncode == 1 and "no robot description on /nothing_here" in q.stderr


@pytest.mark.rclpy
def test_rclpy_nodes_take_robot_state_publishers_description_and_publish_its_tf(urdf_file, tmp_path):
    from ros import ros_env

    ros_env.require("humble")
    d = unique_domain_id()
    params = tmp_path / "rsp.yaml"
    import yaml
    params.write_text(yaml.safe_dump({"robot_state_publisher": {"ros__parameters": {"robot_description": URDF}}}))
    rsp = ros_env.start(["ros2", "run", "robot_state_publisher", "robot_state_publisher", "--ros-args",
                         "--params-file", str(params)], d, name="rsp")
    ours = ros_env.start_serve(d, "--robot-description-topic", "/robot_description", "--description-timeout",
                               "60", "--frame-prefix", "mm/", "--nodes", "state_publisher,kinematics_server")
    try:
        tf_ours = _collect_tf(d, prefix="mm/")
        try:
            tf_rsp = _collect_tf(d, prefix="")      # robot_state_publisher's own, from the same joint states
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nrobot_state_publisher ({'running' if rsp.running() else 'ended'}) "
                                 f"said:\n{rsp.output()[-3000:]}") from exc
    finally:
        out_ours = ours.stop()
        rsp.stop()
    assert "Traceback" not in out_ours, out_ours
    # robot_state_publisher publishes every moving joint it is told about, mimic included (it follows
    # joint_states literally); ours computes the mimic joint from its master: both agree at VALUES, where
    # the finger's value is what the mimic gives (-0.5 * -0.4 + 0.1 = 0.3)
    _same_tf(tf_ours, tf_rsp)
    # and from the file
    d_file = unique_domain_id()
    from_file = ros_env.start_serve(d_file, "--model", urdf_file, "--frame-prefix", "mm/",
                                    "--nodes", "state_publisher,kinematics_server")
    try:
        tf_file = _collect_tf(d_file, prefix="mm/")
    finally:
        out_file = from_file.stop()
    assert "Traceback" not in out_file, out_file
    _same_tf(tf_ours, tf_file)


def test_the_locomotor_starts_from_the_topic_and_drives_the_wheels_it_proposes():
    """A rover's URDF on the topic (the library's Rocky 8, exported): the locomotor proposes its mobility
    from the URDF (cylinder wheels, vertical steering joints) and answers its drive-mode services."""
    from mechanism_model_core import load_model
    from mechanism_model_core.io.urdf import to_urdf
    from mechanism_model_core.library import model_path
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    d = unique_domain_id()
    configure_this_process(d)
    ctx = CycloneContext(d)
    node = CycloneNode("bringup", context=ctx)
    pub = node.create_publisher("/robot_description", "std_msgs/msg/String", qos.LATCHED)
    pub.publish(node.message_class("std_msgs/msg/String")(data=to_urdf(load_model(model_path(
        "rocky8/rocky8_rover.xml")))))
    proc = start_serve(d, "--robot-description-topic", "/robot_description", "--description-timeout", "60",
                       "--nodes", "locomotor", "--log-level", "INFO")
    try:
        crab = node.create_client("/locomotor/drive_mode/crab", "std_srvs/srv/Trigger")
        assert crab.wait_for_service(60), "the locomotor did not come up"
        reply = crab.call(crab.request(), 20)
        assert reply.success, reply.message
    finally:
        node.close()
        ctx.close()
        out, err = stop(proc)
    assert "Traceback" not in err, err
    assert "robot_description topic /robot_description" in err
