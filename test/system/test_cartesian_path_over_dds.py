"""``compute_cartesian_path`` over real Cyclone DDS (loopback, multicast off, a domain from MM_TEST_DOMAINS):
``mechanism_model_ros.serve`` runs in its own process on the default rover; this side calls the service with
message classes built from the interface definitions. The reply's trajectory is checked by the core's
forward kinematics (every point on the commanded line), a bad request gets its code while the node keeps
serving."""

import math

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import default_model_path

from core.optional_deps import require
from ros.dds_helpers import configure_this_process, start_serve, stop, unique_domain_id

pytestmark = pytest.mark.ros

MODEL = load_model(default_model_path())
ARM = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
Q_ARM = [0.2, 0.5, -1.2, 0.4, 0.1]


@pytest.fixture(scope="module")
def client():
    require("toppra", "trajectory")
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    proc = start_serve(domain)
    ctx = CycloneContext(domain)
    node = CycloneNode("cartesian_tester", context=ctx)
    c = node.create_client("compute_cartesian_path", "mechanism_model_msgs/srv/ComputeCartesianPath")
    try:
        assert c.wait_for_service(30), "the server did not come up"
        yield node, c
    finally:
        node.close()
        ctx.close()
        _, err = stop(proc)
        assert "Traceback" not in err, err


def _request(node, c, T):
    from scipy.spatial.transform import Rotation
    Pose = node.message_class("geometry_msgs/msg/Pose")
    r = c.request()
    r.header.frame_id = "arm_mount"
    r.group_name = "arm_mount"
    r.link_name = "arm_tool"
    r.start_state.name, r.start_state.position = ARM, Q_ARM
    r.max_step = 0.005
    r.jump_threshold = 5.0
    p = Pose()
    p.position.x, p.position.y, p.position.z = (float(v) for v in T[:3, 3])
    x, y, z, w = Rotation.from_matrix(T[:3, :3]).as_quat()
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = x, y, z, w
    r.waypoints = [p]
    return r


def test_straight_line_over_dds(client):
    node, c = client
    q0 = MODEL.configuration(dict(zip(ARM, Q_ARM)))
    T0 = forward_kinematics(MODEL, q0).pose("arm_tool", "arm_mount")
    T1 = T0.copy()
    T1[:3, 3] += [-0.1 * math.cos(0.2), -0.1 * math.sin(0.2), -0.05]       # in the arm's plane
    rep = c.call(_request(node, c, T1), 30)
    assert rep.error_code.val == 1, rep.message
    assert rep.fraction == 1.0 and rep.solution.joint_names == ARM
    idx = [MODEL.coordinate_index(j) for j in ARM]
    for pt in rep.solution.points:
        q = q0.copy()
        q[idx] = pt.positions
        T = forward_kinematics(MODEL, q).pose("arm_tool", "arm_mount")
        d = T1[:3, 3] - T0[:3, 3]
        u = float(np.clip((T[:3, 3] - T0[:3, 3]) @ d / (d @ d), 0, 1))
        assert np.linalg.norm(T[:3, 3] - (T0[:3, 3] + u * d)) < 1e-5
    q = q0.copy()
    q[idx] = rep.solution.points[-1].positions
    np.testing.assert_allclose(forward_kinematics(MODEL, q).pose("arm_tool", "arm_mount"), T1, atol=1e-6)
    # a NaN waypoint: its code, and the node keeps serving
    bad = _request(node, c, T1)
    bad.waypoints[0].position.z = float("nan")
    rep = c.call(bad, 30)
    assert rep.error_code.val == -16 and "waypoints[0]" in rep.message
    assert c.call(_request(node, c, T1), 30).error_code.val == 1



def test_avoid_collisions_over_dds(client):
    """avoid_collisions over DDS: a line that folds the Rocky 8 arm's forearm into its turret stops before
    the first colliding step (INVALID_MOTION_PLAN, fraction < 1, the bodies named); every point of the
    partial trajectory is collision-free by the core's check here; without the flag the line is whole."""
    require("coal", "collision")
    from mechanism_model_core.collision import in_collision
    node, c = client
    q0 = MODEL.configuration(dict(zip(ARM, Q_ARM)))
    T0 = forward_kinematics(MODEL, q0).pose("arm_tool", "arm_mount")
    T1 = T0.copy()
    T1[:3, 3] += [-0.4 * math.cos(0.2), -0.4 * math.sin(0.2), 0.1]
    r = _request(node, c, T1)
    r.jump_threshold = 0.0
    rep = c.call(r, 30)
    assert rep.error_code.val == 1 and rep.fraction == 1.0, rep.message
    idx = [MODEL.coordinate_index(j) for j in ARM]
    Q = np.repeat(MODEL.home[None], len(rep.solution.points), axis=0)
    Q[:, idx] = [p.positions for p in rep.solution.points]
    assert np.any(in_collision(MODEL, Q))                       # the unchecked line goes through the fold
    r.avoid_collisions = True
    rep = c.call(r, 30)
    assert rep.error_code.val == -2 and 0.5 < rep.fraction < 1.0 and "arm_fore-arm_turret" in rep.message, \
        rep.message
    Q = np.repeat(MODEL.home[None], len(rep.solution.points), axis=0)
    Q[:, idx] = [p.positions for p in rep.solution.points]
    assert not np.any(in_collision(MODEL, Q))


def test_avoid_collisions_checks_the_nodes_environment_over_dds(tmp_path):
    """The node's world in compute_cartesian_path over DDS (``environment_file``, the same one
    check_state_validity uses): a rock on the arm's line stops the path before the first step that touches
    it (INVALID_MOTION_PLAN, fraction < 1, the rock named) -- the step a brute-force check of the unchecked
    line against the rock finds; the wheels resting on the terrain plane do not stop it (the arm does not move
    them); every returned point is clear of the rock; without avoid_collisions the line is whole."""
    require("coal", "collision")
    from mechanism_model_core.collision import collisions
    from mechanism_model_core.io import load_environment
    from mechanism_model_core.locomotion.manipulator import ManipulatorModel
    q0 = MODEL.configuration(dict(zip(ARM, Q_ARM)))
    arm = ManipulatorModel(MODEL, tool="arm_tool", base="arm_mount")
    T0 = arm.fk(arm.chain_q(q0))
    T1 = T0.copy()
    T1[:3, 3] += [-0.15 * math.cos(0.2), -0.15 * math.sin(0.2), -0.1]      # in the arm's plane, downwards
    free = arm.cartesian_path([T1], arm.chain_q(q0), max_step=0.005)
    assert free.fraction == 1.0
    rock = forward_kinematics(MODEL, arm.full_q(free.positions[30], q0)).pose("arm_tool")[:3, 3]
    path = tmp_path / "world.yaml"
    path.write_text("terrain:\n  plane: {point: [0, 0, 0.03], normal: [0, 0, 1]}\nobstacles:\n"
                    f"  - {{name: rock, sphere: 0.03, position: [{float(rock[0])!r}, {float(rock[1])!r}, {float(rock[2])!r}]}}\n")
    env = load_environment(str(path))

    def touches_rock(q_chain):
        return any(c.body_b == "rock" for c in collisions(MODEL, arm.full_q(q_chain, q0), environment=env))

    assert not touches_rock(free.positions[0])
    k = next(i for i, q in enumerate(free.positions) if touches_rock(q))      # brute force, unchecked line
    assert any(c.body_a.endswith("_wheel") for c in collisions(MODEL, q0, environment=env))   # wheels on the plane
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    proc = start_serve(domain, "--nodes", "kinematics_server", "-p", f"environment_file:={path}")
    ctx = CycloneContext(domain)
    node = CycloneNode("cartesian_world_tester", context=ctx)
    try:
        c = node.create_client("compute_cartesian_path", "mechanism_model_msgs/srv/ComputeCartesianPath")
        assert c.wait_for_service(30), "the server did not come up"
        r = _request(node, c, T1)
        r.jump_threshold = 0.0
        rep = c.call(r, 30)
        assert rep.error_code.val == 1 and rep.fraction == 1.0, rep.message            # unchecked: whole line
        r.avoid_collisions = True
        rep = c.call(r, 30)
        assert rep.error_code.val == -2 and "rock" in rep.message and "wheel" not in rep.message, rep.message
        assert rep.fraction == pytest.approx((k - 1) / free.steps_total), (rep.fraction, k)
        idx = [MODEL.coordinate_index(j) for j in ARM]
        for pt in rep.solution.points:
            q = q0.copy()
            q[idx] = pt.positions
            assert not any(c.body_b == "rock" for c in collisions(MODEL, q, environment=env))
        # the last point is the last step before the rock, on the line
        q = q0.copy()
        q[idx] = rep.solution.points[-1].positions
        np.testing.assert_allclose(forward_kinematics(MODEL, q).pose("arm_tool", "arm_mount")[:3, 3],
                                   free.poses[k - 1][:3, 3], atol=1e-6)
    finally:
        node.close()
        ctx.close()
        _, err = stop(proc)
    assert "Traceback" not in err, err
