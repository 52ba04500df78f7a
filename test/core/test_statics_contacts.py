"""Contact loads against closed forms (a rocker-bogie by moment balance on flat ground and on a slope), and
equilibrium checked independently (free-body sums of forces and moments)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics, load_model
from mechanism_model_core.errors import MechanismModelError, UnknownFrame
from mechanism_model_core.library import model_path
from mechanism_model_core.model import MassProperties
from mechanism_model_core.spatial import rot_y, translation
from mechanism_model_core.statics import (Contact, Payload, center_of_mass, contact_loads, total_mass,
                                          wheel_contacts)

G = np.array([0.0, 0.0, -9.81])


def rocker_bogie(a=0.5, b=0.3, c=0.2, w=0.4, xc=0.05, h=0.35, mass=20.0, pivot_height=0.0,
                 bogie_offset=0.0):
    """A rocker-bogie with all its mass in the chassis (centre of mass (xc, 0, h) from the differential
    pivot). Per side: rocker pivot at y = +-w, front contact ``a`` ahead of it, bogie pivot ``b`` behind it;
    middle and rear contacts at ``+-c`` (+ ``bogie_offset``) about the bogie pivot. Contacts sit
    ``pivot_height`` below the pivots. Right rocker = -left rocker (the differential)."""
    bld = MechanismBuilder("rb")
    bld.add_body("chassis", None, Joint.floating("chassis"), mass=MassProperties(mass, (xc, 0, h), np.eye(3)))
    for side, y in (("left", w), ("right", -w)):
        rocker = f"{side}_rocker"
        kw = {} if side == "left" else {"coupling": "-left_rocker"}
        bld.add_body(rocker, "chassis", Joint(name=rocker, type="revolute", placement=translation(0, y, 0),
                                              axis=(0, 1, 0), actuated=False, **kw))
        bld.add_frame(rocker, f"{side}_front_contact", translation(a, 0, -pivot_height))
        bogie = f"{side}_bogie"
        bld.add_body(bogie, rocker, Joint(name=bogie, type="revolute", placement=translation(-b, 0, 0),
                                          axis=(0, 1, 0), actuated=False))
        bld.add_frame(bogie, f"{side}_middle_contact", translation(c + bogie_offset, 0, -pivot_height))
        bld.add_frame(bogie, f"{side}_rear_contact", translation(-c + bogie_offset, 0, -pivot_height))
    return bld.build()


NAMES = [f"{s}_{p}_contact" for s in ("left", "right") for p in ("front", "middle", "rear")]


def _closed_form(a, b, W_n, W_t, xc, h, mass_side_split=0.5):
    """Per-side normal loads (front, middle, rear) from moment balance about the rocker pivot: the
    differential gives each rocker half the chassis pitch moment; the bogie splits its load equally."""
    total_n = W_n * mass_side_split
    moment = mass_side_split * (W_n * xc - W_t * h)      # sum x_i N_i per side
    # N_f + N_b = total_n ; a N_f - b N_b = moment
    N_f = (moment + b * total_n) / (a + b)
    N_b = total_n - N_f
    return N_f, N_b / 2, N_b / 2


@pytest.mark.parametrize("xc", [0.0, 0.05, -0.1])
@pytest.mark.parametrize("pivot_height", [0.0, 0.25])
def test_rocker_bogie_flat_ground(xc, pivot_height):
    a, b, m = 0.5, 0.3, 20.0
    rover = rocker_bogie(a=a, b=b, xc=xc, mass=m, pivot_height=pivot_height)
    q = {"chassis.z": pivot_height}
    r = contact_loads(rover, q, [Contact(n) for n in NAMES])
    assert r.equilibrium
    Nf, Nm, Nr = _closed_form(a, b, m * 9.81, 0.0, xc, 0.35)
    np.testing.assert_allclose(r.normal_forces, [Nf, Nm, Nr] * 2, atol=1e-8)
    np.testing.assert_allclose(r.tangential_forces, 0, atol=1e-8)
    assert not r.slip.any() and not r.lift.any()
    assert set(r.actuated_torques) == set()          # nothing is actuated on this rover


@pytest.mark.parametrize("slope", [0.1, 0.25])
def test_rocker_bogie_on_a_slope(slope):
    """Pitched up a slope of ``slope`` rad, pivots at contact height (so traction has no moment about them):
    normal loads by moment balance with the downhill weight component acting at the chassis height."""
    a, b, m, xc, h = 0.5, 0.3, 20.0, 0.05, 0.35
    rover = rocker_bogie(a=a, b=b, xc=xc, h=h, mass=m)
    n = rot_y(-slope)[:3, 2]
    q = {"chassis.pitch": -slope}
    r = contact_loads(rover, q, [Contact(nm, n, friction=1.0) for nm in NAMES])
    assert r.equilibrium
    W = m * 9.81
    Nf, Nm, Nr = _closed_form(a, b, W * math.cos(slope), W * math.sin(slope), xc, h)
    np.testing.assert_allclose(r.normal_forces, [Nf, Nm, Nr] * 2, atol=1e-8)
    # traction: the downhill weight component, carried uphill by the contacts
    uphill = rot_y(-slope)[:3, 0]
    assert r.tangential_forces.sum(axis=0) @ uphill == pytest.approx(W * math.sin(slope), rel=1e-9)
    # low friction: least traction already exceeds mu at some contact -> slip reported
    low = contact_loads(rover, q, [Contact(nm, n, friction=0.5 * math.tan(slope)) for nm in NAMES],
                        method="friction")
    assert low.slip.any()


def _free_body_check(rover, q, r, payloads=()):
    """Forces and moments on the whole mechanism sum to zero: contact forces plus weight."""
    fk = forward_kinematics(rover, q)
    M = total_mass(rover) + sum(p.mass for p in payloads)
    c = center_of_mass(rover, q, payloads=payloads)
    F = r.forces.sum(axis=0) + M * G
    pts = np.array([fk.position(ct.frame) for ct in r.contacts])
    Mo = np.cross(pts - c, r.forces).sum(axis=0)
    scale = M * 9.81
    np.testing.assert_allclose(F, 0, atol=1e-7 * scale)
    np.testing.assert_allclose(Mo, 0, atol=1e-7 * scale)


def test_rocky8_free_body_equilibrium_and_drive_torques():
    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    contacts = wheel_contacts(rover, friction=0.8)
    assert len(contacts) == 6 and all(c.wheel for c in contacts)
    q = dict(zip(rover.coordinate_names, rover.home))
    r = contact_loads(rover, q, contacts)
    assert r.equilibrium and not r.lift.any()
    _free_body_check(rover, q, r)
    # on a 15 degree slope (pitched), with a payload on the arm: still equilibrium, drive torques appear
    slope = math.radians(15)
    n = rot_y(-slope)[:3, 2]
    qs = dict(q, **{"chassis.pitch": -slope})
    pay = [Payload("arm_tool", 2.0)]
    rs = contact_loads(rover, qs, wheel_contacts(rover, n, 0.8), payloads=pay)
    assert rs.equilibrium
    _free_body_check(rover, qs, rs, pay)
    drive = {k: v for k, v in rs.actuated_torques.items() if k.endswith("_drive")}
    assert len(drive) == 6 and sum(abs(v) for v in drive.values()) > 1.0
    # the drive torques equal the wheel radius times the rolling-direction traction (0.1 m radius)
    for ct, f in zip(rs.contacts, rs.forces):
        joint = ct.frame.replace("_contact", "_drive")
        fkq = forward_kinematics(rover, rover.configuration(qs))
        axis = fkq.rotation(ct.wheel)[:, 1]
        r_vec = fkq.position(ct.frame) - fkq.position(ct.wheel)
        assert rs.actuated_torques[joint] == pytest.approx(-axis @ np.cross(r_vec, f), abs=1e-8)


def test_lift_off_when_the_centre_of_mass_leaves_the_support():
    """Chassis centre of mass far ahead: the bogie contacts would pull -> lifted, and with only the front
    wheels left no equilibrium exists."""
    rover = rocker_bogie(xc=0.3)             # between pivot and front wheel: rear unloaded? check sign
    r = contact_loads(rover, {}, [Contact(n) for n in NAMES])
    assert r.equilibrium and not r.lift.any()
    far = rocker_bogie(xc=0.8)               # ahead of the front contacts (a = 0.5)
    r2 = contact_loads(far, {}, [Contact(n) for n in NAMES])
    assert r2.lift.any() and not r2.equilibrium


def test_bad_input():
    rover = rocker_bogie()
    with pytest.raises(UnknownFrame):
        contact_loads(rover, {}, [Contact("nowhere")])
    with pytest.raises(MechanismModelError):
        Contact("left_front_contact", friction=-0.1)
    with pytest.raises(MechanismModelError):
        Contact("left_front_contact", normal=(0, 0, 0))
    with pytest.raises(MechanismModelError):
        contact_loads(rover, {}, [Contact(n) for n in NAMES], gravity=(0, math.nan, -9.8))
    with pytest.raises(MechanismModelError):
        contact_loads(rover, {}, [Contact(n) for n in NAMES], method="magic")
    with pytest.raises(MechanismModelError):
        contact_loads(rover, {}, [])


def test_rover_stability_on_a_cross_slope():
    """The test rover rolled sideways by ``phi``: the support-polygon margin and the force-angle agree on the
    downhill side and match the closed form (track 2w, centre of mass h above the contact plane)."""
    from mechanism_model_core.spatial import rot_x
    from mechanism_model_core.statics import mechanism_stability

    w, h = 0.4, 0.35
    rover = rocker_bogie(w=w, h=h, xc=0.0)
    for phi in (0.1, 0.5, 0.9, 1.0):
        q = {"chassis.roll": phi}
        sp = mechanism_stability(rover, q, NAMES, method="support_polygon")
        fa = mechanism_stability(rover, q, NAMES)
        # horizontal distance from the com to the downhill (right, y = -w) wheel line
        expected = w * math.cos(phi) - h * math.sin(phi)
        assert sp.margin == pytest.approx(expected, abs=1e-9)
        assert fa.angle == pytest.approx(math.atan2(w, h) - phi, abs=1e-9)
        assert (sp.margin > 0) == (fa.margin > 0)
        down = rot_x(phi)[:3, 1] * -1
        down_h = down - down[2] * np.array([0, 0, 1.0])
        assert sp.tipover_direction @ (down_h / np.linalg.norm(down_h)) == pytest.approx(1.0)


def test_cli_statics_json_equals_the_core(capsys):
    import json

    from mechanism_model_core.cli import main

    code = main(["statics", "rocky8/rocky8_rover.xml", "--contacts", "wheels", "--q", "arm_shoulder=0.4",
                 "--payload", "arm_tool=1.5", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    q = rover.configuration({"arm_shoulder": 0.4})
    pay = [Payload("arm_tool", 1.5)]
    r = contact_loads(rover, q, wheel_contacts(rover, friction=0.6), payloads=pay)
    np.testing.assert_allclose([c["normal_force"] for c in out["contacts"]], r.normal_forces, atol=1e-9)
    assert out["mass"] == pytest.approx(total_mass(rover) + 1.5)
    assert out["equilibrium"] and out["force_angle_margin"] > 0
    assert main(["statics", "rocky8/rocky8_rover.xml", "--payload", "nowhere=1"]) == 1
    assert "nowhere" in capsys.readouterr().err


def test_friction_method_redistributes_traction_into_the_cones():
    """On a slope the least-traction answer shares traction equally, so the lightest-loaded contact needs the
    most friction; with mu between tan(slope) (the least any distribution needs) and that, the friction
    method finds forces inside every cone while least traction reports a slip."""
    slope = 0.2
    rover = rocker_bogie(xc=0.2, h=0.3)
    n = rot_y(-slope)[:3, 2]
    q = {"chassis.pitch": -slope}
    base = contact_loads(rover, q, [Contact(nm, n, friction=10.0) for nm in NAMES])
    need = base.friction_ratio.max()
    mu = 0.5 * (math.tan(slope) + need)
    assert math.tan(slope) < mu < need
    cs = [Contact(nm, n, friction=mu) for nm in NAMES]
    lt = contact_loads(rover, q, cs)
    assert lt.slip.any()
    fr = contact_loads(rover, q, cs, method="friction")
    assert fr.equilibrium and not fr.slip.any() and not fr.lift.any()
    assert np.all(fr.friction_ratio <= mu * (1 + 1e-6))
    _free_body_check(rover, q, fr)
    # same total load, moved between contacts
    np.testing.assert_allclose(fr.forces.sum(axis=0), lt.forces.sum(axis=0), atol=1e-6)


def _random_contact_problem(rng, rover, slope_max=0.4):
    """Rocky 8 at a random pose of its suspension and arm, pitched and rolled on a random plane: the passive
    rows (A, b) of its contact problem, as contact_loads builds them."""
    from mechanism_model_core.kinematics import single_pass_output
    from mechanism_model_core.statics import contacts as C
    from mechanism_model_core.statics.gravity import _gravity_full, coupling_jacobian

    q = rover.configuration(rover.random_configuration(rng))
    roll, pitch = rng.uniform(-slope_max, slope_max, 2)
    names = rover.coordinate_names
    q[names.index("chassis.roll")], q[names.index("chassis.pitch")] = roll, pitch
    normal = np.linalg.solve(rot_y(pitch)[:3, :3].T, [0, 0, 1.0])
    cs = tuple(wheel_contacts(rover, normal, 0.8))
    plan, BT = C._contact_plan(rover, cs)[:2]
    D = coupling_jacobian(rover, q)
    J = C._point_jacobians(plan, single_pass_output(rover, q)) @ D
    Aloc = np.matmul(BT, J.reshape(len(cs), 3, -1)).reshape(3 * len(cs), -1)
    _, prow, _ = C._default_passive(rover)
    return Aloc[:, prow].T, (_gravity_full(rover, q, G, None) @ D)[prow], len(cs)


def test_least_traction_kkt_equals_the_svd_route():
    """The fast route (one symmetric KKT solve) and the SVD route (least squares, then least traction in
    the null space, then least norm) are different algorithms for the same answer: they agree on random
    rover poses, and the fast route declines (None) when the normal loads are not determined."""
    from mechanism_model_core.statics import contacts as C

    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    rng = np.random.default_rng(3)
    for _ in range(20):
        A, b, n = _random_contact_problem(rng, rover)
        fast = C._least_traction_kkt(A, b)
        assert fast is not None
        slow = C._lexicographic(A, b, C._tangent_selector(n), 1e-12)
        np.testing.assert_allclose(fast, slow, atol=1e-9 * max(1.0, np.abs(b).max()))
        np.testing.assert_allclose(A @ fast, b, atol=1e-9 * max(1.0, np.abs(b).max()))
    # four coplanar vertical contacts carrying a weight: one normal-load combination is free
    P = np.array([[1, 1, 1, 1], [0.3, 0.3, -0.3, -0.3], [0.2, -0.2, 0.2, -0.2]], float)
    A = np.zeros((5, 12))
    A[:3, 2::3] = P                                    # weight and the two tipping moments: normals
    A[3, 0::3] = A[4, 1::3] = 1.0                      # horizontal balance: tangential
    b = np.array([100.0, 5.0, -3.0, 0.0, 0.0])
    assert C._least_traction_kkt(A, b) is None
    x = C._lexicographic(A, b, C._tangent_selector(4), 1e-12)
    np.testing.assert_allclose(x[2::3], P.T @ np.linalg.solve(P @ P.T, b[:3]), atol=1e-9)


def test_quadruped_on_four_feet_least_norm_normal_loads():
    """HyQ standing on its four feet on flat ground (a walker: the normal loads are indeterminate): no
    traction is needed, and the normal loads are the least-norm ones that carry the weight with zero
    tipping moment about the centre of mass (closed form from the foot positions), the joints' torques
    hold the legs, and the free body balances."""
    import os

    from mechanism_model_core.io.urdf import load_urdf

    path = os.path.join(os.path.dirname(__file__), "..", "data", "robots", "hyq", "hyq.urdf")
    hyq = load_urdf(path, root_joint="floating")
    q = hyq.configuration({"lf_kfe_joint": -1.2, "rf_kfe_joint": -1.2, "lh_kfe_joint": 1.2,
                           "rh_kfe_joint": 1.2, "lf_hfe_joint": 0.6, "rf_hfe_joint": 0.6,
                           "lh_hfe_joint": -0.6, "rh_hfe_joint": -0.6, "root_joint.z": 0.6})
    feet = ["lf_foot", "rf_foot", "lh_foot", "rh_foot"]
    r = contact_loads(hyq, q, [Contact(f, friction=0.7) for f in feet])
    assert r.equilibrium and not r.lift.any() and not r.slip.any()
    np.testing.assert_allclose(r.tangential_forces, 0, atol=1e-8)
    fk = forward_kinematics(hyq, q)
    p = np.array([fk.position(f) for f in feet])
    c = center_of_mass(hyq, q)
    W = total_mass(hyq) * 9.81
    P = np.vstack([np.ones(4), p[:, 0], p[:, 1]])
    expected = P.T @ np.linalg.solve(P @ P.T, W * np.array([1.0, c[0], c[1]]))
    np.testing.assert_allclose(r.normal_forces, expected, atol=1e-8 * W)
    _free_body_check(hyq, q, r)


def test_contact_point_jacobians_equal_the_kinematics_jacobians():
    """The contact points' Jacobians that contact_loads gathers from the kinematics pass: a wheel's contact
    moves as a point of the wheel (``J_v - [p - o]x J_w`` from the wheel's LOCAL_WORLD_ALIGNED Jacobian),
    and with the rocker differential folded in they are that times the coupling Jacobian."""
    from mechanism_model_core.kinematics import single_pass_output
    from mechanism_model_core.spatial import skew
    from mechanism_model_core.statics import contacts as C

    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    cs = tuple(wheel_contacts(rover, friction=0.8))
    plan = C._contact_plan(rover, cs)[0]
    for seed in range(4):
        q = rover.configuration(rover.random_configuration(seed))
        out = single_pass_output(rover, q)
        J = C._point_jacobians(plan, out)
        fk = forward_kinematics(rover, q)
        for i, c in enumerate(cs):
            Jw = fk.jacobian(c.wheel)
            d = fk.position(c.frame) - fk.position(c.wheel)
            np.testing.assert_allclose(J[3 * i:3 * i + 3], Jw[:3] - skew(d) @ Jw[3:], atol=1e-12)
        D = rover.coupling_jacobian(q)
        np.testing.assert_allclose(C._point_jacobians(plan, out, independent=True), J @ D, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), roll=st.floats(-0.3, 0.3), pitch=st.floats(-0.3, 0.3))
def test_rocky8_random_pose_and_slope_balances(seed, roll, pitch):
    """Rocky 8 with its suspension, mast and arm anywhere, on a plane tilted by (roll, pitch) with the
    chassis aligned to it: whenever contact_loads reports equilibrium, the contact forces and the weight
    balance as a free body (forces and moments about the centre of mass), no contact pulls, the passive
    joints carry nothing, and the flags agree with the forces."""
    from mechanism_model_core.spatial import rot_x

    rover = _ROCKY8.setdefault("m", load_model(model_path("rocky8/rocky8_rover.xml")))
    q = rover.configuration(rover.random_configuration(seed))
    names = rover.coordinate_names
    q[names.index("chassis.roll")], q[names.index("chassis.pitch")] = roll, pitch
    normal = (rot_x(roll) @ rot_y(pitch))[:3, 2]
    r = contact_loads(rover, q, wheel_contacts(rover, normal, 0.8))
    if not r.equilibrium:
        return
    _free_body_check(rover, q, r)
    assert np.all(r.normal_forces >= -1e-9)
    np.testing.assert_array_equal(r.lift, r.normal_forces <= 1e-9 * max(1.0, np.abs(r.normal_forces).max()))
    np.testing.assert_array_equal(r.slip, ~r.lift & (r.friction_ratio > 0.8 * (1 + 1e-9)))
    passive = [r.coordinates.index(c) for c in r.passive]
    np.testing.assert_allclose(r.torques[passive], 0, atol=0)


_ROCKY8: dict = {}
