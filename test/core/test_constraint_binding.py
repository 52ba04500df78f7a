"""Constraints are immutable values: binding one to a mechanism returns a new object and leaves the constraint
as it was, so one constraint serves several mechanisms and threads at once."""

from __future__ import annotations

import copy
import dataclasses
import threading

import numpy as np
import pytest

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics
from mechanism_model_core.constraints import (ContactConstraint, Evaluation, JointCoupling, JointLock,
                                              JointTarget, LoopClosure, OrientationConstraint,
                                              PointAtConstraint, PoseConstraint, PositionConstraint, Posture)
from mechanism_model_core.ik import ConstraintManager, IKProblem, solve_ik
from mechanism_model_core.spatial import rot_x, rot_z, translation
from .robots import SAFETY


def _tree(a_first: bool):
    """One two-armed tree; ``a_first`` decides which arm is added first, so the two variants number the same
    joints differently (coordinate ``a2`` is 2 in one and 4 in the other)."""
    b = MechanismBuilder("tree")
    b.add_body("base", None, Joint.revolute("yaw", translation(0, 0, 0.3), lower=-3, upper=3))

    def arm_a():
        b.add_body("a1", "base", Joint.revolute("a1", translation(0.1, 0.2, 0.1), axis=(0, 1, 0), lower=-3,
                                                upper=3))
        b.add_body("a2", "a1", Joint.revolute("a2", translation(0.3, 0, 0), axis=(0, 0, 1), lower=-3, upper=3))
        b.add_frame("a2", "tool_a", translation(0.2, 0, 0))

    def arm_b():
        b.add_body("b1", "base", Joint.revolute("b1", translation(-0.1, -0.2, 0.1), axis=(1, 0, 0), lower=-3,
                                                upper=3))
        b.add_body("b2", "b1", Joint.revolute("b2", translation(0, -0.3, 0), axis=(0, 0, 1), lower=-3, upper=3))
        b.add_frame("b2", "tool_b", translation(0, -0.2, 0))

    for arm in ((arm_a, arm_b) if a_first else (arm_b, arm_a)):
        arm()
    return b.build()


KINDS = [
    lambda: PoseConstraint("tool_a", translation(0.2, 0.1, 0.5) @ rot_x(0.3), mask=(1, 1, 1, 1, 1, 0)),
    lambda: PositionConstraint("tool_a", (0.3, 0.2, 0.4)),
    lambda: OrientationConstraint("tool_b", rot_z(0.4)[:3, :3]),
    lambda: PointAtConstraint("tool_a", (1.0, 0.0, 0.5)),
    lambda: ContactConstraint("tool_b", translation(0, 0, 0.1), opposed=True),
    lambda: LoopClosure("tool_a", "tool_b", mask=(1, 1, 1, 0, 0, 0)),
    lambda: JointCoupling("b2", "0.5*a1 + 0.1"),
    lambda: JointCoupling("b1", ({"a1": 2.0, "yaw": -1.0}, 0.3)),
    lambda: JointTarget("a2", 0.2),
    lambda: JointLock(["b1"], [0.1]),
    lambda: Posture({"a1": 0.1, "b1": -0.2}, weight=0.5),
]


def _state(c):
    """Everything stored on a constraint, deep-copied (arrays included)."""
    return {k: copy.deepcopy(v) for k, v in vars(c).items()}


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            assert type(a[k]) is type(b[k]) and repr(a[k]) == repr(b[k]), k


@pytest.mark.parametrize("k", range(len(KINDS)))
def test_binding_and_solving_leave_the_constraint_unchanged(k):
    c = KINDS[k]()
    before = _state(c)
    m1, m2 = _tree(True), _tree(False)
    b1, b2 = c.bind(m1), c.bind(m2)
    for m in (m1, m2):
        solve_ik(m, [c], m.home, timeout=0.01, rng=0)
    _same(before, _state(c))
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.weight = 2.0
    for b in (b1, b2):
        with pytest.raises(dataclasses.FrozenInstanceError):
            b.weight = 2.0
    for v in vars(c).values():                     # arrays held by a constraint are read-only
        if isinstance(v, np.ndarray):
            with pytest.raises(ValueError):
                v[...] = 0.0


def test_one_joint_constraint_bound_to_two_mechanisms_reads_each_ones_coordinate():
    """The joint ``a2`` is coordinate 2 of one tree and 4 of the other: each problem reads its own, even
    when the other problem was built after it (a constraint that stored the index on itself would read the
    last mechanism's index for both)."""
    m1, m2 = _tree(True), _tree(False)
    i1, i2 = m1.coordinate_index("a2"), m2.coordinate_index("a2")
    assert i1 != i2
    shared = [JointTarget("a2", 0.2), JointCoupling("b2", "0.5*a1 + 0.1"), Posture(weight=0.1)]
    p1 = IKProblem(m1, shared, m1.home)
    p2 = IKProblem(m2, shared, m2.home)
    rng = np.random.default_rng(3)
    for p, m in ((p1, m1), (p2, m2)):
        q = m.random_configuration(rng)
        x = p.x_of(q)
        _, raw, _, _ = p.evaluate(x)
        (r_target, J_target), (r_coupling, _) = [raw[id(b)] for b in p.tasks]
        a2, a1, b2 = (m.coordinate_index(n) for n in ("a2", "a1", "b2"))
        assert r_target[0] == pytest.approx(q[a2] - 0.2, abs=1e-15)
        assert np.nonzero(J_target[0])[0].tolist() == [a2]
        assert r_coupling[0] == pytest.approx(q[b2] - (0.5 * q[a1] + 0.1), abs=1e-15)
        np.testing.assert_array_equal(p.posture.q, m.home)


def test_a_constraint_manager_keeps_its_binding_when_the_constraint_is_used_elsewhere():
    m1, m2 = _tree(True), _tree(False)
    target = JointTarget("a2", 0.7)
    cm = ConstraintManager(m1, [target])
    solve_ik(m2, [target], m2.home, rng=0)              # bind the same object to another mechanism meanwhile
    p = cm.problem(m1.home)
    q = m1.random_configuration(1)
    _, raw, _, _ = p.evaluate(p.x_of(q))
    assert raw[id(p.tasks[0])][0][0] == pytest.approx(q[m1.coordinate_index("a2")] - 0.7, abs=1e-15)
    r = cm.solve(m1.home, rng=0, timeout=SAFETY)
    assert r.success and r.q[m1.coordinate_index("a2")] == pytest.approx(0.7, abs=1e-5)


def test_shared_constraints_solved_from_several_threads_on_two_mechanisms():
    """Four threads solve with the same constraint objects on the two trees at once; every answer holds
    on its own mechanism (checked by forward kinematics and the joint values)."""
    m1, m2 = _tree(True), _tree(False)
    target_T = forward_kinematics(m1, m1.configuration({"yaw": 0.3, "a1": 0.4, "a2": 0.2})).pose("tool_a")
    shared = [PoseConstraint("tool_a", target_T, mask=(1, 1, 1, 0, 0, 0)), JointTarget("a2", 0.2),
              JointCoupling("b2", "0.5*a1 + 0.1")]
    errors: list = []

    def work(m, seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(15):
                r = solve_ik(m, shared, m.random_configuration(rng), rng=rng, timeout=SAFETY)
                assert r.success, r
                q = r.q
                assert q[m.coordinate_index("a2")] == pytest.approx(0.2, abs=1e-5)
                assert q[m.coordinate_index("b2")] == pytest.approx(0.5 * q[m.coordinate_index("a1")] + 0.1,
                                                                    abs=1e-5)
                p = forward_kinematics(m, q).pose("tool_a")[:3, 3]
                np.testing.assert_allclose(p, target_T[:3, 3], atol=1e-5)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(m, s)) for s, m in enumerate((m1, m2, m1, m2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)                         # a safety net: 60 solves take well under a second
    assert not any(t.is_alive() for t in threads)   # (a thread still solving would leave its checks unmade)
    assert not errors, errors[0]


def test_evaluate_on_an_unbound_joint_constraint_binds_on_the_fly():
    m = _tree(False)
    q = m.random_configuration(5)
    c = JointTarget("a2", 0.2)
    r, J = c.evaluate(Evaluation(m, q))
    assert r[0] == pytest.approx(q[m.coordinate_index("a2")] - 0.2)
    assert "index" not in vars(c)
