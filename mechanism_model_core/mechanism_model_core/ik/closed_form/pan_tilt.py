"""Closed-form pointing of a two-axis (pan-tilt) chain: the angles that put a target point exactly on a line
of sight carried by the second link.

The chain is two revolute joints, the second carried by the first (any axes, any offsets between them), and a
ray -- origin ``c`` and unit direction ``d`` fixed in the second link (a camera's line of sight: the z axis
of a REP-103 optical frame) -- perpendicular to the second axis. Then the ray sweeps, as the second joint
turns, the plane normal to that axis at the ray's offset ``h`` along it; so

1. the first joint must bring the target into that plane: ``a2(q1) . (p - o2(q1)) = h``, which is
   ``A cos q1 + B sin q1 = K`` (Rodrigues' formula; two solutions or none);
2. the second joint must turn the ray's line through the target inside the plane: with ``n`` the in-plane
   normal of the ray, ``n(q2) . (p - o2) = n . (c - o2)``, again ``A cos q2 + B sin q2 = K`` (two solutions,
   of which the one with the target ahead of the camera is kept).

Angles are joint coordinates (rad; a joint's ``offset`` is in the zero pose the solver reads from forward
kinematics); every solution is given in each joint's range when some ``2 pi`` shift puts it there. No
iteration: the residual of an exact solution is rounding (about 1e-15 rad).
"""

from __future__ import annotations

import math

import numpy as np

from ...kinematics import forward_kinematics

__all__ = ["pan_tilt_solutions", "rotate"]


def rotate(axis, angle, v):
    """``v`` rotated by ``angle`` (rad) about the unit ``axis`` through the origin (Rodrigues)."""
    a = np.asarray(axis, dtype=float)
    v = np.asarray(v, dtype=float)
    c, s = math.cos(angle), math.sin(angle)
    return v * c + np.cross(a, v) * s + a * (a @ v) * (1.0 - c)


def _solve_trig(A, B, K):
    """The angles x with ``A cos x + B sin x = K`` (none when ``|K| > hypot(A, B)``)."""
    rho = math.hypot(A, B)
    if rho < 1e-15 or abs(K) > rho * (1.0 + 1e-12):
        return []
    phi = math.atan2(B, A)
    delta = math.acos(max(-1.0, min(1.0, K / rho)))
    return [phi + delta] if delta < 1e-15 else [phi + delta, phi - delta]


def _in_range(x, lo, hi, near):
    """``x + 2 pi k`` in ``[lo, hi]`` closest to ``near`` (None: no shift fits)."""
    best = None
    for k in range(-3, 4):
        y = x + 2.0 * math.pi * k
        if lo - 1e-12 <= y <= hi + 1e-12 and (best is None or abs(y - near) < abs(best - near)):
            best = min(max(y, lo), hi)
    return best


def pan_tilt_solutions(chain, frame: str, axis, target, q_near=None, limits=True):
    """Every chain configuration ``(q1, q2)`` of the two-joint ``chain`` (a mechanism whose coordinates are
    the two revolute joints, as :class:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel` builds it) that puts ``target``
    (3,) (m, chain base frame) on the ray along ``axis`` (unit, ``frame``'s axes) from ``frame``'s origin,
    the target ahead. Sorted by distance from ``q_near`` (default home); with ``limits`` only those inside
    the joint ranges (shifted by ``2 pi`` where that fits). Returns None when the closed form does not apply
    (not two revolute joints in series, or the ray not perpendicular to the second axis); an empty list when
    no configuration aims at the target."""
    if chain.nq != 2:
        return None
    joints = [chain.joint(chain.coordinate_joint[k]) for k in range(2)]
    if any(j.dof != 1 or j.type.value not in ("revolute", "continuous") for j in joints):
        return None
    b1, b2 = (chain.child_body_of_joint(j.name) for j in joints)
    if b1 not in chain.path_to_ground(b2) or b2 not in chain.path_to_ground(chain.frame(frame).body):
        return None
    fk = forward_kinematics(chain, np.zeros(2))
    T1, T2, TF = fk.pose(b1), fk.pose(b2), fk.pose(frame)
    a1 = T1[:3, :3] @ joints[0].axis
    o1 = T1[:3, 3]
    a2, o2 = T2[:3, :3] @ joints[1].axis, T2[:3, 3]
    d = TF[:3, :3] @ (np.asarray(axis, dtype=float) / np.linalg.norm(axis))
    c = TF[:3, 3]
    if abs(d @ a2) > 1e-9:
        return None
    p = np.asarray(target, dtype=float)
    near = np.array(chain.home if q_near is None else q_near, dtype=float)
    lo, hi = (chain.lower_limits, chain.upper_limits) if limits else (np.full(2, -np.inf), np.full(2, np.inf))
    # 1. the first joint puts the target in the ray's sweep plane: a2(q1).(p - o2(q1)) = h
    r = p - o1
    H = a2 @ (c - o2) + a2 @ (o2 - o1)
    k12 = a1 @ a2
    sols = []
    for q1 in _solve_trig(a2 @ r - k12 * (a1 @ r), np.cross(a1, a2) @ r, H - k12 * (a1 @ r)):
        a2q = rotate(a1, q1, a2)
        o2q = o1 + rotate(a1, q1, o2 - o1)
        cq = o1 + rotate(a1, q1, c - o1)
        dq = rotate(a1, q1, d)
        # 2. the second joint turns the ray's line through the target inside that plane
        n = np.cross(a2q, dq)
        v = p - o2q
        for q2 in _solve_trig(n @ v, np.cross(a2q, n) @ v, n @ (cq - o2q)):
            c2 = o2q + rotate(a2q, q2, cq - o2q)
            if rotate(a2q, q2, dq) @ (p - c2) <= 0.0:
                continue                                      # the target behind the camera
            x1 = _in_range(q1, lo[0], hi[0], near[0])
            x2 = _in_range(q2, lo[1], hi[1], near[1])
            if x1 is None or x2 is None:
                continue
            sols.append(np.array([x1, x2]))
    sols.sort(key=lambda s: float(np.sum((s - near) ** 2)))
    return sols
