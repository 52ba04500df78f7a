"""RViz markers of what the model computes (``mechanism_model_ros.markers``), checked against closed forms and
the core, and published by the nodes only while someone subscribes (in-memory transport, manual clock):

* the locomotor's wheel-velocity arrows equal the rigid-body velocity ``v + w x p`` of the commanded twist at
  each wheel contact (independent of the steering conventions they are computed from), and the rotation
  centre is the point of zero velocity;
* the statics markers: centre of mass = ``statics.center_of_mass`` (moved into the chassis frame), the
  support polygon through the wheel contacts (convex, every contact inside or on it), load arrows
  ``load_scale`` x the least-traction contact forces whose vertical parts carry the weight, colours by margin.
"""

import math

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel
from mechanism_model_core.statics import center_of_mass, total_mass

pytestmark = pytest.mark.ros

M = pytest.importorskip("mechanism_model_ros.markers")
ROVER = load_model(model_path("rocky8/rocky8_rover.xml"))
CORE = WheeledLocomotorModel(ROVER)


def _rigid(twist, contact):
    vx, vy, wz = twist
    return np.stack([vx - wz * contact[:, 1], vy + wz * contact[:, 0]], axis=1)


@pytest.mark.parametrize("twist, mode", [((0.2, 0.0, 0.1), "auto"), ((0.1, 0.1, 0.0), "crab"),
                                         ((0.0, 0.0, 0.3), "turn_in_place"), ((-0.1, 0.0, -0.05), "ackermann")])
def test_wheel_arrows_are_the_rigid_body_velocity_of_the_commanded_twist(twist, mode):
    cmd = CORE.drive(twist, mode=mode)
    assert cmd.ok, cmd.reason
    g = CORE.home_geometry
    specs = M.wheel_command_markers(g, cmd.steering, cmd.rates, cmd.twist, "chassis")
    arrows = [s for s in specs if s.ns == "wheel_velocity"]
    assert len(arrows) == CORE.n and all(s.type == M.ARROW and s.frame == "chassis" for s in arrows)
    got = np.array([s.points[1, :2] - s.points[0, :2] for s in arrows])
    assert np.allclose(got, _rigid(cmd.twist, g.contact), atol=1e-12)
    assert np.allclose([s.points[0] for s in arrows], g.contact)
    icr = [s for s in specs if s.ns == "rotation_centre" and s.type == M.SPHERE]
    if abs(cmd.twist[2]) < 1e-9:
        assert not icr
    else:
        c = np.array(icr[0].position[:2])
        assert np.allclose(_rigid(cmd.twist, c[None, :]), 0.0, atol=1e-12)     # the point that does not move
    assert all(s.color == M.GREEN for s in arrows)


def test_stopped_commands_are_red_and_have_no_rotation_centre():
    specs = M.wheel_command_markers(CORE.home_geometry, np.zeros(CORE.n), np.zeros(CORE.n), (0.0, 0.0, 0.2),
                                    "chassis", "stopped")
    assert all(s.color == M.RED for s in specs) and not [s for s in specs if s.ns == "rotation_centre"]


def test_statics_markers_of_the_standing_rover():
    q = ROVER.configuration({})
    specs = M.standing_statics_markers(ROVER, q, load_scale=0.001)
    frame = M.marker_frame(ROVER)
    assert frame == "chassis" and all(s.frame == "chassis" for s in specs)
    fk = forward_kinematics(ROVER, q)
    T = np.linalg.inv(fk.pose("chassis"))
    com_want = T[:3, :3] @ center_of_mass(ROVER, q) + T[:3, 3]
    com = next(s for s in specs if s.ns == "center_of_mass" and s.id == 0)
    assert np.allclose(com.position, com_want, atol=1e-12)
    contacts = M.support_contacts(ROVER)
    pts = np.array([T[:3, :3] @ fk.position(c.frame) + T[:3, 3] for c in contacts])
    ring = next(s for s in specs if s.ns == "support_polygon").points
    assert np.allclose(ring[0], ring[-1]) and len(ring) >= 4            # closed, at least a triangle
    # convex and holding every contact (in the chassis x-y plane: the rover stands level at home)
    xy, P = ring[:-1, :2], pts[:, :2]
    for a, b in zip(xy, np.roll(xy, -1, axis=0)):
        cross = (b[0] - a[0]) * (P[:, 1] - a[1]) - (b[1] - a[1]) * (P[:, 0] - a[0])
        assert np.all(cross >= -1e-9)
    loads = [s for s in specs if s.ns == "contact_loads"]
    assert len(loads) == len(contacts)
    f = np.array([(s.points[1] - s.points[0]) / 0.001 for s in loads])           # N, chassis frame
    assert math.isclose(f[:, 2].sum(), total_mass(ROVER) * 9.81, rel_tol=1e-6)   # the wheels carry the weight
    text = next(s for s in specs if s.ns == "stability_margin")
    margin = float(text.text.split("=")[1].rstrip("m"))
    assert margin > 0.05 and com.color == M.GREEN


@pytest.mark.parametrize("margin, color", [(0.2, "GREEN"), (0.01, "ORANGE"), (-0.1, "RED")])
def test_the_margin_colours(margin, color):
    specs = M.statics_markers(np.eye(3), np.zeros(3), None, margin, "base", hull=(0, 1, 2), warn_margin=0.05)
    assert {s.color for s in specs} == {getattr(M, color)}


def _rig(name, model, params=None):
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    bus = MemoryBus(manual_clock=True)
    node = create(name, MemoryNode(name, bus=bus, parameters=params or {}), Served(model, "test"))
    return bus, node, MemoryNode("viewer", bus=bus)


def test_the_locomotor_publishes_its_markers_only_while_subscribed():
    from mechanism_model_ros import qos
    bus, node, viewer = _rig("locomotor", ROVER, {"require_joint_states": False, "command_rate": 50.0})
    try:
        Twist = viewer.message_class("geometry_msgs/msg/Twist")
        cmd = viewer.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
        m = Twist()
        m.linear.x, m.angular.z = 0.2, 0.1
        cmd.publish(m)
        assert node.publish_markers() is False          # nobody listens: nothing computed or sent
        got = []
        viewer.create_subscription("/locomotor/markers", "visualization_msgs/msg/MarkerArray", qos.DEFAULT,
                                   got.append)
        cmd.publish(m)
        bus.advance(0.2)                                 # the heartbeat: 10 Hz markers
        assert got, "no markers from the heartbeat"
        arr = got[-1]
        assert arr.markers[0].action == M.DELETEALL
        arrows = [k for k in arr.markers if k.ns == "wheel_velocity"]
        assert len(arrows) == CORE.n and all(k.header.frame_id == "chassis" for k in arrows)
    finally:
        node.close()


def test_the_statics_server_publishes_its_markers_only_while_subscribed():
    from mechanism_model_ros import qos
    bus, node, viewer = _rig("statics_server", ROVER, {"markers_period": 0.5})
    got = []
    bus.advance(1.0)
    assert node.publish_markers() is False
    viewer.create_subscription("/statics_server/markers", "visualization_msgs/msg/MarkerArray", qos.DEFAULT,
                               got.append)
    bus.advance(0.6)
    assert got and {k.ns for k in got[-1].markers} >= {"center_of_mass", "support_polygon", "contact_loads",
                                                      "stability_margin"}


def test_the_planned_path_markers_follow_the_straight_line_in_the_base_frame():
    """compute_cartesian_path with a subscriber: the tool positions drawn lie on the straight segment from the
    start to the goal (arm_mount frame), start and end included; green for a whole path."""
    pytest.importorskip("toppra")
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.typegen import message_class
    arm = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
    q_arm = [0.2, 0.5, -1.2, 0.4, 0.1]
    bus, node, viewer = _rig("kinematics_server", ROVER)
    got = []
    viewer.create_subscription("/kinematics_server/planned_path", "visualization_msgs/msg/MarkerArray",
                               qos.DEFAULT, got.append)
    q = ROVER.configuration(dict(zip(arm, q_arm)))
    T0 = forward_kinematics(ROVER, q).pose("arm_tool", "arm_mount")
    T1 = T0.copy()
    T1[:3, 3] += [-0.15 * math.cos(q_arm[0]), -0.15 * math.sin(q_arm[0]), -0.05]    # in the 5-DOF arm's plane
    client = viewer.create_client("compute_cartesian_path", "mechanism_model_msgs/srv/ComputeCartesianPath")
    r = client.request()
    r.header.frame_id, r.link_name, r.max_step = "arm_mount", "arm_tool", 0.005
    r.start_state.name, r.start_state.position = arm, q_arm
    from scipy.spatial.transform import Rotation
    p = message_class("geometry_msgs/msg/Pose")()
    p.position.x, p.position.y, p.position.z = (float(v) for v in T1[:3, 3])
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = Rotation.from_matrix(T1[:3, :3]).as_quat()
    r.waypoints = [p]
    rep = client.call(r, 30)
    assert rep.error_code.val == 1, rep.message
    strip = next(m for m in got[-1].markers if m.ns == "planned_path" and m.type == M.LINE_STRIP)
    base = rep.solution.header.frame_id                  # the chain's base: the trajectory's frame
    assert strip.header.frame_id == base and np.allclose([strip.color.r, strip.color.g], M.GREEN[:2])
    Tb = forward_kinematics(ROVER, q).pose(base, "arm_mount")      # base frame in arm_mount
    pts = np.array([Tb[:3, :3] @ [pt.x, pt.y, pt.z] + Tb[:3, 3] for pt in strip.points])   # in arm_mount
    assert len(pts) >= 10 and np.allclose(pts[0], T0[:3, 3], atol=1e-6) and np.allclose(pts[-1], T1[:3, 3], atol=1e-4)
    d = (T1[:3, 3] - T0[:3, 3]) / np.linalg.norm(T1[:3, 3] - T0[:3, 3])
    off = (pts - T0[:3, 3]) - np.outer((pts - T0[:3, 3]) @ d, d)
    assert np.abs(off).max() < 1e-4


def test_the_contacts_of_a_validity_check_are_drawn_in_the_chassis_frame():
    pytest.importorskip("coal")
    from mechanism_model_core.collision import collisions
    from mechanism_model_ros import qos
    folded = dict(zip(["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"],
                      [0.55, -0.92, -1.84, -1.93, 1.25]))      # the turret folded back onto the forearm
    bus, node, viewer = _rig("kinematics_server", ROVER)
    got = []
    viewer.create_subscription("/kinematics_server/contacts", "visualization_msgs/msg/MarkerArray", qos.DEFAULT,
                               got.append)
    client = viewer.create_client("check_state_validity", "mechanism_model_msgs/srv/CheckStateValidity")
    req = client.request()
    JS = viewer.message_class("sensor_msgs/msg/JointState")
    req.robot_state = JS(name=list(folded), position=list(folded.values()))
    rep = client.call(req, 10)
    assert rep.error_code.val == 1 and not rep.valid
    want = collisions(ROVER, folded)
    q = ROVER.configuration(folded)
    T = np.linalg.inv(forward_kinematics(ROVER, q).pose("chassis"))
    spheres = next(m for m in got[-1].markers if m.ns == "contacts")
    assert spheres.header.frame_id == "chassis"
    np.testing.assert_allclose([[p.x, p.y, p.z] for p in spheres.points],
                               [T[:3, :3] @ c.point + T[:3, 3] for c in want], atol=1e-12)
    normals = [m for m in got[-1].markers if m.ns == "contact_normals"]
    assert len(normals) == len(want)
