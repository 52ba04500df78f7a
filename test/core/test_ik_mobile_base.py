"""Closed-form IK of an arm on a moving base (optional extra eaik): the locked joints before the arm's first free
joint (a floating base's pose, a torso lift) only move the target's frame, so one closed form serves every pose
of the base -- while a locked joint after a free one still gets a closed form per value. Answers are judged by
Pinocchio on the arm's own URDF composed with the base's pose written out by hand, and equal those of the same
arm on a fixed base for the target moved into its base frame."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism_model_core import PoseConstraint, forward_kinematics, load_model
from mechanism_model_core.data import memo
from mechanism_model_core.ik import eaik_solver_for, solve_ik
from mechanism_model_core.ik.batch import chain_engine, lane_data
from mechanism_model_core.ik.problem import IKProblem
from mechanism_model_core.io.urdf import load_urdf
from mechanism_model_core.library import default_model_path
from mechanism_model_core.spatial import rot_x, rot_y, rot_z, translation

from .optional_deps import require
from .robots import SAFETY

require("eaik", "eaik")
pin = pytest.importorskip("pinocchio")

ARM_URDF = os.path.join(os.path.dirname(__file__), "..", "data", "robots", "srs7", "srs7.urdf")
ARM = [f"j{i}" for i in range(1, 8)]
#: the torso lift between the floating chassis and the arm's base: origin and axis as written below
TORSO_ORIGIN = translation(0.2, 0.0, 0.3) @ rot_z(0.3)


@pytest.fixture(scope="module")
def mobile(tmp_path_factory):
    """The 7R test arm (SRS) on a torso lift on a floating chassis: world -> chassis (floating) -> base
    (prismatic torso) -> the arm."""
    text = open(ARM_URDF).read().replace('<link name="base"/>', """<link name="world"/>
  <link name="chassis"/>
  <link name="base"/>
  <joint name="base_pose" type="floating"><parent link="world"/><child link="chassis"/></joint>
  <joint name="torso" type="prismatic">
    <parent link="chassis"/><child link="base"/><origin xyz="0.2 0 0.3" rpy="0 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="0" upper="0.4" effort="100" velocity="0.1"/>
  </joint>""", 1)
    path = tmp_path_factory.mktemp("mobile") / "mobile_srs7.urdf"
    path.write_text(text)
    return load_urdf(str(path))


def _arm_pose_by_pinocchio():
    model = pin.buildModelFromUrdf(ARM_URDF)
    data = model.createData()
    fid = model.getFrameId("tool")
    names = [model.names[j] for j in range(1, model.njoints)]

    def pose(q_arm: dict):
        pin.framesForwardKinematics(model, data, np.array([q_arm[n] for n in names]))
        return data.oMf[fid].homogeneous

    return pose


ARM_POSE = _arm_pose_by_pinocchio()


def _world_tool(m, q):
    """The tool's world pose at full coordinates ``q`` of the mobile model, written out independently of the
    core: the floating joint as translation then yaw, pitch, roll (URDF's fixed-axis roll-pitch-yaw), the
    torso's origin and stroke along z, and Pinocchio's forward kinematics of the arm's own URDF."""
    v = {n: float(q[m.coordinate_index(n)]) for n in m.coordinate_names}
    base = (translation(v["base_pose.x"], v["base_pose.y"], v["base_pose.z"]) @ rot_z(v["base_pose.yaw"])
            @ rot_y(v["base_pose.pitch"]) @ rot_x(v["base_pose.roll"]))
    return base @ TORSO_ORIGIN @ translation(0.0, 0.0, v["torso"]) @ ARM_POSE({n: v[n] for n in ARM})


def _base_configuration(m, rng):
    """A random chassis pose (within 3 m and any orientation) and torso stroke, the arm at home."""
    q = np.array(m.home, dtype=float)
    for n, val in zip(("base_pose.x", "base_pose.y", "base_pose.z"), rng.uniform(-3, 3, 3)):
        q[m.coordinate_index(n)] = val
    for n, val in zip(("base_pose.roll", "base_pose.pitch", "base_pose.yaw"), rng.uniform(-math.pi, math.pi, 3)):
        q[m.coordinate_index(n)] = val
    q[m.coordinate_index("torso")] = rng.uniform(0.0, 0.4)
    return q


def _arm_values(m, rng):
    return {n: rng.uniform(m.lower_limits[m.coordinate_index(n)], m.upper_limits[m.coordinate_index(n)])
            for n in ARM}


def _with(m, q, values):
    q = q.copy()
    for n, val in values.items():
        q[m.coordinate_index(n)] = val
    return q


def _errors(F, T):
    return float(np.linalg.norm(F[:3, 3] - T[:3, 3])), float(np.linalg.norm(pin.log3(F[:3, :3] @ T[:3, :3].T)))


def test_the_independent_base_pose_matches_the_model(mobile):
    rng = np.random.default_rng(1)
    q = _with(mobile, _base_configuration(mobile, rng), _arm_values(mobile, rng))
    np.testing.assert_allclose(_world_tool(mobile, q), forward_kinematics(mobile, q).pose("tool"), atol=1e-12)


def test_one_closed_form_serves_every_pose_of_the_base_and_reaches_the_target(mobile):
    m = mobile
    locked = [n for n in m.coordinate_names if n not in ARM]
    rng = np.random.default_rng(5)
    solvers, solved = set(), 0
    for k in range(8):
        q_base = _base_configuration(m, rng)
        target = _world_tool(m, _with(m, q_base, _arm_values(m, rng)))
        start = _with(m, q_base, _arm_values(m, rng))
        c = PoseConstraint("tool", target)
        r = solve_ik(m, c, start, locked=locked, timeout=SAFETY, tol_position=1e-9, tol_orientation=1e-9)
        assert r.solver == "eaik", r.solver
        assert r.success
        pe, oe = _errors(_world_tool(m, r.q), target)
        assert pe < 1e-9 and oe < 1e-9, (pe, oe)
        assert m.within_limits(r.q, 1e-12)
        np.testing.assert_array_equal(r.q[[m.coordinate_index(n) for n in locked]],
                                      start[[m.coordinate_index(n) for n in locked]])
        solvers.add(id(eaik_solver_for(m, "tool", IKProblem(m, [c], start, locked=locked))))
        solved += 1
    assert solved == 8
    assert len(solvers) == 1
    assert len(memo(m, "ik.eaik_solvers", 64)) == 1          # built once, not once per base pose


def test_answers_equal_the_same_arm_on_a_fixed_base(mobile):
    """Solving in the base frame changes nothing: the same branch as the arm alone (its own URDF) for the target
    moved into the arm's base frame, from the same seed, within 1e-9."""
    m, arm = mobile, load_urdf(ARM_URDF)
    locked = [n for n in m.coordinate_names if n not in ARM]
    cols = [m.coordinate_index(n) for n in ARM]
    acols = [arm.coordinate_index(n) for n in ARM]
    rng = np.random.default_rng(8)
    for k in range(8):
        q_base = _base_configuration(m, rng)
        target = _world_tool(m, _with(m, q_base, _arm_values(m, rng)))
        start = _with(m, q_base, _arm_values(m, rng))
        r = solve_ik(m, PoseConstraint("tool", target), start, locked=locked, timeout=SAFETY)
        B = forward_kinematics(m, start).pose("base")
        a0 = np.array(arm.home, dtype=float)
        a0[acols] = start[cols]
        ra = solve_ik(arm, PoseConstraint("tool", np.linalg.inv(B) @ target), a0, timeout=SAFETY)
        assert r.solver == ra.solver == "eaik"
        np.testing.assert_allclose(r.q[cols], ra.q[acols], atol=1e-9)


@pytest.mark.parametrize("relative_to", ["chassis", "base"])
def test_targets_in_a_frame_on_the_base_are_solved_in_it(mobile, relative_to):
    """Targets given in the chassis frame (the base's pose on its chain) or in the torso's end frame (the whole
    locked prefix): reached in that frame, one closed form for every base pose."""
    m = mobile
    locked = [n for n in m.coordinate_names if n not in ARM]
    rng = np.random.default_rng(11)
    solvers = set()
    for k in range(6):
        q_base = _base_configuration(m, rng)
        qt = _with(m, q_base, _arm_values(m, rng))
        T = np.linalg.inv(forward_kinematics(m, qt).pose(relative_to)) @ _world_tool(m, qt)
        start = _with(m, q_base, _arm_values(m, rng))
        c = PoseConstraint("tool", T, relative_to=relative_to)
        r = solve_ik(m, c, start, locked=locked, timeout=SAFETY, tol_position=1e-9, tol_orientation=1e-9)
        assert r.solver == "eaik" and r.success
        pe, oe = _errors(_world_tool(m, r.q), forward_kinematics(m, start).pose(relative_to) @ T)
        assert pe < 1e-9 and oe < 1e-9, (pe, oe)
        solvers.add(id(eaik_solver_for(m, "tool", IKProblem(m, [c], start, locked=locked))))
    assert len(solvers) == 1


def test_a_locked_joint_after_a_free_one_gets_its_own_closed_form(mobile):
    """The last wrist joint locked (a 6R arm with a spherical shoulder, the torso and chassis locked too): one
    closed form per value of that joint, whatever the base's pose; each reaches the target with the joint at
    its locked value."""
    m = mobile
    free = ARM[:-1]
    locked = [n for n in m.coordinate_names if n not in free]
    rng = np.random.default_rng(13)
    made = {}
    for k in range(6):
        j7 = (0.4, -1.1)[k % 2]
        q_base = _with(m, _base_configuration(m, rng), {"j7": j7})
        values = _arm_values(m, rng)
        values["j7"] = j7
        target = _world_tool(m, _with(m, q_base, values))
        start = _with(m, q_base, {n: v for n, v in _arm_values(m, rng).items() if n in free})
        c = PoseConstraint("tool", target)
        r = solve_ik(m, c, start, locked=locked, timeout=SAFETY, tol_position=1e-9, tol_orientation=1e-9)
        assert r.solver == "eaik" and r.success
        assert r.q[m.coordinate_index("j7")] == j7
        pe, oe = _errors(_world_tool(m, r.q), target)
        assert pe < 1e-9 and oe < 1e-9, (pe, oe)
        s = eaik_solver_for(m, "tool", IKProblem(m, [c], start, locked=locked))
        assert s.n == 6
        made.setdefault(j7, set()).add(id(s))
    assert [len(v) for v in made.values()] == [1, 1]
    assert len(set.union(*made.values())) == 2


def test_chassis_frame_requests_on_the_rover_share_one_closed_form():
    """The IK service's request on the default rover: every joint but the arm's locked, the target in the
    chassis frame, the rover at a new pose each time."""
    m = load_model(default_model_path())
    arm = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
    cols = [m.coordinate_index(n) for n in arm]
    locked = [n for n in m.coordinate_names if n not in arm]
    rng = np.random.default_rng(4)
    solvers = set()
    for k in range(6):
        q0 = m.random_configuration(rng)
        qt = q0.copy()
        qt[cols] = m.random_configuration(rng)[cols]
        fk = forward_kinematics(m, qt)
        T = np.linalg.inv(fk.pose("chassis")) @ fk.pose("arm_turret")
        start = q0.copy()
        start[cols] = m.random_configuration(rng)[cols]
        c = PoseConstraint("arm_turret", T, relative_to="chassis")
        r = solve_ik(m, c, start, locked=locked, timeout=SAFETY, tol_position=1e-9, tol_orientation=1e-9)
        assert r.solver == "eaik" and r.success
        fr = forward_kinematics(m, r.q)
        F = np.linalg.inv(fr.pose("chassis")) @ fr.pose("arm_turret")
        pe, oe = _errors(F, T)
        assert pe < 1e-9 and oe < 1e-9
        np.testing.assert_array_equal(np.delete(r.q, cols), np.delete(start, cols))
        solvers.add(id(eaik_solver_for(m, "arm_turret", IKProblem(m, [c], start, locked=locked))))
    assert len(solvers) == 1


def test_the_lane_engines_of_every_base_pose_share_one_seed_table(mobile):
    """The population LM on the mobile arm (solver="lm"): the engines of the base's poses share one seed table,
    in the arm's base frame; their nearest starts for a target equal those of the arm alone (its own URDF) for
    the target moved into its base frame, and the answers reach the target by Pinocchio."""
    m, arm = mobile, load_urdf(ARM_URDF)
    locked = [n for n in m.coordinate_names if n not in ARM]
    cols = [m.coordinate_index(n) for n in ARM]
    acols = [arm.coordinate_index(n) for n in ARM]
    rng = np.random.default_rng(17)
    tables = set()
    for k in range(5):
        q_base = _base_configuration(m, rng)
        target = _world_tool(m, _with(m, q_base, _arm_values(m, rng)))
        start = _with(m, q_base, _arm_values(m, rng))
        P = IKProblem(m, [PoseConstraint("tool", target)], start, locked=locked)
        E = chain_engine(P)
        _, _, pt, RtT, _ = lane_data(P)
        starts = E.nearest_starts(pt[None], RtT[None], 8)
        tables.add(id(E.seed_table()[1]))
        a0 = np.array(arm.home, dtype=float)
        a0[acols] = start[cols]
        local = np.linalg.inv(forward_kinematics(m, start).pose("base")) @ target
        PA = IKProblem(arm, [PoseConstraint("tool", local)], a0)
        EA = chain_engine(PA)
        _, _, pta, RtTa, _ = lane_data(PA)
        np.testing.assert_array_equal(starts[0][:, np.argsort(acols)], EA.nearest_starts(pta[None], RtTa[None], 8)[0])
        r = solve_ik(m, PoseConstraint("tool", target), start, locked=locked, solver="lm", timeout=SAFETY)
        assert r.success
        pe, oe = _errors(_world_tool(m, r.q), target)
        assert pe < 1e-5 and oe < 1e-5
        assert m.within_limits(r.q, 1e-12)
    assert len(tables) == 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.lists(st.floats(-1.0, 1.0), min_size=7, max_size=7),
       arm=st.lists(st.floats(0.0, 1.0), min_size=14, max_size=14))
def test_any_base_pose_and_arm_target_is_reached_by_the_one_closed_form(mobile, base, arm):
    """Property: for any pose of the floating base (within 5 m, any orientation), torso stroke, target arm
    values and seed, the answer is within the limits, keeps the locked joints, and reaches the target by
    Pinocchio within 1e-9 (the closed form, or its fallback); the solver is the one of every other pose."""
    m = mobile
    locked = [n for n in m.coordinate_names if n not in ARM]
    q = np.array(m.home, dtype=float)
    for n, u in zip(("base_pose.x", "base_pose.y", "base_pose.z"), base[:3]):
        q[m.coordinate_index(n)] = 5.0 * u
    for n, u in zip(("base_pose.roll", "base_pose.pitch", "base_pose.yaw"), base[3:6]):
        q[m.coordinate_index(n)] = math.pi * u
    q[m.coordinate_index("torso")] = 0.2 + 0.2 * base[6]
    lo = np.array([m.lower_limits[m.coordinate_index(n)] for n in ARM])
    hi = np.array([m.upper_limits[m.coordinate_index(n)] for n in ARM])
    target = _world_tool(m, _with(m, q, dict(zip(ARM, lo + np.array(arm[:7]) * (hi - lo)))))
    start = _with(m, q, dict(zip(ARM, lo + np.array(arm[7:]) * (hi - lo))))
    c = PoseConstraint("tool", target)
    r = solve_ik(m, c, start, locked=locked, timeout=SAFETY, tol_position=1e-9, tol_orientation=1e-9)
    assert r.success and r.solver.startswith("eaik")
    pe, oe = _errors(_world_tool(m, r.q), target)
    assert pe < 1e-9 and oe < 1e-9, (pe, oe)
    assert m.within_limits(r.q, 1e-12)
    keep = [m.coordinate_index(n) for n in locked]
    np.testing.assert_array_equal(r.q[keep], start[keep])
    first = eaik_solver_for(m, "tool", IKProblem(m, [c], m.home, locked=locked))
    assert eaik_solver_for(m, "tool", IKProblem(m, [c], start, locked=locked)) is first
