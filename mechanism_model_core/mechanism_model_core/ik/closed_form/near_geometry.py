"""The geometry of chains near a decomposable one (:mod:`.near_decomposable`, :mod:`.axis_offset`): the
least-squares common point of nearly concurrent axes, a chain's axes at its zero configuration, and whether
``eaik`` decomposes a revolute chain (and which joint a 7R sweep then holds), and whether its least-squares
flags can be trusted on a chain."""

from __future__ import annotations

import math

import numpy as np

from .base_frame import suffix_products
from .eaik_solver import _robot_or_none, chain_offsets

__all__ = ["chain_axes", "concurrency_defect", "decomposition", "least_squares_flags_reliable"]

#: a 7R chain's swept joint is also held at this value (rad) by :func:`decomposition`: a generic one
HELD_PROBE = 0.7


def concurrency_defect(H, O):
    """``(p, d)``: the least-squares common point ``p`` (3,) of the axes with unit directions ``H`` (k, 3)
    through points ``O`` (k, 3) (m), and the largest distance ``d`` (m) of an axis from it; ``d`` is inf
    when the axes are all parallel (no common point)."""
    H = np.asarray(H, dtype=float)
    O = np.asarray(O, dtype=float)
    Pr = np.eye(3)[None] - H[:, :, None] * H[:, None, :]          # projections across each axis
    A = Pr.sum(axis=0)
    b = np.einsum("kij,kj->i", Pr, O)
    if np.linalg.cond(A) > 1e8:
        return np.full(3, np.nan), math.inf
    p = np.linalg.solve(A, b)
    d = np.linalg.norm(np.einsum("kij,kj->ki", Pr, p[None] - O), axis=1)
    return p, float(d.max())


def chain_axes(chain, steps, k=0):
    """Axes ``H`` (k, 3), axis points ``O`` (k, 3) of chain ``steps`` and the frame's pose (4, 4), in the
    frame where chain step ``k - 1`` ends (the ground for 0) at the chain's zero configuration."""
    C, Tf = suffix_products(chain, np.zeros(chain.n), k)
    H = np.array([C[i][:3, 2] for i in steps])
    O = np.array([C[i][:3, 3] for i in steps])
    return H, O, Tf


def decomposition(EAIK, H, O, Tf, probe=False):
    """``(swept, family)`` when ``eaik`` decomposes the revolute chain (axes ``H``, points ``O``, frame pose
    ``Tf`` at zero): ``swept`` None for 6 joints, else the joint a 7R sweep holds (``probe``: the same family
    held at 0 and at :data:`HELD_PROBE` -- a family of one held value alone, as two axes parallel only there, is
    not the sweep's); None when it does not."""
    P = chain_offsets(O, Tf)
    n = len(H)
    if n == 7:
        for i in [6, 2, 0, 3, 1, 4, 5]:
            r = _robot_or_none(EAIK, H, P, Tf[:3, :3], [(i, 0.0)])
            if r is not None and r.has_known_decomposition():
                r2 = r if not probe else _robot_or_none(EAIK, H, P, Tf[:3, :3], [(i, HELD_PROBE)])
                if r2 is not None and r2.get_kinematic_family() == r.get_kinematic_family():
                    return i, r.get_kinematic_family()
        return None
    if n == 6:
        r = _robot_or_none(EAIK, H, P, Tf[:3, :3], [])
        if r is not None and r.has_known_decomposition():
            return None, r.get_kinematic_family()
    return None


def least_squares_flags_reliable(make, swept, lo, hi, rng_seed, samples: int = 16) -> bool:
    """Whether ``eaik``'s least-squares flag is False on every exact branch of a revolute chain, ``make(held)``
    giving its robot with the joints ``held`` (a list of ``(joint, value)``) held, or None (a 7R chain's joint
    ``swept`` held, else None; limits ``lo``, ``hi``, rad): the branches of the poses of ``samples`` fixed random
    configurations (generator seed ``rng_seed``; the chain's own poses) are checked by its forward kinematics.
    It is not for some families with a held joint (Fetch's arm: every branch flagged), whose flagged branches
    are then checked one by one."""
    rng = np.random.default_rng(rng_seed)
    lo = np.where(np.isfinite(lo), lo, -math.pi)
    hi = np.where(np.isfinite(hi), hi, math.pi)
    robot6 = make([]) if swept is None else None
    for _ in range(samples):
        q = lo + rng.random(len(lo)) * (hi - lo)
        robot = robot6 if swept is None else make([(swept, float(q[swept]))])
        if robot is None:
            return False
        T = robot.fwdkin(q)
        sol = robot.calculate_IK(T)
        for qq, ls in zip(sol.Q, sol.is_LS):
            if ls and np.abs(robot.fwdkin(qq)[:3] - T[:3]).max() < 1e-9:
                return False
    return True
