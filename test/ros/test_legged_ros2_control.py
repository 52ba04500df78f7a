"""The LEMUR hexapod's legs through real ros2_control: ros2_control_node (Humble) runs the <ros2_control>
block and controller YAML that `mechanism-model ros2-control` exports from the model's motor group
(mock_components/GenericSystem, joint_state_broadcaster, the joint_trajectory_controller `legs_controller`
over the eighteen leg joints).

* The legged node, in its own process over each transport (Cyclone and rclpy), takes cmd_vel from this
  process: the mock hardware's /joint_states follow the core's gait (every sample on the planned joint
  curve, the whole cycle covered), silence on cmd_vel makes the legs hold still within 0.5 s, and hostile
  commands (NaN, inf, far too fast, changing at 100 Hz) never take a joint past the motor group's limits.
* The manipulator node drives the same controller through FollowJointTrajectory (the Cyclone action client
  against the real C++ action server): a planned gait cycle is executed and followed; a goal outside the
  motor limits is refused before anything is sent.

Where ROS 2 is absent (and not required) the ros2_control stand-in runs the same tests."""

import math
import threading
import time

import numpy as np
import pytest

from mechanism_model_core.locomotion.legged import LeggedLocomotorModel

from ros import ros_env
from ros.dds_helpers import start_serve, stop, unique_domain_id, wait_for
from ros.ros2_control_env import ControlledRobot

pytestmark = [pytest.mark.ros, pytest.mark.slow]

MODEL = "lemur/lemur_hexapod.xml"
TWIST = (0.03, 0.0, 0.0)
PARAMS = ["-p", "gait:=tripod", "-p", "period:=2.0", "-p", "command_rate:=50.0", "-p", "cmd_vel_timeout:=0.25",
          "-p", "joint_states_timeout:=0.25", "-p", "max_linear_speed:=0.1", "-p", "max_angular_speed:=0.3"]


@pytest.fixture(scope="module")
def robot(tmp_path_factory):
    with ControlledRobot(MODEL, unique_domain_id(), tmp_path_factory.mktemp("lemur"),
                         controllers=["legs_controller"]) as r:
        yield r


@pytest.fixture(scope="module")
def walker(robot):
    return LeggedLocomotorModel(robot.mechanism)


@pytest.fixture(scope="module", params=["cyclone", "rclpy"])
def rig(request, robot):
    args = ["--model", MODEL, "--nodes", "legged", *PARAMS]
    if request.param == "rclpy":
        ros_env.require("humble")
        proc = ros_env.start_serve(robot.domain, *args)
    else:
        proc = start_serve(robot.domain, "--transport", "cyclone", *args)
    cmd = robot.publisher("cmd_vel", "geometry_msgs/msg/Twist")
    try:
        yield robot, cmd
    finally:
        _send(robot, cmd, (0.0, 0.0, 0.0))
        if request.param == "rclpy":
            proc.stop()
        else:
            stop(proc)


def _send(robot, cmd, twist):
    Twist = robot.node.message_class("geometry_msgs/msg/Twist")
    m = Twist()
    m.linear.x, m.linear.y, m.angular.z = (float(v) for v in twist)
    cmd.publish(m)


class Recorder:
    """Samples (monotonic time, leg joint positions) from the robot's /joint_states watcher at ~100 Hz."""

    def __init__(self, robot, names):
        self.robot, self.names = robot, list(names)
        self.t, self.q = [], []
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._halt.is_set():
            self.t.append(time.monotonic())
            self.q.append(self.robot.positions(self.names))
            time.sleep(0.01)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._halt.set()
        self._thread.join()

    def arrays(self):
        return np.array(self.t), np.array(self.q)


def _walk(robot, cmd, twist, seconds, rate=50.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        _send(robot, cmd, twist)
        time.sleep(1.0 / rate)


def _walk_onto_the_cycle(robot, cmd, walker, twist, timeout=40.0):
    """cmd_vel until the legs are at the cycle's first pose (from wherever they are, the node first steps
    them there one leg at a time)."""
    names = robot.motors["legs_controller"].joint_names
    first = walker.plan_gait("tripod", twist, period=2.0).trajectory.positions[0]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        _send(robot, cmd, twist)
        if np.max(np.abs(np.array(robot.positions(names)) - first)) < 3e-3:
            return True
        time.sleep(0.02)
    return False


def _dense_cycle(walker, twist):
    """The gait's joint curve, finely sampled (the reference the controller's splines must follow)."""
    return walker.plan_gait("tripod", twist, period=2.0, cycles=1, samples_per_cycle=960).trajectory.positions


def test_joint_states_follow_the_gait(rig, walker):
    robot, cmd = rig
    names = robot.motors["legs_controller"].joint_names
    assert tuple(names) == walker.joint_names
    dense = _dense_cycle(walker, TWIST)
    assert _walk_onto_the_cycle(robot, cmd, walker, TWIST)
    with Recorder(robot, names) as rec:
        _walk(robot, cmd, TWIST, 5.0)
    t, Q = rec.arrays()
    assert np.max(np.abs(Q - Q[0])) > 1e-2, "the legs did not move"
    d = np.max(np.abs(Q[:, None, :] - dense[None, :, :]), axis=2)       # (samples, dense points)
    dist = d.min(axis=1)
    # the controller's splines follow the curve to 5 mrad; the stand-in's straight segments (restarted from
    # its state at each new cycle) to 15 mrad
    assert np.max(dist) < (5e-3 if robot.real else 1.5e-2), np.max(dist)
    # the cycle was walked: the nearest points cover (nearly: a stall of this process's cmd_vel stream on a
    # loaded machine restarts the cycle) every twentieth of it
    phase = d.argmin(axis=1) * 20 // len(dense)
    assert len(set(phase.tolist())) >= 16, sorted(set(phase.tolist()))


def test_silence_holds_the_legs_within_half_a_second(rig, walker):
    robot, cmd = rig
    names = robot.motors["legs_controller"].joint_names
    assert _walk_onto_the_cycle(robot, cmd, walker, TWIST)
    _walk(robot, cmd, TWIST, 0.7)
    with Recorder(robot, names) as rec:
        _walk(robot, cmd, TWIST, 0.4)
        _send(robot, cmd, TWIST)
        t_last = time.monotonic()
        time.sleep(1.5)
    t, Q = rec.arrays()
    step = np.max(np.abs(np.diff(Q, axis=0)), axis=1)
    assert np.any(step[t[1:] < t_last] > 1e-4), "the legs were not walking"
    moved = t[1:][step > 1e-6]
    assert moved.size and moved[-1] - t_last < 0.5, moved[-1] - t_last
    # the held pose is one of the gait's (statically stable) poses
    dense = _dense_cycle(walker, TWIST)
    assert np.min(np.max(np.abs(dense - Q[-1]), axis=1)) < 5e-3


def test_hostile_commands_keep_the_legs_within_the_motor_limits(rig):
    robot, cmd = rig
    group = robot.motors["legs_controller"]
    rng = np.random.default_rng(7)
    with Recorder(robot, group.joint_names) as rec:
        for k in range(300):
            v = rng.normal(scale=[0.08, 0.08, 0.3])
            if k % 5 == 0:
                v[k % 3] = (math.nan, math.inf, -math.inf)[k % 3]
            elif k % 5 == 1:
                v *= 100.0                       # far beyond max_linear_speed / max_angular_speed
            _send(robot, cmd, v)
            time.sleep(0.01)
    _, Q = rec.arrays()
    assert np.max(np.max(np.abs(Q - Q[0]), axis=1)) > 1e-3, "nothing was walked"
    assert np.all(Q >= group.lower - 1e-6) and np.all(Q <= group.upper + 1e-6)
    # and it still walks afterwards
    with Recorder(robot, group.joint_names) as rec:
        _walk(robot, cmd, TWIST, 1.5)
    _, Q = rec.arrays()
    assert np.max(np.abs(Q[-1] - Q[0])) > 1e-3


# ------------------------------------------------------------------ FollowJointTrajectory
def test_a_gait_cycle_through_follow_joint_trajectory(tmp_path, walker, robot):
    """The manipulator node (Cyclone action client) sends one planned gait cycle to legs_controller's
    follow_joint_trajectory action; the joint states follow it; an out-of-limit goal is refused unsent.
    (Its own ros2_control_node: no legged node may command these legs meanwhile.)"""
    domain = unique_domain_id()
    while domain == robot.domain:                    # not the module's ros2_control_node's domain
        domain = unique_domain_id()
    with ControlledRobot(MODEL, domain, tmp_path, controllers=["legs_controller"]) as own:
        _follow_joint_trajectory(own, walker)


def _follow_joint_trajectory(robot, walker):
    from mechanism_model_ros.conversions import fill_joint_trajectory
    from mechanism_model_ros.error_codes import ErrorCodes
    from mechanism_model_ros.manipulator import Manipulator
    from mechanism_model_ros.transports.cyclone import CycloneNode
    from mechanism_model_ros.typegen import message_class

    transport = CycloneNode("legs_manipulator", context=robot.node.ctx,
                            parameters={"controllers": ["legs_controller"]})
    node = Manipulator(transport, robot.mechanism)
    try:
        client = robot.node.create_client("/legs_manipulator/execute_trajectory",
                                          "mechanism_model_msgs/srv/ExecuteTrajectory")
        assert client.wait_for_service(20) and wait_for(node._state_is_fresh, 20)
        group = robot.motors["legs_controller"]
        names = list(group.joint_names)
        start = np.array(robot.positions(names))
        plan = walker.plan_gait("tripod", (0.0, 0.0, 0.15), period=2.0, cycles=1)
        traj = plan.trajectory
        lead = max(0.5, float(np.max(np.abs(traj.positions[0] - start) / group.velocity)) * 2.0)
        Point = message_class("trajectory_msgs/msg/JointTrajectoryPoint")
        req = client.request()
        req.wait = True
        # onto the cycle's first point, then the cycle
        req.trajectory = message_class("trajectory_msgs/msg/JointTrajectory")()
        fill_joint_trajectory(req.trajectory, Point, names, [lead], traj.positions[:1])
        reply = client.call(req, 60)
        assert reply.error_code.val == ErrorCodes.SUCCESS, reply.message
        start = np.array(robot.positions(names))
        np.testing.assert_allclose(start, traj.positions[0], atol=1e-3)
        msg = message_class("trajectory_msgs/msg/JointTrajectory")()
        fill_joint_trajectory(msg, Point, names, traj.times + 0.05, traj.positions, traj.velocities,
                              traj.accelerations)
        req.trajectory = msg
        with Recorder(robot, names) as rec:
            reply = client.call(req, 60)
        assert reply.error_code.val == ErrorCodes.SUCCESS, reply.message
        assert robot.wait_joints(dict(zip(names, traj.positions[-1])), tol=2e-3, timeout=10)
        _, Q = rec.arrays()
        dense = walker.plan_gait("tripod", (0.0, 0.0, 0.15), period=2.0, cycles=1,
                                 samples_per_cycle=960).trajectory.positions
        assert np.max(np.abs(Q - start)) > 0.05
        d = np.max(np.abs(Q[:, None, :] - dense[None]), axis=2)
        assert np.max(d.min(axis=1)) < 5e-3, np.max(d.min(axis=1))
        assert set((d.argmin(axis=1) * 20 // len(dense)).tolist()) == set(range(20))   # all of the cycle
        # out of the motor limits: refused, nothing sent
        q = np.array(robot.positions(names))
        q[2] = group.upper[2] + 0.1
        bad = message_class("trajectory_msgs/msg/JointTrajectory")()
        fill_joint_trajectory(bad, Point, names, [5.0], [q])
        sent = node.sent
        req.trajectory = bad
        reply = client.call(req, 60)
        assert reply.error_code.val == ErrorCodes.INVALID_MOTION_PLAN and "leg1_knee position" in reply.message
        assert node.sent == sent
    finally:
        transport.close()


def test_a_new_stride_is_stepped_into_one_leg_at_a_time(rig, walker):
    """Walking straight, then turning on the spot: the turn's cycle starts with the feet elsewhere (another
    stride), so once the straight cycle ends the legs step there one at a time -- the joint states show at
    most one leg's joints moving at any moment --, then turn."""
    robot, cmd = rig
    names = list(robot.motors["legs_controller"].joint_names)
    turn = (0.0, 0.0, 0.2)
    turn_first = walker.plan_gait("tripod", turn, period=2.0).trajectory.positions[0]
    assert _walk_onto_the_cycle(robot, cmd, walker, TWIST)
    _walk(robot, cmd, TWIST, 0.5)
    with Recorder(robot, names) as rec:
        assert _walk_onto_the_cycle(robot, cmd, walker, turn)          # (arrived at the turn's first pose)
    _, Q = rec.arrays()
    new = np.flatnonzero(np.abs(np.diff(Q, axis=0)).max(axis=1) > 1e-6)          # samples with a new state
    Q = Q[np.concatenate([[0], new + 1])]
    legs_moving = (np.abs(np.diff(Q, axis=0)) > 1e-6).reshape(len(Q) - 1, 6, 3).any(axis=2)
    count = legs_moving.sum(axis=1)
    # walking, every leg's joints move (stance legs carry the body); from the end of the straight cycle
    # (the first sample with a single leg moving) on, one leg at a time until the legs are at the turn's
    # first pose (feet within the node's 5 mm reposition tolerance may slide there as the turn begins)
    single = np.flatnonzero(count == 1)
    assert single.size and np.all(count[:single[0]] >= 3)
    # a joint-state sample may span the controller tick that sets one leg down and the next that lifts
    # the next leg (both moves near rest, under 1e-4 rad; 1e-3 between the stand-in's straight segments):
    # counted are legs moving more than that
    big = (np.abs(np.diff(Q, axis=0)) > (1e-4 if robot.real else 1e-3)).reshape(len(Q) - 1, 6, 3).any(axis=2)
    after = np.flatnonzero(big[single[0]:].sum(axis=1) > 1)
    end = single[0] + after[0] if after.size else len(count)
    stepped = big[single[0]:end]
    assert stepped.any(axis=0).sum() >= 4, stepped.any(axis=0)                     # most legs stepped
    assert np.max(np.abs(Q[end] - turn_first)) < 0.05, np.max(np.abs(Q[end] - turn_first))
    legs_moving = stepped
    assert np.all(legs_moving.sum(axis=1) <= 1), legs_moving.sum(axis=1).max()
