"""Forward kinematics and Jacobians against textbook closed forms."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mechanism_model_core import InvalidConfiguration, forward_kinematics, jacobian

from .robots import SAFETY, gantry, planar_arm

angles = st.floats(-math.pi, math.pi, allow_nan=False)


@given(angles, angles)
def test_planar_two_link_position_and_jacobian(t1, t2):
    l1, l2 = 1.0, 0.7
    m = planar_arm((l1, l2))
    fk = forward_kinematics(m, [t1, t2])
    x = l1 * math.cos(t1) + l2 * math.cos(t1 + t2)
    y = l1 * math.sin(t1) + l2 * math.sin(t1 + t2)
    np.testing.assert_allclose(fk.position("tool"), [x, y, 0], atol=1e-12)
    R = fk.rotation("tool")
    np.testing.assert_allclose(R[:2, :2], [[math.cos(t1 + t2), -math.sin(t1 + t2)],
                                           [math.sin(t1 + t2), math.cos(t1 + t2)]], atol=1e-12)
    J = jacobian(m, [t1, t2], "tool")
    s1, c1 = math.sin(t1), math.cos(t1)
    s12, c12 = math.sin(t1 + t2), math.cos(t1 + t2)
    expected = np.array([[-l1 * s1 - l2 * s12, -l2 * s12],
                         [l1 * c1 + l2 * c12, l2 * c12],
                         [0, 0], [0, 0], [0, 0], [1, 1]])
    np.testing.assert_allclose(J, expected, atol=1e-12)


@given(angles, angles, angles)
def test_planar_three_link(t1, t2, t3):
    ls = (1.0, 0.7, 0.4)
    m = planar_arm(ls)
    p = forward_kinematics(m, [t1, t2, t3]).position("tool")
    a1, a2, a3 = t1, t1 + t2, t1 + t2 + t3
    x = ls[0] * math.cos(a1) + ls[1] * math.cos(a2) + ls[2] * math.cos(a3)
    y = ls[0] * math.sin(a1) + ls[1] * math.sin(a2) + ls[2] * math.sin(a3)
    np.testing.assert_allclose(p, [x, y, 0], atol=1e-12)
    # an intermediate frame: the elbow body sits at the end of link 1
    elbow = forward_kinematics(m, [t1, t2, t3]).position("link2")
    np.testing.assert_allclose(elbow, [ls[0] * math.cos(a1), ls[0] * math.sin(a1), 0], atol=1e-12)


@given(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1))
def test_prismatic_chain(x, y, z):
    m = gantry((0.1, 0.2, 0.3))
    fk = forward_kinematics(m, [x, y, z])
    np.testing.assert_allclose(fk.position("tool"), [x + 0.1, y + 0.2, z + 0.3], atol=1e-12)
    np.testing.assert_allclose(fk.rotation("tool"), np.eye(3), atol=1e-15)
    J = jacobian(m, [x, y, z], "tool")
    np.testing.assert_allclose(J, np.vstack([np.eye(3), np.zeros((3, 3))]), atol=1e-15)


def test_relative_pose_between_two_frames():
    m = planar_arm((1.0, 0.7, 0.4))
    q = [0.3, -0.5, 1.1]
    # the tool seen from link2: rotation by t3 and translation along link2's x by l2, then l3
    T = forward_kinematics(m, q).pose("tool", relative_to="link2")
    expected_p = [0.7 + 0.4 * math.cos(1.1), 0.4 * math.sin(1.1), 0]
    np.testing.assert_allclose(T[:3, 3], expected_p, atol=1e-12)
    assert math.isclose(math.atan2(T[1, 0], T[0, 0]), 1.1, abs_tol=1e-12)


def test_mapping_and_home_defaults():
    m = planar_arm((1.0, 0.7))
    fk = forward_kinematics(m, {"joint2": math.pi / 2})
    np.testing.assert_allclose(fk.position("tool"), [1.0, 0.7, 0], atol=1e-12)
    with pytest.raises(Exception, match="unknown joint coordinate"):
        forward_kinematics(m, {"nope": 1.0})


def test_leg_closed_form_behind_the_solver_protocol():
    """The YPP leg solver answers solve_ik on the leg's chain (a foot position): the closed form, confirmed by
    forward kinematics, the same joints as its batch form; a problem it does not fit raises."""
    from mechanism_model_core import PoseConstraint, PositionConstraint, load_model, solve_ik
    from mechanism_model_core.library import model_path
    from mechanism_model_core.locomotion.legged import LeggedLocomotorModel

    w = LeggedLocomotorModel(load_model(model_path("lemur/lemur_hexapod.xml")))
    rng = np.random.default_rng(6)
    for leg in w.legs[:3]:
        i = w.legs.index(leg)
        chain, cols = w._chains[i], w._walk_cols[i]
        solver = w.solver_of(leg.name)
        m = chain.chain
        for _ in range(5):
            qt = m.random_configuration(rng)
            p = forward_kinematics(m, qt).position(chain.tool)
            q0 = m.random_configuration(rng)
            r = solve_ik(m, [PositionConstraint(chain.tool, p)], q0, solver=solver, timeout=SAFETY)
            assert r.success and r.solver == "ypp", r
            assert np.linalg.norm(forward_kinematics(m, r.q).position(chain.tool) - p) < 1e-9
            qb, ok = solver.solve_points(p[None], q0[cols])
            assert ok[0]
            np.testing.assert_allclose(r.q[cols], qb[0], atol=1e-12)
        with pytest.raises(InvalidConfiguration, match="YPP leg"):
            solve_ik(m, [PoseConstraint(chain.tool, np.eye(4))], q0, solver=solver, timeout=SAFETY)
