"""Exact answers of a chain whose only defect from a decomposable one is one wrist axis's offset, by iterating the
closed form on a *moved* chain instead of Gauss-Newton steps on the exact one (:mod:`.near_decomposable`): the
xArm6 (its last axis passes 0.076 m from the point where the two wrist axes before it meet) and Baxter (its
first wrist axis passes 0.01 m from where the two after it meet).

Let two of three consecutive axes meet in ``w``, and the third (chain joint ``k``, the *odd* axis: direction
``h``, through ``o``) pass at ``u = w - o`` (across ``h``) from it, everything at the chain's zero configuration
in the solver's frame. The moved chain -- the odd axis through ``w``, all else as it is -- has a spherical
wrist, which ``eaik`` solves in closed form. In product-of-exponentials form the exact joint ``k`` is the moved
one preceded by the translation ``(R_k - I) u``, so the exact pose at ``q`` is the moved chain's translated
by a vector that depends on the target's rotation and the joints from ``k`` on alone::

    p_exact(q) = p_moved(q) + R_T R_f^T R_n(-q_n) ... R_{k+1}(-q_{k+1}) (I - R_k(-q_k)) u

(``R_j(v)``: the turn by ``v`` about axis ``j``; ``R_T``: the frame's rotation, the same on both chains;
``R_f``: the frame's rotation at the zero configuration). So ``q`` reaches ``T`` on the exact chain exactly when
it reaches ``T`` moved back by that vector on the moved one. Each iterate solves the moved chain for the target
moved by the vector at the previous iterate and keeps the branch nearest it; its pose error on the exact chain
is known without forward kinematics -- the orientation is exact and the position off by the change of that
vector from one iterate to the next. The vector changes little with the joints when the offset is small
(Baxter: the error falls about 30-fold an iterate, two or three from the approximate branch), and for the
last axis it depends on that joint alone: one unknown, driven to zero by the secant method from the seed
(:meth:`AxisOffset.solve`; the xArm6, whose offset is large: four to five iterates at the median). An
iterate is one ``eaik`` solve (about 3 us) and a few numpy calls on 8 x n arrays (about 8 us in all) where an
exact-chain evaluation and Gauss-Newton step cost about 20 us.

The two axes meet within :data:`~.axis_snap.SNAP_RATIO` of the chain's reach bound, as the exact closed form
snaps them (:mod:`.axis_snap`): a model file that writes pi/2 as 1.5708 leaves them 1e-7 to 1e-6 m apart. The
later one is then moved across to meet the earlier (:attr:`AxisOffset.snapped`), the iterates reach the target
on that chain, and the caller's Gauss-Newton steps on the exact chain take up the difference where it exceeds
the tolerance (every answer is confirmed there)."""

from __future__ import annotations

import math
import time

import numpy as np

from ...spatial import wrap_angle
from .axis_snap import SNAP_RATIO, snap_geometry
from .branch_turns import TurnWindow
from .eaik_solver import chain_offsets
from .near_geometry import concurrency_defect, least_squares_flags_reliable

__all__ = ["AxisOffset"]

#: closed-form calls per solve at most (the iterates); then the caller refines the last one
MAX_CALLS = 8
#: a secant step longer than this (rad) is replaced by the plain fixed-point step ``v <- q_n(v)``
#: (:meth:`AxisOffset.solve`)
MAX_STEP = 1.0
#: :meth:`AxisOffset.solve_around`: the seed's last joint turned by k / TURNS of a turn, k = 1 .. TURNS - 1
TURNS = 8
#: moved 7R chains' robots kept by held value of the swept joint
ROBOTS_KEPT = 1024

_TAU = 2.0 * math.pi


class AxisOffset:
    """The iteration of the module docstring for one chain of ``n + 1`` revolute joints: odd axis ``k`` (its
    direction ``h`` and offset ``u``, zero-configuration vectors), ``H`` the chain's axes, ``Rf`` the frame's
    rotation at zero; ``robot``: ``eaik``'s robot of the moved chain, or ``make(v)`` that of a 7R chain's with
    its swept joint ``swept`` held at ``v`` (kept by value); ``lo``, ``hi`` the joint limits (rad). Built by
    :meth:`of` (None where the chain is not of that kind)."""

    def __init__(self, k, H, u, Rf, robot, make, swept, lo, hi, reliable=True, snapped=0.0):
        self.k, self.n = int(k), len(H) - 1
        #: how far (m) the two meeting axes missed each other as read, 0.0 when they meet: a model file's rounding
        #: (:mod:`.axis_snap`), snapped away; the iterates then reach the snapped chain's targets, and the caller's
        #: Gauss-Newton steps on the exact chain take up the difference
        self.snapped = float(snapped)
        #: eaik's least-squares flags hold on the moved chain; else each branch taken is checked by its FK
        self.reliable = bool(reliable)
        self._H = [tuple(float(c) for c in h) for h in H]
        h = H[k]
        self._u, self._hu = tuple(u.tolist()), tuple(np.cross(h, u).tolist())
        self._RfT = Rf.T.copy()
        self.robot, self._make, self.swept = robot, make, swept
        self._robots = {}
        #: the odd axis is the chain's last and nothing is held: :meth:`solve` from the seed, else :meth:`polish`
        self.last = self.k == self.n and swept is None
        # the last axis: s(v) = (1 - cos v) a + sin v b, in the frame's axes (m) (solve)
        self._a, self._b = Rf.T @ u, Rf.T @ np.cross(h, u)
        self.offset = float(np.linalg.norm(u))  # |u|: the odd axis's distance from w (m)
        self._turns = TurnWindow(lo, hi)            # where branches' values are put (whole turns)
        self._lo_in, self._hi_in = self._turns.lo_in, self._turns.hi_in
        self._bounds = list(zip(self._lo_in.tolist(), self._hi_in.tolist()))

    @classmethod
    def of(cls, make_robot, H, O, Tf, i, swept, lo, hi, reach):
        """The iteration for the revolute chain with axes ``H`` (6 or 7, 3) through ``O`` and frame pose ``Tf``
        (4x4) at its zero configuration, limits ``lo``, ``hi``, reach bound ``reach`` (m), when two of the axes
        ``i, i + 1, i + 2`` meet and the chain with the third moved through their common point decomposes
        (``make_robot(H, P, R0, held)``: ``eaik``'s robot for offsets ``P`` and held joints ``held``, a list
        of ``(joint, value)``, or None; ``swept``: the joint a 7R chain holds, else None); else None."""
        H = np.asarray(H, dtype=float)
        tol = SNAP_RATIO * reach            # axes that miss by a model file's rounding meet (axis_snap)
        for k in (i + 2, i, i + 1):
            pair = [j for j in (i, i + 1, i + 2) if j != k]
            w, d = concurrency_defect(H[pair], O[pair])
            if not d <= tol:
                continue
            # the later axis moved across to meet the earlier one (by ``moved``, m), and w where they meet
            Hp, Op, moved = snap_geometry(H[pair], O[pair], tol, directions=False)
            w = concurrency_defect(Hp, Op)[0]
            h = H[k] / np.linalg.norm(H[k])
            u = w - O[k]
            u = u - h * float(h @ u)                             # across the odd axis
            if float(np.linalg.norm(u)) <= tol:
                continue                                        # it meets them already
            O2 = np.array(O, dtype=float)
            O2[k] = O2[k] + u
            O2[pair] = w
            P = chain_offsets(O2, Tf)
            R0 = Tf[:3, :3]
            held = [] if swept is None else [(swept, 0.0)]
            robot = make_robot(H, P, R0, held)
            if robot is None or not robot.has_known_decomposition():
                continue
            make = None if swept is None else (lambda v, P=P: make_robot(H, P, R0, [(swept, v)]))
            reliable = least_squares_flags_reliable(lambda held, P=P: make_robot(H, P, R0, held), swept,
                                                    np.asarray(lo, dtype=float), np.asarray(hi, dtype=float), 7)
            return cls(k, H, u, R0, robot if swept is None else None, make, swept,
                       np.asarray(lo, dtype=float), np.asarray(hi, dtype=float), reliable, moved)
        return None

    def robot_at(self, v):
        """``eaik``'s robot of the moved chain with the swept joint held at ``v`` (rad), or None (a 7R chain's;
        :attr:`robot` is a 6R chain's); kept by value."""
        r = self._robots.get(v, self)
        if r is self:
            if len(self._robots) >= ROBOTS_KEPT:
                self._robots.clear()
            r = self._robots[v] = self._make(v)
        return r

    def _vector(self, q):
        """``R_n(-q_n) ... R_{k+1}(-q_{k+1}) (I - R_k(-q_k)) u`` (3 floats, m) at joint values ``q``: the
        module docstring's translation before the frame's rotations (Rodrigues' formula in floats)."""
        c, s = math.cos(q[self.k]), math.sin(q[self.k])
        (ux, uy, uz), (vx, vy, vz) = self._u, self._hu
        x, y, z = (1.0 - c) * ux + s * vx, (1.0 - c) * uy + s * vy, (1.0 - c) * uz + s * vz
        for j in range(self.k + 1, self.n + 1):           # turned by -q_j about axis j
            hx, hy, hz = self._H[j]
            c, s = math.cos(q[j]), -math.sin(q[j])
            d = (1.0 - c) * (hx * x + hy * y + hz * z)
            x, y, z = (x * c + (hy * z - hz * y) * s + hx * d, y * c + (hz * x - hx * z) * s + hy * d,
                       z * c + (hx * y - hy * x) * s + hz * d)
        return x, y, z

    def polish(self, T, q, tol):
        """``(q, error, calls)`` from a start ``q`` (n + 1,) near the answer for pose ``T`` (4x4, the solver's
        frame; a 7R chain's swept joint held at its value in ``q``): the iterates of the module docstring, the
        branch nearest the last one each time, until the position error on the exact chain is at most ``tol``
        (m; the orientation is exact), after :data:`MAX_CALLS`, or once the error stops falling; the best
        iterate, in limits. None when the moved chain has no exact branch near an iterate, or the best is out of
        limits."""
        robot = self.robot if self.swept is None else self.robot_at(float(q[self.swept]))
        if robot is None:
            return None
        (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = (T[:3, :3] @ self._RfT).tolist()
        px, py, pz = T[:3, 3].tolist()
        Tp = T.copy()
        x, y, z = self._vector(q.tolist())
        err, k, j = math.inf, 0, -1
        while k < MAX_CALLS:
            k += 1
            Tp[0, 3] = px - (m00 * x + m01 * y + m02 * z)
            Tp[1, 3] = py - (m10 * x + m11 * y + m12 * z)
            Tp[2, 3] = pz - (m20 * x + m21 * y + m22 * z)
            sol = robot.calculate_IK(Tp)
            qn, j = self._nearest(robot, sol, Tp, q, j)
            if qn is None:
                return None
            if self.swept is not None:
                qn[self.swept] = q[self.swept]
            x0, y0, z0 = x, y, z
            x, y, z = self._vector(qn.tolist())
            e = math.sqrt((x - x0) ** 2 + (y - y0) ** 2 + (z - z0) ** 2)
            if e >= err:                # not contracting (an offset too large for the plain iteration):
                break                   # the best iterate, for the caller's Gauss-Newton steps
            q, err = qn, e
            if err <= tol:
                break
        return self._limited(q, q, err, k)

    def _limited(self, q, x0, err, k):
        """``(q, err, k)`` with ``q`` in limits (moved by whole turns where it left a joint's range), or None."""
        for v, (lo, hi) in zip(q.tolist(), self._bounds):     # floats: a few numpy calls cost more
            if not lo <= v <= hi:
                q = self._turns.place(q[None], x0)[0]
                if (q < self._lo_in).any() or (q > self._hi_in).any():
                    return None
                break
        return q, err, k

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
        q = self._nearest(self.robot, sol, T, x0)[0]
        if q is not None and not ((q < self._lo_in).any() or (q > self._hi_in).any()):
            return q, True          # the nearest by whole turns, in limits: the in-limit one nearest x0
        ls = sol.is_LS if self.reliable else np.array([not self._exact(self.robot, r, T) for r in Q])
        Q = self._turns.place(Q, x0)
        ok = np.logical_and.reduce(Q <= self._hi_in, axis=1)
        ks = np.greater(ok, ls).nonzero()[0]
        exact = len(ks) > 0
        if not exact:
            ks = ok.nonzero()[0]
            if not len(ks):
                return None, False
        D = Q[ks] - x0
        D *= D
        return Q[ks[np.add.reduce(D, axis=1).argmin()]], exact

    def _track(self, T, ref, j):
        """``(q, j)``: the exact branch ``q`` of the moved chain for pose ``T`` nearest ``ref`` by whole turns
        and its index ``j`` in ``eaik``'s list (``j``: the last one's, tried first), or ``(None, -1)`` when there
        is none (the track left the moved chain's reach). Limits are checked on the last iterate alone."""
        return self._nearest(self.robot, self.robot.calculate_IK(T), T, ref, j)

    @staticmethod
    def _exact(robot, q, T) -> bool:
        """Whether branch ``q`` of ``robot`` reaches pose ``T`` (its forward kinematics within 1e-9)."""
        return bool(np.abs(robot.fwdkin(q)[:3] - T[:3]).max() < 1e-9)

    def _nearest(self, robot, sol, T, ref, j=-1):
        """``(q, j)``: the exact branch ``Q[j]`` of ``eaik``'s solution ``sol`` (``Q``: ``sol.Q``, k x n) for
        pose ``T`` nearest ``ref`` by whole turns (``ref`` plus the differences wrapped to [-pi, pi)), or
        ``(None, -1)``. ``j`` (>= 0): the branch's index in the last solution, taken at once when it is still
        exact and within 0.1 rad (norm) of ``ref`` (``eaik`` lists a pose's branches in the same order from
        one iterate to the next; distinct branches are far apart). Exact: by ``eaik``'s flag where it holds
        (:attr:`reliable`), else by ``robot``'s forward kinematics, nearest first."""
        Q = sol.Q
        k = Q.shape[0]
        rel = self.reliable
        if 0 <= j < k and (not rel or not sol.is_LS[j]):
            D = Q[j] - ref
            if D @ D < 0.01 and (rel or self._exact(robot, Q[j], T)):
                return ref + D, j
        if not k:
            return None, -1
        D = wrap_angle(Q - ref)
        d = np.add.reduce(D * D, axis=1)
        if not rel:                 # the nearest few checked by forward kinematics
            for i in d.argsort()[:4].tolist():
                if self._exact(robot, Q[i], T):
                    return ref + D[i], i
            return None, -1
        j = d.argmin()
        ls = sol.is_LS
        if ls[j]:                   # a least-squares twin nearest: the nearest exact one, if any
            d[ls] = math.inf
            j = d.argmin()
            if ls[j]:
                return None, -1
        return ref + D[j], int(j)

    def solve_around(self, T, x0, tol, deadline=math.inf):
        """:meth:`solve` from the seed ``x0`` with its last joint turned by k / :data:`TURNS` of a turn (k = 1,
        2, ...) until one reaches ``tol``: near the joint limits the approximate branches can all leave them
        where exact ones stay in (the xArm6: a third of the targets that went to the population LM); the first
        such answer, or None (also once ``deadline``, a ``time.perf_counter`` value, has passed)."""
        x = np.array(x0, dtype=float)
        v0 = float(x[self.n])
        for k in range(1, TURNS):
            if time.perf_counter() > deadline:
                break
            x[self.n] = v0 + k * _TAU / TURNS
            hit = self.solve(T, x, tol)
            if hit is not None and hit[1] <= tol:
                return hit
        return None

    def solve(self, T, x0, tol):
        """A chain whose odd axis is its last, nothing held (:attr:`last`): ``(q, error, calls)``, the last iterate
        ``q`` (n + 1,) for pose ``T`` (4x4, the solver's frame) from seed ``x0``, in limits, its position error on the exact chain (m; its orientation is exact) and the
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
        v = float(x0[self.n])
        rad = 2.0 * self.offset
        vp = gp = None
        retry = True
        k, j = 0, -1
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
                    v = float(q[self.n])
                    continue
            else:
                qn, j = self._track(Tp, q, j)
                if qn is None:              # the step left the moved chain's reach: the last iterate
                    break
                q = qn
            g = float(q[self.n]) - v
            g = wrap_angle(g)
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
        return self._limited(q, x0, err, k)
