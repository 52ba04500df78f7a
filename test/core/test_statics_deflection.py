"""Gravity deflection of compliant joints: an analytic two-link cantilever (the exact nonlinear equilibrium
solved independently), zero compliance equals rigid, and a brute-force scipy energy minimisation on a
6-DOF arm with all six stiffness parameters per joint."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from scipy.optimize import fsolve, minimize

from mechanism_model_core import Joint, MechanismBuilder, edit, forward_kinematics, load_model
from mechanism_model_core.errors import MechanismModelError, NoSolution
from mechanism_model_core.io.urdf import load_urdf
from mechanism_model_core.model import MassProperties
from mechanism_model_core.spatial import translation
from mechanism_model_core.statics import (Payload, Wrench, center_of_mass, compliant_mechanism,
                                          deflected_equilibrium, total_mass)

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")
G = np.array([0.0, 0.0, -9.81])


def two_link(k1, k2, m1=2.0, m2=1.0, L1=1.0, L2=0.8):
    """Horizontal two-link arm along x, joints about y, point masses at the link tips; torsional springs
    ``ty`` at both joints (a cantilever made of two rigid links and two elastic hinges)."""
    b = MechanismBuilder("cantilever")
    b.add_body("l1", None, Joint(name="j1", type="revolute", axis=(0, 1, 0), stiffness=(0, 0, 0, 0, k1, 0)),
               mass=MassProperties(m1, (L1, 0, 0)))
    b.add_body("l2", "l1", Joint(name="j2", type="revolute", placement=translation(L1, 0, 0), axis=(0, 1, 0),
                                 stiffness=(0, 0, 0, 0, k2, 0)), mass=MassProperties(m2, (L2, 0, 0)))
    b.add_frame("l2", "tool", translation(L2, 0, 0))
    return b.build()


@pytest.mark.parametrize("k1,k2", [(2000.0, 800.0), (200.0, 60.0), (40.0, 15.0)])
def test_two_link_cantilever_exact(k1, k2):
    m1, m2, L1, L2, g = 2.0, 1.0, 1.0, 0.8, 9.81
    arm = two_link(k1, k2)
    d = deflected_equilibrium(arm, [0.0, 0.0])
    assert d.converged

    def eqs(p):
        a, b = p              # hinge rotations about +y (positive tips the arm down)
        return [k1 * a - g * (m1 * L1 * math.cos(a) + m2 * (L1 * math.cos(a) + L2 * math.cos(a + b))),
                k2 * b - g * m2 * L2 * math.cos(a + b)]

    a, b = fsolve(eqs, [0.0, 0.0], xtol=1e-13)
    assert d.deflections["j1"][4] == pytest.approx(a, abs=1e-9)
    assert d.deflections["j2"][4] == pytest.approx(b, abs=1e-9)
    np.testing.assert_allclose(np.delete(d.deflections["j1"], 4), 0, atol=1e-12)
    tip = d.pose("tool")[:3, 3]
    np.testing.assert_allclose(tip, [L1 * math.cos(a) + L2 * math.cos(a + b), 0,
                                     -L1 * math.sin(a) - L2 * math.sin(a + b)], atol=1e-9)
    sag = d.frame_deflection("tool")
    assert sag[2] == pytest.approx(tip[2], abs=1e-9) and sag[4] == pytest.approx(a + b, abs=1e-9)
    if k1 >= 2000:        # stiff: the linear cantilever formula is within a few percent of the exact one
        lin_a = g * (m1 * L1 + m2 * (L1 + L2)) / k1
        assert a == pytest.approx(lin_a, rel=0.05) and a != pytest.approx(lin_a, rel=1e-9)


def test_zero_compliance_is_rigid():
    arm = two_link(0.0, 0.0)        # 0 = not given = rigid
    d = deflected_equilibrium(arm, [0.3, -0.2])
    assert d.deflections == {} and d.iterations == 0
    np.testing.assert_allclose(d.pose("tool"), forward_kinematics(arm, [0.3, -0.2]).pose("tool"), atol=1e-15)
    stiff = two_link(1e13, 1e13)
    ds = deflected_equilibrium(stiff, [0.3, -0.2])
    np.testing.assert_allclose(ds.pose("tool"), forward_kinematics(arm, [0.3, -0.2]).pose("tool"), atol=1e-11)


def _ur5_compliant():
    m = load_urdf(os.path.join(DATA, "ur5", "ur5.urdf"))
    b = edit(m)
    rng = np.random.default_rng(4)
    for j in m.joints:
        if j.dof:
            k = np.concatenate([rng.uniform(2e4, 8e4, 3), rng.uniform(800, 3000, 3)])
            b.set_joint(m.child_body_of_joint(j.name), j.with_(stiffness=tuple(k)))
    return b.build()


def test_energy_minimisation_6dof_arm():
    """The Newton fixed point equals scipy's minimum of spring + gravity + load potential (computed from the
    centre of mass and frame positions, not from torques)."""
    arm = _ur5_compliant()
    q = np.array([0.3, -1.1, 1.4, -0.6, 1.2, 0.4])
    pay = [Payload("wrist_3_link", 1.5, (0, 0, 0.1))]
    force = np.array([5.0, -3.0, -20.0])
    d = deflected_equilibrium(arm, q, wrenches=[Wrench("tool0", force)], payloads=pay)
    assert d.converged and d.iterations >= 2          # nonlinear: more than one linear step
    aug = compliant_mechanism(arm)
    names = aug.coordinate_names
    idx = [names.index(f"{j.name}__deflection.{c}") for j in arm.joints if j.dof
           for c in ("x", "y", "z", "roll", "pitch", "yaw")]
    Kd = np.concatenate([np.array(j.stiffness) for j in arm.joints if j.dof])
    base = np.array(aug.home)
    for c, v in zip(arm.coordinate_names, q):
        base[names.index(c)] = v
    M = total_mass(aug) + 1.5
    p0 = forward_kinematics(aug, base).position("tool0")

    def V(u):
        x = base.copy()
        x[idx] = u
        grav = -M * G @ center_of_mass(aug, x, payloads=pay)
        work = force @ (forward_kinematics(aug, x).position("tool0") - p0)
        return 0.5 * np.sum(Kd * u * u) + grav - work

    scale = 1.0 / np.sqrt(Kd)          # precondition: minimise over u = scale * v
    res = minimize(lambda v: V(scale * v), np.zeros(len(idx)), method="BFGS", options={"gtol": 1e-10})
    u_ref = scale * res.x
    u_ours = d.q[idx]
    np.testing.assert_allclose(u_ours, u_ref, atol=2e-7)
    assert np.abs(u_ours).max() > 1e-4                  # it did deflect


def test_stiffness_from_a_claraty_file(tmp_path):
    xml = tmp_path / "flex.xml"
    xml.write_text("""<?xml version="1.0"?>
<!DOCTYPE Mechanism_Model SYSTEM "mechanism_model.dtd">
<Mechanism_Model name="flex" version="1.0">
  <ME_Body name="link">
    <ME_Joint name="hinge" type="revolute" axis="0 1 0">
      <Joint_Stiffness ty="500" kz="1e5"/>
    </ME_Joint>
    <Mass_Properties mass="3"><CM><Transform><Position x="0.5" y="0" z="0"/></Transform></CM></Mass_Properties>
  </ME_Body>
</Mechanism_Model>
""")
    m = load_model(str(xml))
    d = deflected_equilibrium(m, [0.0])
    a = d.deflections["hinge"][4]
    assert 500 * a == pytest.approx(3 * 9.81 * 0.5 * math.cos(a), rel=1e-9)
    assert d.deflections["hinge"][2] == pytest.approx(-3 * 9.81 / 1e5, rel=1e-6)


def test_bad_input():
    arm = two_link(10.0, 10.0, m1=50.0, m2=50.0)
    with pytest.raises(NoSolution):                 # far too soft: falls over, no equilibrium near
        deflected_equilibrium(arm, [0.0, 0.0], max_iterations=5)
    with pytest.raises(MechanismModelError):
        deflected_equilibrium(two_link(100.0, 100.0), [0, 0], gravity=(0, 0, math.nan))


def test_negative_stiffness_in_a_model_file_names_the_line(tmp_path):
    from mechanism_model_core.errors import ModelFileError

    xml = tmp_path / "bad.xml"
    xml.write_text("""<?xml version="1.0"?>
<!DOCTYPE Mechanism_Model SYSTEM "mechanism_model.dtd">
<Mechanism_Model name="bad" version="1.0">
  <ME_Body name="link">
    <ME_Joint name="hinge" type="revolute" axis="0 1 0">
      <Joint_Stiffness ty="-500"/>
    </ME_Joint>
  </ME_Body>
</Mechanism_Model>
""")
    with pytest.raises(ModelFileError) as exc:
        load_model(str(xml))
    assert exc.value.line in (5, 6) and "stiffness" in str(exc.value)


def test_applied_tip_load_dead_and_following():
    """A massless link (length L) on a torsional hinge (ty = k), loaded only by a tip force F (no gravity):
    a *following* load (expressed in the tip frame, it turns with the deflection) gives exactly
    ``k a = F L``; the same force as a *dead* load (ground axes) gives ``k a = F L cos a``, solved here by
    bisection. Both with the tool's sag equal to the rotated tip."""
    from scipy.optimize import brentq

    k, F, L = 200.0, 30.0, 1.0
    b = MechanismBuilder("hinge")
    b.add_body("link", None, Joint(name="j", type="revolute", axis=(0, 0, 1), stiffness=(0, 0, 0, 0, k, 0)),
               mass=MassProperties(0.0))
    b.add_frame("link", "tip", translation(L, 0, 0))
    m = b.build()
    follow = deflected_equilibrium(m, [0.0], gravity=(0, 0, 0), wrenches=[Wrench("tip", (0, 0, -F),
                                                                                 expressed_in="tip")])
    assert follow.deflections["j"][4] == pytest.approx(F * L / k, abs=1e-10)
    dead = deflected_equilibrium(m, [0.0], gravity=(0, 0, 0), wrenches=[Wrench("tip", (0, 0, -F))])
    a = brentq(lambda x: k * x - F * L * math.cos(x), 0.0, 1.0, xtol=1e-14)
    assert dead.deflections["j"][4] == pytest.approx(a, abs=1e-10)
    assert a < F * L / k - 1e-3                      # the two differ measurably at this load
    for d, ang in ((follow, F * L / k), (dead, a)):
        np.testing.assert_allclose(d.pose("tip")[:3, 3], [L * math.cos(ang), 0, -L * math.sin(ang)], atol=1e-9)
        np.testing.assert_allclose(d.spring_wrenches["j"][4], -k * ang, atol=1e-8)
    # the commanded joint (z) holds no load here: its torque at the deflected pose is zero
    assert abs(follow.torques[0]) < 1e-9 and abs(dead.torques[0]) < 1e-9
