"""The independent count of IK branches, by Pinocchio alone: Newton (damped least-squares) steps on a
Pinocchio model from random starts (every joint uniform in [-pi, pi), no limits in the steps), the answers
whose frame reaches the target within :data:`FK_TOL` (m and rad, Pinocchio's forward kinematics), with each
joint wrapped to [-pi, pi) and merged when every joint differs by less than :data:`SAME` (rad) modulo a turn.
The oracle of ``test_ik_solutions_complete`` and ``benchmarks/bench_ik_solutions.py``."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

#: an answer reaches the target within this (m and rad, Pinocchio)
FK_TOL = 1e-9
#: two answers are one branch when every joint differs by less than this (rad) modulo a whole turn
SAME = 1e-5


def wrap(x):
    """Angles (rad) wrapped to [-pi, pi)."""
    return (np.asarray(x) + math.pi) % (2 * math.pi) - math.pi


def newton_branches(model, data, frame_id, T, starts, rng, iters=60) -> list:
    """The distinct answers (each (model.nq,), rad, wrapped) putting frame ``frame_id`` of Pinocchio ``model``
    (revolute joints, nq == nv; ``data`` its data) at ground pose ``T`` (4x4), from ``starts`` random starts
    drawn with ``rng``, ``iters`` steps each."""
    Md = pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())
    found = []
    for _ in range(starts):
        q = rng.uniform(-math.pi, math.pi, model.nq)
        for _ in range(iters):
            pin.framesForwardKinematics(model, data, q)
            iMd = data.oMf[frame_id].actInv(Md)
            err = pin.log6(iMd).vector
            if np.max(np.abs(err)) < 1e-13:
                break
            J = -pin.Jlog6(iMd.inverse()) @ pin.computeFrameJacobian(model, data, q, frame_id, pin.LOCAL)
            lam = 1e-10 + 1e-3 * float(err @ err)
            q = q - np.linalg.solve(J.T @ J + lam * np.eye(model.nv), J.T @ err)
        pin.framesForwardKinematics(model, data, q)
        F = data.oMf[frame_id]
        if (np.linalg.norm(F.translation - T[:3, 3]) > FK_TOL
                or np.linalg.norm(pin.log3(F.rotation @ T[:3, :3].T)) > FK_TOL):
            continue
        q = wrap(q)
        if not any(np.max(np.abs(wrap(q - p))) < SAME for p in found):
            found.append(q)
    return found
