"""Closed-form answers and starts for arms on a lift and arms near a decomposable chain (optional extra eaik):
the detection (lift arms, offset wrists found; a decomposable chain left to the pure closed form; a skewed
chain left to the population LM), every answer judged by Pinocchio on the same URDF within limits (fixed
targets and hypothesis round trips), and the closed-form starts actually used (fewer evaluations than the
population LM from the same seeds; no wall-clock assertion).

The test arms are generated here as URDF text from axis geometry at the zero configuration (joint axes and
the points where they pass, in the base frame), with numbers of the kind the named arms have: an xArm7-like
arm (shoulder axes meeting in a point, wrist axes offset 0.05 m), a Baxter-like one (axes at 45 degrees,
wrist offset 0.007 m), an xArm6-like 6R arm and a TIAGo-like arm on a 0.35 m lift (spherical wrist)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism_model_core import PoseConstraint
from mechanism_model_core.ik import EAIKSolver, LMPopulationSolver, eaik_solver_for, ik_solutions, solve_ik
from mechanism_model_core.ik.closed_form.near_decomposable import (NEAR_RATIO, REFINE_BRANCHES, REFINE_MU,
                                                                     REFINE_MU_6R,
                                                                     NearDecomposableSolver,
                                                                     concurrency_defect,
                                                                     near_decomposable_solver_for)
from mechanism_model_core.errors import ModelStructureError
from mechanism_model_core.ik.closed_form.axis_snap import SNAP_RATIO, snap_geometry
from mechanism_model_core.ik.problem import IKProblem
from mechanism_model_core.io.urdf import load_urdf
from mechanism_model_core.spatial import wrap_angle

from .optional_deps import require
from .robots import SAFETY, ur5

require("eaik", "eaik")
pin = pytest.importorskip("pinocchio")

TOL = 1e-5
S2 = math.sqrt(0.5)
E = 1.5708 - math.pi / 2

#: name -> (axes (n, 3), axis points (n, 3), tool point (3,), prismatic first joint?)
GEOMETRY = {
    # the xArm's URDF writes pi/2 as 1.5708: its axes tilt by E = 7.3e-6 rad from one joint to the next, and
    # the shoulder's three axes miss a common point by about 1e-6 m (eaik finds no decomposition)
    "xarm7_like": (
        [(0, 0, 1), (0, 1, 0), (0, E, 1), (0, -1, 1.5 * E), (0, E, -1), (0, 1, 1.5 * E), (0, E, -1)],
        [(0, 0, .267), (0, 0, .267), (0, 1e-6, .56), (.0525, 1e-6, .56), (.13, 2.3e-6, .2175),
         (.13, 2.3e-6, .2175), (.206, 3.4e-6, .1205)],
        (.206, 3.4e-6, .1205), False),
    "baxter_like": (
        [(0, 0, 1), (-S2, S2, 0), (S2, S2, 0), (-S2, S2, 0), (S2, S2, 0), (-S2, S2, 0), (S2, S2, 0)],
        [(.064, .259, .13), (.1128, .3078, .4), (.1849, .3799, .4), (.3705, .5655, .331), (.4437, .6388, .331),
         (.6352, .8302, .321), (.7172, .9122, .321)],
        (.7975, .9925, .321), False),
    "xarm6_like": (
        [(0, 0, 1), (0, 1, 0), (0, 1, 0), (0, 0, -1), (0, 1, 0), (0, 0, -1)],
        [(0, 0, .267), (0, 0, .267), (.0535, 0, .5515), (.131, 0, .209), (.131, 0, .209), (.207, 0, .112)],
        (.207, 0, .112), False),
    "lift_arm": (
        [(0, 0, 1), (0, 0, 1), (-1, 0, 0), (0, 1, 0), (1, 0, 0), (0, -1, 0), (0, 0, 1), (0, -1, 0)],
        [(-.062, 0, .8885), (.093, .014, .7375), (.1096, -.111, .7065), (.1081, -.2005, .7065),
         (.0811, -.4225, .6865), (.1081, -.5845, .7065), (.1081, -.7345, .7065), (.1081, -.7345, .7065)],
        (.1081, -.7805, .7065), True),
}
LIMIT = 2.6
LIFT = (0.0, 0.35)


def _urdf(name, H, O, tip, lift):
    """URDF text of a serial chain whose joint ``i`` turns (slides, a lift) about axis ``H[i]`` through
    ``O[i]`` at the zero configuration (every link frame parallel to the base there)."""
    lines = [f'<robot name="{name}">', '<link name="base"/>']
    prev_o, parent = np.zeros(3), "base"
    for i, (h, o) in enumerate(zip(H, O)):
        o = np.asarray(o, dtype=float)
        kind, (lo, hi) = ("prismatic", LIFT) if (lift and i == 0) else ("revolute", (-LIMIT, LIMIT))
        xyz = " ".join(f"{v:.17g}" for v in o - prev_o)
        axis = " ".join(f"{v:.17g}" for v in np.asarray(h) / np.linalg.norm(h))
        lines += [f'<link name="l{i}"/>',
                  f'<joint name="j{i}" type="{kind}"><parent link="{parent}"/><child link="l{i}"/>'
                  f'<origin xyz="{xyz}" rpy="0 0 0"/><axis xyz="{axis}"/>'
                  f'<limit lower="{lo}" upper="{hi}" effort="10" velocity="1"/></joint>']
        prev_o, parent = o, f"l{i}"
    xyz = " ".join(f"{v:.10g}" for v in np.asarray(tip) - prev_o)
    lines += ['<link name="tool"/>', f'<joint name="tool_joint" type="fixed"><parent link="{parent}"/>'
              f'<child link="tool"/><origin xyz="{xyz}" rpy="0.3 -0.2 0.1"/></joint>', '</robot>']
    return "\n".join(lines)


class Arm:
    """Our mechanism and Pinocchio's model (the judge) of one generated URDF."""

    def __init__(self, path, text):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.m = load_urdf(str(path))
        self.pm = pin.buildModelFromXML(text)
        self.pd = self.pm.createData()
        self.fid = self.pm.getFrameId("tool")
        self.idx = [self.m.coordinate_index(self.pm.names[j]) for j in range(1, self.pm.njoints)]
        self.lo, self.hi = self.m.lower_limits[self.idx], self.m.upper_limits[self.idx]

    def pose(self, q):
        """Pinocchio's pose of the tool at our configuration ``q`` (nq,)."""
        pin.framesForwardKinematics(self.pm, self.pd, np.asarray(q, dtype=float)[self.idx])
        return self.pd.oMf[self.fid].homogeneous.copy()

    def judge(self, q, T):
        F = self.pose(q)
        pe = float(np.linalg.norm(F[:3, 3] - T[:3, 3]))
        oe = float(np.linalg.norm(pin.log3(F[:3, :3] @ T[:3, :3].T)))
        inside = bool(np.all(q >= self.m.lower_limits - 1e-12) and np.all(q <= self.m.upper_limits + 1e-12))
        return pe <= TOL and oe <= TOL and inside

    def sample(self, rng, k):
        """``k`` random in-limit configurations (k, nq) of our mechanism."""
        Q = np.tile(np.asarray(self.m.home, dtype=float), (k, 1))
        Q[:, self.idx] = self.lo + rng.random((k, len(self.idx))) * (self.hi - self.lo)
        return Q


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    d = tmp_path_factory.mktemp("near_decomposable")
    return {name: Arm(d / f"{name}.urdf", _urdf(name, *g)) for name, g in GEOMETRY.items()}


def skewed_arm(tmp_path, seed=8):
    """Seven revolute joints with random directions and offsets of 0.1-0.2 m along each axis: no
    decomposition; triples pass the geometric filter (seed 8: defects 0.046-0.066 of the reach), and the
    branches of their approximate chains lead to 56 % (seed 8) or 89 % (seed 3) of the sample targets, fewer
    than a 7R chain needs to pay (not near)."""
    rng = np.random.default_rng(seed)
    H = rng.normal(size=(7, 3))
    H /= np.linalg.norm(H, axis=1)[:, None]
    O = np.cumsum(rng.uniform(0.1, 0.2, size=(7, 3)) * rng.choice([-1, 1], size=(7, 3)), axis=0)
    return Arm(tmp_path / f"skewed{seed}.urdf", _urdf("skewed", H, O, O[-1] + 0.1, False))


# ---------------------------------------------------------------------------------------------- detection
def test_concurrency_defect_is_the_largest_axis_distance_from_the_common_point():
    p, d = concurrency_defect([(1, 0, 0), (0, 1, 0), (0, 0, 1)], [(0, 0, 0), (0, 0, 0), (0, 0, 0)])
    assert d < 1e-12 and np.allclose(p, 0.0)
    # the x axis (twice) and the y axis through (0, 0, 0.02): the common point at z = 0.02 / 3, whose distance
    # from the y axis is 0.04 / 3
    p, d = concurrency_defect([(1, 0, 0), (0, 1, 0), (1, 0, 0)], [(0, 0, 0), (0, 0, 0.02), (0, 0, 0)])
    assert np.allclose(p, [0, 0, 0.02 / 3]) and d == pytest.approx(0.04 / 3, rel=1e-9)
    _, d = concurrency_defect([(0, 0, 1)] * 3, [(0, 0, 0), (1, 0, 0), (0, 1, 0)])
    assert d == math.inf                                     # parallel axes: no common point


def test_lift_arms_and_offset_wrists_are_detected_and_a_skewed_arm_is_not(arms, tmp_path):
    s = near_decomposable_solver_for(arms["lift_arm"].m, "tool")
    assert s is not None and s.kind == "held" and s.lift and s.swept is not None
    s = near_decomposable_solver_for(arms["baxter_like"].m, "tool")
    assert s is not None and s.kind == "near" and s.triple == (4, 5, 6)
    assert 0.005 < s.defect < 0.01                           # Baxter's wrist offset, m
    s = near_decomposable_solver_for(arms["xarm6_like"].m, "tool")
    assert s is not None and s.kind == "near" and s.triple == (3, 4, 5) and s.swept is None
    assert 0.04 < s.defect < 0.06
    # the xArm7's rounding: the pure closed form with its axes snapped (test_snapped_axes_...), not built here
    assert near_decomposable_solver_for(arms["xarm7_like"].m, "tool") is None
    for name in ("baxter_like", "xarm6_like", "lift_arm"):
        assert eaik_solver_for(arms[name].m, "tool") is None           # none decomposes as given
    for seed in (8, 3):
        skew = skewed_arm(tmp_path, seed)
        assert eaik_solver_for(skew.m, "tool") is None
        assert near_decomposable_solver_for(skew.m, "tool") is None
        with pytest.raises(ModelStructureError, match="too far from the decomposable one"):
            NearDecomposableSolver(skew.m, "tool")
    assert near_decomposable_solver_for(ur5(), "tool") is None         # decomposable: the pure closed form


def test_a_wrist_offset_beyond_the_criterion_is_not_near(tmp_path):
    """Baxter's wrist (defect 0.007 m) pulled 0.2 m apart, beyond NEAR_RATIO of the reach bound: the wrist
    triple is no candidate, and only the shoulder's (defect 0.035 m) can be kept."""
    H, O, tip, lift = GEOMETRY["baxter_like"]
    O = np.array(O, dtype=float)
    reach = float(np.sum(np.linalg.norm(np.diff(O, axis=0), axis=1)) + np.linalg.norm(np.asarray(tip) - O[-1]))
    O[5:] += [0.0, 0.0, 0.2]
    _, d = concurrency_defect(np.array(H[4:]), O[4:])
    assert d > NEAR_RATIO * reach
    a = Arm(tmp_path / "far.urdf", _urdf("far", H, O, np.asarray(tip) + [0.0, 0.0, 0.2], lift))
    s = near_decomposable_solver_for(a.m, "tool")
    assert s is None or s.triple == (0, 1, 2), s.triple


# ---------------------------------------------------------------------------------------------- answers
@pytest.mark.parametrize("name", sorted(GEOMETRY))
def test_every_answer_reaches_the_target_within_limits_by_pinocchio(arms, name):
    a = arms[name]
    rng = np.random.default_rng(11)
    Q, S = a.sample(rng, 40), a.sample(rng, 40)
    solvers = []
    for q, s in zip(Q, S):
        T = a.pose(q)
        r = solve_ik(a.m, PoseConstraint("tool", T), s, timeout=SAFETY, tol_position=1e-6, tol_orientation=1e-6)
        assert r.success, (name, r.reason)
        assert a.judge(r.q, T)
        solvers.append(r.solver)
    # the closed form answered (alone: no population LM after it) for most targets
    kind = "eaik" if name == "xarm7_like" else "near-eaik"          # the xArm7's axes snapped: exact closed form
    assert sum(s == kind for s in solvers) >= 30, solvers


@pytest.mark.parametrize("name", ["baxter_like", "lift_arm"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(u=st.lists(st.floats(0.0, 1.0), min_size=16, max_size=16))
def test_round_trip(arms, name, u):
    a = arms[name]
    n = len(a.idx)
    u = np.array(u[:2 * n])
    q, s = np.array(a.m.home, dtype=float), np.array(a.m.home, dtype=float)
    q[a.idx] = a.lo + u[:n] * (a.hi - a.lo)
    s[a.idx] = a.lo + u[n:] * (a.hi - a.lo)
    T = a.pose(q)
    r = solve_ik(a.m, PoseConstraint("tool", T), s, timeout=SAFETY, tol_position=1e-6, tol_orientation=1e-6)
    assert r.success and a.judge(r.q, T)


def test_the_closed_form_starts_cut_the_evaluations(arms):
    """From the same seeds, the near solver evaluates far fewer configurations than the population LM
    (which evaluates 6 lanes per loop): the approximate branches are a step or two from the answer."""
    for name in ("baxter_like", "xarm6_like", "lift_arm"):
        a = arms[name]
        s = near_decomposable_solver_for(a.m, "tool")
        rng = np.random.default_rng(5)
        Q, S = a.sample(rng, 30), a.sample(rng, 30)
        near, lm = [], []
        for q, q0 in zip(Q, S):
            c = PoseConstraint("tool", a.pose(q))
            r1 = solve_ik(a.m, c, q0, solver=s, timeout=SAFETY, tol_position=1e-6, tol_orientation=1e-6)
            r2 = solve_ik(a.m, c, q0, solver=LMPopulationSolver(), timeout=SAFETY, tol_position=1e-6,
                          tol_orientation=1e-6)
            assert r1.success and r2.success
            near.append(r1.iterations)
            lm.append(r2.iterations)
        assert np.median(near) * 2 < np.median(lm), (name, np.median(near), np.median(lm))
        if name == "lift_arm":
            assert np.median(near) == 1           # exact branches: one evaluation confirms them


def test_an_unreachable_target_is_reported_unreachable(arms):
    a = arms["baxter_like"]
    T = np.eye(4)
    T[:3, 3] = [3.0, 3.0, 0.3]
    r = solve_ik(a.m, PoseConstraint("tool", T), None, timeout=SAFETY)
    assert not r.success and r.reason == "unreachable"


def test_a_locked_lift_keeps_the_exact_closed_form_of_the_arm(arms):
    """With the caller holding the lift (``locked``), the arm's 7R chain is EAIKSolver's (the lift a held
    step); the answer keeps the lift at the seed's value and reaches the target (Pinocchio)."""
    a = arms["lift_arm"]
    rng = np.random.default_rng(2)
    for q, s in zip(a.sample(rng, 10), a.sample(rng, 10)):
        lift = a.m.coordinate_index("j0")
        s[lift] = q[lift]                                      # the target is reachable at the seed's lift
        T = a.pose(q)
        r = solve_ik(a.m, PoseConstraint("tool", T), s, locked=["j0"], timeout=SAFETY, tol_position=1e-6,
                     tol_orientation=1e-6)
        assert r.success and a.judge(r.q, T)
        assert r.q[lift] == s[lift] and r.solver.startswith("eaik")


# ---------------------------------------------------------------------------------------------- snapped axes
def test_snap_geometry_makes_nearly_meeting_axes_meet_and_reports_the_move():
    """z through (0, 2e-6, 0) after x through the origin: moved 2e-6 m across the common normal (y) so that
    they meet; a z axis 3e-6 m off a parallel earlier z axis made coincident; an axis tilted 5e-6 rad from an
    earlier one made parallel when directions are snapped; offsets beyond ``tol`` left alone."""
    H = np.array([(1.0, 0, 0), (0, 0, 1.0)])
    H2, O2, moved = snap_geometry(H, np.array([(0, 0, 0), (0, 2e-6, 0.3)]), 1e-5)
    assert np.allclose(O2[1], (0, 0, 0.3), atol=1e-15) and moved == pytest.approx(2e-6)
    _, O2, moved = snap_geometry(H, np.array([(0, 0, 0), (0, 2e-4, 0.3)]), 1e-5)
    assert O2[1][1] == 2e-4 and moved == 0.0                          # beyond tol: not rounding
    Hz = np.array([(0, 0, 1.0), (1.0, 0, 0), (0, 0, 1.0)])
    _, O2, moved = snap_geometry(Hz, np.array([(0, 0, 0), (0, 0, 0.1), (3e-6, 0, 0.5)]), 1e-5)
    assert np.allclose(O2[2], (0, 0, 0.5), atol=1e-15) and moved == pytest.approx(3e-6)
    Ht = np.array([(0, 0, 1.0), (0, math.sin(5e-6), math.cos(5e-6))])
    H2, _, moved = snap_geometry(Ht, np.zeros((2, 3)), 1e-5)          # tol 1e-5 m: reach bound 1 m
    assert np.array_equal(H2[1], H2[0]) and moved == pytest.approx(5e-6, rel=1e-6)
    H2, _, _ = snap_geometry(Ht, np.zeros((2, 3)), 1e-5, directions=False)
    assert np.array_equal(H2, Ht)


def test_snapped_axes_give_the_exact_closed_form_confirmed_on_the_exact_chain(arms):
    """The xArm7-like arm (axes missing a common point by 1e-6 m, tilted by 7e-6 rad: a URDF's rounding of
    pi/2) is EAIKSolver's with its axes snapped (the move within SNAP_RATIO of the reach bound); every answer,
    also at tolerances below the snap's error (1e-9: a Gauss-Newton step on the exact chain), reaches the target
    by Pinocchio within limits from the closed form alone (no population LM)."""
    a = arms["xarm7_like"]
    s = eaik_solver_for(a.m, "tool")
    assert s is not None and s.swept is not None
    assert 0.0 < s.snap <= SNAP_RATIO * s.reach
    rng = np.random.default_rng(3)
    for tol in (1e-5, 1e-9):
        for q, q0 in zip(a.sample(rng, 20), a.sample(rng, 20)):
            T = a.pose(q)
            r = solve_ik(a.m, PoseConstraint("tool", T), q0, timeout=SAFETY, tol_position=tol, tol_orientation=tol)
            assert r.success and r.solver == "eaik", (tol, r.solver, r.reason)
            F = a.pose(r.q)
            assert np.linalg.norm(F[:3, 3] - T[:3, 3]) <= tol
            assert np.linalg.norm(pin.log3(F[:3, :3] @ T[:3, :3].T)) <= tol
            assert np.all(r.q >= a.m.lower_limits - 1e-12) and np.all(r.q <= a.m.upper_limits + 1e-12)


# ---------------------------------------------------------------------------------------------- all branches
def _distinct(Q, tol=1e-6):
    return all(np.max(np.abs(Q[i] - Q[j])) > tol for i in range(len(Q)) for j in range(i))


@pytest.mark.parametrize("name", sorted(GEOMETRY))
def test_ik_solutions_lists_branches_of_lift_near_and_snapped_arms_that_reach_the_target(arms, name):
    """ik_solutions on the chains of the near-decomposable solver (lift held, approximate branches polished on
    the exact chain) and on the snapped xArm7-like chain: every branch reaches the target by Pinocchio within
    limits, none twice, the held joints (lift, swept) at the reference's values; the configuration that made
    the target is among them when it is the reference (exact for the lift arm; most targets otherwise)."""
    a = arms[name]
    rng = np.random.default_rng(4)
    found_own = 0
    Q = a.sample(rng, 12)
    for q in Q:
        T = a.pose(q)
        B = ik_solutions(a.m, "tool", T, q)
        assert len(B) >= 1
        for b in B:
            F = a.pose(b)
            assert np.linalg.norm(F[:3, 3] - T[:3, 3]) <= 1e-8
            assert np.linalg.norm(pin.log3(F[:3, :3] @ T[:3, :3].T)) <= 1e-8
            assert np.all(b >= a.m.lower_limits - 1e-12) and np.all(b <= a.m.upper_limits + 1e-12)
        assert _distinct(B)
        if name == "lift_arm":
            assert np.all(B[:, a.m.coordinate_index("j0")] == q[a.m.coordinate_index("j0")])
        found_own += any(np.max(np.abs(b - q)) < 1e-6 for b in B)
        D = np.sum((B - q) ** 2, axis=1)
        assert np.all(np.diff(D) >= 0)                               # nearest the reference first
    assert found_own == len(Q), found_own
    # from a reference far from the answer: the branches alone (the lift held at a value that reaches)
    listed = 0
    for q, q0 in zip(Q, a.sample(rng, len(Q))):
        if name == "lift_arm":
            q0[a.m.coordinate_index("j0")] = q[a.m.coordinate_index("j0")]
        listed += len(ik_solutions(a.m, "tool", a.pose(q), q0)) > 0
    assert listed >= len(Q) - 4, listed


def test_ik_solutions_of_a_lift_arm_are_the_exact_closed_form_of_its_arm_at_that_lift(arms):
    """The lift arm with the lift held (EAIKSolver on the 7R chain, the lift a held step: exactly
    decomposable) lists the same branches as ik_solutions, which holds the lift at the reference's value."""
    a = arms["lift_arm"]
    m = a.m
    rng = np.random.default_rng(6)
    lift = m.coordinate_index("j0")
    for q in a.sample(rng, 8):
        T = a.pose(q)
        ch_coords = [m.coordinate_index(f"j{i}") for i in range(8)]
        theta = q[ch_coords].copy()
        variable = np.array([False] + [True] * 7)
        exact = EAIKSolver(m, "tool", theta, variable)
        i = near_decomposable_solver_for(m, "tool").swept            # the joint ik_solutions holds
        v = q[m.coordinate_index(f"j{1 + i}")]
        ref = q[exact.coords]
        want = []
        Tb = np.linalg.inv(exact.base_pose(q)) @ T                   # in the frame where the lift ends
        R = np.array(exact._robot_at(i, v).calculate_IK(Tb).Q, dtype=float)   # every branch, by FK below
        R[:, i] = v
        for b in exact._confirmed(Tb, R, 1e-9):
            b = _nearest_turns(b, ref, exact.lower, exact.upper)
            if b is not None and not any(np.max(np.abs(b - w)) <= 1e-6 for w in want):
                want.append(b)
        B = ik_solutions(m, "tool", T, q)
        assert len(B) == len(want) >= 1
        got = sorted(map(tuple, np.round(B[:, exact.coords], 6)))
        assert got == sorted(map(tuple, np.round(np.array(want), 6)))
        assert np.all(B[:, lift] == q[lift])


def _nearest_turns(q, ref, lo, hi):
    """``q`` with each joint moved by whole turns to the value nearest ``ref``, then one turn up or down into
    ``[lo, hi]`` (1e-12 margin) and clamped there; None when a joint cannot be (plain floats, the oracle)."""
    out = []
    for v, r, a, b in zip(q.tolist(), ref.tolist(), lo.tolist(), hi.tolist()):
        w = r + math.remainder(v - r, 2 * math.pi)
        if w < a - 1e-12:
            w += 2 * math.pi
        if w > b + 1e-12:
            w -= 2 * math.pi
        if not a - 1e-12 <= w <= b + 1e-12:
            return None
        out.append(min(max(w, a), b))
    return np.array(out)


def test_ik_solutions_of_a_chain_without_closed_form_raises(tmp_path):
    skew = skewed_arm(tmp_path, 8)
    with pytest.raises(ModelStructureError):
        ik_solutions(skew.m, "tool", np.eye(4))


def test_a_6r_chain_refines_with_more_damping_so_fewer_branches_are_given_up(arms):
    """The xArm6-like arm's approximate branches are centimetres off: with the 6R damping (REFINE_MU_6R) the
    closed form alone answers more targets (measured 170 of 200 against 160 with the 7R chains' REFINE_MU);
    a 7R chain keeps the light damping. Every answer judged by Pinocchio."""
    a = arms["xarm6_like"]
    s = near_decomposable_solver_for(a.m, "tool")
    assert s.refine_mu == REFINE_MU_6R > REFINE_MU
    assert near_decomposable_solver_for(arms["baxter_like"].m, "tool").refine_mu == REFINE_MU
    rng = np.random.default_rng(11)
    alone = 0
    for q, q0 in zip(a.sample(rng, 200), a.sample(rng, 200)):
        T = a.pose(q)
        r = solve_ik(a.m, PoseConstraint("tool", T), q0, timeout=SAFETY, tol_position=1e-6, tol_orientation=1e-6)
        assert r.success and a.judge(r.q, T)
        alone += r.solver == "near-eaik"
    assert alone >= 166, alone


def _plain_branches(s, T, ref, v):
    """The branches of :meth:`NearDecomposableSolver._branches` computed row by row in plain code: each wrapped
    into its joint's turn, kept when in limits (a wide joint moved a turn up where nearer ``ref``), the exact
    ones alone when there are any, nearest ``ref`` first, clipped to the limits."""
    robot = s._robot6 if v is None else s._robot_at(v)
    sol = robot.calculate_IK(T)
    start = s._turns.start(ref)
    rows = []
    for q, ls in zip(sol.Q, sol.is_LS):
        q = np.array(q, dtype=float)
        if v is not None:
            q[s.swept] = v
        q = wrap_angle(q, lower=start)
        if not all(q[j] <= s._turns.hi_in[j] for j in range(len(q))):
            continue
        if s._turns.any_wide:
            for j in range(len(q)):
                up = q[j] + 2 * math.pi
                if abs(up - ref[j]) < abs(q[j] - ref[j]) and up <= s._turns.hi_in[j]:
                    q[j] = up
        rows.append((q, bool(ls)))
    if not rows:
        return None, False
    rows = [(np.clip(q, s._rlo, s._rhi), ls) for q, ls in sorted(rows, key=lambda r: sum((r[0] - ref) ** 2))]
    if s._flags_reliable:
        exact = [q for q, ls in rows if not ls]
    else:               # eaik's flag checked by its forward kinematics, up to REFINE_BRANCHES exact ones
        exact = []
        for q, ls in rows:
            if not ls or np.sum((robot.fwdkin(q)[:3] - T[:3]) ** 2) < 1e-18:
                exact.append(q)
                if len(exact) == REFINE_BRANCHES:
                    break
    return np.array(exact or [q for q, _ in rows]), bool(exact)


@pytest.mark.parametrize("name", ["baxter_like", "xarm6_like"])
@pytest.mark.parametrize("reliable", [False, True])
def test_branches_match_the_plain_row_by_row_computation(arms, name, reliable):
    """The closed form's in-limit branches (few numpy calls on the whole array; the least-squares ones ordered
    only when kept, :meth:`_nearest_first`) are those of the plain row-by-row computation, bit for bit, in
    the same order, with eaik's least-squares flags trusted and checked (the test arms' flags are not all
    reliable; Baxter's and the xArm6's are): targets of random configurations, references and swept values
    random within limits."""
    a = arms[name]
    s = near_decomposable_solver_for(a.m, "tool")
    rng = np.random.default_rng(5)
    kinds = set()
    kept = s._flags_reliable
    s._flags_reliable = reliable
    try:
        for q, ref in zip(a.sample(rng, 60), a.sample(rng, 60)):
            T = a.pose(q)
            for v in ([None] if s.swept is None else [float(ref[s.swept]), float(rng.uniform(-LIMIT, LIMIT))]):
                Q, ex = s._branches(T, ref, v, s._turns.start(ref))
                if Q is not None and not ex:
                    Q = s._nearest_first(Q, ref)
                P, pex = _plain_branches(s, T, ref, v)
                assert ex == pex
                assert (Q is None) == (P is None)
                if Q is not None:
                    assert Q.shape == P.shape and np.array_equal(Q, P)
                kinds.add(None if Q is None else ex)
    finally:
        s._flags_reliable = kept
    assert kinds - {None} and (reliable or True in kinds)       # branches found, exact ones among them


def test_swept_values_tried_are_the_hints_clipped_then_the_ends_then_outward_steps(arms):
    """A 7R chain's tries after the seed's swept value (one column's clip for the hints): each hint's value
    clipped to the swept joint's range, in the hints' order, then the range's ends other than the seed's, then
    the outward steps within the range -- compared with the plain formula row by row."""
    a = arms["baxter_like"]
    s = near_decomposable_solver_for(a.m, "tool")
    lo, hi, out = s._sweep
    rng = np.random.default_rng(2)
    j = s.swept
    for _ in range(20):
        x0 = a.sample(rng, 1)[0]
        hints = rng.uniform(-2 * LIMIT, 2 * LIMIT, (8, len(x0)))        # some beyond the range: clipped
        v0 = min(max(float(x0[j]), lo), hi)
        want = [(None, min(max(float(h[j]), lo), hi)) for h in hints]
        want += [(None, v) for v in (lo, hi) if v != v0]
        want += [(None, v) for v in (v0 + out).tolist() if lo <= v <= hi]
        assert s._tries(x0, hints) == want
        assert s._tries(x0, ()) == want[8:]


def test_a_swept_first_joint_is_next_tried_pointed_at_the_target(monkeypatch):
    """Baxter (example-robot-data), whose swept joint is its first (the shoulder yaw): when the seed's value
    gives no in-limit branch, the value that points the arm at the target (:func:`~.swept_aim.toward`) is
    tried before the seed table's hints and gives one more often: fewer solves from mid-range
    seeds need more than two tries, the seed's value still first. Every answer judged by Pinocchio."""
    from mechanism_model_core.ik.closed_form.near_decomposable import NearDecomposableSolver

    from .test_ik_lm_arms import ERD, _Arm
    if ERD is None:
        pytest.skip("example-robot-data is not installed")
    a = _Arm("baxter_description/urdf/baxter.urdf", "left_hand_link")
    s = near_decomposable_solver_for(a.m, a.tip)
    assert s.swept == 0 and s._aim is not None
    mid = a.full(0.5 * (a.lo + a.hi))
    branches = NearDecomposableSolver._branches
    held = []

    def spy(self, T, ref, v, base):
        held.append(v)
        return branches(self, T, ref, v, base)

    monkeypatch.setattr(NearDecomposableSolver, "_branches", spy)
    Q = a.lo + np.random.default_rng(23).random((60, len(a.lo))) * (a.hi - a.lo)
    tries = {}
    for aim in (s._aim, None):
        monkeypatch.setattr(s, "_aim", aim)
        tries[aim is None] = []
        for q in Q:
            T = a.pose(q)
            held.clear()
            r = solve_ik(a.m, PoseConstraint(a.tip, T), mid, solver=s, timeout=SAFETY, tol_position=1e-6,
                         tol_orientation=1e-6)
            assert r.success and max(a.errors(r.q[a.coords], T)) <= 1e-6
            assert np.all(r.q >= a.m.lower_limits - 1e-12) and np.all(r.q <= a.m.upper_limits + 1e-12)
            assert held[0] == 0.5 * (a.lo[0] + a.hi[0])           # the seed's value first
            tries[aim is None].append(len(held))
    beyond = {k: sum(t > 2 for t in v) for k, v in tries.items()}        # more than two tries each
    assert beyond[False] * 2 <= beyond[True], tries                       # measured 5 against 17 of 60


@pytest.mark.parametrize("v", [-1.2, -0.3, 0.0, 0.7, 1.5])
def test_the_aim_of_a_first_joint_turn_is_that_turn(v):
    """A pose reached by turning only the first joint by ``v`` (a tilted axis off the origin) is aimed at by
    ``v`` itself; beyond the range it is clamped; a wrist point on the axis has no aim."""
    from mechanism_model_core.ik.closed_form.swept_aim import aim_geometry, toward
    from mechanism_model_core.spatial import axis_angle_matrix
    h = np.array([0.2, -0.1, 1.0]) / np.linalg.norm([0.2, -0.1, 1.0])
    H = np.array([h, [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    O = np.array([[0.1, 0.2, 0.0], [0.1, 0.2, 0.3], [0.6, 0.1, 0.5]])
    Tf = np.eye(4)
    Tf[:3, :3] = axis_angle_matrix(np.array([0.3, 0.5, -0.2]) / np.linalg.norm([0.3, 0.5, -0.2]), 0.8)
    Tf[:3, 3] = [0.8, 0.0, 0.45]
    R = np.eye(4)
    R[:3, :3] = axis_angle_matrix(h, v)
    R[:3, 3] = O[0] - R[:3, :3] @ O[0]                                # the turn about the first axis
    aim = aim_geometry(H, O, Tf)
    assert toward(aim, R @ Tf, -math.pi, math.pi) == pytest.approx(v, abs=1e-12)
    assert toward(aim, R @ Tf, -0.1, 0.1) == pytest.approx(min(max(v, -0.1), 0.1), abs=1e-12)
    O2 = O.copy()
    O2[-1] = O[0] + 0.4 * h
    assert aim_geometry(H, O2, Tf) is None


def test_without_eaik_both_closed_forms_say_how_to_install_it(arms, monkeypatch):
    """Where eaik is absent (the oldest-dependencies run), building either closed form explicitly is an error that
    says what to install, and ``auto`` answers with the population LM."""
    from mechanism_model_core.errors import MechanismModelError
    from mechanism_model_core.ik.closed_form import eaik_solver as eaik_module
    a = arms["baxter_like"]
    monkeypatch.setattr(eaik_module, "_EAIK_MODULE", [None])
    for build in (lambda: NearDecomposableSolver(a.m, "tool"), lambda: EAIKSolver(a.m, "tool")):
        with pytest.raises(MechanismModelError, match=r"needs eaik: pip install eaik .*mechanism_model_core\[eaik\]"):
            build()
    assert near_decomposable_solver_for(a.m, "tool") is None and eaik_solver_for(a.m, "tool") is None


def test_answers_on_a_mechanism_with_coupled_joints_off_the_chain_are_expands(tmp_path):
    """A Baxter-like arm with a gripper whose second finger mimics the first (a coupling off the arm's chain): the
    near closed form hands the result its full coordinates (the seed's with the chain's replaced); they are
    ``IKProblem.expand``'s, the coupled finger at its coupling's value, and Pinocchio puts the tool on the target."""
    text = _urdf("baxter_gripper", *GEOMETRY["baxter_like"]).replace("</robot>", """
<link name="finger_a"/><link name="finger_b"/>
<joint name="fa" type="prismatic"><parent link="l6"/><child link="finger_a"/><axis xyz="0 1 0"/>
<limit lower="0" upper="0.04" effort="1" velocity="1"/></joint>
<joint name="fb" type="prismatic"><parent link="l6"/><child link="finger_b"/><axis xyz="0 -1 0"/>
<limit lower="0" upper="0.04" effort="1" velocity="1"/><mimic joint="fa" multiplier="1" offset="0"/></joint>
</robot>""")
    a = Arm(tmp_path / "baxter_gripper.urdf", text)
    m = a.m
    assert m.couplings and near_decomposable_solver_for(m, "tool") is not None
    rng = np.random.default_rng(31)
    fa, fb = m.coordinate_index("fa"), m.coordinate_index("fb")
    for q, q0 in zip(a.sample(rng, 20), a.sample(rng, 20)):
        q0[fa] = q0[fb] = 0.013                                     # the gripper open at the seed
        T = a.pose(q)
        r = solve_ik(m, PoseConstraint("tool", T), q0, timeout=SAFETY, tol_position=TOL, tol_orientation=TOL)
        assert r.success and r.solver == "near-eaik", r
        P = IKProblem(m, [PoseConstraint("tool", T)], q0)
        assert np.array_equal(r.q, P.expand(P.x_of(r.q))) and r.q[fa] == r.q[fb] == 0.013
        assert a.judge(r.q, T)
