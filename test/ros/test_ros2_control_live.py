"""The export is loadable: the real ros2_control_node (Humble) runs the URDF and controller YAML that
`mechanism-model ros2-control` wrote for Rocky 8 and the MER arm, the spawner activates every controller,
and /joint_states (joint_state_broadcaster over mock_components/GenericSystem) follows forward commands and
joint trajectories sent from this process over the Cyclone transport. Where ROS 2 is absent (and not
required) the stand-in runs the same tests."""

import pytest

from ros.dds_helpers import unique_domain_id, wait_for
from ros.ros2_control_env import ControlledRobot

pytestmark = [pytest.mark.ros, pytest.mark.slow]

STEER = [f"{s}_{p}_steer" for s in ("left", "right") for p in ("front", "middle", "rear")]
DRIVE = [n.replace("steer", "drive") for n in STEER]


@pytest.fixture(scope="module")
def rocky8(tmp_path_factory):
    with ControlledRobot("rocky8/rocky8_rover.xml", unique_domain_id(), tmp_path_factory.mktemp("rocky8")) as r:
        yield r


def test_every_joint_of_the_block_is_on_joint_states_at_home(rocky8):
    names = set(rocky8.motors.joint_names) | {"left_rocker", "right_rocker", "left_bogie", "right_bogie"}
    assert wait_for(lambda: names <= set(rocky8.joint_states), 20), sorted(rocky8.joint_states)
    assert rocky8.wait_joints({n: 0.0 for n in STEER + ["mast_pan", "arm_yaw"]})


def test_steering_positions_and_wheel_velocities_follow_forward_commands(rocky8):
    Float64MultiArray = rocky8.node.message_class("std_msgs/msg/Float64MultiArray")
    steer = rocky8.publisher("/steering_controller/commands", "std_msgs/msg/Float64MultiArray")
    wheels = rocky8.publisher("/wheel_controller/commands", "std_msgs/msg/Float64MultiArray")
    angles = [0.3, 0.0, -0.3, 0.25, 0.0, -0.25]
    rates = [1.0, 1.1, 1.2, -1.0, -1.1, -1.2]

    def sent():
        steer.publish(Float64MultiArray(data=angles))
        wheels.publish(Float64MultiArray(data=rates))
        return rocky8.wait_joints(dict(zip(STEER, angles)), timeout=0.5) and \
            rocky8.wait_joints(dict(zip(DRIVE, rates)), velocity=True, timeout=0.1)
    assert wait_for(sent, 20, 0.1), rocky8.joint_states
    # mock hardware integrates the wheel velocities into positions (calculate_dynamics), as encoders would
    before = rocky8.positions(DRIVE)
    assert wait_for(lambda: all((b - a) * r > 0.05 for a, b, r in zip(before, rocky8.positions(DRIVE), rates)),
                    20)
    wheels.publish(Float64MultiArray(data=[0.0] * 6))
    assert rocky8.wait_joints(dict.fromkeys(DRIVE, 0.0), velocity=True, timeout=20)


def _trajectory(node, names, points):
    JointTrajectory = node.message_class("trajectory_msgs/msg/JointTrajectory")
    Point = node.message_class("trajectory_msgs/msg/JointTrajectoryPoint")
    msg = JointTrajectory(joint_names=list(names))
    for t, q in points:
        p = Point(positions=list(q))
        p.time_from_start.sec, p.time_from_start.nanosec = int(t), int(round((t % 1) * 1e9))
        msg.points.append(p)
    return msg


def test_mast_and_arm_follow_trajectories_on_the_topic(rocky8):
    mast = rocky8.publisher("/mast_controller/joint_trajectory", "trajectory_msgs/msg/JointTrajectory")
    arm = rocky8.publisher("/arm_controller/joint_trajectory", "trajectory_msgs/msg/JointTrajectory")
    goal_mast = [0.4, -0.3]
    goal_arm = [0.2, -0.3, 0.5, 0.1, -0.2]
    mast.publish(_trajectory(rocky8.node, ["mast_pan", "mast_tilt"], [(1.0, goal_mast)]))
    arm.publish(_trajectory(rocky8.node, rocky8.motors["arm_controller"].joint_names,
                            [(0.5, [0.1, -0.15, 0.25, 0.05, -0.1]), (1.0, goal_arm)]))
    assert rocky8.wait_joints({"mast_pan": 0.4, "mast_tilt": -0.3}, tol=2e-3, timeout=30), rocky8.joint_states
    assert rocky8.wait_joints(dict(zip(rocky8.motors["arm_controller"].joint_names, goal_arm)), tol=2e-3,
                              timeout=30), rocky8.joint_states


def test_mer_arm_export_loads_and_follows(tmp_path):
    with ControlledRobot("mer/mer_idd.xml", unique_domain_id(), tmp_path) as mer:
        names = mer.motors["arm_controller"].joint_names
        pub = mer.publisher("/arm_controller/joint_trajectory", "trajectory_msgs/msg/JointTrajectory")
        goal = [0.1, -0.1, 0.1, 0.05, -0.05]
        pub.publish(_trajectory(mer.node, names, [(2.0, goal)]))
        assert mer.wait_joints(dict(zip(names, goal)), tol=2e-3, timeout=30), mer.joint_states


def test_lemur_legs_export_loads_and_follows(tmp_path):
    with ControlledRobot("lemur/lemur_hexapod.xml", unique_domain_id(), tmp_path) as lemur:
        names = lemur.motors["legs_controller"].joint_names
        assert len(names) == 18
        home = lemur.positions(names)
        goal = [q + (0.1 if n.endswith("knee") else -0.05 if n.endswith("hip_pitch") else 0.0)
                for n, q in zip(names, home)]
        pub = lemur.publisher("/legs_controller/joint_trajectory", "trajectory_msgs/msg/JointTrajectory")
        pub.publish(_trajectory(lemur.node, names, [(1.0, goal)]))
        assert lemur.wait_joints(dict(zip(names, goal)), tol=2e-3, timeout=30), lemur.joint_states
