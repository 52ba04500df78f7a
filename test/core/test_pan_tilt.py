"""Mast look-at: closed-form pan-tilt pointing; the optical axis (REP-103: z of ``*_optical``) through the
target, checked by forward kinematics, over random targets inside the reachable cone; the residual outside it
against a brute-force search of the joint ranges; frames as targets."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mechanism_model_core as mm
from mechanism_model_core.kinematics import forward_kinematics
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.presets import R8MastModel
from mechanism_model_core.ik.closed_form.pan_tilt import pan_tilt_solutions


@pytest.fixture(scope="module")
def mast():
    return R8MastModel(mm.load_model(model_path("rocky8/rocky8_rover.xml")))


def optical_angle(mast, q, target, frame="mast_camera_optical"):
    """Angle between the optical frame's z axis and the target, from forward kinematics alone."""
    T = mast.fk(q, frame)
    d = np.asarray(target) - T[:3, 3]
    z = T[:3, 2]
    return math.atan2(np.linalg.norm(np.cross(z, d)), z @ d)


@settings(max_examples=200, deadline=None)
@given(st.floats(-2.9, 2.9), st.floats(-1.15, 1.35), st.floats(0.3, 20.0), st.floats(-1.0, 1.0),
       st.floats(-1.0, 1.0))
def test_optical_axis_passes_through_random_targets_in_the_cone(mast, pan, tilt, dist, pan0, tilt0):
    """A target is made by looking from a random in-range configuration a random distance along the optical
    axis (so it is inside the cone); solving from another start must aim the axis through it exactly."""
    T = mast.fk(np.array([pan, tilt]), "mast_camera_optical")
    target = T[:3, 3] + dist * T[:3, 2]
    r = mast.point_at(target, q0=np.array([pan0, tilt0]), frame="mast_camera_optical")
    assert r.success and r.reason == "ok"
    assert mast.within_limits(r.q)
    assert optical_angle(mast, r.q, target) < 1e-6
    assert r.error < 1e-9


def test_the_solver_returns_every_exact_solution_and_the_nearest_first(mast):
    target = np.array([2.0, 1.0, -0.5])
    sols = pan_tilt_solutions(mast.chain, "mast_camera_optical", (0, 0, 1), target, limits=False)
    assert 1 <= len(sols) <= 4
    for q in sols:
        assert optical_angle(mast, q, target) < 1e-9
    q_near = np.array([0.4, 0.9])
    near = pan_tilt_solutions(mast.chain, "mast_camera_optical", (0, 0, 1), target, q_near=q_near)
    dist = [np.linalg.norm(q - q_near) for q in near]
    assert near and dist == sorted(dist) and all(mast.within_limits(q) for q in near)
    # the line of sight x of mast_camera is the optical z: the same answer
    a = mast.point_at(target, frame="mast_camera")
    b = mast.point_at(target, frame="mast_camera_optical")
    assert a.q == pytest.approx(b.q, abs=1e-12)


def test_outside_the_cone_the_residual_is_reported_and_minimal(mast):
    target = np.array([0.3, 0.0, -1.45])             # straight down at the mast's foot: tilt limit 1.4 rad
    r = mast.point_at(target, frame="mast_camera_optical", tolerance=1e-6)
    assert not r.success and r.reason == "limits" and mast.within_limits(r.q)
    assert r.error == pytest.approx(optical_angle(mast, r.q, target), abs=1e-9)
    pans = np.linspace(mast.lower[0], mast.upper[0], 121)
    tilts = np.linspace(mast.lower[1], mast.upper[1], 121)
    best = min(optical_angle(mast, np.array([p, t]), target) for p in pans for t in tilts)
    assert r.error <= best + 1e-6 and r.error > 0.05


def test_a_frame_as_target(mast):
    m = mast.mechanism
    r = mast.point_at("left_front_contact", frame="mast_camera_optical")
    fk = forward_kinematics(m, m.home)
    target = (np.linalg.inv(fk.pose("mast_mount")) @ fk.pose("left_front_contact"))[:3, 3]
    assert r.success and optical_angle(mast, r.q, target) < 1e-9
    with pytest.raises(mm.UnknownFrame):
        mast.point_at("no_such_frame")
