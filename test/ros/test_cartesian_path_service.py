"""``compute_cartesian_path`` over the in-memory transport (real message classes, plain CDR): the Rocky 8
arm on the default rover follows a straight line (checked by the core's forward kinematics of every
trajectory point, not by the planner's own poses), the trajectory respects the joints' velocity limits,
partial paths and bad requests get MoveIt's error codes with reasons, and the node keeps serving."""

import math

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import default_model_path

from core.optional_deps import require
from core.robots import SAFETY

pytestmark = pytest.mark.ros

MODEL = load_model(default_model_path())
ARM = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
Q_ARM = [0.2, 0.5, -1.2, 0.4, 0.1]


@pytest.fixture(scope="module")
def client():
    require("toppra", "trajectory")
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    bus = MemoryBus()
    served = Served(MODEL, "test")
    node = create("kinematics_server", MemoryNode("kinematics_server", bus=bus), served)
    c = MemoryNode("client", bus=bus).create_client("compute_cartesian_path",
                                                    "mechanism_model_msgs/srv/ComputeCartesianPath")
    c.node = node
    return c


def _fill_pose(pose, T):
    from scipy.spatial.transform import Rotation
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in T[:3, 3])
    x, y, z, w = Rotation.from_matrix(T[:3, :3]).as_quat()
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = x, y, z, w


def _request(client, waypoints, frame="arm_mount", **fields):
    from mechanism_model_ros.transports.typegen import message_class
    Pose = message_class("geometry_msgs/msg/Pose")
    r = client.request()
    r.header.frame_id = frame
    r.start_state.name, r.start_state.position = ARM, Q_ARM
    r.link_name = "arm_tool"
    r.max_step = 0.005
    wps = []
    for T in waypoints:
        p = Pose()
        _fill_pose(p, T)
        wps.append(p)
    r.waypoints = wps
    for k, v in fields.items():
        setattr(r, k, v)
    return r


def _line_target(frame="arm_mount", dr=-0.15, dz=-0.05):
    q = MODEL.configuration(dict(zip(ARM, Q_ARM)))
    fk = forward_kinematics(MODEL, q)
    T0 = fk.pose("arm_tool", frame)
    Tm = fk.pose("arm_mount", frame)
    yaw = Q_ARM[0]
    d = Tm[:3, :3] @ np.array([dr * math.cos(yaw), dr * math.sin(yaw), dz])   # in the arm plane
    T1 = T0.copy()
    T1[:3, 3] += d
    return T0, T1


def _seconds(d):
    return d.sec + d.nanosec * 1e-9


@pytest.mark.parametrize("frame", ["arm_mount", "chassis", ""])
def test_straight_line_of_the_rover_arm(client, frame):
    ref = frame or "arm_mount"        # empty frame_id: the chain's base frame (arm_mount here)
    T0, T1 = _line_target(ref)
    rep = client.call(_request(client, [T1], frame=frame, group_name="arm_mount"))
    assert rep.error_code.val == 1, rep.message
    assert rep.fraction == 1.0
    traj = rep.solution
    assert traj.joint_names == ARM and traj.header.frame_id == "arm_mount"
    assert len(traj.points) >= 30
    base = MODEL.configuration(dict(zip(ARM, Q_ARM)))
    times = [_seconds(p.time_from_start) for p in traj.points]
    assert times[0] == 0.0 and all(b > a for a, b in zip(times, times[1:]))
    n = 0
    for p in traj.points:
        q = base.copy()
        q[[MODEL.coordinate_index(j) for j in ARM]] = p.positions
        T = forward_kinematics(MODEL, q).pose("arm_tool", ref)
        # on the segment T0 -> T1 with the start orientation
        u = float(np.clip((T[:3, 3] - T0[:3, 3]) @ (T1[:3, 3] - T0[:3, 3]) /
                          np.linalg.norm(T1[:3, 3] - T0[:3, 3]) ** 2, 0, 1))
        assert np.linalg.norm(T[:3, 3] - (T0[:3, 3] + u * (T1[:3, 3] - T0[:3, 3]))) < 1e-5
        assert np.linalg.norm(T[:3, :3] - T0[:3, :3]) < 1e-5
        n += 1
    np.testing.assert_allclose(traj.points[-1].positions, _expected_end(T1, ref), atol=1e-6)
    # velocity limits of the arm joints, by differencing the points
    vmax = np.array([MODEL.joint(j).velocity for j in ARM])
    P = np.array([p.positions for p in traj.points])
    v = np.diff(P, axis=0) / np.diff(times)[:, None]
    assert np.all(np.abs(v) <= vmax * 1.001)
    assert all(abs(x) < 1e-12 for x in traj.points[0].velocities + traj.points[-1].velocities)


def _expected_end(T1, ref):
    """The arm joints that put the tool at T1 (the core's IK, as an independent end check)."""
    from mechanism_model_core import PoseConstraint, solve_ik
    q0 = MODEL.configuration(dict(zip(ARM, Q_ARM)))
    T_w = forward_kinematics(MODEL, q0).pose(ref) @ T1
    r = solve_ik(MODEL, [PoseConstraint("arm_tool", T_w)], q0,
                 locked=[c for c in MODEL.independent_coordinates if c not in ARM], timeout=SAFETY)
    assert r.success
    return r.q[[MODEL.coordinate_index(j) for j in ARM]]


def test_partial_path_and_bad_requests_get_codes_and_reasons(client):
    T0, T1 = _line_target()
    far = T0.copy()
    far[:3, 3] += [3.0, 0.0, 0.0]                    # out of the arm's reach
    rep = client.call(_request(client, [T1, far]))
    assert rep.error_code.val == -31 and 0 < rep.fraction < 1
    assert "fraction" in rep.message and "waypoint 1" in rep.message
    assert len(rep.solution.points) > 10              # the achieved part, time-parameterized
    cases = [
        (dict(link_name="nope"), -18),
        (dict(link_name=""), -18),
        (dict(group_name="mast_head"), -15),
        (dict(max_step=0.0), -16),
        (dict(max_step=float("nan")), -16),
        (dict(jump_threshold=-1.0), -16),
        (dict(max_velocity_scaling_factor=2.0), -16),
    ]
    for fields, code in cases:
        rep = client.call(_request(client, [T1], **fields))
        assert rep.error_code.val == code, (fields, rep.error_code.val, rep.message)
        assert rep.message
    rep = client.call(_request(client, [T1], frame="nowhere"))
    assert rep.error_code.val == -21
    r = _request(client, [T1])
    r.waypoints[0].position.x = float("nan")
    rep = client.call(r)
    assert rep.error_code.val == -16 and "waypoints[0]" in rep.message
    r = _request(client, [T1])
    r.waypoints[0].orientation.x = r.waypoints[0].orientation.y = 0.0
    r.waypoints[0].orientation.z = r.waypoints[0].orientation.w = 0.0
    assert client.call(r).error_code.val == -16
    r = _request(client, [])
    assert client.call(r).error_code.val == -16
    r = _request(client, [T1])
    r.start_state.position = [float("nan")] * 5
    assert client.call(r).error_code.val == -17
    # a jump: the absolute revolute threshold below one step's joint change
    rep = client.call(_request(client, [T1], revolute_jump_threshold=1e-4))
    assert rep.error_code.val == -1 and rep.fraction < 1 and "jump" in rep.message
    # still serving
    rep = client.call(_request(client, [T1]))
    assert rep.error_code.val == 1 and rep.fraction == 1.0


def test_scaling_slows_the_trajectory(client):
    _, T1 = _line_target()
    full = client.call(_request(client, [T1]))
    slow = client.call(_request(client, [T1], max_velocity_scaling_factor=0.25,
                                max_acceleration_scaling_factor=0.25))
    d_full = _seconds(full.solution.points[-1].time_from_start)
    d_slow = _seconds(slow.solution.points[-1].time_from_start)
    assert d_slow > 1.9 * d_full


def test_avoid_collisions(client):
    """avoid_collisions (MoveIt's flag): the Rocky 8 arm pulled back and up along its plane folds its forearm
    into its turret. Without the flag the whole line is planned; with it the path stops before the first
    step in collision -- the step a brute-force check of the unchecked path finds -- with INVALID_MOTION_PLAN,
    the fraction achieved, the colliding bodies named and a collision-free partial trajectory."""
    require("coal", "collision")
    from mechanism_model_core.collision import in_collision
    _, T1 = _line_target(dr=-0.4, dz=0.1)
    free = client.call(_request(client, [T1]))
    assert free.error_code.val == 1 and free.fraction == 1.0, free.message
    rep = client.call(_request(client, [T1], avoid_collisions=True))
    assert rep.error_code.val == -2 and "arm_fore-arm_turret" in rep.message, rep.message
    idx = [MODEL.coordinate_index(j) for j in ARM]

    def full(pt):
        q = MODEL.home.copy()
        q[idx] = pt.positions
        return q
    # brute force over the unchecked path (the core's planner without the flag, every step)
    from mechanism_model_core.locomotion.manipulator import ManipulatorModel
    arm = ManipulatorModel(MODEL, tool="arm_tool", base="arm_mount")
    q0 = arm.chain_q(MODEL.configuration(dict(zip(ARM, Q_ARM))))
    plain = arm.cartesian_path([T1], q0, max_step=0.005)          # T1 is in arm_mount, the base
    hits = in_collision(MODEL, np.array([arm.full_q(q) for q in plain.positions]))
    k = int(np.argmax(hits))
    assert hits.any() and rep.fraction == pytest.approx((k - 1) / plain.steps_total)
    assert not np.any(in_collision(MODEL, np.array([full(p) for p in rep.solution.points])))
    np.testing.assert_allclose(rep.solution.points[-1].positions, plain.positions[k - 1], atol=1e-9)


def test_a_departed_clients_path_is_cut_short(client):
    """Issue 19 item 13: with the transport's cancel event set (its client left), the path stops at the
    next step with FAILURE 'cancelled'; unset, the same request is whole."""
    import threading

    from mechanism_model_ros.cartesian_path_service import CartesianPathService
    from mechanism_model_ros.error_codes import RequestError
    from mechanism_model_ros.transports.base import _set_cancel
    from mechanism_model_ros.transports.typegen import service_wire_class

    svc = CartesianPathService(client.node)
    q0 = MODEL.configuration(dict(zip(ARM, Q_ARM)))
    T0 = forward_kinematics(MODEL, q0).pose("arm_tool", "arm_mount")
    T1 = T0.copy()
    T1[:3, 3] += [-0.1 * math.cos(0.2), -0.1 * math.sin(0.2), -0.05]
    cancel = threading.Event()
    _set_cancel(cancel)
    try:
        Rep = service_wire_class("mechanism_model_msgs/srv/ComputeCartesianPath_Response")
        rep = Rep()
        svc(_request(client, [T1]), rep)
        assert rep.fraction == 1.0 and len(rep.solution.points) > 10
        cancel.set()
        rep = Rep()
        with pytest.raises(RequestError, match="cancelled: the client left"):
            svc(_request(client, [T1]), rep)
        assert rep.fraction < 0.1
    finally:
        _set_cancel(None)
