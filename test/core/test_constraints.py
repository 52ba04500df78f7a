"""Constraints: Jacobians against finite differences of forward kinematics, couplings, closed chains
(Freudenstein), contact, and the constraint file format."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics
from mechanism_model_core.constraints import (ContactConstraint, Evaluation, JointCoupling,
                                              JointTarget, LoopClosure, OrientationConstraint,
                                              PointAtConstraint, PoseConstraint, PositionConstraint, Posture,
                                              inverse_left_jacobian_so3, log_so3)
from mechanism_model_core.io.constraints_xml import load_constraints
from mechanism_model_core.errors import ExpressionError, ModelFileError, UnknownJoint
from mechanism_model_core.ik import solve_ik
from mechanism_model_core.spatial import rot_x, rot_y, rot_z, translation, axis_angle_matrix

from .robots import SAFETY, ur5


# ---------------------------------------------------------------------------------------------- SO(3)
@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-4, 0.5, 2.0, math.pi - 1e-3, math.pi - 1e-9, math.pi])
def test_log_so3_against_axis_angle(angle):
    rng = np.random.default_rng(int(angle * 1000))
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    phi = log_so3(axis_angle_matrix(axis, angle))
    if angle < math.pi - 1e-6:
        np.testing.assert_allclose(phi, axis * angle, atol=1e-9)
    else:  # at pi the sign of the axis is ambiguous
        np.testing.assert_allclose(axis_angle_matrix(phi / np.linalg.norm(phi), np.linalg.norm(phi)),
                                   axis_angle_matrix(axis, angle), atol=1e-7)


def test_inverse_left_jacobian_against_finite_differences():
    rng = np.random.default_rng(1)
    for _ in range(10):
        phi = rng.normal(size=3)
        phi *= rng.uniform(0.01, 3.0) / np.linalg.norm(phi)
        R = axis_angle_matrix(phi / np.linalg.norm(phi), np.linalg.norm(phi))
        Jinv = inverse_left_jacobian_so3(phi)
        for k in range(3):
            w = np.zeros(3)
            w[k] = 1e-7
            dR = axis_angle_matrix(w / np.linalg.norm(w), 1e-7)      # left (world-side) perturbation
            d = (log_so3(dR @ R) - log_so3(dR.T @ R)) / 2e-7
            np.testing.assert_allclose(d, Jinv[:, k], atol=1e-5)


# ---------------------------------------------------------------------------------------------- Jacobians
def _tree():
    """A branched tree with a prismatic joint, skew axes and offsets: two arms on a turning base."""
    b = MechanismBuilder("tree")
    b.add_body("base", None, Joint.revolute("yaw", translation(0, 0, 0.3), lower=-3, upper=3))
    b.add_body("a1", "base", Joint.revolute("a1", translation(0.1, 0.2, 0.1) @ rot_x(0.4), axis=(0, 1, 0),
                                            lower=-3, upper=3, offset=0.2))
    b.add_body("a2", "a1", Joint.prismatic("a2", translation(0.3, 0, 0), axis=(1, 0, 1), lower=-0.5,
                                           upper=0.5))
    b.add_body("a3", "a2", Joint.revolute("a3", translation(0.2, 0, 0), axis=(1, 1, 0), lower=-3, upper=3))
    b.add_frame("a3", "tool_a", translation(0.1, 0.05, 0.0) @ rot_y(0.3))
    b.add_body("b1", "base", Joint.revolute("b1", translation(-0.1, -0.2, 0.1), axis=(1, 0, 0), lower=-3,
                                            upper=3))
    b.add_body("b2", "b1", Joint.revolute("b2", translation(0, -0.3, 0), axis=(0, 0, 1), lower=-3, upper=3))
    b.add_frame("b2", "tool_b", translation(0, -0.2, 0.05) @ rot_z(0.5))
    return b.build()


CONSTRAINTS = [
    lambda: PoseConstraint("tool_a", translation(0.2, 0.1, 0.5) @ rot_x(0.3) @ rot_y(2.0)),
    lambda: PoseConstraint("tool_a", translation(0.2, 0.1, 0.5) @ rot_z(1.0), relative_to="tool_b"),
    lambda: PoseConstraint("tool_a", translation(0.2, 0.1, 0.5) @ rot_x(1.0), mask=(1, 0, 1, 0, 2, 1),
                           mask_frame="target"),
    lambda: PositionConstraint("tool_b", [0.1, -0.4, 0.2], relative_to="a1"),
    lambda: OrientationConstraint("tool_b", rot_y(0.7)[:3, :3] @ rot_x(2.5)[:3, :3], relative_to="a2"),
    lambda: PointAtConstraint("tool_a", [1.0, 2.0, -0.5], axis=(1, 0, 0)),
    lambda: PointAtConstraint("tool_a", [0.3, 0.2, 0.4], relative_to="tool_b"),
    lambda: ContactConstraint("tool_a", "tool_b", normal_axis=2, opposed=True),
    lambda: ContactConstraint("tool_b", translation(0, 0, 0.1) @ rot_x(0.2), normal_axis=1),
    lambda: LoopClosure("tool_a", "tool_b", mask=(1, 1, 1, 0, 0, 0)),
    lambda: LoopClosure("tool_a", "tool_b"),
    lambda: JointCoupling("a3", "0.5*sin(a1) - b2**2 + 0.1"),
    lambda: JointCoupling("b1", ({"a1": 2.0, "yaw": -1.0}, 0.3)),
    lambda: JointTarget("a2", 0.2),
    lambda: Posture([0.1] * 6, weight=0.5),
]


@pytest.mark.parametrize("k", range(len(CONSTRAINTS)))
def test_constraint_jacobian_matches_finite_differences(k):
    """Every constraint's Jacobian against central differences of its own residual, which each
    constraint computes from forward kinematics poses."""
    m = _tree()
    c = CONSTRAINTS[k]()
    c.check(m)
    rng = np.random.default_rng(k)
    for q in m.random_configuration(rng, size=4):
        r, J = c.evaluate(Evaluation(m, q))
        assert J.shape == (r.shape[0], m.nq)
        h = 1e-6
        for i in range(m.nq):
            qp, qm = q.copy(), q.copy()
            qp[i] += h
            qm[i] -= h
            d = (c.evaluate(Evaluation(m, qp))[0] - c.evaluate(Evaluation(m, qm))[0]) / (2 * h)
            np.testing.assert_allclose(J[:, i], d, atol=2e-6, err_msg=f"{type(c).__name__} column {i}")


def test_pose_residual_is_current_minus_target_in_reference_axes():
    m = _tree()
    q = m.random_configuration(3)
    T_t = translation(0.2, 0.1, 0.5) @ rot_x(0.3)
    r, _ = PoseConstraint("tool_a", T_t, relative_to="b1").evaluate(Evaluation(m, q))
    T = forward_kinematics(m, q).pose("tool_a", relative_to="b1")
    np.testing.assert_allclose(r[:3], T[:3, 3] - T_t[:3, 3], atol=1e-12)
    np.testing.assert_allclose(axis_angle_matrix(r[3:] / np.linalg.norm(r[3:]), np.linalg.norm(r[3:])),
                               T[:3, :3] @ T_t[:3, :3].T, atol=1e-10)


# ---------------------------------------------------------------------------------------------- couplings
def _coupled(kind):
    """Model couplings: ``2*joint1`` on a planar arm, or a differential ``right = -left`` on a rocker pair."""
    b = MechanismBuilder(kind)
    if kind == "double":
        b.add_body("l1", None, Joint.revolute("joint1", lower=-1.5, upper=1.5))
        b.add_body("l2", "l1", Joint.revolute("joint2", translation(1, 0, 0), lower=-3, upper=3,
                                              coupling="2*joint1"))
        b.add_body("l3", "l2", Joint.revolute("joint3", translation(0.8, 0, 0), lower=-3, upper=3))
        b.add_frame("l3", "tip", translation(0.5, 0, 0))
    else:
        b.add_body("body", None, Joint.prismatic("lift", axis=(0, 0, 1), lower=0, upper=1))
        b.add_body("left", "body", Joint.revolute("left", translation(0, 0.5, 0), axis=(0, 1, 0), lower=-0.6,
                                                  upper=0.6))
        b.add_body("right", "body", Joint.revolute("right", translation(0, -0.5, 0), axis=(0, 1, 0),
                                                   lower=-0.4, upper=0.4, coupling="-left"))
        b.add_frame("left", "left_wheel", translation(0.4, 0, -0.3))
        b.add_frame("right", "right_wheel", translation(0.4, 0, -0.3))
    return b.build()


def test_model_coupling_2x_holds_in_every_solution():
    m = _coupled("double")
    rng = np.random.default_rng(2)
    for _ in range(10):
        qi = rng.uniform([-1.5, -3], [1.5, 3])            # independent: joint1, joint3
        target = forward_kinematics(m, qi).position("tip")
        r = solve_ik(m, PositionConstraint("tip", target, mask=(1, 1, 0)), {"joint1": 0.1}, timeout=SAFETY)
        assert r.success, r
        j1, j2, _ = r.q
        assert j2 == pytest.approx(2 * j1, abs=1e-12)
        assert np.linalg.norm(forward_kinematics(m, r.q).position("tip")[:2] - target[:2]) < 1e-6
        assert m.within_limits(r.q)


def test_differential_right_follows_minus_left_and_its_limits():
    """right = -left, and right's tighter limits (+-0.4) bound left too."""
    m = _coupled("differential")
    for z, pitch in ((0.3, 0.2), (0.6, -0.35), (0.5, 0.39)):
        q = m.configuration({"lift": z, "left": pitch})
        target = forward_kinematics(m, q).position("left_wheel")
        r = solve_ik(m, PositionConstraint("left_wheel", target), {"lift": 0.5}, timeout=SAFETY)
        assert r.success, r
        assert r.q[2] == pytest.approx(-r.q[1], abs=1e-12)
        assert np.linalg.norm(forward_kinematics(m, r.q).position("left_wheel") - target) < 1e-6
    # left = 0.5 is within left's limits but would put right at -0.5, beyond its -0.4
    q = np.array([0.5, 0.5, -0.5])
    target = forward_kinematics(m, q).position("left_wheel")
    r = solve_ik(m, PositionConstraint("left_wheel", target), {"lift": 0.5}, timeout=SAFETY, max_iterations=500)
    assert not r.success and m.within_limits(r.q) and r.q[2] == pytest.approx(-r.q[1])


def test_joint_coupling_constraints_linear_and_nonlinear():
    """Couplings given as constraints (not in the model), linear and through an expression."""
    m = ur5()
    target = forward_kinematics(m, [0.3, -1.0, 1.2, -0.5, 0.8, 0.1]).position("tool")
    cs = [PositionConstraint("tool", target),
          JointCoupling("joint6", ({"joint1": 2.0}, 0.1)),
          JointCoupling("joint4", "0.5*sin(joint2) - joint3/4")]
    r = solve_ik(m, cs, np.zeros(6), timeout=SAFETY)
    assert r.success, r
    q = r.q
    assert q[5] == pytest.approx(2 * q[0] + 0.1, abs=1e-5)
    assert q[3] == pytest.approx(0.5 * math.sin(q[1]) - q[2] / 4, abs=1e-5)
    assert np.linalg.norm(forward_kinematics(m, q).position("tool") - target) < 1e-6


def test_joint_coupling_bad_input():
    m = ur5()
    with pytest.raises(ExpressionError):
        JointCoupling("joint1", "__import__('os')").check(m)
    with pytest.raises(UnknownJoint):
        JointCoupling("joint1", ({"nope": 1.0}, 0)).check(m)


# ---------------------------------------------------------------------------------------------- four-bar
def freudenstein(a, b, c, d, theta2, branch):
    """Rocker angle theta4 of a four-bar (ground d, crank a, coupler b, rocker c) for crank angle theta2,
    by Freudenstein's equation K1 cos t4 - K2 cos t2 + K3 = cos(t2 - t4) (Norton, Design of Machinery 4.8)."""
    K1, K2, K3 = d / a, d / c, (a * a - b * b + c * c + d * d) / (2 * a * c)
    A = math.cos(theta2) - K1 - K2 * math.cos(theta2) + K3
    B = -2 * math.sin(theta2)
    C = K1 - (K2 + 1) * math.cos(theta2) + K3
    disc = B * B - 4 * A * C
    return 2 * math.atan2(-B + branch * math.sqrt(disc), 2 * A)


def fourbar(a=0.12, b=0.45, c=0.35, d=0.40):
    """Tree: ground -> crank (at A) -> coupler; ground -> rocker (at D = (d, 0)); frames ``coupler_end``
    and ``rocker_end`` must coincide to close the loop."""
    bld = MechanismBuilder("fourbar")
    bld.add_body("crank", None, Joint.revolute("crank"))
    bld.add_body("coupler", "crank", Joint.revolute("coupler", translation(a, 0, 0), actuated=False))
    bld.add_frame("coupler", "coupler_end", translation(b, 0, 0))
    bld.add_body("rocker", None, Joint.revolute("rocker", translation(d, 0, 0), actuated=False))
    bld.add_frame("rocker", "rocker_end", translation(c, 0, 0))
    return bld.build()


def test_fourbar_passive_joints_follow_crank_per_freudenstein():
    a, b, c, d = 0.12, 0.45, 0.35, 0.40
    m = fourbar(a, b, c, d)
    closure = LoopClosure("rocker_end", "coupler_end", mask=(1, 1, 1, 0, 0, 0))
    # start assembled on the open branch at crank = 90 deg
    t2 = math.pi / 2
    t4 = freudenstein(a, b, c, d, t2, -1)
    q = {"crank": t2, "rocker": t4, "coupler": 0.0}
    r = solve_ik(m, closure, q, locked=["crank"], timeout=SAFETY)
    assert r.success
    q = r.q
    for t2 in np.linspace(math.pi / 2, math.pi / 2 + 2 * math.pi, 37)[1:]:   # a full turn of the crank
        q = q.copy()
        q[0] = t2
        r = solve_ik(m, closure, q, locked=["crank"], timeout=SAFETY)
        assert r.success, (t2, r)
        q = r.q
        assert q[0] == t2                                                    # the actuated joint is held
        expected = freudenstein(a, b, c, d, t2, -1)
        assert math.remainder(q[2] - expected, 2 * math.pi) == pytest.approx(0.0, abs=1e-6)
        # coupler absolute angle from the closed loop: B + b e(t3) = D + c e(t4)
        B = np.array([a * math.cos(t2), a * math.sin(t2)])
        C = np.array([d + c * math.cos(expected), c * math.sin(expected)])
        t3 = math.atan2(*(C - B)[::-1])
        assert math.remainder(q[0] + q[1] - t3, 2 * math.pi) == pytest.approx(0.0, abs=1e-6)


def test_library_fourbar_model_closes():
    """The shipped four-bar (models/four_bar) closed by its two recorded frames, against Freudenstein."""
    from mechanism_model_core import load_model
    from mechanism_model_core.library import model_path

    m = load_model(model_path("four_bar/four_bar.xml"))        # a library model: it must load
    a, b, c, d = 0.10, 0.50, 0.40, 0.40
    closure = LoopClosure("closure_b", "closure_a", mask=(1, 1, 1, 0, 0, 0))
    q = m.configuration(None)
    for t2 in np.linspace(math.pi / 2, math.pi / 2 + 2 * math.pi, 25)[1:]:
        q = q.copy()
        q[m.coordinate_index("crank")] = t2
        r = solve_ik(m, closure, q, locked=["crank"], timeout=SAFETY)
        assert r.success
        q = r.q
        got = q[m.coordinate_index("rocker")]
        options = [freudenstein(a, b, c, d, t2, s) for s in (-1, 1)]
        assert min(abs(math.remainder(got - e, 2 * math.pi)) for e in options) < 1e-6


# ---------------------------------------------------------------------------------------------- contact
def test_contact_puts_foot_on_tilted_ground():
    """A 3-DOF leg whose foot must sit on a tilted plane with its sole (z) against the plane's normal."""
    b = MechanismBuilder("leg")
    b.add_body("hip", None, Joint.revolute("hip_yaw", translation(0, 0, 1.0), lower=-2, upper=2))
    b.add_body("thigh", "hip", Joint.revolute("hip_pitch", axis=(0, 1, 0), lower=-2, upper=2))
    b.add_body("shin", "thigh", Joint.revolute("knee", translation(0, 0, -0.5), axis=(0, 1, 0), lower=-2.5,
                                               upper=2.5))
    b.add_body("foot", "shin", Joint.revolute("ankle", translation(0, 0, -0.5), axis=(0, 1, 0), lower=-2,
                                              upper=2))
    b.add_frame("foot", "sole", translation(0, 0, -0.05) @ rot_x(math.pi))   # sole z points down
    m = b.build()
    ground = translation(0, 0, 0.15) @ rot_y(0.2)
    r = solve_ik(m, ContactConstraint("sole", ground, normal_axis=2, opposed=True), [0.0, 0.3, -0.6, 0.3],
                 timeout=SAFETY)
    assert r.success, r
    F = forward_kinematics(m, r.q).pose("sole")
    n = ground[:3, 2]
    assert abs(n @ (F[:3, 3] - ground[:3, 3])) < 1e-6            # on the plane
    assert F[:3, 2] @ n == pytest.approx(-1.0, abs=1e-9)          # sole normal against the plane's


# ---------------------------------------------------------------------------------------------- file
FILE = """<?xml version="1.0"?>
<Constraints>
  <!-- a pose with free rotation about the tool z -->
  <Pose name="reach" frame="tool" priority="0" mask="1 1 1 1 1 0" mask_frame="target">
    <Transform><Position x="0.4" y="0.1" z="0.3"/><Rotation type="EULER_XYZ" angle1="M_PI" angle2="0"
               angle3="0"/></Transform>
  </Pose>
  <Position frame="tool" xyz="0.4 0.1 0.3" weight="2" priority="1"/>
  <PointAt frame="tool" axis="0 0 1" point="1 0 0"/>
  <Contact frame="tool" surface="link1" normal_axis="2" opposed="true"/>
  <Coupling joint="joint6" expr="2*joint1"/>
  <Coupling joint="joint5" coefficients="joint1 0.5 joint2 -1" b="0.1"/>
  <JointTarget joint="joint2" value="-M_PI/4"/>
  <Lock joints="joint3" values="0.5"/>
  <Posture weight="0.01" q="0 0 0 0 0 0"/>
</Constraints>
"""


def test_load_constraints_file(tmp_path):
    p = tmp_path / "c.xml"
    p.write_text(FILE)
    cs = load_constraints(p)
    kinds = [type(c).__name__ for c in cs]
    assert kinds == ["PoseConstraint", "PositionConstraint", "PointAtConstraint", "ContactConstraint",
                     "JointCoupling", "JointCoupling", "JointTarget", "JointLock", "Posture"]
    pose = cs[0]
    assert pose.name == "reach" and pose.mask_frame == "target"
    np.testing.assert_allclose(pose.target[:3, 3], [0.4, 0.1, 0.3])
    np.testing.assert_allclose(pose.target[:3, :3], rot_x(math.pi)[:3, :3], atol=1e-12)
    assert cs[1].weight == 2 and cs[1].priority == 1
    assert cs[5].expression == ({"joint1": 0.5, "joint2": -1.0}, 0.1)
    assert cs[6].value == pytest.approx(-math.pi / 4)
    assert cs[7].joints == ("joint3",) and cs[7].values == [0.5]
    m = ur5()
    for c in cs:
        c.check(m)


@pytest.mark.parametrize("text, line, words", [
    ("<Constraints>\n<Pose frame='tool'/>\n</Constraints>", 2, "Transform"),
    ("<Constraints>\n\n<Bogus frame='tool'/>\n</Constraints>", 3, "unknown constraint"),
    ("<Constraints>\n<Position frame='tool' xyz='1 2'/>\n</Constraints>", 2, "3 numbers"),
    ("<Constraints>\n<Position frame='tool' xyz='1 2 __import__'/>\n</Constraints>", 2, "xyz"),
    ("<Constraints>\n<Position frame='tool' xyz='1 2 3' priority='high'/>\n</Constraints>", 2, "priority"),
    ("<Constraints>\n<Position frame='tool' xyz='1 2 3' color='red'/>\n</Constraints>", 2, "color"),
    ("<Constraints>\n<Coupling joint='j' expr='open(1)'/>\n</Constraints>", 2, "not allowed"),
    ("<Constraints>\n<Position frame='tool' xyz='1 2 3'>\n</Constraints>", 3, "well-formed"),
    ("<!DOCTYPE x [<!ENTITY a 'b'>]>\n<Constraints/>", 1, "entit"),
])
def test_load_constraints_errors_name_file_and_line(tmp_path, text, line, words):
    p = tmp_path / "bad.xml"
    p.write_text(text)
    with pytest.raises(ModelFileError) as e:
        load_constraints(p)
    assert e.value.line == line and os.path.basename(e.value.file) == "bad.xml"
    assert words in str(e.value)


def test_joint_coupling_vector_coefficients():
    m = ur5()
    target = forward_kinematics(m, [0.3, -1.0, 1.2, -0.5, 0.8, 0.1]).position("tool")
    a = np.zeros(6)
    a[0], a[1] = 1.0, -0.5                        # joint6 = joint1 - 0.5 joint2 + 0.2
    r = solve_ik(m, [PositionConstraint("tool", target), JointCoupling("joint6", (a, 0.2))], np.zeros(6),
                 timeout=SAFETY)
    assert r.success
    assert r.q[5] == pytest.approx(r.q[0] - 0.5 * r.q[1] + 0.2, abs=1e-5)


def test_two_frames_on_a_branched_tree_at_once():
    """Two pose targets on two branches sharing a turning base, stacked in one level: both are met."""
    m = _tree()
    rng = np.random.default_rng(12)
    for qt in m.random_configuration(rng, size=6):
        fk = forward_kinematics(m, qt)
        Ta, Pb = fk.pose("tool_a"), fk.position("tool_b")
        r = solve_ik(m, [PoseConstraint("tool_a", Ta), PositionConstraint("tool_b", Pb)], np.zeros(m.nq),
                     timeout=SAFETY)
        assert r.success, r
        fk2 = forward_kinematics(m, r.q)
        assert np.linalg.norm(fk2.position("tool_a") - Ta[:3, 3]) < 1e-6
        assert np.linalg.norm(log_so3(fk2.rotation("tool_a") @ Ta[:3, :3].T)) < 1e-5
        assert np.linalg.norm(fk2.position("tool_b") - Pb) < 1e-6
        assert m.within_limits(r.q)


def test_load_constraints_checks_names_against_a_mechanism(tmp_path):
    p = tmp_path / "names.xml"
    p.write_text("<Constraints>\n  <Position frame='tool' xyz='0 0 0.5'/>\n  <JointTarget joint='jiont2' value='0'/>\n"
                 "</Constraints>\n")
    load_constraints(p)                                   # names unchecked without a mechanism
    with pytest.raises(ModelFileError) as e:
        load_constraints(p, ur5())
    assert e.value.line == 3 and "jiont2" in str(e.value) and "joint2" in str(e.value)
