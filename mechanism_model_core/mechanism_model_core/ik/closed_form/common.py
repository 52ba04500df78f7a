"""What every closed-form solver shares: confirming candidates by forward kinematics, nearest in-limit turns."""

from __future__ import annotations

import math

import numpy as np

from ...constraints import Evaluation, PoseConstraint
from ..solvers import DLSSolver

__all__ = ["confirm_candidates", "nearest_in_limits", "takes_pose"]


def takes_pose(problem, frame: str, ground: str, joints) -> bool:
    """Whether a closed form of ``frame``'s pose on the coordinates ``joints`` (indices) takes ``problem``: its
    one task a :class:`~...constraints.PoseConstraint` of ``frame`` relative to the ``ground`` frame with every
    axis weighted, no posture, every one of ``joints`` an unknown (the YPPP and YPPPY closed forms)."""
    c = problem.tasks[0]
    return (len(problem.tasks) == 1 and isinstance(c, PoseConstraint) and c.frame == frame
            and c.relative_to in (None, ground) and bool(np.all(c.axis_weights > 0))
            and problem.posture is None and set(joints.tolist()) <= set(problem.free.tolist()))


def confirm_candidates(name: str, problem, options, cands, x0, cols, dof: str):
    """The result of a closed-form solver: the first candidate (nearest first) whose pose forward
    kinematics confirms within the tolerances, else the generic DLS solver, else the best compromise."""
    c = problem.tasks[0]
    best = None
    for _, q in cands:
        x = x0.copy()
        x[cols] = q
        r, _ = c.evaluate(_ev(problem, problem.expand(x)), jac=False)
        pe, oe = c.errors(r)
        if pe <= options.tol_position and oe <= options.tol_orientation:
            return problem.result(x, True, "converged", options, 1, 0, name)
        if best is None or pe + oe < best[0]:
            best = (pe + oe, x)
    # no closed-form solution within limits (or the pose is off the reachable set): the generic solver
    generic = DLSSolver().solve(problem, options)
    if generic.success or best is None:
        generic.solver = f"{name}+dls"
        return generic
    return problem.result(best[1], False, "unreachable", options, 1, 0, name,
                          f"the pose is off the {dof} arm's reachable set; nearest compromise returned")


def _ev(problem, q):
    return Evaluation(problem.mechanism, q)


def nearest_in_limits(q, ref, lo, hi):
    """``q`` shifted by whole turns to lie within limits and nearest ``ref``; None if impossible."""
    out = np.empty_like(q)
    for i in range(len(q)):
        cands = [q[i] + 2 * math.pi * k for k in range(-2, 3)]
        ok = [v for v in cands if lo[i] - 1e-12 <= v <= hi[i] + 1e-12]
        if not ok:
            return None
        out[i] = min(ok, key=lambda v: abs(v - ref[i]))
        out[i] = min(max(out[i], lo[i]), hi[i])
    return out
