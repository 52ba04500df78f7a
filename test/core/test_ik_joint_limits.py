"""IK targets whose configuration has several joints exactly at their limits (a stow pose, an arm folded
against its stops: poses mission planners ask for): reachable by construction, so every one must be solved,
every answer judged by Pinocchio on the same URDF within the limits; and a target that is merely not found
within the iteration budget is never reported "unreachable".

Arms: the generated test arms of :mod:`.test_ik_near_decomposable` (an xArm7-like arm -- pure closed form with
its axes snapped --, a Baxter-like and an xArm6-like arm -- near-decomposable --) and the SRS arm in
test/data/robots/srs7 (exactly decomposable, its third joint swept). The fixed cases below are the boundary
targets of a 1000-target run that the code before these tests failed (the population LM spent its 10,000
iterations, 650-870 restarts, without an answer; the closed forms' 7R sweep never tried a swept joint's exact
limits). Not yet solved (left out): two xArm7-like targets with five joints at their limits, fractions
(0, 1, 0.5, 1, 0, 1, 0) and (0, 1, 0.5, 1, 0, 0.75, 0.5) (the closed form's sweep finds no branch, the
population LM spends its iterations)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from mechanism_model_core import PoseConstraint
from mechanism_model_core.io.urdf import load_urdf
from mechanism_model_core.ik import eaik_solver_for, solve_ik

from .optional_deps import require
from .robots import SAFETY
from .test_ik_near_decomposable import GEOMETRY, Arm, _urdf

require("eaik", "eaik")
pin = pytest.importorskip("pinocchio")

SRS7 = os.path.join(os.path.dirname(__file__), "..", "data", "robots", "srs7", "srs7.urdf")

#: (arm, target's joints as fractions of their ranges, seed's): boundary targets that failed before
CORNER_CASES = [
    ("baxter_like", [0.0, 0.625, 0.0, 0.0, 1.0, 0.03125, 0.5], [0.5] * 7),     # found by hypothesis
    ("xarm7_like", [0.0, 1.0, 0.5, 1.0, 1.0, 1.0, 0.0], [0.373, 0.7022, 0.6139, 0.0954, 0.6011, 0.8635, 0.3963]),
    ("xarm7_like", [0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.5], [0.96, 0.6624, 0.1278, 0.2903, 0.2166, 0.4764, 0.7813]),
    ("xarm7_like", [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.5], [0.141, 0.4283, 0.9935, 0.2091, 0.3592, 0.3532, 0.9816]),
    ("xarm7_like", [0.0, 1.0, 0.5, 1.0, 1.0, 1.0, 0.0], [0.6134, 0.3569, 0.0466, 0.4311, 0.1825, 0.9553, 0.488]),
    ("xarm6_like", [0.0, 0.0, 0.0, 1.0, 0.75, 0.0], [0.0355, 0.8112, 0.3268, 0.5238, 0.7488, 0.2758]),
    ("xarm6_like", [1.0, 1.0, 1.0, 1.0, 1.0, 0.0], [0.5, 0.0, 0.0, 0.0, 0.5, 1.0]),
    ("xarm6_like", [0.75, 0.0, 0.0, 0.0, 0.75, 1.0], [0.192, 0.5933, 0.8489, 0.8439, 0.8466, 0.1012]),
    ("xarm6_like", [1.0, 1.0, 1.0, 1.0, 0.0, 0.0], [0.9777, 0.8429, 0.9737, 0.347, 0.5009, 0.4387]),
    ("xarm6_like", [1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.3481, 0.3985, 0.8576, 0.8124, 0.6861, 0.5985]),
    ("xarm6_like", [0.0, 0.0, 0.0, 1.0, 0.75, 0.0], [1.0, 1.0, 1.0, 0.5, 0.5, 0.5]),
]


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    d = tmp_path_factory.mktemp("joint_limits")
    return {name: Arm(d / f"{name}.urdf", _urdf(name, *GEOMETRY[name]))
            for name in ("baxter_like", "xarm7_like", "xarm6_like")}


def _config(a, u):
    q = np.array(a.m.home, dtype=float)
    q[a.idx] = a.lo + np.asarray(u, dtype=float) * (a.hi - a.lo)
    return q


@pytest.mark.parametrize("name, u, s", CORNER_CASES)
def test_targets_with_several_joints_at_their_limits_are_solved(arms, name, u, s):
    a = arms[name]
    q, q0 = _config(a, u), _config(a, s)
    assert np.count_nonzero((q[a.idx] == a.lo) | (q[a.idx] == a.hi)) >= 4
    T = a.pose(q)
    for solver in ("auto", "lm"):
        r = solve_ik(a.m, PoseConstraint("tool", T), q0, solver=solver, timeout=SAFETY, tol_position=1e-6,
                     tol_orientation=1e-6)
        assert r.success, (solver, r.reason, r.solver, r.restarts)
        assert a.judge(r.q, T), solver


class _Srs7:
    """The SRS arm: our mechanism and Pinocchio's model (the judge)."""

    def __init__(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.m = load_urdf(SRS7)
        with open(SRS7, encoding="utf-8") as f:
            self.pm = pin.buildModelFromXML(f.read())
        self.pd = self.pm.createData()
        self.fid = self.pm.getFrameId("tool")
        self.idx = [self.m.coordinate_index(self.pm.names[j]) for j in range(1, self.pm.njoints)]
        self.lo, self.hi = self.m.lower_limits[self.idx], self.m.upper_limits[self.idx]

    pose, judge = Arm.pose, Arm.judge


def test_the_closed_form_sweep_reaches_a_swept_joint_held_at_its_limit():
    """SRS arm, 40 stow-like targets (each joint at a limit or a quarter point, the swept joint at a limit),
    random seeds: the pure closed form answers every one (no population LM after it), judged by Pinocchio.
    The sweep stepped outward from the seed's value in 1/64 of the range never hit the exact limit, and about
    one target in 20 of this kind went to the LM (or failed)."""
    a = _Srs7()
    s = eaik_solver_for(a.m, "tool")
    assert s is not None and s.swept is not None
    rng = np.random.default_rng(0)
    n = len(a.idx)
    for _ in range(40):
        u = rng.choice([0.0, 1.0, 0.25, 0.75], size=n, p=[0.35, 0.35, 0.15, 0.15])
        u[s.swept] = rng.choice([0.0, 1.0])
        q = _config(a, u)
        q0 = _config(a, rng.random(n))
        T = a.pose(q)
        r = solve_ik(a.m, PoseConstraint("tool", T), q0, timeout=SAFETY, tol_position=1e-6, tol_orientation=1e-6)
        assert r.success and a.judge(r.q, T), (list(u), r.reason, r.solver)
        assert r.solver == "eaik", (list(u), r.solver)


@pytest.mark.parametrize("solver", ["lm", "dls"])
def test_a_reachable_target_not_found_in_its_budget_is_not_reported_unreachable(arms, solver):
    """Corner targets (reachable by construction) with an iteration budget too small to find some of them:
    the failures say which budget ended the search (or that the compromise is stalled at a limit), never
    "unreachable"; a target beyond the reach bound still is reported "unreachable" at once."""
    a = arms["xarm7_like"]
    rng = np.random.default_rng(4)
    reasons = []
    for _ in range(30):
        q = _config(a, rng.choice([0.0, 1.0, 0.25, 0.75], size=len(a.idx)))
        T = a.pose(q)
        r = solve_ik(a.m, PoseConstraint("tool", T), np.zeros_like(q), solver=solver, max_iterations=60,
                     timeout=SAFETY)
        if r.success:
            assert a.judge(r.q, T)
        else:
            reasons.append(r.reason)
    assert reasons and "unreachable" not in reasons, reasons
    far = np.eye(4)
    far[:3, 3] = [5.0, 0.0, 0.0]
    r = solve_ik(a.m, PoseConstraint("tool", far), np.zeros(a.m.nq), solver="lm", timeout=SAFETY)
    assert not r.success and r.reason == "unreachable"
