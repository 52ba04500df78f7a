"""Exact answers of a 6R chain whose only defect from a spherical wrist is its last axis's offset (the xArm6:
its last axis passes 0.076 m from the point where the two wrist axes before it meet), by a scalar iteration of
the closed form instead of Gauss-Newton steps on the exact chain (:mod:`.near_decomposable`).

Let ``w`` be the point where the two axes before the last meet, ``h`` and ``o`` the last axis's direction and a
point on it, ``R_f`` the frame's rotation at the zero configuration (all in the solver's frame at the chain's
zero configuration). The *moved* chain -- the last axis through ``w``, everything else as it is -- has a
spherical wrist, which ``eaik`` solves in closed form. The last joint turns the frame about the exact axis
where the moved chain turns it about the moved one, so the exact chain's pose at ``q`` is the moved chain's
followed by a translation in the frame that depends on the last joint's value ``q_n`` alone::

    T_exact(q) = T_moved(q) Trans(s(q_n)),   s(v) = R_f^T (I - R_h(-v)) (w - o)

(``R_h(v)``: the turn by ``v`` about ``h``). So ``q`` reaches ``T`` on the exact chain exactly when it reaches
``T Trans(-s(q_n))`` on the moved one: one unknown, ``v = q_n``. Each iterate solves the moved chain for
``T Trans(-s(v))`` and keeps the branch nearest the previous iterate (the first: the in-limit branch nearest
the seed); its pose error on the exact chain is known without forward kinematics -- the orientation is exact
and the position ``|s(q_n) - s(v)| = 2 |u| |sin((q_n - v) / 2)|`` off (``u``: ``w - o`` across the axis) --
and the secant method on ``g(v) = q_n(v) - v`` drives it below the tolerance: measured on the xArm6 (500
random targets, mid-range seeds), four to five closed-form calls at the median, where the approximate branches'
Gauss-Newton refinement needs four exact-chain evaluations and three steps. A call is one ``eaik`` solve
(about 3 us) and a few numpy calls on 8 x 6 arrays; an evaluation and a step about 20 us."""

from __future__ import annotations

import math

import numpy as np

from ...spatial import wrap_angle

__all__ = ["LastAxisOffset", "concurrency_defect"]

#: the two axes before the last meet when they pass within this fraction of the chain's reach bound (m)
MEET_RATIO = 1e-9
#: closed-form calls per solve at most (the secant's iterates); then the caller refines the last one
MAX_CALLS = 8
#: a secant step longer than this (rad) is replaced by the plain fixed-point step ``v <- q_n(v)``
MAX_STEP = 1.0

_TAU = 2.0 * math.pi


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


class LastAxisOffset:
    """The iteration of the module docstring for one chain: ``robot`` is ``eaik``'s robot of the moved chain;
    ``lo``, ``hi`` (6,) the joint limits (rad). Built by :meth:`of` (None where the chain is not of that kind)."""

    def __init__(self, robot, a, b, lo, hi):
        self.robot = robot
        self._a, self._b = a, b                 # s(v) = (1 - cos v) a + sin v b, in the frame's axes (m)
        self.offset = float(np.linalg.norm(a))  # |u|: the last axis's distance from w (m)
        self._lo, self._hi = lo, hi
        self._lo_in, self._hi_in = lo - 1e-12, hi + 1e-12
        self._finite = finite = np.isfinite(lo)
        self._all_finite = bool(finite.all())
        self._base = np.where(finite, lo - 1e-12, 0.0)     # each joint's turn starts here (_in_turns)
        self._any_wide = bool(np.any(finite & (hi - lo >= _TAU)))

    @classmethod
    def of(cls, make_robot, H, O, Tf, lo, hi, reach):
        """The iteration for the 6R chain with axes ``H`` (6, 3) through ``O`` (6, 3) and frame pose ``Tf``
        (4x4) at its zero configuration, limits ``lo``, ``hi``, reach bound ``reach`` (m), when its fifth axis
        meets its fourth and the chain with the last axis moved through that point decomposes
        (``make_robot(H, P, R0)``: ``eaik``'s robot for offsets ``P`` (7, 3), or None); else None."""
        if len(H) != 6:
            return None
        w, d = concurrency_defect(H[3:5], O[3:5])
        if not d <= MEET_RATIO * reach:
            return None
        h = H[5] / np.linalg.norm(H[5])
        u = w - O[5]
        u = u - h * float(h @ u)                                 # across the last axis
        if float(np.linalg.norm(u)) <= MEET_RATIO * reach:
            return None                                         # it meets them already: not this kind
        O2 = np.array(O, dtype=float)
        O2[5] = w
        P = np.vstack([O2[0], np.diff(O2, axis=0), Tf[:3, 3] - O2[5]])
        robot = make_robot(H, P, Tf[:3, :3])
        if robot is None or not robot.has_known_decomposition():
            return None
        Rf = Tf[:3, :3]
        return cls(robot, Rf.T @ u, Rf.T @ np.cross(h, u), np.asarray(lo, dtype=float),
                   np.asarray(hi, dtype=float))

    def shift(self, v) -> np.ndarray:
        """``s(v)`` (3,): the exact chain's frame position less the moved chain's, in the frame's axes (m),
        at last-joint value ``v`` (rad)."""
        return (1.0 - math.cos(v)) * self._a + math.sin(v) * self._b

    def _first(self, T, x0):
        """``(q, exact)``: the in-limit branch of the moved chain for pose ``T`` nearest the seed ``x0`` (each
        joint's whole turn in its limits; a joint with a turn or more of range, the turn nearest ``x0``), an
        exact one where there is one (``exact`` True), else a least-squares one; ``(None, False)`` when no
        branch is in limits."""
        sol = self.robot.calculate_IK(T)
        Q = sol.Q
        if not Q.shape[0]:
            return None, False
        q = self._nearest(sol, Q, x0)
        if q is not None and not ((q < self._lo_in).any() or (q > self._hi_in).any()):
            return q, True          # the nearest by whole turns, in limits: the in-limit one nearest x0
        Q = self._in_turns(Q, x0)
        ok = np.logical_and.reduce(Q <= self._hi_in, axis=1)
        ks = np.greater(ok, sol.is_LS).nonzero()[0]
        exact = len(ks) > 0
        if not exact:
            ks = ok.nonzero()[0]
            if not len(ks):
                return None, False
        D = Q[ks] - x0
        D *= D
        return Q[ks[np.add.reduce(D, axis=1).argmin()]], exact

    def _in_turns(self, Q, ref):
        """Joint values ``Q`` (k, 6) moved by whole turns into ``[lo, lo + 2 pi)`` (a joint without limits:
        nearest ``ref``), and on a joint with a turn or more of range the turn above where nearer ``ref`` and
        in range."""
        Q = wrap_angle(Q, lower=self._base if self._all_finite else np.where(self._finite, self._base, ref - math.pi))
        if self._any_wide:
            up = Q + _TAU
            nearer = np.abs(up - ref) < np.abs(Q - ref)
            nearer &= up <= self._hi_in
            np.copyto(Q, up, where=nearer)
        return Q

    def _track(self, T, ref):
        """The exact branch of the moved chain for pose ``T`` nearest ``ref`` by whole turns, or None when there
        is none (the track left the moved chain's reach). Limits are checked on the last iterate alone
        (:meth:`solve`)."""
        sol = self.robot.calculate_IK(T)
        Q = sol.Q
        return self._nearest(sol, Q, ref) if Q.shape[0] else None

    @staticmethod
    def _nearest(sol, Q, ref):
        """The exact branch of ``Q`` (k, 6; eaik's solution ``sol``) nearest ``ref`` by whole turns (``ref`` plus
        the differences wrapped to [-pi, pi)), or None."""
        D = Q - ref
        D += math.pi
        np.remainder(D, _TAU, out=D)
        D -= math.pi
        d = np.add.reduce(D * D, axis=1)
        j = d.argmin()
        ls = sol.is_LS
        if ls[j]:                   # a least-squares twin nearest: the nearest exact one, if any
            d[ls] = math.inf
            j = d.argmin()
            if ls[j]:
                return None
        return ref + D[j]

    def solve(self, T, x0, tol):
        """``(q, error, calls)``: the last iterate ``q`` (6,) for pose ``T`` (4x4, the solver's frame) from seed
        ``x0`` (6,), in limits, its position error on the exact chain (m; its orientation is exact) and the
        closed-form calls made -- stopped when the error is at most ``tol`` (m) or after :data:`MAX_CALLS`.
        None when the seed's last-joint value, and then that of the in-limit least-squares branch nearest the
        seed, give no exact in-limit branch, or the track loses its branch (it left the moved chain's reach)
        or ends out of limits."""
        R = T[:3, :3]
        # the shifted target's position p - (1 - cos v) R a - sin v R b, in floats (numpy calls on 3-vectors
        # cost more than their arithmetic)
        (ax, ay, az), (bx, by, bz) = (R @ self._a).tolist(), (R @ self._b).tolist()
        px, py, pz = T[:3, 3].tolist()
        px, py, pz = px - ax, py - ay, pz - az
        Tp = T.copy()
        v = float(x0[5])
        rad = 2.0 * self.offset
        vp = gp = None
        retry = True
        k = 0
        while k < MAX_CALLS:
            k += 1
            c, s = math.cos(v), math.sin(v)
            Tp[0, 3] = px + c * ax - s * bx
            Tp[1, 3] = py + c * ay - s * by
            Tp[2, 3] = pz + c * az - s * bz
            if gp is None:
                q, exact = self._first(Tp, x0)
                if not exact:               # beyond the moved chain's reach at v: once more from where its
                    if q is None or not retry:      # least-squares branch nearest the seed turns the last joint
                        return None
                    retry = False
                    v = float(q[5])
                    continue
            else:
                qn = self._track(Tp, q)
                if qn is None:              # the step left the moved chain's reach: the last iterate
                    break
                q = qn
            g = float(q[5]) - v
            g = (g + math.pi) % _TAU - math.pi
            err = rad * abs(math.sin(0.5 * g))
            if err <= tol:
                break
            step = g                                    # the fixed-point step, then the secant's
            if gp is not None and g != gp:
                sec = -g * (v - vp) / (g - gp)
                if abs(sec) <= MAX_STEP:
                    step = sec
            vp, gp = v, g
            v = v + step
        if (q < self._lo_in).any() or (q > self._hi_in).any():      # the track left a joint's range:
            q = self._in_turns(q[None], x0)[0]                      # the value a whole turn away, if in it
            if (q < self._lo_in).any() or (q > self._hi_in).any():
                return None
        return q, err, k
