"""IK with collisions: the clearance constraint's Jacobian against finite differences, avoid_collisions never
returns a colliding success, and the clearance constraint holds in prioritized solves."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from .optional_deps import require  # noqa: E402
from .robots import SAFETY  # noqa: E402

require("coal", "collision")

from mechanism_model_core import BoundingShape, Joint, MechanismBuilder, PositionConstraint, solve_ik  # noqa: E402
from mechanism_model_core.collision import (Environment, Obstacle, Sphere, distance, in_collision,  # noqa: E402
                                            minimum_distance)
from mechanism_model_core.collision.constraint import CollisionDistance  # noqa: E402
from mechanism_model_core.constraints import Evaluation  # noqa: E402
from mechanism_model_core.io.urdf import load_urdf  # noqa: E402
from mechanism_model_core.spatial import translation  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")


def planar(n=2, length=1.0):
    """Planar nR arm about z, each link a capsule along x and a ball at its end; tool at the tip."""
    b = MechanismBuilder(f"planar{n}")
    parent = None
    for i in range(n):
        shapes = (BoundingShape(f"ball{i}", "sphere", translation(length, 0, 0), (0.08,)),)
        b.add_body(f"l{i}", parent, Joint.revolute(f"j{i}", np.eye(4) if i == 0 else translation(length, 0, 0),
                                                   lower=-3.0, upper=3.0), shapes=shapes)
        parent = f"l{i}"
    b.add_frame(parent, "tool", translation(length, 0, 0))
    return b.build()


def test_clearance_jacobian_matches_finite_differences():
    m = load_urdf(os.path.join(DATA, "arm7", "arm7_primitives.urdf"))
    rng = np.random.default_rng(2)
    checked = 0
    for q in m.random_configuration(rng, size=200):
        d = minimum_distance(m, q)
        if not (0.01 < d.distance < 0.1) or d.body_a in ("base",) and d.body_b in ("base",):
            continue
        c = CollisionDistance(body=d.body_a, other=d.body_b, minimum=0.2)
        c.check(m)
        r, J = c.evaluate(Evaluation(m, q))
        assert r[0] == pytest.approx(d.distance - 0.2, abs=1e-9)
        h = 1e-6
        fd = np.array([(c.evaluate(Evaluation(m, q + h * e), jac=False)[0][0]
                        - c.evaluate(Evaluation(m, q - h * e), jac=False)[0][0]) / (2 * h) for e in np.eye(m.nq)])
        np.testing.assert_allclose(J[0], fd, atol=2e-5)
        checked += 1
        if checked == 8:
            break
    assert checked >= 4
    # inactive when the clearance holds: zero residual, zero row
    c = CollisionDistance(body="link7", other="base", minimum=0.0)
    c.check(m)
    r, J = c.evaluate(Evaluation(m, m.home))
    assert r[0] == 0 and not J.any()


def test_avoid_collisions_takes_the_other_elbow():
    m = planar(2)
    env = Environment([Obstacle("rock", Sphere(0.25), translation(0.55, -0.75, 0))])
    target = np.array([1.2, 0.0, 0.0])
    # elbow down (j0 < 0) puts the first ball on the rock; elbow up does not
    q0 = np.array([-0.9, 1.6])
    plain = solve_ik(m, [PositionConstraint("tool", target)], q0, timeout=SAFETY)
    assert plain.success and in_collision(m, plain.q, environment=env, self_collision=False)
    safe = solve_ik(m, [PositionConstraint("tool", target)], q0, timeout=SAFETY, avoid_collisions=True,
                    environment=env)
    assert safe.success, safe
    assert not in_collision(m, safe.q, environment=env)
    tip = np.array([math.cos(safe.q[0]) + math.cos(safe.q[0] + safe.q[1]),
                    math.sin(safe.q[0]) + math.sin(safe.q[0] + safe.q[1])])
    np.testing.assert_allclose(tip, target[:2], atol=1e-6)
    assert safe.q[0] > 0


def test_avoid_collisions_fails_with_reason_collision_when_every_answer_collides():
    m = planar(2)
    env = Environment([Obstacle("rock", Sphere(0.2), translation(1.2, 0.0, 0))])
    r = solve_ik(m, [PositionConstraint("tool", [1.2, 0.0, 0.0])], np.array([-0.5, 1.0]), timeout=SAFETY,
                 max_iterations=400, avoid_collisions=True, environment=env)
    assert not r.success and r.reason == "collision" and r.iterations <= 400    # the iteration budget ended it


def test_no_detour_needed_gives_the_plain_answer():
    m = planar(2)
    q0 = np.array([0.3, 0.6])
    a = solve_ik(m, [PositionConstraint("tool", [0.9, 1.2, 0.0])], q0, timeout=SAFETY)
    b = solve_ik(m, [PositionConstraint("tool", [0.9, 1.2, 0.0])], q0, timeout=SAFETY, avoid_collisions=True)
    assert a.success and b.success
    np.testing.assert_array_equal(a.q, b.q)


def test_clearance_constraint_holds_in_a_prioritized_solve():
    m = planar(3, 0.6)
    # the post sits 0.02 m from l1's ball in the answer found without the clearance constraint
    env = Environment([Obstacle("post", Sphere(0.1), translation(1.1143569, 0.22944179, 0))])
    keep = CollisionDistance(body="l1", other="post", minimum=0.15, environment=env, priority=0,
                             name="clearance")
    reach = PositionConstraint("tool", [1.3, 0.6, 0.0], priority=1)
    q0 = np.array([0.5, 0.2, 0.1])
    plain = solve_ik(m, [reach], q0, timeout=SAFETY)
    assert plain.success and distance(m, plain.q, "l1", "post", environment=env).distance < 0.05
    r = solve_ik(m, [keep, reach], q0, timeout=SAFETY)
    assert r.success, r
    assert distance(m, r.q, "l1", "post", environment=env).distance >= 0.15 - 1e-6
    assert r.residual("clearance").satisfied
