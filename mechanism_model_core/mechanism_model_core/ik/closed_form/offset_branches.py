"""Every branch of a chain whose one wrist axis alone is offset (:class:`~.axis_offset.AxisOffset`), for
:func:`~.solutions.ik_solutions`: the starts and answers that list the branches the approximate chain's misses.

**The odd axis is the chain's last** (the xArm6): by :mod:`.axis_offset`'s identity, ``q`` reaches pose ``T``
on the exact chain exactly when it reaches, on the moved chain, ``T`` with its position moved back by
``R_T s(q_n)`` -- a vector of the last joint ``q_n`` alone. So every exact branch is a root of
``g_b(v) = q_n,b(v) - v`` (wrapped to [-pi, pi)) for some branch ``b`` of the moved chain's closed form at the
target moved back by ``R_T s(v)``, ``v`` over a turn. :func:`last_axis_branches` samples ``v`` at
:data:`SAMPLES` values, follows each branch to the one nearest it at the next sample (the interval halved where
it turns fast: :data:`JUMP`), and where ``g_b`` changes sign (not by wrapping: ``|g|`` small on both sides)
finds the root by regula falsi (Illinois), following the branch; where ``g_b`` keeps its sign but stays small
(:data:`TANGENT`), a turning point that crosses zero gives two roots closer than a sample step. ``eaik``'s
least-squares branches are followed too: a root can lie where the moved chain's exact branches appear (the
edge of its reach), and a root found on a least-squares branch is a start the caller's steps confirm or drop.
Misses only roots that the sampling and the turning-point search both pass over (a target on the boundary of a
branch's workspace). The exact chain has up to 16 branches where the moved one has 8: the xArm6 has up to 12;
on 200 random targets the approximate branches alone led to 627 of the 742 in-limit branches an exhaustive
search finds, these roots to all (``benchmarks/bench_ik_solutions.py``).

**Another odd axis** (Baxter's first wrist axis, 0.01 m; the vector depends on the joints from the odd one
on): :func:`moved_starts` gives every branch of the moved chain -- exact and least-squares -- as a start, and
each after :meth:`~.axis_offset.AxisOffset.polish`, for the caller's Gauss-Newton steps on the exact chain.
These lead to branches whose approximate-chain twin leads elsewhere.

Answers and starts are joint values of the chain (rad) for a pose ``T`` (4x4) in the solver's frame (the
ground for :func:`~.solutions.ik_solutions`); the caller confirms each on the exact chain."""

from __future__ import annotations

import math

import numpy as np

from ...spatial import wrap_angle

__all__ = ["SAMPLES", "last_axis_branches", "moved_starts"]

#: last-joint values sampled over a turn (:func:`last_axis_branches`)
SAMPLES = 96
#: a branch that moves more than this (rad, some joint) from one sample to the next is followed through the
#: interval halved, at most SPLITS times (:func:`_follow`)
JUMP = 0.2
SPLITS = 8
#: a branch whose ``g`` keeps its sign but stays within this (rad) at both ends of an interval is searched for a
#: turning point that crosses zero (two roots within the interval, :func:`_tangent`), in GOLDEN_STEPS steps
TANGENT = 0.05
GOLDEN_STEPS = 40
#: regula falsi steps at most per root
ROOT_STEPS = 60
#: a root is where ``|g|`` (rad) is at most this
ROOT_TOL = 1e-13

_TAU = 2.0 * math.pi


def last_axis_branches(off, T) -> list:
    """The exact chain's branches (each (n + 1,), rad) for pose ``T`` (4x4) of an
    :class:`~.axis_offset.AxisOffset` whose odd axis is the chain's last (:attr:`~.axis_offset.AxisOffset.last`):
    the roots of the module docstring, the last joint within :data:`ROOT_TOL` of its value in the moved
    target (so within about ``offset * ROOT_TOL`` m of ``T`` where the moved chain's branch is exact; a root on
    a least-squares one is a start for the caller's steps)."""
    R, p = T[:3, :3], T[:3, 3]
    n = off.n
    Tp = np.array(T, dtype=float)

    def branches(v):
        Tp[:3, 3] = p - R @ off.shift(v)
        sol = off.robot.calculate_IK(Tp)
        Q = np.array(sol.Q, dtype=float).reshape(-1, n + 1)
        return Q, wrap_angle(Q[:, n] - v)

    vs = np.arange(SAMPLES + 1) * (_TAU / SAMPLES)
    rows = [branches(float(v)) for v in vs[:-1]]
    rows.append(rows[0])                        # v + 2 pi: the same moved target and the same g
    roots = []
    for i in range(SAMPLES):
        (Qa, Ga), (Qb, Gb) = rows[i], rows[i + 1]
        if not len(Qb):
            continue
        for qa, ga in zip(Qa, Ga):
            if ga == 0.0:
                roots.append(qa.copy())
            else:
                _follow(branches, float(vs[i]), qa, float(ga), float(vs[i + 1]), Qb, Gb, SPLITS, roots)
    return roots


def _follow(branches, va, qa, ga, vb, Qb, Gb, depth, roots):
    """Branch ``qa`` (``g`` = ``ga``) at ``va`` followed to the nearest of ``Qb`` (``g``: ``Gb``) at ``vb``
    (the interval halved, at most ``depth`` times, where that one is more than :data:`JUMP` away: a branch
    that turns fast near a singularity, where the nearest one may be another); roots of ``g`` on the way
    appended to ``roots``. Returns ``(q, g)`` at ``vb``, or None where the branch was lost."""
    D = wrap_angle(Qb - qa)
    k = int(np.einsum("ij,ij->i", D, D).argmin())
    if depth > 0 and float(np.abs(D[k]).max()) > JUMP:
        vm = 0.5 * (va + vb)
        Qm, Gm = branches(vm)
        if not len(Qm):
            return None
        hit = _follow(branches, va, qa, ga, vm, Qm, Gm, depth - 1, roots)
        if hit is None:
            return None
        return _follow(branches, vm, hit[0], hit[1], vb, Qb, Gb, depth - 1, roots)
    qb, gb = qa + D[k], float(Gb[k])
    if ga * gb < 0.0 and abs(ga) + abs(gb) < math.pi:       # a sign change, not the wrap at +-pi
        q = _root(branches, va, ga, qa, vb, gb, qb)
        if q is not None:
            roots.append(q)
    elif ga * gb > 0.0 and max(abs(ga), abs(gb)) < TANGENT:
        _tangent(branches, va, ga, qa, vb, gb, qb, roots)
    return qb, gb


def _tangent(branches, va, ga, qa, vb, gb, qb, roots):
    """Two roots of ``g`` closer than a sample step (a near-double root: ``g`` of one sign at both ends ``va``,
    ``vb``, small, turning back in between): the extremum of ``g`` between them by golden-section search,
    following the branch from ``qa``; when ``g`` changes sign there, the root on each side (appended to
    ``roots``)."""
    s = 1.0 if ga > 0.0 else -1.0
    r = 0.5 * (math.sqrt(5.0) - 1.0)
    q = qa

    def at(v):
        nonlocal q
        Q, G = branches(v)
        if not len(Q):
            return None, math.inf
        D = wrap_angle(Q - q)
        k = int(np.einsum("ij,ij->i", D, D).argmin())
        q = q + D[k]
        return q, s * float(G[k])

    a, b = va, vb
    c, d = b - r * (b - a), a + r * (b - a)
    qc, fc = at(c)
    qd, fd = at(d)
    for _ in range(GOLDEN_STEPS):
        if min(fc, fd) < 0.0:
            break
        if fc < fd:
            b, d, qd, fd = d, c, qc, fc
            c = b - r * (b - a)
            qc, fc = at(c)
        else:
            a, c, qc, fc = c, d, qd, fd
            d = a + r * (b - a)
            qd, fd = at(d)
    vm, qm, fm = (c, qc, fc) if fc < fd else (d, qd, fd)
    if not fm < 0.0 or qm is None:
        return
    for v0, g0, q0 in ((va, ga, qa), (vb, gb, qb)):
        q = _root(branches, v0, g0, q0, vm, s * fm, qm)
        if q is not None:
            roots.append(q)


def _root(branches, va, ga, qa, vb, gb, qb):
    """The branch at the root of ``g`` between ``va`` and ``vb`` (values ``ga``, ``gb`` of opposite signs, the
    branch ``qa``, ``qb`` there), by regula falsi (Illinois), each step's branch the one nearest the middle of
    the bracket's branches; None when the branch leaves the moved chain's reach."""
    q = qa
    for _ in range(ROOT_STEPS):
        v = vb - gb * (vb - va) / (gb - ga)
        if not (min(va, vb) < v < max(va, vb)):
            v = 0.5 * (va + vb)
        Q, G = branches(v)
        if not len(Q):
            return None
        ref = qa + 0.5 * wrap_angle(qb - qa)
        D = wrap_angle(Q - ref)
        k = int(np.einsum("ij,ij->i", D, D).argmin())
        q, g = ref + D[k], float(G[k])
        if abs(g) <= ROOT_TOL:
            return q
        if g * gb < 0.0:                         # the root between v and vb
            va, ga, qa = vb, gb, qb
        else:                                    # Illinois: the retained end's value halved
            ga *= 0.5
        vb, gb, qb = v, g, q
    return q if abs(g) <= 1e-9 else None


def moved_starts(off, T, held=None) -> list:
    """Starts (each (n + 1,), rad) for pose ``T`` (4x4): every branch of the moved chain (``eaik``'s exact and
    least-squares ones; a 7R chain's swept joint held at ``held``, rad) and each after
    :meth:`~.axis_offset.AxisOffset.polish` where that finds one."""
    robot = off.robot if off.swept is None else off.robot_at(float(held))
    if robot is None:
        return []
    try:
        Q = np.array(robot.calculate_IK(T).Q, dtype=float).reshape(-1, off.n + 1)
    except RuntimeError:
        return []
    out = []
    for q in Q:
        if off.swept is not None:
            q[off.swept] = held
        out.append(q)
        hit = off.polish(T, q.copy(), 1e-12)
        if hit is not None:
            out.append(hit[0])
    return out
