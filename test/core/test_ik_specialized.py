"""Specialized (closed-form) IK: the yaw-pitch-pitch-pitch-yaw solver against forward kinematics and against
the generic solver; registration overrides the generic solver; non-YPPPY arms are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.constraints import PoseConstraint, PositionConstraint, log_so3
from mechanism_model_core.errors import ModelStructureError
from mechanism_model_core.ik import solve_ik
from mechanism_model_core.library import model_path
from mechanism_model_core.specialized import (YPPPYSolver, register_specialized, unregister_specialized,
                                              verify_specialized)

from .robots import SAFETY, panda, ur5, ypppy


def test_closed_form_branches_reach_the_pose():
    """Every closed-form branch for a reachable pose reproduces it under forward kinematics; the generating
    configuration is among the branches (modulo whole turns)."""
    m = ypppy(limits=False)
    s = YPPPYSolver(m, "tool")
    rng = np.random.default_rng(0)
    for q in rng.uniform(-math.pi, math.pi, size=(30, 5)):
        T = forward_kinematics(m, q).pose("tool")
        sols = s.all_solutions(T)
        assert 1 <= len(sols) <= 4
        for x in sols:
            F = forward_kinematics(m, x).pose("tool")
            assert np.linalg.norm(F[:3, 3] - T[:3, 3]) < 1e-9
            assert np.linalg.norm(log_so3(F[:3, :3] @ T[:3, :3].T)) < 1e-9
        assert min(np.max(np.abs(np.remainder(x - q + math.pi, 2 * math.pi) - math.pi)) for x in sols) < 1e-7


def test_verify_specialized_against_generic():
    m = ypppy()
    # SAFETY is a safety net: iterations bound the solves (the default 0.2 s let the loaded ci27 cut the generic
    # solver's restarts short on 2 of 40 targets)
    report = verify_specialized(YPPPYSolver(m, "tool"), m, n=40, rng=1, timeout=SAFETY)
    assert report.ok, report.failures[:2]
    assert report.specialized_success == report.generic_success == 40
    assert report.max_position_error < 1e-9 and report.max_orientation_error < 1e-9


def test_mer_idd_instrument_frames_from_the_library():
    """The shipped MER IDD model: closed form for an instrument frame that sits off the turret axis."""
    m = load_model(model_path("mer/mer_idd.xml"))           # shipped: it must load, no skip
    for frame in ("mi", "rat"):
        # SAFETY is a safety net: iterations bound the solves
        report = verify_specialized(YPPPYSolver(m, frame), m, n=25, rng=2, timeout=SAFETY)
        assert report.ok, (frame, report.failures[:1])


def test_registration_overrides_generic_solver():
    m = ypppy()
    register_specialized(m.name, "tool", lambda mech: YPPPYSolver(mech, "tool"))
    try:
        q = np.array([0.4, 0.3, 0.5, -0.6, 1.0])
        T = forward_kinematics(m, q).pose("tool")
        r = solve_ik(m, PoseConstraint("tool", T), m.home, timeout=SAFETY)
        assert r.solver == "ypppy" and r.success and r.iterations == 1
        F = forward_kinematics(m, r.q).pose("tool")
        assert np.linalg.norm(F[:3, 3] - T[:3, 3]) < 1e-9
        # a problem it does not cover goes to the generic solver
        r = solve_ik(m, PositionConstraint("tool", T[:3, 3]), m.home, timeout=SAFETY)
        assert r.solver == "dls" and r.success
        # an explicit name still selects the generic solver
        assert solve_ik(m, PoseConstraint("tool", T), m.home, solver="dls", timeout=SAFETY).solver == "dls"
    finally:
        unregister_specialized(m.name, "tool")
    assert solve_ik(m, PoseConstraint("tool", T), m.home, timeout=SAFETY).solver in ("lm", "eaik", "dls")


def test_pose_off_the_5dof_set_returns_compromise():
    """A 5-DOF arm cannot reach an arbitrary 6-D pose: the result says so and stays within limits."""
    m = ypppy()
    T = forward_kinematics(m, [0.4, 0.3, 0.5, -0.6, 1.0]).pose("tool")
    T_bad = T @ _rot_y(0.5)                            # tilts the tool axis out of the reachable set
    r = solve_ik(m, PoseConstraint("tool", T_bad), m.home, solver=YPPPYSolver(m, "tool"), timeout=SAFETY)
    assert not r.success and m.within_limits(r.q)


def _rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1.0]])


@pytest.mark.parametrize("make", [ur5, panda])
def test_non_ypppy_arms_are_refused(make):
    m = make()
    with pytest.raises(ModelStructureError):
        YPPPYSolver(m, m.frame_names[-1])


def test_shipped_mer_idd_uses_the_closed_form_by_default():
    m = load_model(model_path("mer/mer_idd.xml"))           # shipped: it must load, no skip
    T = forward_kinematics(m, [0.3, 0.4, 0.8, -0.5, 1.0]).pose("apxs")
    r = solve_ik(m, PoseConstraint("apxs", T), m.home, timeout=SAFETY)
    assert r.success and r.solver == "ypppy"
    F = forward_kinematics(m, r.q).pose("apxs")
    assert np.linalg.norm(F[:3, 3] - T[:3, 3]) < 1e-9


def test_registered_factory_that_refuses_leaves_generic_solver():
    m = ur5()
    register_specialized(m.name, "tool", lambda mech: YPPPYSolver(mech, "tool"))   # UR5 is not YPPPY
    try:
        T = forward_kinematics(m, [0.3, -1.0, 1.0, -1.0, -1.0, 0.3]).pose("tool")
        r = solve_ik(m, PoseConstraint("tool", T), np.zeros(6), timeout=SAFETY)
        assert r.success and r.solver in ("lm", "eaik")
    finally:
        unregister_specialized(m.name, "tool")
