"""Side by side with the anchor, on real ROS 2 Humble: the C++ robot_state_publisher and our state publisher,
given the same URDF (our export of each library model) and the same joint_states, publish the same /tf and
/tf_static (every transform to 1e-9, the same frame names, the same static/moving split). And independent
clients on our Cyclone-transport nodes: a real rclpy publisher feeds joint_states, a real tf2_ros.Buffer
looks the frames up, and the poses equal the core's forward kinematics.

robot_state_publisher runs in one domain, ours (over the Cyclone transport, in this process) in another; the
test listens to both over Cyclone. Intended differences (docs/ros.md): ours publishes the home pose at start,
every moving edge on every message (rsp: the joints the message names, at most publish_frequency per joint),
floating joints per ``floating_joints`` (``always`` here), couplings for joints nobody reports, no repeated
stamps, and refuses stamps before the epoch."""

import json
import time

import numpy as np
import pytest
import yaml
from lxml import etree

from mechanism_model_core import load_model
from mechanism_model_core.io.urdf import loads_urdf, to_urdf
from mechanism_model_core.library import default_model_path, list_models, model_path

from ros import ros_env
from ros.dds_helpers import configure_this_process, transform_to_matrix, unique_domain_id, wait_for

pytestmark = [pytest.mark.ros, pytest.mark.rclpy, pytest.mark.slow]


def _urdf_joints(urdf: str):
    """(moving joint names that are not mimics, {child link: joint type})."""
    root = etree.fromstring(urdf.encode())
    moving, types = [], {}
    for j in root.iter("joint"):
        types[j.find("child").get("link")] = j.get("type")
        if j.get("type") != "fixed" and j.find("mimic") is None:
            moving.append(j.get("name"))
    return moving, types


def _edges(msgs):
    return {t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform), t.header.stamp.sec)
            for m in msgs for t in m.transforms}


def _compare(ours: dict, theirs: dict, what: str):
    assert set(ours) == set(theirs), (what, sorted(set(ours) ^ set(theirs)))
    for child, (parent, T, _) in theirs.items():
        assert ours[child][0] == parent, (what, child)
        np.testing.assert_allclose(ours[child][1], T, atol=1e-9, err_msg=f"{what} {child}")


def test_same_tf_and_tf_static_as_robot_state_publisher_for_every_library_model(tmp_path):
    ros_env.require("humble")
    from mechanism_model_ros import qos
    from mechanism_model_ros.state_publisher import StatePublisher
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    d_rsp = unique_domain_id()
    d_ours = unique_domain_id()
    while d_ours == d_rsp:
        d_ours = unique_domain_id()
    configure_this_process(d_rsp)
    ctx_rsp, ctx_ours = CycloneContext(d_rsp), CycloneContext(d_ours)
    tester = CycloneNode("rsp_tester", context=ctx_rsp)
    JS = tester.message_class("sensor_msgs/msg/JointState")
    pub = tester.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    compared = []
    try:
        for k, name in enumerate(list_models()):
            urdf = to_urdf(load_model(model_path(name)))
            mech = loads_urdf(urdf)
            moving, _ = _urdf_joints(urdf)
            params = tmp_path / f"rsp{k}.yaml"
            params.write_text(yaml.safe_dump({"robot_state_publisher": {"ros__parameters": {
                "robot_description": urdf}}}))
            static_rsp, tf_rsp, static_ours, tf_ours = [], [], [], []
            s1 = tester.create_subscription("/tf_static", "tf2_msgs/msg/TFMessage", qos.TF_STATIC_LISTENER,
                                            static_rsp.append)
            s2 = tester.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, tf_rsp.append)
            rsp = ros_env.start(["ros2", "run", "robot_state_publisher", "robot_state_publisher", "--ros-args",
                                 "--params-file", str(params)], d_rsp, with_workspace=False, name="rsp")
            ours = CycloneNode(f"state_publisher_{k}", parameters={"floating_joints": "always"}, context=ctx_ours)
            listener = CycloneNode(f"listener_{k}", context=ctx_ours)
            try:
                listener.create_subscription("/tf_static", "tf2_msgs/msg/TFMessage", qos.TF_STATIC_LISTENER,
                                             static_ours.append)
                listener.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, tf_ours.append)
                sp = StatePublisher(ours, mech, description=urdf)
                rng = np.random.default_rng(k)
                q = mech.random_configuration(rng)
                values = {n: float(q[mech.coordinate_index(n)]) for n in moving}
                # rsp's subscription matches our writer after a while and our /tf reader may match rsp's writer
                # later still (discovery is asymmetric): send with a new stamp until one comes back on /tf
                msg = JS(name=list(values), position=list(values.values()))
                base = 1000 * (k + 1)
                attempt = [0]

                def answered():
                    msg.header.stamp.sec = base + attempt[0]
                    attempt[0] += 1
                    pub.publish(msg)
                    return any(m.transforms and m.transforms[0].header.stamp.sec >= base for m in tf_rsp)
                assert not moving or wait_for(answered, 60, 0.3), (name, rsp.output()[-3000:])
                stamp = next((m.transforms[0].header.stamp.sec for m in tf_rsp
                              if m.transforms and m.transforms[0].header.stamp.sec >= base), base)
                msg.header.stamp.sec = stamp
                assert wait_for(lambda: static_rsp, 20), (name, rsp.output())
                sp.on_joint_state(msg)
                assert wait_for(lambda: static_ours and (not moving or any(
                    m.transforms and m.transforms[0].header.stamp.sec == stamp for m in tf_ours)), 20)
                time.sleep(0.2)
                theirs_static = _edges(static_rsp[-1:])
                ours_static = _edges(static_ours[-1:])
                _compare(ours_static, theirs_static, f"{name} /tf_static")
                theirs_moving = _edges([m for m in tf_rsp if m.transforms and m.transforms[0].header.stamp.sec == stamp])
                ours_moving = _edges([m for m in tf_ours if m.transforms and m.transforms[0].header.stamp.sec == stamp])
                _compare(ours_moving, theirs_moving, f"{name} /tf")
                assert all(v[2] == stamp for v in list(theirs_moving.values()) + list(ours_moving.values()))
                assert not set(ours_moving) & set(ours_static)          # the same static/moving split
                compared.append((name, len(theirs_static), len(theirs_moving)))
            finally:
                out = rsp.stop()
                for e in (s1, s2):
                    tester.ctx.remove_reader(e.handle)
                listener.close()
                ours.close()
            assert "error" not in out.lower() or "Traceback" not in out, out
    finally:
        tester.close()
        ctx_rsp.close()
        ctx_ours.close()
    assert len(compared) == len(list_models())
    assert sum(n_moving for _, _, n_moving in compared) > 100, compared


TF2_CLIENT = r"""
import json, sys, time
import rclpy
from rclpy.duration import Duration
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
import tf2_ros

values = json.loads(sys.argv[1])
frames = json.loads(sys.argv[2])
rclpy.init()
node = rclpy.create_node("mm_tf2_client")
buf = tf2_ros.Buffer(cache_time=Duration(seconds=60))
listener = tf2_ros.TransformListener(buf, node)
pub = node.create_publisher(JointState, "joint_states", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
msg = JointState(name=list(values), position=list(values.values()))
out, end = None, time.monotonic() + 40
first = node.get_clock().now()
while time.monotonic() < end:
    msg.header.stamp = node.get_clock().now().to_msg()     # a new stamp each time (repeats are not published)
    pub.publish(msg)                      # the rclpy publisher feeding the Cyclone-transport node
    rclpy.spin_once(node, timeout_sec=0.2)
    try:
        got = {f: buf.lookup_transform("ground", f, Time()) for f in frames}    # the latest common time
    except tf2_ros.TransformException:
        continue
    if all(Time.from_msg(t.header.stamp) >= first for t in got.values()):   # not the home pose of start-up
        out = got
        break
if out is None:
    print("NO TRANSFORMS", flush=True)
    sys.exit(1)
print(json.dumps({f: [[t.transform.translation.x, t.transform.translation.y, t.transform.translation.z],
                      [t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
                       t.transform.rotation.w]] for f, t in out.items()}), flush=True)
node.destroy_node()
rclpy.shutdown()
"""


@pytest.mark.parametrize("distro", ["humble", "jazzy"])
def test_tf2_buffer_lookups_of_our_cyclone_node_fed_by_an_rclpy_publisher_equal_forward_kinematics(distro):
    from ros.dds_helpers import assert_lookups_equal_forward_kinematics, start_serve, stop
    ros_env.require(distro)
    model = load_model(default_model_path())
    d = unique_domain_id()
    server = start_serve(d, "-p", "floating_joints:=always", env={"ROS_DISTRO": distro})
    try:
        # up, and its start-up home pose already out (published right after /tf_static)
        assert ros_env.wait_for_messages(d, "/tf_static", "tf2_msgs/msg/TFMessage", timeout=60)
        time.sleep(1.0)
        rng = np.random.default_rng(11)
        q = model.random_configuration(rng)
        values = {n: float(q[model.coordinate_index(n)]) for n in model.independent_coordinates}
        frames = list(model.frame_names[1:])
        p = ros_env.run_python(TF2_CLIENT, d, distro, timeout=90, with_workspace=False,
                               args=(json.dumps(values), json.dumps(frames)))
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        got = json.loads(p.stdout.strip().splitlines()[-1])
    finally:
        out, err = stop(server)
    assert "Traceback" not in err, err
    assert_lookups_equal_forward_kinematics(model, values, {f: got[f] for f in frames})
