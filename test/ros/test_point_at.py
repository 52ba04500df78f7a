"""Mast look-at over DDS: the manipulator node's ~/point_at aims Rocky 8's mast camera (its REP-103 optical
frame) at a point or a frame and sends the motion to the mast's joint_trajectory_controller (real
ros2_control with mock hardware where ROS 2 is installed, else the stand-in); at the joint states the
controller reports afterwards, the optical axis passes through the target within 1e-6 rad (forward
kinematics of the model, independent of the solver); outside the reachable cone nothing moves and the
residual is reported."""

import math

import numpy as np
import pytest

from mechanism_model_core.kinematics import forward_kinematics

from ros.dds_helpers import unique_domain_id, wait_for
from ros.ros2_control_env import ControlledRobot

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]

SRV = "mechanism_model_msgs/srv/PointAt"
MAST = ["mast_pan", "mast_tilt"]


@pytest.fixture(scope="module")
def mast(tmp_path_factory):
    from mechanism_model_ros.manipulator import Manipulator
    from mechanism_model_ros.transports.cyclone import CycloneNode

    with ControlledRobot("rocky8/rocky8_rover.xml", unique_domain_id(), tmp_path_factory.mktemp("r8"),
                         controllers=["mast_controller"]) as robot:
        transport = CycloneNode("manipulator", context=robot.node.ctx,
                                parameters={"controllers": ["mast_controller"]})
        node = Manipulator(transport, robot.mechanism)
        client = robot.node.create_client("/manipulator/point_at", SRV)
        assert client.wait_for_service(20)
        assert wait_for(node._state_is_fresh, 20)
        try:
            yield robot, client
        finally:
            transport.close()


def optical_error(robot, target_world):
    m = robot.mechanism
    q = m.configuration(dict(zip(MAST, robot.positions(MAST))))
    T = forward_kinematics(m, q).pose("mast_camera_optical")
    d = np.asarray(target_world) - T[:3, 3]
    return math.atan2(np.linalg.norm(np.cross(T[:3, 2], d)), T[:3, 2] @ d)


def request(client, frame="mast_camera_optical", point=None, ref="", target_frame="", execute=True):
    req = client.request()
    req.frame = frame
    if point is not None:
        req.target.header.frame_id = ref
        req.target.point.x, req.target.point.y, req.target.point.z = point
    req.target_frame = target_frame
    req.execute, req.wait = execute, True
    return client.call(req, 60)


def test_the_mast_aims_the_optical_axis_through_targets(mast):
    from mechanism_model_ros.error_codes import ErrorCodes
    robot, client = mast
    rng = np.random.default_rng(7)
    for target in [np.array([3.0, 1.0, 0.0]), np.array([-2.0, 2.5, 1.8]),
                   *[np.append(rng.uniform(-4, 4, 2), rng.uniform(0.0, 2.0)) for _ in range(2)]]:
        rep = request(client, point=target)
        assert rep.error_code.val == ErrorCodes.SUCCESS, rep.message
        assert rep.residual < 1e-6 and list(rep.joint_names) == MAST
        assert robot.wait_joints(dict(zip(MAST, rep.positions)), tol=1e-9, timeout=20)
        assert optical_error(robot, target) < 1e-6
    # a frame of the model as the target, and a point given in another frame
    rep = request(client, target_frame="left_front_contact")
    assert rep.error_code.val == ErrorCodes.SUCCESS, rep.message
    assert robot.wait_joints(dict(zip(MAST, rep.positions)), tol=1e-9, timeout=20)
    m = robot.mechanism
    contact = forward_kinematics(m, m.configuration()).pose("left_front_contact")[:3, 3]
    assert optical_error(robot, contact) < 1e-6
    rep = request(client, point=(1.0, 0.0, 0.0), ref="left_front_contact")
    assert rep.error_code.val == ErrorCodes.SUCCESS, rep.message
    assert robot.wait_joints(dict(zip(MAST, rep.positions)), tol=1e-9, timeout=20)
    assert optical_error(robot, contact + [1.0, 0.0, 0.0]) < 1e-6


def test_outside_the_cone_nothing_moves_and_the_residual_is_reported(mast):
    from mechanism_model_ros.error_codes import ErrorCodes
    robot, client = mast
    before = robot.positions(MAST)
    mount = forward_kinematics(robot.mechanism, robot.mechanism.configuration()).pose("mast_mount")[:3, 3]
    rep = request(client, point=tuple(mount + [0.3, 0.0, -1.45]))      # below the mast: tilt limit 1.4 rad
    assert rep.error_code.val == ErrorCodes.NO_IK_SOLUTION and rep.residual > 0.05, rep.message
    assert robot.positions(MAST) == pytest.approx(before, abs=1e-12)
    bad = request(client, frame="no_such_camera", point=(1.0, 0.0, 0.0))
    assert bad.error_code.val == ErrorCodes.FRAME_TRANSFORM_FAILURE
    solved = request(client, point=(2.0, 0.0, 0.5), execute=False)
    assert solved.error_code.val == ErrorCodes.SUCCESS and "not executed" in solved.message
    assert robot.positions(MAST) == pytest.approx(before, abs=1e-12)


def test_the_point_at_action_reports_the_aim_and_ends_with_the_motion(mast):
    from mechanism_model_ros.error_codes import ErrorCodes
    robot, _ = mast
    client = robot.node.create_action_client("/manipulator/point_at", "mechanism_model_msgs/action/PointAt")
    assert client.wait_for_server(20)
    feedback = []
    goal = client.goal()
    goal.frame = "mast_camera_optical"
    target = (1.5, -2.0, 0.3)
    goal.target.point.x, goal.target.point.y, goal.target.point.z = target
    handle = client.send_goal(goal, timeout=20, feedback_callback=feedback.append)
    assert handle.accepted
    res = handle.get_result(60)
    assert res.result.error_code.val == ErrorCodes.SUCCESS, res.result.message
    assert feedback and list(feedback[0].positions) == pytest.approx(list(res.result.positions), abs=1e-12)
    assert robot.wait_joints(dict(zip(MAST, res.result.positions)), tol=1e-9, timeout=20)
    assert optical_error(robot, target) < 1e-6
    # outside the cone: the goal aborts with the residual, nothing moves
    before = robot.positions(MAST)
    mount = forward_kinematics(robot.mechanism, robot.mechanism.configuration()).pose("mast_mount")[:3, 3]
    goal.target.point.x, goal.target.point.y, goal.target.point.z = tuple(mount + [0.3, 0.0, -1.45])
    res = client.send_goal(goal, timeout=20).get_result(60)
    assert res.result.error_code.val == ErrorCodes.NO_IK_SOLUTION and res.result.residual > 0.01
    assert robot.positions(MAST) == pytest.approx(before, abs=1e-12)


def test_the_action_and_the_service_over_rclpy_under_serve(tmp_path):
    """The node over rclpy (`serve`), its action and service called from the Cyclone transport."""
    from ros.ros2_control_env import use_real_ros
    if not use_real_ros():
        pytest.skip("rclpy needs ROS 2")
    from mechanism_model_ros.error_codes import ErrorCodes
    from ros import ros_env
    from ros.test_manipulator_node import SERVE_PARAMS

    with ControlledRobot("rocky8/rocky8_rover.xml", unique_domain_id(), tmp_path,
                         controllers=["mast_controller"]) as robot:
        params = tmp_path / "params.yaml"
        params.write_text(SERVE_PARAMS)
        serve = ros_env.start_serve(robot.domain, "--nodes", "manipulator", "--params-file", str(params))
        try:
            client = robot.node.create_action_client("/manipulator/point_at", "mechanism_model_msgs/action/PointAt")
            assert client.wait_for_server(120), serve.output()[-3000:]
            goal = client.goal()
            goal.frame = "mast_camera_optical"
            target = (2.5, 1.0, 0.2)
            goal.target.point.x, goal.target.point.y, goal.target.point.z = target
            res = client.send_goal(goal, timeout=30).get_result(60)
            assert res.result.error_code.val == ErrorCodes.SUCCESS, (res.result.message, serve.output()[-3000:])
            assert robot.wait_joints(dict(zip(MAST, res.result.positions)), tol=1e-9, timeout=20)
            assert optical_error(robot, target) < 1e-6
            srv = robot.node.create_client("/manipulator/point_at", SRV)
            assert srv.wait_for_service(30)
            rep = request(srv, point=(2.0, -1.0, 0.5), execute=False)
            assert rep.error_code.val == ErrorCodes.SUCCESS and rep.residual < 1e-6, rep.message
        finally:
            serve.stop()


def test_curiositys_mast_is_aimed_with_its_deploy_joint_held(tmp_path):
    """The Space ROS Curiosity demo's mast_joint_trajectory_controller (deploy, pan, tilt; real ros2_control
    with mock hardware, or the stand-in) aimed by ~/point_at instead of the demo's presets: at the joint
    states the controller reports, camera_optical's axis passes through each target within 1e-6 rad and the
    deploy joint has not moved."""
    from mechanism_model_ros.error_codes import ErrorCodes
    from mechanism_model_ros.manipulator import Manipulator
    from mechanism_model_ros.transports.cyclone import CycloneNode

    joints = ["mast_p_joint", "mast_02_joint", "mast_cameras_joint"]
    with ControlledRobot("curiosity/curiosity_rover.xml", unique_domain_id(), tmp_path,
                         controllers=["mast_joint_trajectory_controller"]) as robot:
        transport = CycloneNode("manipulator", context=robot.node.ctx,
                                parameters={"controllers": ["mast_joint_trajectory_controller"]})
        try:
            node = Manipulator(transport, robot.mechanism)
            client = robot.node.create_client("/manipulator/point_at", SRV)
            assert client.wait_for_service(20) and wait_for(node._state_is_fresh, 20)
            m = robot.mechanism
            for target in (np.array([4.0, -2.0, -0.9]), np.array([-3.0, 3.0, 0.5]), np.array([6.0, 1.0, 1.5])):
                rep = request(client, frame="camera_optical", point=target)
                assert rep.error_code.val == ErrorCodes.SUCCESS, rep.message
                assert list(rep.joint_names) == joints and rep.positions[0] == 0.0
                assert robot.wait_joints(dict(zip(joints, rep.positions)), tol=1e-9, timeout=20)
                q = m.configuration(dict(zip(joints, robot.positions(joints))))
                T = forward_kinematics(m, q).pose("camera_optical")
                d = target - T[:3, 3]
                assert math.atan2(np.linalg.norm(np.cross(T[:3, 2], d)), T[:3, 2] @ d) < 1e-6
                assert robot.positions(joints)[0] == 0.0
        finally:
            transport.close()
