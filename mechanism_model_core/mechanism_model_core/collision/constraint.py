"""Collision avoidance in inverse kinematics.

:class:`CollisionDistance` keeps a body at least ``minimum`` metres from another body, from every body the
collision matrix lets it touch, or from the environment: an inequality constraint (MSim's style) written as
a one-sided residual ``r = min(0, d - minimum)``, so it is zero and has no Jacobian row while the clearance
holds and pushes the bodies apart along the witness-point normal when it does not. Its Jacobian is
``n . (J_pb - J_pa)``: the relative velocity of the two witness points (each moved with its body,
``v_p = v_o + w x (p - o)``) along the unit normal ``n`` from a to b.

:func:`solve_ik_avoiding_collisions` is ``solve_ik(..., avoid_collisions=True)`` (MoveIt's flag): a solution in
collision is never returned as a success. It solves as usual; when the answer collides it solves again
from there with a :class:`CollisionDistance` for each colliding pair at a priority above every other
constraint, then from random restarts, until the timeout; if every answer collides the result is a failure
with reason ``"collision"``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..constraints import BoundConstraint, Constraint, _Common
from ..spatial import skew
from .model import collision_model
from .queries import collisions, distance, in_collision


def _point_jacobian(ev, body: str, p: np.ndarray) -> np.ndarray:
    """3 x nq Jacobian of the world point ``p`` moving with ``body`` (ground axes)."""
    T, J = ev.world(body)
    return J[:3] - skew(p - T[:3, 3]) @ J[3:]


@dataclass(frozen=True, eq=False)
class CollisionDistance(_Common, Constraint):
    """Keep ``body`` at least ``minimum`` (m) from ``other``: a body name, an obstacle name of
    ``environment``, or None for the nearest of every body the collision matrix pairs with ``body`` (and
    every obstacle). One residual row, ``min(0, d - minimum)`` (m)."""

    body: str = ""
    other: str | None = None
    minimum: float = 0.0
    environment: object = None
    kind: ClassVar[str] = "cartesian"
    dimension: ClassVar[int] = 1

    def bind(self, mechanism) -> "BoundCollisionDistance":
        model = collision_model(mechanism)
        model.body_position(self.body)
        obstacles = tuple(o.name for o in self.environment.obstacles) if self.environment is not None else ()
        if self.other is not None and self.other not in obstacles:
            model.body_position(self.other)
        if not (math.isfinite(self.minimum) and self.minimum >= 0):
            raise ValueError(f"CollisionDistance: minimum must be finite and >= 0, got {self.minimum!r}")
        if self.other is not None:
            partners = (self.other,)
        else:
            partners = tuple(b for b in model.bodies if b != self.body and model.matrix.allowed(self.body, b)) \
                + obstacles
        return BoundCollisionDistance(self, model, partners)

    def errors(self, r):
        return float(abs(r[0])), math.nan

    @property
    def label(self) -> str:
        return self.name or f"CollisionDistance({self.body}, {self.other or 'any'})"


@dataclass(frozen=True, eq=False)
class BoundCollisionDistance(BoundConstraint):
    """:class:`CollisionDistance` on one mechanism: its collision ``model`` and the ``partners`` (bodies
    and obstacles) it keeps away from."""

    constraint: CollisionDistance
    model: object
    partners: tuple
    dimension: ClassVar[int] = 1

    def nearest(self, q):
        """The :class:`~.queries.DistanceResult` of the nearest partner at ``q``."""
        c = self.constraint
        best = None
        for b in self.partners:
            d = distance(self.model, q, c.body, b, environment=c.environment)
            if best is None or d.distance < best.distance:
                best = d
        return best

    def evaluate(self, ev, jac=True):
        d = self.nearest(ev.q)
        minimum = self.constraint.minimum
        nq = ev.q.shape[0]
        if d is None or not math.isfinite(d.distance) or d.distance >= minimum:
            return np.zeros(1), (np.zeros((1, nq)) if jac else None)
        r = np.array([d.distance - minimum])
        if not jac:
            return r, None
        n = d.normal
        if n is None:
            return r, np.zeros((1, nq))
        Jr = n @ (-_point_jacobian(ev, d.body_a, d.point_a))
        if not d.environment:
            Jr = Jr + n @ _point_jacobian(ev, d.body_b, d.point_b)
        return r, Jr[None, :]


def solve_ik_avoiding_collisions(solve_ik, mechanism, constraints, q0=None, *, environment=None,
                                 margin: float = 0.0, timeout: float = 0.05, rng=None, **kwargs):
    """``solve_ik`` (:func:`~mechanism_model_core.ik.solve_ik`, passed in) whose success is never in
    collision (self-collision and, with ``environment``, collision with it; ``margin`` m of clearance).
    Same arguments and result; ``timeout`` and ``max_iterations`` bound the whole search (the first solve and
    every detour with its restarts), like ``solve_ik``'s, and ``iterations`` counts them all."""
    t0 = time.perf_counter()
    deadline = t0 + float(timeout)
    if isinstance(constraints, Constraint):
        constraints = [constraints]
    constraints = list(constraints)
    model = collision_model(mechanism)
    kw = dict(kwargs)
    budget = int(kw.pop("max_iterations", 10000))
    cancel = kw.get("cancel")
    first = solve_ik(mechanism, constraints, q0, timeout=timeout, rng=rng, max_iterations=budget, **kw)
    if not first.success or not in_collision(model, first.q, environment=environment, margin=margin):
        first.time = time.perf_counter() - t0
        return first
    top = min((getattr(c, "priority", 0) for c in constraints), default=0) - 1
    avoid: dict[tuple, CollisionDistance] = {}
    rs = np.random.default_rng(0 if rng is None else rng)
    last = first
    start = first.q
    restarts = 0
    used = first.iterations
    while time.perf_counter() < deadline and used < budget and not (cancel is not None and cancel.is_set()):
        for c in collisions(model, start if last is first else last.q, environment=environment, margin=margin):
            key = (c.body_a, c.body_b)
            if key not in avoid:
                avoid[key] = CollisionDistance(body=c.body_a, other=c.body_b, minimum=margin + 1e-4,
                                               environment=environment, priority=top,
                                               name=f"clearance:{c.body_a}:{c.body_b}")
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        q_start = start if restarts == 0 else mechanism.random_configuration(rs)
        r = solve_ik(mechanism, constraints + list(avoid.values()), q_start, timeout=left, rng=rs,
                     max_iterations=budget - used, **kw)
        restarts += 1
        used += max(1, r.iterations)      # an attempt that needed no iteration still counts
        r.iterations = used
        last = r
        if r.success and not in_collision(model, r.q, environment=environment, margin=margin):
            r.time = time.perf_counter() - t0
            r.restarts += restarts
            return r
        start = r.q
    pairs = ", ".join(f"{a}/{b}" for a, b in avoid) or "?"
    last.success = False
    last.reason = "collision"
    last.message = (f"every solution found within the budget ({timeout} s, {budget} iterations) is in collision "
                    f"({pairs})")
    last.time = time.perf_counter() - t0
    return last
