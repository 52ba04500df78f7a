"""The rover's floating chassis on /tf, over real Cyclone DDS (loopback, multicast off, unique domain).

robot_state_publisher never publishes a floating joint (localization owns ``odom -> base``). With the
default ``floating_joints: when_reported`` the state publisher leaves the chassis's six single-axis edges
off /tf until ``joint_states`` names one of its coordinates; then they compose to the core's forward
kinematics. ``always`` and ``never`` are checked on the node logic over a real Cyclone node."""

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import default_model_path

from ros.dds_helpers import (configure_this_process, start_serve, stop, transform_to_matrix, unique_domain_id,
                             wait_for)

pytestmark = pytest.mark.ros

MODEL = load_model(default_model_path())
CHASSIS_EDGES = {"chassis.x_link", "chassis.y_link", "chassis.z_link", "chassis.yaw_link", "chassis.pitch_link",
                 "chassis"}


def test_floating_chassis_is_published_once_joint_states_report_it():
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    proc = start_serve(domain, "--frame-prefix", "r1/")
    ctx = CycloneContext(domain)
    node = CycloneNode("floating_tester", context=ctx)
    try:
        tf = {}
        reader = node.create_subscription(
            "/tf", "tf2_msgs/msg/TFMessage", qos.TF,
            lambda m: tf.setdefault(m.transforms[0].header.stamp.sec, m) if m.transforms else None)
        pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
        JS = node.message_class("sensor_msgs/msg/JointState")
        assert wait_for(lambda: pub.subscription_count >= 1 and reader.handle.get_matched_publications(), 30)
        arm = JS(name=["arm_yaw"], position=[0.3])
        arm.header.stamp.sec = 10
        assert wait_for(lambda: pub.publish(arm) or 10 in tf, 15, period=0.2)   # discovery is asymmetric
        children = {t.child_frame_id for t in tf[10].transforms}
        assert not children & {"r1/" + c for c in CHASSIS_EDGES}, "chassis published before it was reported"
        assert any(c.startswith("r1/arm") for c in children)

        report = {"chassis.x": 0.7, "chassis.yaw": 0.4, "chassis.z": -0.1}
        loc = JS(name=list(report), position=list(report.values()))
        loc.header.stamp.sec = 11
        pub.publish(loc)
        assert wait_for(lambda: 11 in tf, 10)
        msg = tf[11]
        edges = {t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform)) for t in msg.transforms}
        assert {"r1/" + c for c in CHASSIS_EDGES} <= set(edges)
        # compose ground -> chassis through the six steps; compare with the core's FK
        T, frame = np.eye(4), "r1/chassis"
        while frame != "r1/" + MODEL.ground:
            parent, Tp = edges[frame]
            T = Tp @ T
            frame = parent
        expected = forward_kinematics(MODEL, {"arm_yaw": 0.3, **report}).pose("chassis")
        np.testing.assert_allclose(T, expected, atol=1e-12)
        assert all(t.header.stamp.sec == 11 for t in msg.transforms)
    finally:
        node.close()
        ctx.close()
        out, err = stop(proc)
    assert "Traceback" not in err, err


@pytest.mark.parametrize("mode, shown_at_start", [("always", True), ("never", False)])
def test_floating_joints_always_and_never(mode, shown_at_start):
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.state_publisher import StatePublisher
    from mechanism_model_ros.transports.cyclone import CycloneNode

    node = CycloneNode("sp", parameters={"floating_joints": mode})
    try:
        sp = StatePublisher(node, MODEL)
        assert (CHASSIS_EDGES <= set(sp.moving.children)) is shown_at_start
        JS = node.message_class("sensor_msgs/msg/JointState")
        sp.on_joint_state(JS(name=["chassis.x"], position=[1.0]))
        assert (CHASSIS_EDGES <= set(sp.moving.children)) is shown_at_start
        assert len(sp.moving) == len(sp.all_moving) - (0 if shown_at_start else len(CHASSIS_EDGES))
    finally:
        node.close()


def test_unknown_floating_joints_mode_is_refused():
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.state_publisher import StatePublisher
    from mechanism_model_ros.transports.cyclone import CycloneNode

    node = CycloneNode("sp", parameters={"floating_joints": "sometimes"})
    try:
        with pytest.raises(ValueError, match="floating_joints"):
            StatePublisher(node, MODEL)
    finally:
        node.close()


def test_held_floating_joint_is_explained_at_startup(caplog):
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.state_publisher import StatePublisher
    from mechanism_model_ros.transports.cyclone import CycloneNode

    node = CycloneNode("sp")
    try:
        with caplog.at_level("INFO"):
            StatePublisher(node, MODEL)
        assert "use 'chassis' as RViz's fixed frame" in caplog.text
    finally:
        node.close()
