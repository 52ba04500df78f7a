"""Foot-point IK of a leg of any structure: the generic counterpart of the closed-form leg solvers
(:class:`~.closed_form.ypp_leg.YPPLegSolver`), with their batch form ``solve_points(P, q_ref) -> (q, ok)``.

Points are solved one after the other, each from the previous answer (a foot path keeps its branch): damped
Newton on the leg's chain (:class:`~.path_tracker.PathTracker`, position rows only), and where Newton does not
converge (a point far from the last) the chain's generic solver with restarts, the leg's other joints held.
"""

from __future__ import annotations

import math

import numpy as np

from .path_tracker import PathTracker

__all__ = ["GenericLegSolver"]

#: position tolerance of a foot point (m)
TOL_POSITION = 1e-10


class GenericLegSolver:
    """Foot points of one leg: ``chain`` a :class:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel`
    from the body to the foot, ``walking`` the chain columns of the joints that move the foot, ``q_hold`` the
    chain configuration the other joints keep (the standing pose)."""

    def __init__(self, chain, walking, q_hold):
        self.chain = chain
        self.walking = np.asarray(walking, dtype=int)
        self.q_hold = np.array(q_hold, dtype=float)
        walk = set(self.walking.tolist())
        self._held = [n for k, n in enumerate(chain.joint_names) if k not in walk]

    def solve_points(self, P, q_ref):
        """Walking-joint values (B, k) putting the foot at points ``P`` (B, 3) (m, the chain's base frame),
        starting from ``q_ref`` (k,), and the (B,) mask of the points reached; an unreached point keeps the
        previous values."""
        chain, cols = self.chain, self.walking
        tracker = PathTracker(chain, chain.tool, np.array([1.0, 1, 1, 0, 0, 0]), TOL_POSITION, 1.0, 30)
        tracker.far = math.inf
        out = np.zeros((len(P), len(cols)))
        ok = np.zeros(len(P), dtype=bool)
        qc = self.q_hold.copy()
        qc[cols] = q_ref
        for k, p in enumerate(P):
            T = np.eye(4)
            T[:3, 3] = p
            qn, _ = tracker.step(T, qc)
            if qn is None:          # far from the last solution: the generic solver with random restarts
                r = chain.ik(T, qc, mask=(1, 1, 1, 0, 0, 0), tol_position=TOL_POSITION, timeout=2.0,
                             max_iterations=2000, locked=self._held)
                qn = r.q if r.success else None
            if qn is not None:
                qc = qn
                ok[k] = True
            out[k] = qc[cols]
        return out, ok
