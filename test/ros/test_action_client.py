"""The Cyclone transport's action client against the real C++ joint_trajectory_controller action server
(rclcpp_action on rmw_cyclonedds_cpp, through ros2_control_node running the exported MER arm): goals are
accepted, feedback arrives, the result says SUCCEEDED and /joint_states reach the goal; a cancelled goal
ends CANCELED and the arm stops short of its goal; a goal naming unknown joints is rejected. The action's
definitions come from the installed ROS 2 files or the package's minimal copies, which must agree."""

import time

import pytest

from mechanism_model_ros.transports.base import STATUS_CANCELED, STATUS_SUCCEEDED

from ros.dds_helpers import unique_domain_id, wait_for
from ros.ros2_control_env import ControlledRobot

pytestmark = [pytest.mark.ros]

ACTION = "control_msgs/action/FollowJointTrajectory"


def test_packaged_definitions_agree_with_the_installed_ros():
    import os

    from rosbags.typesys import get_types_from_msg
    from mechanism_model_ros import action_types

    share = "/opt/ros/humble/share"
    if not os.path.isdir(os.path.join(share, "control_msgs")):
        from ros import ros_env
        ros_env.require("humble")
    for n in list(action_types.EXTRA) + list(action_types.ACTIONS):
        pkg, kind, base = n.split("/")
        if pkg in ("osr_interfaces", "mechanism_model_msgs"):   # OSR's and ours: in no ROS distribution
            continue
        rel = f"{pkg}/{kind}/{base}" + {"msg": ".msg", "srv": ".srv", "action": ".action"}[kind]
        with open(os.path.join(action_types.EXTERNAL_DIR, rel)) as fh:
            mine = fh.read().split("---")
        with open(os.path.join(share, rel)) as fh:
            theirs = fh.read().split("---")
        assert len(mine) == len(theirs), n
        for a, b in zip(mine, theirs):
            assert get_types_from_msg(a, f"{pkg}/msg/X") == get_types_from_msg(b, f"{pkg}/msg/X"), n


@pytest.fixture(scope="module")
def mer(tmp_path_factory):
    with ControlledRobot("mer/mer_idd.xml", unique_domain_id(), tmp_path_factory.mktemp("mer")) as r:
        yield r


def _goal(client, names, points):
    goal = client.goal()
    goal.trajectory.joint_names = list(names)
    from mechanism_model_ros.transports.typegen import message_class
    Point = message_class("trajectory_msgs/msg/JointTrajectoryPoint")
    for t, q in points:
        p = Point(positions=list(q))
        p.time_from_start.sec, p.time_from_start.nanosec = int(t), int(round((t % 1) * 1e9))
        goal.trajectory.points.append(p)
    return goal


def test_a_goal_succeeds_with_feedback_and_joint_states_follow(mer):
    client = mer.node.create_action_client("/arm_controller/follow_joint_trajectory", ACTION)
    assert client.wait_for_server(20)
    names = mer.motors["arm_controller"].joint_names
    target = [0.05, -0.05, 0.08, 0.03, -0.04]
    feedback = []
    handle = client.send_goal(_goal(client, names, [(1.0, target)]), feedback.append)
    assert handle.accepted
    result = handle.get_result(30)
    assert result.status == STATUS_SUCCEEDED and result.result.error_code == 0, (result, mer.output()[-2000:])
    assert feedback and list(feedback[-1].joint_names) == list(names)
    assert mer.wait_joints(dict(zip(names, target)), tol=2e-3, timeout=10)


def test_a_cancelled_goal_stops_short(mer):
    client = mer.node.create_action_client("/arm_controller/follow_joint_trajectory", ACTION)
    assert client.wait_for_server(20)
    names = mer.motors["arm_controller"].joint_names
    start = mer.positions(names)
    far = [s + 0.5 for s in start[:1]] + start[1:]
    handle = client.send_goal(_goal(client, names, [(5.0, far)]))
    assert handle.accepted
    assert wait_for(lambda: mer.positions(names)[0] > start[0] + 0.02, 10)
    assert handle.cancel(10) == 0
    result = handle.get_result(20)
    assert result.status == STATUS_CANCELED
    time.sleep(0.3)
    stopped = mer.positions(names)[0]
    time.sleep(0.5)
    assert abs(mer.positions(names)[0] - stopped) < 1e-3          # it holds where it stopped
    assert stopped < far[0] - 0.1


def test_a_goal_naming_unknown_joints_is_rejected(mer):
    client = mer.node.create_action_client("/arm_controller/follow_joint_trajectory", ACTION)
    assert client.wait_for_server(20)
    handle = client.send_goal(_goal(client, ["no_such_joint"], [(1.0, [0.0])]))
    assert not handle.accepted


RCLPY_CLIENT = r"""
import json, sys, threading
from mechanism_model_ros.transports.rclpy_transport import RclpyNode
from trajectory_msgs.msg import JointTrajectoryPoint
names, target = json.loads(sys.argv[1]), json.loads(sys.argv[2])
node = RclpyNode("rclpy_action_test")
stop = threading.Event()
spin = threading.Thread(target=node.spin, args=(stop,))
spin.start()
try:
    client = node.create_action_client("/arm_controller/follow_joint_trajectory",
                                       "control_msgs/action/FollowJointTrajectory")
    assert client.wait_for_server(20), "no server"
    goal = client.goal()
    goal.trajectory.joint_names = names
    p = JointTrajectoryPoint(positions=target)
    p.time_from_start.sec = 1
    goal.trajectory.points = [p]
    feedback = []
    handle = client.send_goal(goal, feedback.append)
    result = handle.get_result(30)
    bad = client.send_goal(client.goal(), None)
    print(json.dumps({"accepted": handle.accepted, "status": result.status, "error_code": result.result.error_code,
                      "feedback": len(feedback), "empty_goal_accepted": bad.accepted}))
finally:
    stop.set()
    spin.join()
    node.close()
"""


def test_the_rclpy_action_client_drives_the_same_server(mer):
    import json

    from ros import ros_env
    ros_env.require("humble")

    names = list(mer.motors["arm_controller"].joint_names)
    target = [-0.04, 0.03, -0.05, 0.02, 0.06]
    p = ros_env.run_python(RCLPY_CLIENT, mer.domain, timeout=120, args=(json.dumps(names), json.dumps(target)),
                           with_workspace=False)
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"accepted": True, "status": STATUS_SUCCEEDED, "error_code": 0, "feedback": out["feedback"],
                   "empty_goal_accepted": False} and out["feedback"] > 0
    assert mer.wait_joints(dict(zip(names, target)), tol=2e-3, timeout=10)
