"""Generalized gravity, applied wrenches, centre of mass and its Jacobian.

Oracles: Pinocchio (``computeGeneralizedGravity``, ``computeStaticTorque``, ``centerOfMass``,
``jacobianCenterOfMass``, subtree centres of mass) on the vendored URDFs with inertials; closed forms for
planar arms, a prismatic column and a payload; virtual work by finite differences of the potential energy.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics, jacobian
from mechanism_model_core.errors import InvalidConfiguration, MechanismModelError, UnknownFrame
from mechanism_model_core.io.urdf import load_urdf
from mechanism_model_core.model import MassProperties
from mechanism_model_core.spatial import euler_to_matrix, matrix_to_quaternion, rot_x, translation
from mechanism_model_core.statics import (Payload, Wrench, center_of_mass, com_jacobian, gravity_torques,
                                          mass_model, static_torques, total_mass, wrench_torques)

from .optional_deps import require

try:
    import pinocchio as pin
except ImportError:          # the oldest-dependencies run; the main CI run fails in needs_pin instead
    pin = None


@pytest.fixture(scope="module")
def needs_pin():
    require("pinocchio", "test")

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")
URDFS = ["ur5/ur5.urdf", "panda/panda.urdf", "hyq/hyq.urdf", "pr2/pr2.urdf", "osr_rover/osr_rover.urdf"]
G = np.array([0.0, 0.0, -9.81])
TOL = 1e-9

_CACHE = {}


def _models(rel):
    if rel not in _CACHE:
        path = os.path.join(DATA, rel)
        m = load_urdf(path)
        pm = pin.buildModelFromUrdf(path) if pin is not None else None
        _CACHE[rel] = (m, pm)
    return _CACHE[rel]


def _pin_q(pm, m, q):
    values = dict(zip(m.coordinate_names, q))
    qp = pin.neutral(pm)
    for j in range(1, pm.njoints):
        jm, name = pm.joints[j], pm.names[j]
        if jm.nq == 1:
            qp[jm.idx_q] = values[name]
        elif jm.nq == 2:
            qp[jm.idx_q:jm.idx_q + 2] = [math.cos(values[name]), math.sin(values[name])]
        elif "FreeFlyer" in jm.shortname():        # ours: x, y, z and intrinsic x-y-z Euler angles
            R = euler_to_matrix("xyz", [values[f"{name}.{c}"] for c in ("roll", "pitch", "yaw")])
            qp[jm.idx_q:jm.idx_q + 3] = [values[f"{name}.{c}"] for c in "xyz"]
            qp[jm.idx_q + 3:jm.idx_q + 7] = matrix_to_quaternion(R)
        else:  # pragma: no cover - the vendored URDFs have no other kind
            raise AssertionError(jm.shortname())
    return qp


def _pin_cols(pm, m):
    """Pinocchio's velocity index of each of our coordinates."""
    return [pm.joints[pm.getJointId(n)].idx_v for n in m.coordinate_names]


def _welded_mass(m, pm):
    """Mass welded to the ground (root link and fixed children): ours counts it, Pinocchio's centre of
    mass leaves out what hangs on the universe joint."""
    return total_mass(m) - pin.computeTotalMass(pm)


@pytest.mark.usefixtures("needs_pin")
@pytest.mark.parametrize("rel", URDFS)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_gravity_com_and_jacobian_match_pinocchio(rel, seed):
    m, pm = _models(rel)
    d = pm.createData()
    q = m.random_configuration(seed)
    qp = _pin_q(pm, m, q)
    cols = _pin_cols(pm, m)
    g_pin = pin.computeGeneralizedGravity(pm, d, qp)[cols]
    np.testing.assert_allclose(gravity_torques(m, q, coordinates="full"), g_pin, atol=TOL)
    # centre of mass: ours includes the welded bodies; remove them to compare
    M_pin = pin.computeTotalMass(pm)
    c_pin = pin.centerOfMass(pm, d, qp)
    mm = mass_model(m)
    fk = forward_kinematics(m, q)
    welded = [i for i, b in enumerate(m.bodies) if mm.body_segment[i] == 0 and mm.body_mass[i] > 0]
    h_welded = sum((mm.body_mass[i] * (fk.pose(m.bodies[i].name) @ np.append(m.bodies[i].mass.com, 1))[:3]
                    for i in welded), np.zeros(3))
    M = total_mass(m)
    assert M == pytest.approx(M_pin + sum(mm.body_mass[i] for i in welded), abs=1e-12)
    np.testing.assert_allclose(center_of_mass(m, q) * M, c_pin * M_pin + h_welded, atol=TOL)
    Jc = pin.jacobianCenterOfMass(pm, d, qp)[:, cols]
    np.testing.assert_allclose(com_jacobian(m, q) * M, Jc * M_pin, atol=TOL)


@pytest.mark.usefixtures("needs_pin")
@pytest.mark.parametrize("rel", ["ur5/ur5.urdf", "pr2/pr2.urdf"])
def test_any_gravity_vector_matches_pinocchio(rel):
    """A gravity vector other than the default (a tilted base, another planet) on every path: the
    single-configuration fast path, the batch and the general path with a payload of zero mass."""
    m, pm = _models(rel)
    pm2 = pin.Model(pm)
    d = pm2.createData()
    rng = np.random.default_rng(5)
    cols = _pin_cols(pm, m)
    for k in range(3):
        g = rng.normal(size=3) * 5
        pm2.gravity.linear = g
        q = m.random_configuration(20 + k)
        g_pin = pin.computeGeneralizedGravity(pm2, d, _pin_q(pm2, m, q))[cols]
        np.testing.assert_allclose(gravity_torques(m, q, gravity=g, coordinates="full"), g_pin, atol=TOL)
        np.testing.assert_allclose(gravity_torques(m, q[None], gravity=g, coordinates="full")[0], g_pin, atol=TOL)
        np.testing.assert_allclose(gravity_torques(m, q, gravity=g, coordinates="full",
                                                   payloads=[Payload(m.frame_names[-1], 0.0)]), g_pin, atol=TOL)


@pytest.mark.usefixtures("needs_pin")
@pytest.mark.parametrize("rel", ["ur5/ur5.urdf", "hyq/hyq.urdf", "panda/panda.urdf"])
def test_subtree_com_matches_pinocchio(rel):
    m, pm = _models(rel)
    d = pm.createData()
    q = m.random_configuration(7)
    qp = _pin_q(pm, m, q)
    pin.centerOfMass(pm, d, qp, True)
    pin.jacobianCenterOfMass(pm, d, qp, True)
    checked = 0
    for j in range(1, pm.njoints):
        child = m.child_body_of_joint(pm.names[j])
        if d.mass[j] <= 0:
            continue
        np.testing.assert_allclose(center_of_mass(m, q, subtree=child), d.com[j], atol=TOL)
        assert total_mass(m, child) == pytest.approx(d.mass[j], abs=1e-12)
        Jp = pin.jacobianSubtreeCenterOfMass(pm, d, qp, j)
        np.testing.assert_allclose(com_jacobian(m, q, subtree=child), Jp[:, _pin_cols(pm, m)], atol=TOL)
        checked += 1
    assert checked >= 5


@pytest.mark.usefixtures("needs_pin")
@pytest.mark.parametrize("rel", ["ur5/ur5.urdf", "panda/panda.urdf", "hyq/hyq.urdf"])
def test_static_torque_matches_pinocchio(rel):
    """Wrenches in each link's own frame at its origin are Pinocchio's per-joint external forces."""
    m, pm = _models(rel)
    d = pm.createData()
    rng = np.random.default_rng(3)
    q = m.random_configuration(11)
    qp = _pin_q(pm, m, q)
    fext = pin.StdVec_Force()
    wrenches = []
    for j in range(pm.njoints):
        f = rng.normal(size=6) * 20
        fext.append(pin.Force(f[:3], f[3:]) if j else pin.Force.Zero())
        if j:
            link = m.child_body_of_joint(pm.names[j])
            wrenches.append(Wrench(link, f[:3], f[3:], expressed_in=link))
    tau_pin = pin.computeStaticTorque(pm, d, qp, fext)[_pin_cols(pm, m)]
    np.testing.assert_allclose(static_torques(m, q, G, wrenches, coordinates="full"), tau_pin, atol=1e-8)
    # the same wrenches expressed in the ground frame give the same torques
    fk = forward_kinematics(m, q)
    world = [Wrench(w.frame, fk.rotation(w.frame) @ w.force, fk.rotation(w.frame) @ w.torque) for w in wrenches]
    np.testing.assert_allclose(static_torques(m, q, G, world, coordinates="full"), tau_pin, atol=1e-8)


HUMANOID = "romeo/romeo.urdf"


def _humanoid():
    """Romeo (Aldebaran), 55 revolute joints (22 of them mimic couplings in the hands) on a free-flyer:
    ours with ``root_joint="floating"``, Pinocchio's with ``JointModelFreeFlyer`` (mimic joints read as
    independent, so every coordinate is compared)."""
    if HUMANOID not in _CACHE:
        import warnings

        path = os.path.join(DATA, HUMANOID)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # a few hand axes are 2e-7 short of unit length
            m = load_urdf(path, root_joint="floating")
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if pin is not None else None
        _CACHE[HUMANOID] = (m, pm)
    return _CACHE[HUMANOID]


def _base_map(m, q):
    """Pinocchio's free-flyer velocity is the base twist in the base frame; ours, the rates of x, y, z,
    roll, pitch, yaw. ``Phi`` (6, 6) maps ours to theirs (the base's LOCAL Jacobian columns of the
    floating coordinates), so by virtual work our base torques are ``Phi^T`` theirs."""
    return jacobian(m, q, m.child_body_of_joint("root_joint"), convention="LOCAL")[:, :6]


@pytest.mark.usefixtures("needs_pin")
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_humanoid_on_a_free_flyer_matches_pinocchio(seed):
    """computeGeneralizedGravity, computeStaticTorque, centerOfMass and jacobianCenterOfMass on a
    humanoid with a floating base, every coordinate (the base through ``Phi``), to 1e-9."""
    m, pm = _humanoid()
    d = pm.createData()
    assert m.nq == 61 and pm.nv == 61
    q = m.random_configuration(seed)
    q[:3] = np.random.default_rng(seed).uniform(-2, 2, 3)
    qp = _pin_q(pm, m, q)
    Phi = _base_map(m, q)
    cols = [pm.joints[pm.getJointId(n)].idx_v for n in m.coordinate_names[6:]]

    def ours_vs_pin(tau, tau_pin, tol):
        np.testing.assert_allclose(tau[6:], tau_pin[cols], atol=tol)
        np.testing.assert_allclose(tau[:6], Phi.T @ tau_pin[:6], atol=tol)

    g_pin = pin.computeGeneralizedGravity(pm, d, qp)
    ours_vs_pin(gravity_torques(m, q, coordinates="full"), g_pin, TOL)
    ours_vs_pin(gravity_torques(m, q[None], coordinates="full")[0], g_pin, TOL)      # the batch path
    # a wrench on every link, in the link's own frame: Pinocchio's per-joint external forces
    rng = np.random.default_rng(seed)
    fext = pin.StdVec_Force()
    wrenches = []
    for j in range(pm.njoints):
        f = rng.normal(size=6) * 20
        fext.append(pin.Force(f[:3], f[3:]) if j else pin.Force.Zero())
        if j:
            link = m.child_body_of_joint(pm.names[j])
            wrenches.append(Wrench(link, f[:3], f[3:], expressed_in=link))
    ours_vs_pin(static_torques(m, q, G, wrenches, coordinates="full"),
                pin.computeStaticTorque(pm, d, qp, fext), 1e-8)
    # centre of mass (nothing is welded to the ground here) and its Jacobian
    np.testing.assert_allclose(total_mass(m), pin.computeTotalMass(pm), atol=1e-12)
    np.testing.assert_allclose(center_of_mass(m, q), pin.centerOfMass(pm, d, qp), atol=TOL)
    Jp = pin.jacobianCenterOfMass(pm, d, qp)
    J = com_jacobian(m, q)
    np.testing.assert_allclose(J[:, 6:], Jp[:, cols], atol=TOL)
    np.testing.assert_allclose(J[:, :6], Jp[:, :6] @ Phi, atol=TOL)


def test_humanoid_independent_torques_are_the_potential_energy_gradient():
    """Romeo's mimic-coupled hand joints: torques on the independent coordinates equal central differences
    of the potential energy ``-M g . c`` over them (the chain rule through the couplings, checked without
    our Jacobians)."""
    m, _ = _humanoid()
    indep = m.independent_coordinates
    assert len(indep) < m.nq
    x = m.configuration(m.random_configuration(4))
    xi = np.array([x[m.coordinate_index(c)] for c in indep])
    M = total_mass(m)

    def V(v):
        return -M * G @ center_of_mass(m, dict(zip(indep, v)))

    h = 1e-6
    fd = np.array([(V(xi + h * e) - V(xi - h * e)) / (2 * h) for e in np.eye(len(indep))])
    np.testing.assert_allclose(gravity_torques(m, dict(zip(indep, xi))), fd, atol=1e-6)


def _planar(masses, lengths, com_frac=0.5):
    """Planar arm in the ground's x-z plane (joints about -y... +y), links along body x, uniform rods."""
    b = MechanismBuilder("planar_g")
    parent = None
    for i, (mass, length) in enumerate(zip(masses, lengths)):
        placement = np.eye(4) if i == 0 else translation(lengths[i - 1], 0, 0)
        b.add_body(f"l{i}", parent, Joint.revolute(f"j{i}", placement, axis=(0, 1, 0)),
                   mass=MassProperties(mass, (com_frac * length, 0, 0), np.eye(3) * 0.01))
        parent = f"l{i}"
    b.add_frame(parent, "tool", translation(lengths[-1], 0, 0))
    return b.build()


def test_one_and_two_link_closed_form():
    m1, l1, m2, l2 = 2.0, 1.0, 1.5, 0.8
    one = _planar([m1], [l1])
    for th in (0.0, 0.3, -1.2):
        # rotation about +y by th tips +x down (z = -x sin th): holding torque -m g (l/2) cos th about +y
        assert gravity_torques(one, [th])[0] == pytest.approx(-m1 * 9.81 * 0.5 * l1 * math.cos(th), abs=1e-12)
    two = _planar([m1, m2], [l1, l2])
    for t1, t2 in ((0.0, 0.0), (0.4, -0.9), (-1.0, 2.0)):
        tau = gravity_torques(two, [t1, t2])
        c1, c12 = math.cos(t1), math.cos(t1 + t2)
        exp2 = -m2 * 9.81 * 0.5 * l2 * c12
        exp1 = -9.81 * (m1 * 0.5 * l1 * c1 + m2 * (l1 * c1 + 0.5 * l2 * c12))
        np.testing.assert_allclose(tau, [exp1, exp2], atol=1e-12)
        # a payload at the tool: extra -m_p g (l1 c1 + l2 c12) and -m_p g l2 c12
        mp = 3.0
        taup = gravity_torques(two, [t1, t2], payloads=[Payload("tool", mp)])
        np.testing.assert_allclose(taup - tau, [-mp * 9.81 * (l1 * c1 + l2 * c12), -mp * 9.81 * l2 * c12],
                                   atol=1e-12)
        # the same as a downward force at the tool (J^T f)
        w = Wrench("tool", (0, 0, -mp * 9.81))
        np.testing.assert_allclose(-wrench_torques(two, [t1, t2], [w]), taup - tau, atol=1e-12)


def test_prismatic_column():
    b = MechanismBuilder("column")
    b.add_body("carriage", None, Joint.prismatic("lift", axis=(0, 0, 1)), mass=MassProperties(4.0))
    b.add_body("arm", "carriage", Joint.revolute("turn", translation(0, 0, 0.2), axis=(0, 0, 1)),
               mass=MassProperties(1.0, (0.5, 0, 0)))
    col = b.build()
    np.testing.assert_allclose(gravity_torques(col, [0.3, 1.0]), [5.0 * 9.81, 0.0], atol=1e-12)
    tilted = gravity_torques(col, [0.3, 1.0], gravity=(9.81, 0, 0))   # gravity along +x: turn sees it
    assert tilted[0] == pytest.approx(0.0, abs=1e-12)
    assert tilted[1] == pytest.approx(1.0 * 9.81 * 0.5 * math.sin(1.0), abs=1e-12)


@pytest.mark.parametrize("rel", ["ur5/ur5.urdf", "hyq/hyq.urdf"])
def test_virtual_work_by_finite_differences(rel):
    """g(q) is the gradient of the potential energy V = -M g . c(q): central differences of V."""
    m, _ = _models(rel)
    q = m.random_configuration(5)
    M = total_mass(m)

    def V(x):
        return -M * G @ center_of_mass(m, x)

    h = 1e-6
    fd = np.array([(V(q + h * e) - V(q - h * e)) / (2 * h) for e in np.eye(m.nq)])
    np.testing.assert_allclose(gravity_torques(m, q), fd, atol=1e-6)
    # wrenches: tau . dq = f . dx + n . dtheta for a small displacement
    w = Wrench("lf_foot" if "hyq" in rel else "wrist_3_link", (3.0, -2.0, 5.0), (0.5, 0.1, -0.2))
    tau = wrench_torques(m, q, [w])
    dq = np.random.default_rng(1).normal(size=m.nq) * 1e-6
    fk0, fk1 = forward_kinematics(m, q), forward_kinematics(m, q + dq)
    dx = fk1.position(w.frame) - fk0.position(w.frame)
    dR = fk1.rotation(w.frame) @ fk0.rotation(w.frame).T
    dtheta = np.array([dR[2, 1] - dR[1, 2], dR[0, 2] - dR[2, 0], dR[1, 0] - dR[0, 1]]) / 2
    assert tau @ dq == pytest.approx(w.force @ dx + w.torque @ dtheta, rel=1e-4, abs=1e-12)


def test_couplings_chain_rule():
    """A coupled joint: the torque on the independent coordinate is the virtual-work sum over both."""
    b = MechanismBuilder("coupled")
    b.add_body("a", None, Joint.revolute("j1", axis=(0, 1, 0)), mass=MassProperties(1.0, (0.5, 0, 0)))
    b.add_body("b", "a", Joint(name="j2", type="revolute", placement=translation(1, 0, 0), axis=(0, 1, 0),
                                coupling="0.5*j1 + 0.1"), mass=MassProperties(2.0, (0.4, 0, 0)))
    b.add_body("c", "b", Joint(name="j3", type="revolute", placement=translation(0.8, 0, 0),
                               axis=(0, 1, 0), coupling="sin(j1)"), mass=MassProperties(0.5, (0.2, 0, 0)))
    m = b.build()
    assert m.independent_coordinates == ("j1",)
    x = 0.7
    full = gravity_torques(m, [x], coordinates="full")
    D = m.coupling_jacobian(m.configuration([x]))
    np.testing.assert_allclose(gravity_torques(m, [x]), D.T @ full, atol=1e-12)
    M = total_mass(m)
    h = 1e-6
    fd = (-M * G @ center_of_mass(m, [x + h]) + M * G @ center_of_mass(m, [x - h])) / (2 * h)
    assert gravity_torques(m, [x])[0] == pytest.approx(fd, abs=1e-6)
    X = np.array([[0.1], [0.7], [-0.4]])
    np.testing.assert_allclose(gravity_torques(m, X)[1], gravity_torques(m, [0.7]), atol=1e-12)


@pytest.mark.parametrize("rel", ["panda/panda.urdf", "pr2/pr2.urdf"])
def test_batch_equals_single(rel):
    m, _ = _models(rel)
    Q = m.random_configuration(2, size=6)
    pay = [Payload(m.frame_names[-1], 1.7, (0.02, -0.01, 0.05))]
    tilted = (1.0, -2.0, -9.0)
    for fn in (gravity_torques, lambda mm, q: com_jacobian(mm, q), lambda mm, q: center_of_mass(mm, q),
               lambda mm, q: gravity_torques(mm, q, tilted, coordinates="full"),
               lambda mm, q: gravity_torques(mm, q, payloads=pay)):
        batch = fn(m, Q)
        for k in (0, 3, 5):
            np.testing.assert_allclose(batch[k], fn(m, Q[k]), atol=1e-12)


def test_free_body_equilibrium():
    """A floating base: the base coordinates of g(q) hold the whole weight, and J^T of an upward force
    equal to the weight applied at the centre of mass cancels g exactly (sum of forces and moments zero)."""
    b = MechanismBuilder("free")
    b.add_body("base", None, Joint.floating("float"), mass=MassProperties(5.0, (0.1, 0.0, 0.05)))
    b.add_body("arm", "base", Joint.revolute("j", translation(0.3, 0, 0.2) @ rot_x(0.3), axis=(0, 1, 0)),
               mass=MassProperties(2.0, (0.4, 0.1, 0)))
    m = b.build()
    q = np.array([0.2, -0.1, 0.5, 0.1, -0.2, 0.3, 0.8])
    tau = gravity_torques(m, q)
    c = center_of_mass(m, q)
    M = total_mass(m)
    assert tau[2] == pytest.approx(M * 9.81)          # z force that holds the base
    np.testing.assert_allclose(tau[:2], 0, atol=1e-12)
    # support the mechanism at two points on the base whose forces balance the weight (moment about c zero)
    fk = forward_kinematics(m, q)
    p_base = fk.position("base")
    up = np.array([0, 0, M * 9.81])
    # carry the whole weight as a force through the centre of mass, applied on the base at its origin
    # plus the couple (c - p) x F: resultant and moment about c then vanish on the base side
    torque = np.cross(c - p_base, up)
    res = static_torques(m, q, G, [Wrench("base", up, torque)])
    np.testing.assert_allclose(res[:6], 0, atol=1e-9)    # the base needs nothing else
    assert abs(res[6]) > 1e-3                           # the arm joint still holds its own link


def test_bad_input():
    m, _ = _models("ur5/ur5.urdf")
    q = m.random_configuration(0)
    with pytest.raises(InvalidConfiguration):
        gravity_torques(m, q, gravity=(0, 0, math.nan))
    with pytest.raises(InvalidConfiguration):
        gravity_torques(m, q, gravity=(0, 9.81))
    with pytest.raises(UnknownFrame):
        gravity_torques(m, q, payloads=[Payload("nowhere", 1.0)])
    with pytest.raises(MechanismModelError):
        Payload("tool0", -1.0)
    with pytest.raises(UnknownFrame):
        wrench_torques(m, q, [Wrench("nowhere", (1, 0, 0))])
    with pytest.raises(MechanismModelError):
        Wrench("tool0", (1, 0, math.inf))
    with pytest.raises(InvalidConfiguration):
        gravity_torques(m, q[:3])
    with pytest.raises(MechanismModelError):
        gravity_torques(m, q, coordinates="some")


@pytest.mark.usefixtures("needs_pin")
def test_kindsl_masses_give_the_urdf_twin_s_gravity():
    """The UR5 KinDSL file (URDF2KinDSL output: centre of mass and inertia in the link frame about its origin,
    products with KinDSL's sign) read by our KinDSL reader: the same generalized gravity and centre of mass as
    its URDF twin read by Pinocchio (the twin rounds pi/2 and the inertias, hence 1e-6)."""
    require("lark", "kindsl")
    from mechanism_model_core.io.kindsl import load_kindsl

    k = load_kindsl(os.path.join(DATA, "ur5_kindsl", "ur5_urdf2kindsl.kindsl"))
    path = os.path.join(DATA, "ur5_kindsl", "ur5_urdf2kindsl.urdf")
    pm = pin.buildModelFromUrdf(path)
    d = pm.createData()
    u = load_urdf(path)
    for seed in range(3):
        qu = u.random_configuration(seed)
        # URDF2KinDSL writes the URDF's fixed joints as KinDSL joints held at 0
        q = dict(zip(k.coordinate_names, np.zeros(k.nq)))
        q.update(zip(u.coordinate_names, qu))
        qp = _pin_q(pm, u, qu)
        g_pin = pin.computeGeneralizedGravity(pm, d, qp)
        g_k = dict(zip(k.coordinate_names, gravity_torques(k, q, coordinates="full")))
        np.testing.assert_allclose([g_k[pm.names[j]] for j in range(1, pm.njoints)],
                                   [g_pin[pm.joints[j].idx_v] for j in range(1, pm.njoints)], atol=1e-5)
