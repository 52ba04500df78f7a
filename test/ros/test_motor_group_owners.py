"""Two nodes never command one controller (issue 26): the rule of ``mechanism_model_ros.motor_group_owners``
gives every motor group at most one node, the bringup plan and the manipulator's default follow it.

The nodes themselves are the witnesses: the locomotor and the manipulator run on one in-memory bus with the
Curiosity model and no parameter file (what ``rover.launch.py model:=curiosity/curiosity_rover.xml`` starts
without ``params_file``), and every publisher and action client they create is recorded with the node that
created it. Curiosity's steering is a ``joint_trajectory`` group, the kind the manipulator used to take by
default: exactly one node (the locomotor) may command it, and it does so once cmd_vel arrives."""

import pytest

from mechanism_model_core import load_model
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion import ControllerKind
from mechanism_model_core.locomotion.legged import LeggedLocomotorModel
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel

from ros.dds_helpers import wait_for

pytestmark = pytest.mark.ros

bp = pytest.importorskip("mechanism_model_ros.bringup_plan")
owners_mod = pytest.importorskip("mechanism_model_ros.motor_group_owners")

CURIOSITY = "curiosity/curiosity_rover.xml"
#: every shipped model with motor groups, with the nodes its bringup starts (besides the three servers)
BRINGUPS = {
    CURIOSITY: ["locomotor", "manipulator"],
    "rocky8/rocky8_rover.xml": ["locomotor", "manipulator"],
    "osr/osr_rover.xml": ["locomotor"],
    "lemur/lemur_hexapod.xml": ["legged"],
    "mer/mer_idd.xml": ["manipulator"],
}


def _locomotion_joints(mech):
    """Joints the locomotion nodes move, computed here from the core's models (not by the rule's code)."""
    try:
        return {j for w in WheeledLocomotorModel(mech).wheels for j in (w.steering_joint, w.drive_joint) if j}
    except Exception:
        pass
    try:
        return set(LeggedLocomotorModel(mech).joint_names)
    except Exception:
        return set()


@pytest.mark.parametrize("model", sorted(BRINGUPS))
def test_each_group_has_one_node_and_the_manipulator_never_a_locomotion_joint(model):
    mech = load_model(model_path(model))
    motors = load_motor_groups(mech)
    p = bp.plan(mech, motors)
    assert p.nodes == list(bp.SERVERS) + BRINGUPS[model]        # the existing launches start what they did
    moved = _locomotion_joints(mech)
    for g in motors.groups:
        owner = p.owners.get(g.name)
        if set(g.joint_names) & moved:
            assert owner in ("locomotor", "legged"), (g.name, owner)
            assert owner in p.nodes
        elif g.controller is ControllerKind.JOINT_TRAJECTORY:
            assert owner == "manipulator" and "manipulator" in p.nodes, (g.name, owner)
    mine = owners_mod.manipulator_groups(mech, motors)
    assert not any(set(g.joint_names) & moved for g in mine)
    assert [g.name for g in mine] == [n for n, o in p.owners.items() if o == "manipulator"]


def test_curiosity_and_rocky8_split_as_their_demos_do():
    cur = load_model(model_path(CURIOSITY))
    assert bp.plan(cur).owners == {"wheel_velocity_controller": "locomotor", "steer_position_controller": "locomotor",
                                   "arm_joint_trajectory_controller": "manipulator",
                                   "mast_joint_trajectory_controller": "manipulator"}
    rocky = load_model(model_path("rocky8/rocky8_rover.xml"))
    assert bp.plan(rocky).owners == {"steering_controller": "locomotor", "wheel_controller": "locomotor",
                                     "mast_controller": "manipulator", "arm_controller": "manipulator"}
    # the arm launch's manipulator keeps every joint trajectory group
    mer = load_model(model_path("mer/mer_idd.xml"))
    assert [g.name for g in owners_mod.manipulator_groups(mer, load_motor_groups(mer))] == ["arm_controller"]


def test_a_rover_whose_only_trajectory_group_is_its_steering_starts_no_manipulator():
    """Curiosity without its arm and mast groups: the steering is the locomotor's, nothing is left for a
    manipulator (which would otherwise start and fail with no group)."""
    from mechanism_model_core.locomotion import MotorGroups
    mech = load_model(model_path(CURIOSITY))
    full = load_motor_groups(mech)
    motors = MotorGroups([full["wheel_velocity_controller"], full["steer_position_controller"]], full.hardware,
                         full.hardware_parameters, full.update_rate, full.source)
    p = bp.plan(mech, motors)
    assert "manipulator" not in p.nodes and p.owners["steer_position_controller"] == "locomotor"


def _recording_node_class():
    from mechanism_model_ros.transports.memory import MemoryNode

    class Recording(MemoryNode):
        """A MemoryNode that writes down what it commands: (node, topic) and (node, action) pairs."""
        commands: list = []

        def create_publisher(self, topic, ros_type, qos):
            pub = super().create_publisher(topic, ros_type, qos)
            Recording.commands.append((self.node_name, pub.topic))
            return pub

        def create_action_client(self, name, action_type):
            Recording.commands.append((self.node_name, self._name(name)))
            return super().create_action_client(name, action_type)
    Recording.commands = []
    return Recording


def _commanders(commands, controller):
    """Nodes with a publisher on ``/<controller>/...`` or a client of its action."""
    return {node for node, name in commands if name.startswith(f"/{controller}/")}


def test_without_a_params_file_the_curiosity_steering_has_exactly_one_commanding_node():
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    mech = load_model(model_path(CURIOSITY))
    Recording = _recording_node_class()
    bus = MemoryBus()
    served = Served(mech, model_path(CURIOSITY))
    # the steering trajectory's topic, watched the way the joint_trajectory_controller would read it
    watcher = MemoryNode("steer_position_controller", bus=bus)
    steering = []
    watcher.create_subscription("/steer_position_controller/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
                                __import__("mechanism_model_ros.qos", fromlist=["DEFAULT"]).DEFAULT, steering.append)
    nodes = {n: create(n, Recording(n, bus=bus, parameters={"require_joint_states": False}), served)
             for n in ("locomotor", "manipulator")}
    try:
        assert set(nodes["manipulator"].groups) == {"arm_joint_trajectory_controller",
                                                     "mast_joint_trajectory_controller"}
        assert _commanders(Recording.commands, "steer_position_controller") == {"locomotor"}
        assert _commanders(Recording.commands, "wheel_velocity_controller") == {"locomotor"}
        for arm in ("arm_joint_trajectory_controller", "mast_joint_trajectory_controller"):
            assert _commanders(Recording.commands, arm) == {"manipulator"}
        # and the one commanding node does command it: an arc's steering arrives as a JointTrajectory
        from mechanism_model_ros.qos import DEFAULT
        joy = MemoryNode("joystick", bus=bus)
        cmd = joy.create_publisher("/cmd_vel", "geometry_msgs/msg/Twist", DEFAULT)
        Twist = joy.message_class("geometry_msgs/msg/Twist")
        msg = Twist()
        msg.linear.x = 0.2
        assert wait_for(lambda: cmd.publish(msg) or bool(steering), 10, 0.02)
        assert list(steering[-1].joint_names) == list(load_motor_groups(mech)["steer_position_controller"].joint_names)
    finally:
        for node in nodes.values():
            getattr(node, "close", lambda: None)()
