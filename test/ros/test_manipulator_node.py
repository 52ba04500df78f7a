"""The manipulator node against real ros2_control (ros2_control_node running the export of the MER arm and
of Rocky 8, mock hardware): a time-parameterized joint path goes through the node's ~/execute_trajectory
to the joint_trajectory_controller's FollowJointTrajectory action and /joint_states follows the planned
trajectory; trajectories outside the motor group's limits are refused before anything is sent; ~/cancel
stops a running goal; silent joint states cancel it; the topic path works; and the node runs over rclpy
under `serve` driving Rocky 8's mast."""

import math
import time

import numpy as np
import pytest

from mechanism_model_core.locomotion.trajectory import time_parameterize

from ros.dds_helpers import unique_domain_id, wait_for
from ros.ros2_control_env import ControlledRobot, use_real_ros
from ros.watchdog_timing import LIMIT, StallProbe, check_stop

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]

SRV = "mechanism_model_msgs/srv/ExecuteTrajectory"


def _require_ros():
    if not use_real_ros():
        pytest.skip("rclpy needs ROS 2")


class Node:
    """A manipulator node in this process over the Cyclone transport, beside the robot's watcher."""

    def __init__(self, robot, name="manipulator", **params):
        from mechanism_model_ros.manipulator import Manipulator
        from mechanism_model_ros.transports.cyclone import CycloneNode

        self.transport = CycloneNode(name, context=robot.node.ctx, parameters=params)
        self.node = Manipulator(self.transport, robot.mechanism)
        self.execute = robot.node.create_client(f"/{name}/execute_trajectory", SRV)
        self.cancel = robot.node.create_client(f"/{name}/cancel", "std_srvs/srv/Trigger")
        assert self.execute.wait_for_service(20) and self.cancel.wait_for_service(20)
        assert wait_for(self.node._state_is_fresh, 20)       # it hears joint_states
        self.robot = robot

    def call(self, msg, controller="", wait=True, timeout=60):
        req = self.execute.request()
        req.trajectory, req.controller, req.wait = msg, controller, wait
        return self.execute.call(req, timeout)

    def close(self):
        self.transport.close()


def _msg(node, names, times, positions, velocities=None, accelerations=None):
    from mechanism_model_ros.conversions import fill_joint_trajectory
    from mechanism_model_ros.transports.typegen import message_class

    msg = message_class("trajectory_msgs/msg/JointTrajectory")()
    fill_joint_trajectory(msg, message_class("trajectory_msgs/msg/JointTrajectoryPoint"), names, times, positions,
                          velocities, accelerations)
    return msg


@pytest.fixture(scope="module")
def mer(tmp_path_factory):
    with ControlledRobot("mer/mer_idd.xml", unique_domain_id(), tmp_path_factory.mktemp("mer")) as robot:
        node = Node(robot)
        yield robot, node
        node.close()


def _codes():
    from mechanism_model_ros.error_codes import ErrorCodes
    return ErrorCodes


def test_a_planned_trajectory_is_executed_and_joint_states_follow_it(mer):
    robot, node = mer
    E = _codes()
    group = robot.motors["arm_controller"]
    names = list(group.joint_names)
    start = np.array(robot.positions(names))
    via = start + [0.10, -0.08, 0.12, 0.05, -0.06]
    goal = start + [0.15, 0.05, 0.20, -0.05, 0.08]
    traj = time_parameterize(np.vstack([start, via, goal]), group.velocity, group.acceleration, names)
    samples = []
    robot_cb_stop = [False]

    def record():
        while not robot_cb_stop[0]:
            samples.append(robot.positions(names))
            time.sleep(0.02)
    import threading
    t = threading.Thread(target=record, daemon=True)
    t.start()
    try:
        reply = node.call(_msg(robot.node, names, traj.times, traj.positions, traj.velocities,
                               traj.accelerations), wait=True, timeout=traj.duration + 30)
    finally:
        robot_cb_stop[0] = True
        t.join()
    assert reply.error_code.val == E.SUCCESS, reply.message
    assert reply.status == 4 and reply.controller_error_code == 0
    assert robot.wait_joints(dict(zip(names, goal)), tol=2e-3, timeout=10)
    # every recorded state lies on the planned trajectory (mock hardware follows the controller's command)
    dense = traj.sample(np.linspace(0, traj.duration, 4000))[0]
    samples = np.array(samples)
    moving = samples[np.max(np.abs(samples - start), axis=1) > 1e-3]
    assert len(moving) > 10
    dist = np.min(np.max(np.abs(moving[:, None, :] - dense[None, :, :]), axis=2), axis=1)
    assert np.max(dist) < 5e-3, np.max(dist)


@pytest.mark.parametrize("case", ["position", "velocity", "from_start", "nan", "partial", "group", "empty"])
def test_trajectories_outside_the_limits_are_refused_before_sending(mer, case):
    robot, node = mer
    E = _codes()
    group = robot.motors["arm_controller"]
    names = list(group.joint_names)
    start = np.array(robot.positions(names))
    sent = node.node.sent
    controller = ""
    if case == "position":        # the elbow past its upper limit (2.9 rad)
        q = start.copy()
        q[2] = 3.0
        msg = _msg(robot.node, names, [40.0], [q])
    elif case == "velocity":      # a given velocity above vmax (0.1 rad/s)
        q = start + 0.01
        msg = _msg(robot.node, names, [5.0], [q], velocities=[np.full(5, 0.2)])
    elif case == "from_start":    # 0.3 rad in 1 s from where the arm is: 0.3 rad/s
        msg = _msg(robot.node, names, [1.0], [start + 0.3])
    elif case == "nan":
        q = start.copy()
        q[1] = math.nan
        msg = _msg(robot.node, names, [5.0], [q])
    elif case == "partial":
        msg = _msg(robot.node, names[:3], [5.0], [start[:3]])
    elif case == "group":
        msg = _msg(robot.node, names, [5.0], [start])
        controller = "leg_controller"
    else:
        msg = _msg(robot.node, names, [], np.zeros((0, 5)))
    reply = node.call(msg, controller)
    want = E.INVALID_GROUP_NAME if case == "group" else E.INVALID_MOTION_PLAN
    assert reply.error_code.val == want, reply.message
    assert reply.status == 0 and node.node.sent == sent        # nothing was sent
    if case == "position":
        assert "idd_elbow position 3 beyond limit 2.9" in reply.message
    time.sleep(0.3)
    assert np.allclose(robot.positions(names), start, atol=1e-6)


def test_cancel_stops_a_running_goal(mer):
    robot, node = mer
    E = _codes()
    names = list(robot.motors["arm_controller"].joint_names)
    start = np.array(robot.positions(names))
    far = start + [0.0, 0.0, 0.0, 0.0, 0.6]       # 6 s at 0.1 rad/s
    reply = node.call(_msg(robot.node, names, [8.0], [far]), wait=False)
    assert reply.error_code.val == E.SUCCESS, reply.message
    assert wait_for(lambda: robot.positions(names)[4] > start[4] + 0.02, 20)
    r = node.cancel.call(node.cancel.request(), 20)
    assert r.success and "arm_controller" in r.message
    assert wait_for(lambda: node.node.failed >= 1 and not node.node._active, 20)
    held = robot.positions(names)[4]
    time.sleep(0.5)
    assert abs(robot.positions(names)[4] - held) < 1e-3 and held < far[4] - 0.2


def test_silent_joint_states_cancel_the_goal(mer):
    robot, node = mer
    if not robot.real:
        pytest.skip("the stand-in cannot unload its joint_state_broadcaster")
    names = list(robot.motors["arm_controller"].joint_names)
    start = np.array(robot.positions(names))
    far = start + [0.0, 0.0, 0.0, -0.6, 0.0]
    before = node.node.failed
    assert node.call(_msg(robot.node, names, [8.0], [far]), wait=False).error_code.val == _codes().SUCCESS
    assert wait_for(lambda: abs(robot.positions(names)[3] - start[3]) > 0.02, 20)
    from mechanism_model_ros.manipulator import WATCHDOG_PERIOD
    assert node.node.state_timeout + WATCHDOG_PERIOD < LIMIT      # by design, with a margin for scheduling
    stale_before = node.node.stale_cancels
    with StallProbe() as probe:
        robot.unspawn("joint_state_broadcaster")             # joint states fall silent
        try:
            assert wait_for(lambda: node.node.stale_cancels > stale_before, 10)
            assert wait_for(lambda: node.node.failed > before, 10)
        except BaseException:
            robot.spawn(jsb=True)
            raise
    try:
        # the node's own stamps (its transport clock, time.monotonic here): last joint state -> stop decision
        last_state = node.node.stale_time - node.node.stale_age
        assert node.node.stale_age >= node.node.state_timeout           # it waited out state_timeout
        check_stop(node.node.stale_age, probe.stall(last_state, node.node.stale_time),
                   "the manipulator's stale-state cancel")
    finally:
        robot.spawn(jsb=True)
    assert wait_for(lambda: robot.stamps and time.monotonic() - robot.stamps[-1] < 0.2, 20)
    held = robot.positions(names)[3]
    time.sleep(0.5)
    assert abs(robot.positions(names)[3] - held) < 1e-3 and abs(held - far[3]) > 0.2


def test_the_topic_path(mer):
    robot, _ = mer
    node = Node(robot, name="manipulator_topic", mode="topic")
    try:
        names = list(robot.motors["arm_controller"].joint_names)
        start = np.array(robot.positions(names))
        goal = start + [0.05, 0.0, -0.05, 0.0, 0.0]
        reply = node.call(_msg(robot.node, names, [2.0], [goal]))
        assert reply.error_code.val == _codes().SUCCESS and "joint_trajectory" in reply.message
        assert robot.wait_joints(dict(zip(names, goal)), tol=2e-3, timeout=20)
    finally:
        node.close()


SERVE_PARAMS = """\
/**:
  ros__parameters:
    model: "rocky8/rocky8_rover.xml"
/**/manipulator:
  ros__parameters:
    controllers: ["mast_controller"]
"""


def test_over_rclpy_under_serve_the_mast_follows(tmp_path):
    _require_ros()
    from ros import ros_env

    with ControlledRobot("rocky8/rocky8_rover.xml", unique_domain_id(), tmp_path,
                         controllers=["mast_controller"]) as robot:
        params = tmp_path / "params.yaml"
        params.write_text(SERVE_PARAMS)
        serve = ros_env.start_serve(robot.domain, "--nodes", "manipulator", "--params-file", str(params))
        try:
            client = robot.node.create_client("/manipulator/execute_trajectory", SRV)
            assert client.wait_for_service(120), serve.output()[-3000:]
            names = ["mast_pan", "mast_tilt"]
            goal = [0.5, -0.4]
            req = client.request()
            req.trajectory = _msg(robot.node, names, [1.0, 2.0], [[0.25, -0.2], goal])
            req.wait = True
            reply = client.call(req, 60)
            assert reply.error_code.val == _codes().SUCCESS, (reply.message, serve.output()[-3000:])
            assert robot.wait_joints(dict(zip(names, goal)), tol=2e-3, timeout=10)
            req.trajectory = _msg(robot.node, names, [1.0], [[0.5, -1.3]])    # tilt below -1.2
            reply = client.call(req, 60)
            assert reply.error_code.val == _codes().INVALID_MOTION_PLAN and "mast_tilt position" in reply.message
        finally:
            serve.stop()
        # the same mast from the Cyclone transport
        node = Node(robot, name="manipulator_cyclone", controllers=["mast_controller"])
        try:
            reply = node.call(_msg(robot.node, names, [2.0], [[-0.3, 0.6]]))
            assert reply.error_code.val == _codes().SUCCESS, reply.message
            assert robot.wait_joints({"mast_pan": -0.3, "mast_tilt": 0.6}, tol=2e-3, timeout=10)
        finally:
            node.close()


def test_mer_arm_over_rclpy_under_serve(tmp_path):
    """The MER arm from the rclpy transport too (rclpy's ActionClient against the real
    joint_trajectory_controller): a time-parameterized trajectory is executed and followed; ~/cancel stops a
    long goal where it is."""
    _require_ros()
    from ros import ros_env

    with ControlledRobot("mer/mer_idd.xml", unique_domain_id(), tmp_path) as robot:
        params = tmp_path / "params.yaml"
        params.write_text('/**:\n  ros__parameters:\n    model: "mer/mer_idd.xml"\n')
        serve = ros_env.start_serve(robot.domain, "--nodes", "manipulator", "--params-file", str(params))
        try:
            client = robot.node.create_client("/manipulator/execute_trajectory", SRV)
            cancel = robot.node.create_client("/manipulator/cancel", "std_srvs/srv/Trigger")
            assert client.wait_for_service(120) and cancel.wait_for_service(60), serve.output()[-3000:]
            group = robot.motors["arm_controller"]
            names = list(group.joint_names)
            start = np.array(robot.positions(names))
            goal = start + [0.08, -0.05, 0.1, 0.04, -0.05]
            traj = time_parameterize(np.vstack([start, goal]), group.velocity, group.acceleration, names)
            req = client.request()
            req.trajectory = _msg(robot.node, names, traj.times[1:], traj.positions[1:], traj.velocities[1:],
                                  traj.accelerations[1:])
            req.wait = True
            reply = None
            for _ in range(3):      # the node may still be discovering the controller's action server
                reply = client.call(req, traj.duration + 60)
                if reply.error_code.val != _codes().CONTROL_FAILED:
                    break
                time.sleep(2.0)
            assert reply.error_code.val == _codes().SUCCESS, (reply.message, serve.output()[-3000:])
            assert robot.wait_joints(dict(zip(names, goal)), tol=2e-3, timeout=10)
            # a long goal, cancelled
            far = goal + [0.0, 0.0, 0.0, 0.0, 0.6]
            req.trajectory = _msg(robot.node, names, [8.0], [far])
            req.wait = False
            assert client.call(req, 60).error_code.val == _codes().SUCCESS
            assert wait_for(lambda: robot.positions(names)[4] > goal[4] + 0.02, 20)
            r = cancel.call(cancel.request(), 30)
            assert r.success and "arm_controller" in r.message
            time.sleep(0.5)
            held = robot.positions(names)[4]
            time.sleep(0.5)
            assert abs(robot.positions(names)[4] - held) < 1e-3 and held < far[4] - 0.2
        finally:
            serve.stop()
