"""The reduced Newton settling solver (locomotion/settling.py) against independent checks: the bilinear
surface it evaluates against HeightField's own heights and finite differences, every wheel rim's lowest
point found by dense sampling of the whole rim (forward kinematics and HeightField.height only), and the
same poses from the general IK."""

import math

import numpy as np
import pytest

import mechanism_model_core as mm
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.settling import _BilinearContacts
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel
from mechanism_model_core.terrain import HeightField, Plane
from .robots import SAFETY

ROVERS = ["rocky8/rocky8_rover", "fido/fido_rover", "rocky7/rocky7_rover", "srr/srr_rover"]


@pytest.fixture(scope="module")
def rocky8():
    return WheeledLocomotorModel(mm.load_model(model_path("rocky8/rocky8_rover.xml")))


def bumpy(spacing=0.05, **kw):
    return HeightField.from_function(lambda x, y: 0.05 * np.sin(1.3 * x) * np.cos(0.9 * y) + 0.02 * np.sin(3.1 * y),
                                     (-2, 4), (-2, 2), spacing, **kw)


def lowest_rim_clearance(W, terrain, q, samples=30001):
    """Per wheel, the least vertical clearance over its whole rim (dense sampling; m)."""
    m = W.mechanism
    fk = mm.forward_kinematics(m, q)
    th = np.linspace(-math.pi, math.pi, samples, endpoint=False)
    out = []
    for w in W.wheels:
        body = m.child_body_of_joint(w.drive_joint)
        c = fk.position(body)
        a = fk.rotation(body) @ m.joint(w.drive_joint).axis
        u = np.cross(a, [1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.cross(a, [0.0, 1.0, 0.0])
        u /= np.linalg.norm(u)
        v = np.cross(a, u)
        P = c + w.radius * (np.cos(th)[:, None] * u + np.sin(th)[:, None] * v)
        out.append(float(np.min(terrain.clearance(P))))
    return np.array(out)


def test_bilinear_surface_matches_the_height_field_and_its_derivatives():
    rng = np.random.default_rng(3)
    for outside in ("clamp", "nan"):
        hf = bumpy(0.07, outside=outside)
        bc = _BilinearContacts(hf, None, 6)
        x = rng.uniform(-1.9, 3.9, 500)
        y = rng.uniform(-1.9, 1.9, 500)
        h, hx, hy, hxy = bc.surface(x, y)
        h_ref, n_ref = hf.height_and_normal(x, y)
        np.testing.assert_allclose(h, h_ref, atol=1e-14)
        np.testing.assert_allclose(-hx / 1.0, n_ref[:, 0] / n_ref[:, 2], atol=1e-12)
        np.testing.assert_allclose(-hy, n_ref[:, 1] / n_ref[:, 2], atol=1e-12)
        e = 1e-6                                        # central differences inside the cells
        fd_x = (hf.height(x + e, y) - hf.height(x - e, y)) / (2 * e)
        fd_xy = (hf.height(x + e, y + e) - hf.height(x + e, y - e) - hf.height(x - e, y + e)
                 + hf.height(x - e, y - e)) / (4 * e * e)
        inside = (np.abs(((x + 2) / 0.07) - np.round((x + 2) / 0.07)) > 1e-4) & \
                 (np.abs(((y + 2) / 0.07) - np.round((y + 2) / 0.07)) > 1e-4)
        np.testing.assert_allclose(hx[inside], fd_x[inside], atol=1e-7)
        np.testing.assert_allclose(hxy[inside], fd_xy[inside], atol=1e-3)
    clamp = _BilinearContacts(bumpy(0.07), None, 6)
    x, y = np.array([-3.0, 5.0, 0.3]), np.array([0.1, 0.2, 3.0])        # beyond the border: flat
    h, hx, hy, _ = clamp.surface(x, y)
    np.testing.assert_allclose(h, bumpy(0.07).height(x, y), atol=1e-14)
    assert hx[0] == hx[1] == hy[2] == 0.0
    assert _BilinearContacts(bumpy(0.07, outside="nan"), None, 6).surface(x, y) is None


@pytest.mark.parametrize("spacing", [0.05, 0.013])
def test_settle_along_a_path_puts_every_rim_on_the_height_field(rocky8, spacing):
    """Warm-started along a path (the previous pose and its rim angles as hints): the lowest point of every
    rim, found by dense sampling, touches the terrain to 1e-7 m (contacts on cell edges included)."""
    hf = bumpy(spacing)
    prev = None
    for x in np.linspace(0.0, 0.6, 10):
        s = rocky8.settle(hf, x, 0.1 - 0.3 * x, 0.3 + 0.5 * x, q0=prev)
        assert s.success, s.reason
        np.testing.assert_allclose(lowest_rim_clearance(rocky8, hf, s.q), 0.0, atol=1e-7)
        np.testing.assert_allclose(hf.clearance(s.points), 0.0, atol=1e-9)
        assert s.rim_angles is not None and s.rim_angles.shape == (6,)
        prev = s


def test_hints_change_the_work_not_the_answer(rocky8):
    hf = bumpy()
    first = rocky8.settle(hf, 0.4, 0.0, 0.2)
    with_hints = rocky8.settle(hf, 0.42, 0.0, 0.2, q0=first)
    without = rocky8.settle(hf, 0.42, 0.0, 0.2, q0=first.q)
    cold = rocky8.settle(hf, 0.42, 0.0, 0.2)
    for s in (with_hints, without, cold):
        assert s.success
    np.testing.assert_allclose(with_hints.q, without.q, atol=1e-8)
    np.testing.assert_allclose(with_hints.q, cold.q, atol=1e-8)
    # a wrong hint (the top of the rim) is caught by the rim check and corrected
    bad = rocky8.settle(hf, 0.42, 0.0, 0.2, q0=first.q, rim_angles=np.full(6, math.pi))
    assert bad.success
    np.testing.assert_allclose(bad.q, cold.q, atol=1e-8)


def test_settle_agrees_with_the_general_ik_on_a_height_field(rocky8):
    hf = bumpy()
    a = rocky8.settle(hf, 0.7, -0.2, 1.0)
    b = rocky8.settle(hf, 0.7, -0.2, 1.0, solver="ik", tol=1e-8, timeout=SAFETY)
    assert a.success and b.success, b.reason
    np.testing.assert_allclose(a.q, b.q, atol=1e-5)


@pytest.mark.parametrize("rover", ROVERS)
def test_every_rover_settles_on_a_slope_and_a_height_field(rover):
    W = WheeledLocomotorModel(mm.load_model(model_path(f"{rover}.xml")))
    for T in (Plane.from_slope(0.15, direction=0.7), bumpy()):
        s = W.settle(T, 0.2, 0.1, 0.4)
        assert s.success, (rover, s.reason)
        np.testing.assert_allclose(lowest_rim_clearance(W, T, s.q, 20001), 0.0, atol=1e-6)


def test_sensitivity_is_the_derivative_of_the_settled_pose(rocky8):
    """``sensitivity`` = d(z, roll, pitch, suspension)/d(x, y, yaw): central differences of settling."""
    hf = bumpy(0.01)
    m = rocky8.mechanism
    s = rocky8.settle(hf, 0.3, 0.1, 0.5, tol=1e-12)
    assert s.success and s.sensitivity.shape == (6, 3)
    unknowns = [m.coordinate_index(c) for c in ("chassis.z", "chassis.roll", "chassis.pitch", "left_rocker",
                                                "left_bogie", "right_bogie")]
    h = 1e-5
    for k, (dx, dy, dyaw) in enumerate(np.eye(3) * h):
        a = rocky8.settle(hf, 0.3 + dx, 0.1 + dy, 0.5 + dyaw, q0=s.q, tol=1e-12)
        b = rocky8.settle(hf, 0.3 - dx, 0.1 - dy, 0.5 - dyaw, q0=s.q, tol=1e-12)
        fd = (a.q[unknowns] - b.q[unknowns]) / (2 * h)
        np.testing.assert_allclose(s.sensitivity[:, k], fd, atol=2e-3 * (1 + np.abs(fd).max()))
