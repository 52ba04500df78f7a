"""Settling a wheeled rover on terrain: a reduced Newton solver in the settling unknowns only.

Given the body's x, y and yaw, :class:`WheelSettler` finds the body's z, roll and pitch and the free
suspension joints (rocker, bogie; a differential's dependent joint follows its coupling) so that every wheel
rim touches the terrain. It is what :meth:`~mechanism_model_core.locomotion.wheeled.WheeledLocomotorModel.settle`
runs; the general IK (:func:`~mechanism_model_core.ik.solve_ik`) solves the same constraints more slowly.

How
---
* **Kinematics reduced to the unknowns.** The compiled segment tree of the mechanism (each segment a rotation
  about or a translation along its z axis) is cut at the *active* segments, those moved by an unknown (or
  by a joint coupled to one). Everything between two active segments -- placements, the body's x, y, yaw,
  the steering and drive joints, which settling does not move -- is folded into one constant 4x4 per edge,
  recomputed only when the joints inside it change (so along a path only the fold holding x, y, yaw is
  redone). A Newton iteration then costs one small matrix product per active segment (7 for Rocky 8) and
  one stacked product for all wheel centres and axes.
* **Jacobian of the rim distances.** At the rim contact ``p_i`` with terrain normal ``n_i`` the distance's
  derivative with respect to an active revolute segment (world axis ``s``, origin ``o``) is
  ``n_i . (s x (p_i - o))``, and ``n_i . s`` for a prismatic one (the contact point moves with the wheel to
  first order: the rim angle is stationary at the contact). The coupling Jacobian maps active coordinates
  to the unknowns (constant for affine couplings such as a differential).
* **Rim contacts.** A plane has a closed form (the rim point ``c - r w/|w|``, ``w`` the normal's projection
  on the wheel plane). On a bilinear height field each wheel's contact angle ``t`` on its rim minimises the
  vertical clearance ``g(t) = p_z(t) - h(p_x(t), p_y(t))``: a few vectorised Newton steps on ``g'(t) = 0``
  with the bilinear surface's analytic gradient and twist ``h_xy``, started from the previous pose's angles
  (``rim_angles``), the lower half rim sampled only when no hint is given and once more at convergence (so
  a lower rim point elsewhere -- a step, a bump -- is never missed: that wheel restarts from it). Other
  terrains (meshes, triangle height fields, user terrains) use
  :meth:`~mechanism_model_core.terrain.Terrain.wheel_contact`.

Rim angles: the contact is ``c + r (cos t u + sin t v)`` with ``c`` the wheel centre, ``a`` its spin axis,
``u`` the unit projection of the ground's -z on the wheel plane and ``v = a x u`` (ground frame; rad).
Distances are signed distances (m) from the terrain's tangent plane at the terrain point below the contact,
as :class:`~mechanism_model_core.terrain.Contact` defines them.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidConfiguration
from ..terrain import HeightField, Plane
from ..spatial import cross_rows, wrap_angle

__all__ = ["WheelSettler", "SettleResult"]

_I4 = np.eye(4)
_LOWER_HALF = np.linspace(-math.pi / 2, math.pi / 2, 25)   # rim samples for seeding and the final check


class SettleResult:
    """Output of :meth:`WheelSettler.solve` (ground frame, m, rad): ``q``, ``success``, ``reason``,
    ``points`` (N, 3) rim contacts, ``normals`` (N, 3), ``distances`` (N,), ``iterations``, ``rim_angles``."""

    __slots__ = ("q", "success", "reason", "points", "normals", "distances", "iterations", "rim_angles",
                 "sensitivity")

    def __init__(self, q, success, reason, points, normals, distances, iterations, rim_angles, sensitivity=None):
        self.q, self.success, self.reason = q, success, reason
        self.points, self.normals, self.distances = points, normals, distances
        self.iterations, self.rim_angles, self.sensitivity = iterations, rim_angles, sensitivity


class _Fold:
    """A constant product of segment transforms ``P_s M_s(q_s)`` (then ``tail``), recomputed only when
    one of its coordinates changes."""

    __slots__ = ("segs", "coords", "tail", "cache")

    def __init__(self, segs, coords, tail):
        self.segs, self.coords, self.tail = segs, np.asarray(coords, dtype=int), tail
        self.cache = (None, None)

    def get(self, q, P, kind, coord):
        key = q[self.coords].tobytes() if len(self.coords) else b""
        cached_key, value = self.cache         # one tuple: threads never see a key with another's value
        if key != cached_key:
            T = _I4
            for s in self.segs:
                T = T @ P[s] @ _motion(kind[s], q[coord[s]])
            value = T @ self.tail
            self.cache = (key, value)
        return value


def _motion(kind, v):
    """``M(q)`` of a segment: rotation about (kind 1) or translation along (kind 2) its z axis."""
    if kind == 1:
        c, s = math.cos(v), math.sin(v)
        return np.array(((c, -s, 0.0, 0.0), (s, c, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    if kind == 2:
        return np.array(((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, v), (0.0, 0.0, 0.0, 1.0)))
    return _I4


class WheelSettler:
    """Reduced Newton settling for one mechanism and its wheels (constants only; built once per model).

    ``wheels``: sequence of ``(wheel body, spin axis in that body (3,), radius m)``; ``unknowns``: the
    independent coordinate names solved for (the floating joint's z, roll, pitch and the free suspension
    joints); ``given``: the coordinates the caller sets (the floating joint's x, y, yaw): at a solution the
    solver also returns ``d unknowns / d given`` (:attr:`SettleResult.sensitivity`), the first-order
    prediction of the next pose along a path."""

    def __init__(self, mechanism, wheels, unknowns, given=()):
        m = mechanism
        st = m.segment_tree
        self.m = m
        self._P, self._kind, self._coord = st.seg_P, [int(k) for k in st.seg_kind], [int(c) for c in st.seg_coord]
        parent = [int(p) for p in st.seg_parent]
        self.n = len(wheels)
        self.radii = np.array([float(w[2]) for w in wheels])
        self.idx_u = np.array([m.coordinate_index(c) for c in unknowns], dtype=int)
        self.lower, self.upper = m.lower_limits[self.idx_u], m.upper_limits[self.idx_u]
        # active coordinates: the unknowns and every coupled coordinate that follows one of them
        active_names = set(unknowns)
        self._deps = []
        for name, expr in m.couplings.items():
            if expr.variables & active_names:
                active_names.add(name)
                self._deps.append((m.coordinate_index(name), expr,
                                   [(v, m.coordinate_index(v)) for v in expr.variables]))
        self._affine = all(e.linear_coefficients() is not None for _, e, _ in self._deps)
        active_coords = {m.coordinate_index(c) for c in active_names}
        indep = {c: k for k, c in enumerate(m.independent_coordinates)}
        self._cols = np.array([indep[c] for c in unknowns], dtype=int)
        # the wheels' frames and the segments on their paths
        wseg, wtail = [], []
        for body, axis, _ in wheels:
            fr = m.frame(body)
            T = np.asarray(st.frame_T[fr.index])
            tail = np.zeros((4, 2))
            tail[:, 0] = T[:, 3]
            tail[:3, 1] = T[:3, :3] @ np.asarray(axis, dtype=float)
            wseg.append(fr.segment)
            wtail.append(tail)
        paths = []
        for s in wseg:
            path = []
            while s > 0:
                path.append(s)
                s = parent[s]
            paths.append(path[::-1])
        union = sorted({s for p in paths for s in p})
        self.active = [s for s in union if self._coord[s] in active_coords]
        pos = {s: k for k, s in enumerate(self.active)}
        if not self.active:
            raise InvalidConfiguration("settling: no unknown moves a wheel")

        def split(path_to, upto):
            """(nearest active ancestor's position or -1, the constant segments after it) along path_to."""
            pa, between = -1, []
            for s in path_to:
                if s == upto:
                    break
                if s in pos:
                    pa, between = pos[s], []
                else:
                    between.append(s)
            return pa, between

        self._parent_pos, self._folds = [], []
        for a in self.active:
            path = next(p for p in paths if a in p)
            pa, between = split(path, a)
            self._parent_pos.append(pa)
            self._folds.append(_Fold(between, [self._coord[s] for s in between], np.asarray(self._P[a])))
        self._leaf_pos, self._leaf_folds = [], []
        for path, tail in zip(paths, wtail):
            pa, between = split(path + [None], None)
            self._leaf_pos.append(pa)
            self._leaf_folds.append(_Fold(between, [self._coord[s] for s in between], tail))
        if any(p < 0 for p in self._leaf_pos):
            raise InvalidConfiguration("settling: a wheel that no unknown moves")
        self._leaf_index = np.array(self._leaf_pos, dtype=int)
        self._active_rev = np.array([self._kind[s] == 1 for s in self.active])
        self._rev_all = bool(self._active_rev.all())
        self._active_coord = [self._coord[s] for s in self.active]
        anc = np.zeros((self.n, len(self.active)))
        for i, path in enumerate(paths):
            for s in path:
                if s in pos:
                    anc[i, pos[s]] = 1.0
        self._anc = anc
        self._given = []
        for name in given:
            ci = m.coordinate_index(name)
            seg = next(k for k in range(1, len(self._coord)) if self._coord[k] == ci)
            path = []
            while seg > 0:
                path.append(seg)
                seg = parent[seg]
            self._given.append((path[::-1], self._kind[path[0]] == 1,
                                np.array([1.0 if path[0] in pth else 0.0 for pth in paths])))
        chain = sorted({s_ for path, _, _ in self._given for s_ in path})
        self._given_chain = chain
        self._given_parent = {s_: parent[s_] for s_ in chain}      # whole root paths: parents are in the chain
        self._dseg = None
        if self._affine:
            self._dseg = self._seg_jacobian(m.configuration())

    def _seg_jacobian(self, q):
        """d(active segment coordinates) / d(unknowns) at ``q``."""
        D = self.m.coupling_jacobian(q) if self.m.couplings else None
        if D is None:
            out = np.zeros((len(self.active), len(self.idx_u)))
            col = {int(c): k for k, c in enumerate(self.idx_u)}
            for k, c in enumerate(self._active_coord):
                out[k, col[c]] = 1.0
            return out
        return D[self._active_coord][:, self._cols]

    # ------------------------------------------------------------------------------------- kinematics
    def _constant_folds(self, q):
        """The folds at ``q``'s constant coordinates: per active segment, and the wheels' stacked (N, 4, 2)."""
        P, kind, coord = self._P, self._kind, self._coord
        F = [f.get(q, P, kind, coord) for f in self._folds]
        G = np.array([f.get(q, P, kind, coord) for f in self._leaf_folds])
        return F, G

    def wheel_frames(self, q, folds=None):
        """Wheel centres (N, 3), unit spin axes (N, 3), and the active segments' world axes and origins
        (K, 3) each, at ``q`` (ground frame). ``folds``: :meth:`_constant_folds` of ``q`` when known."""
        F, G = self._constant_folds(q) if folds is None else folds
        kind, coord = self._kind, self._coord
        Ts = []
        for k, a in enumerate(self.active):
            pk = self._parent_pos[k]
            T = F[k] if pk < 0 else Ts[pk].dot(F[k])
            v = q[coord[a]]
            if kind[a] == 1:
                c, s_ = math.cos(v), math.sin(v)
                M = np.array(((c, -s_, 0.0, 0.0), (s_, c, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
            else:
                M = np.array(((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, v), (0.0, 0.0, 0.0, 1.0)))
            Ts.append(T.dot(M))
        TT = np.array(Ts)
        W = np.matmul(TT[self._leaf_index], G)
        A = W[:, :3, 1]
        A = A / np.sqrt(np.einsum("ij,ij->i", A, A))[:, None]
        return W[:, :3, 0], A, TT[:, :3, 2], TT[:, :3, 3]

    # ----------------------------------------------------------------------------------------- solve
    def solve(self, terrain, q, *, tol=1e-9, max_iterations=30, rim_angles=None, previous=None) -> SettleResult:
        """Settle from the full configuration ``q`` (x, y, yaw and every joint that is not an unknown are
        kept; the unknowns start from ``q``'s values). ``rim_angles`` (N,): hints from the previous pose;
        ``previous``: ``(q, sensitivity)`` of the previous pose along a path, to predict the unknowns."""
        q = np.array(q, dtype=float)
        if previous is not None and previous[1] is not None and self._given:
            qp, sens = previous
            gi = [self._coord[path[-1]] for path, _, _ in self._given]
            delta = q[gi] - np.asarray(qp)[gi]
            delta = np.where([rev for _, rev, _ in self._given], wrap_angle(delta), delta)
            if np.all(np.abs(delta) < 0.5):                 # a neighbour along a path: first-order prediction
                q[self.idx_u] = np.clip(np.asarray(qp)[self.idx_u] + sens.dot(delta), self.lower, self.upper)
        for ci, expr, env in self._deps:
            q[ci] = expr({v: q[k] for v, k in env})
        if isinstance(terrain, Plane):
            contact = _PlaneContacts(terrain)
        elif isinstance(terrain, HeightField) and terrain.interpolation == "bilinear":
            contact = _BilinearContacts(terrain, rim_angles, self.n)
        else:
            contact = _GenericContacts(terrain)
        reason = "did not converge"
        it = 0
        reseeds = 0
        res = None
        folds = self._constant_folds(q)
        for it in range(1, max_iterations + 1):
            C, A, S, O = self.wheel_frames(q, folds)
            res = contact(C, A, self.radii)
            if res is None:
                reason = "a wheel left the terrain"
                break
            p, nrm, dist = res
            if not np.all(np.isfinite(dist)):
                reason = "a wheel left the terrain"
                res = None
                break
            if np.max(np.abs(dist)) <= tol:
                if reseeds < 3 and contact.recheck(C, A, self.radii, tol):
                    reseeds += 1                           # a lower rim point elsewhere: go on from it
                    continue
                return SettleResult(q, True, "converged", p, nrm, dist, it, contact.angles(p, C, A),
                                    self._sensitivity(q, p, nrm, S, O))
            Ju = self._jacobian(q, p, nrm, S, O)
            dx = None
            if Ju.shape[0] == Ju.shape[1]:
                try:
                    dx = np.linalg.solve(Ju, -dist)
                except np.linalg.LinAlgError:
                    dx = None
                if dx is not None and not np.all(np.isfinite(dx)):
                    dx = None
            if dx is None:
                dx = np.linalg.lstsq(Ju, -dist, rcond=None)[0]
            step = float(np.max(np.abs(dx)))
            if step > 0.2:                                  # keep each step inside the linearisation
                dx *= 0.2 / step
            q[self.idx_u] = np.clip(q[self.idx_u] + dx, self.lower, self.upper)
            for ci, expr, env in self._deps:
                q[ci] = expr({v: q[k] for v, k in env})
        if res is None:
            C, A, _, _ = self.wheel_frames(q)
            ct = terrain.wheel_contact(C, A, self.radii)
            return SettleResult(q, False, reason, ct.point, ct.normal, ct.distance, it, contact.angles(ct.point, C, A))
        p, nrm, dist = res
        return SettleResult(q, False, reason, p, nrm, dist, it, contact.angles(p, C, A))


    def _jacobian(self, q, p, nrm, S, O):
        """d(rim distances)/d(unknowns) at contacts ``p`` with normals ``nrm`` (N x U)."""
        # n . (s x (p - o)) = s . (p x n) - n . (s x o): Pluecker coordinates of the joint axes
        J = cross_rows(p, nrm).dot(S.T)
        J -= nrm.dot(cross_rows(S, O).T)
        if not self._rev_all:
            J[:, ~self._active_rev] = nrm.dot(S[~self._active_rev].T)
        J *= self._anc
        return J.dot(self._dseg if self._affine else self._seg_jacobian(q))

    def _sensitivity(self, q, p, nrm, S, O):
        """d(unknowns)/d(given coordinates) at a solution (U x G), or None."""
        if not self._given:
            return None
        P, kind, coord = self._P, self._kind, self._coord
        world = {0: _I4}                                # the given segments' world poses, shared prefixes once
        for s_ in self._given_chain:
            world[s_] = world[self._given_parent[s_]].dot(P[s_]).dot(_motion(kind[s_], q[coord[s_]]))
        K = np.empty((self.n, len(self._given)))
        pn = None
        for g, (path, rev, mask) in enumerate(self._given):
            T = world[path[-1]]
            s_w, o_w = T[:3, 2], T[:3, 3]
            if rev:
                pn = cross_rows(p, nrm) if pn is None else pn
                K[:, g] = pn.dot(s_w) - nrm.dot(np.cross(s_w, o_w))
            else:
                K[:, g] = nrm.dot(s_w)
            K[:, g] *= mask
        Ju = self._jacobian(q, p, nrm, S, O)
        try:
            if Ju.shape[0] == Ju.shape[1]:
                return -np.linalg.solve(Ju, K)
        except np.linalg.LinAlgError:
            pass
        return -np.linalg.lstsq(Ju, K, rcond=None)[0]


# ------------------------------------------------------------------------------------- rim contacts
def _rim_basis(A):
    """``u``: unit projection of -z on each wheel plane; ``v = a x u`` (N, 3) each."""
    u = A * A[:, 2:3]
    u[:, 2] -= 1.0
    nu = np.sqrt(np.einsum("ij,ij->i", u, u))
    if np.any(nu < 1e-9):
        raise InvalidConfiguration("settling: a wheel axis is vertical (the wheel lies flat)")
    u /= nu[:, None]
    return u, cross_rows(A, u)


def _angles_of(p, C, A):
    u, v = _rim_basis(A)
    d = p - C
    return np.arctan2(np.einsum("ij,ij->i", d, v), np.einsum("ij,ij->i", d, u))


class _PlaneContacts:
    def __init__(self, plane):
        self.n = np.asarray(plane.unit_normal)
        self.p0 = np.asarray(plane.point)

    def __call__(self, C, A, r):
        n = self.n
        an = A.dot(n)
        nw = np.sqrt(1.0 - an * an)                        # |n - (a.n) a| for unit a, n
        if not nw.min() > 1e-9:
            return None
        k = r / nw
        p = C - k[:, None] * n
        p += (k * an)[:, None] * A
        return p, np.tile(n, (len(p), 1)), (p - self.p0).dot(n)

    def recheck(self, C, A, r, tol):
        return False                   # the closed form is the global minimum on a plane

    angles = staticmethod(_angles_of)


class _GenericContacts:
    def __init__(self, terrain):
        self.terrain = terrain

    def __call__(self, C, A, r):
        ct = self.terrain.wheel_contact(C, A, r)
        return ct.point, ct.normal, ct.distance

    def recheck(self, C, A, r, tol):
        return False                   # wheel_contact samples the whole rim itself

    angles = staticmethod(_angles_of)


class _BilinearContacts:
    """Rim contacts on a bilinear height field: Newton on the rim angle from hints (module docstring)."""

    def __init__(self, hf, hints, n):
        self.hf = hf
        H = hf.heights
        self.Hf = np.ascontiguousarray(H).reshape(-1)
        self.nx, self.ny = H.shape
        self.ox, self.oy = float(hf.origin[0]), float(hf.origin[1])
        self.sx, self.sy = float(hf.spacing[0]), float(hf.spacing[1])
        self.isx, self.isy = 1.0 / self.sx, 1.0 / self.sy
        self.clamp = hf.outside == "clamp"
        h = None if hints is None else np.asarray(hints, dtype=float).reshape(-1)
        self.t = h.copy() if h is not None and h.shape == (n,) and np.all(np.isfinite(h)) else None

    def surface(self, x, y):
        """Height, gradient (h_x, h_y) and twist h_xy (m, 1, 1/m) at points; None outside (unless clamp)."""
        u = (x - self.ox) * self.isx
        v = (y - self.oy) * self.isy
        nx1, ny1 = self.nx - 1, self.ny - 1
        off_u = off_v = None
        if not (u.min() >= 0.0 and u.max() <= nx1 and v.min() >= 0.0 and v.max() <= ny1):
            if not self.clamp:
                return None
            uc, vc = np.clip(u, 0.0, nx1), np.clip(v, 0.0, ny1)
            off_u, off_v = uc != u, vc != v
            u, v = uc, vc
        i = np.minimum(u.astype(np.intp), nx1 - 1)
        j = np.minimum(v.astype(np.intp), ny1 - 1)
        fu, fv = u - i, v - j
        k = i * self.ny + j
        Hf = self.Hf
        h00, h10, h01, h11 = Hf.take(k), Hf.take(k + self.ny), Hf.take(k + 1), Hf.take(k + self.ny + 1)
        a, b = h10 - h00, h01 - h00
        tw = h11 - h10 - b
        h = h00 + a * fu + (b + tw * fu) * fv
        hx = (a + tw * fv) * self.isx
        hy = (b + tw * fu) * self.isy
        hxy = tw * (self.isx * self.isy)
        if off_u is not None:                        # clamp: flat beyond the border
            hx[off_u] = 0.0
            hy[off_v] = 0.0
            hxy[off_u | off_v] = 0.0
        return h, hx, hy, hxy

    def _seed(self, C, u, v, r):
        """The lowest-clearance sample of each wheel's lower half rim (angles, clearances), or Nones."""
        ct, st = np.cos(_LOWER_HALF), np.sin(_LOWER_HALF)
        P = C[:, None, :] + r[:, None, None] * (ct[None, :, None] * u[:, None, :] + st[None, :, None] * v[:, None, :])
        s = self.surface(P[..., 0].ravel(), P[..., 1].ravel())
        if s is None:
            return None, None
        g = P[..., 2] - s[0].reshape(P.shape[:2])
        k = np.argmin(g, axis=1)
        return _LOWER_HALF[k], g[np.arange(len(k)), k]

    def _eval(self, t, C, u, v, r):
        ct, st = np.cos(t), np.sin(t)
        e = ct[:, None] * u + st[:, None] * v
        p = C + r[:, None] * e
        s = self.surface(p[:, 0], p[:, 1])
        if s is None:
            return None
        h, hx, hy, hxy = s
        dp = r[:, None] * (ct[:, None] * v - st[:, None] * u)
        g1 = dp[:, 2] - hx * dp[:, 0] - hy * dp[:, 1]
        g2 = r * (hx * e[:, 0] + hy * e[:, 1] - e[:, 2]) - 2.0 * hxy * dp[:, 0] * dp[:, 1]
        return p, h, hx, hy, g1, g2

    def __call__(self, C, A, r):
        u, v = _rim_basis(A)
        if self.t is None:
            self.t, _ = self._seed(C, u, v, r)
            if self.t is None:
                return self._generic(C, A, r)
        t = self.t.copy()
        lo = np.full(len(t), -np.inf)
        hi = np.full(len(t), np.inf)
        for _ in range(8):
            ev = self._eval(t, C, u, v, r)
            if ev is None:
                return self._generic(C, A, r)
            p, h, hx, hy, g1, g2 = ev
            lo = np.where(g1 < 0.0, np.maximum(lo, t), lo)
            hi = np.where(g1 > 0.0, np.minimum(hi, t), hi)
            good = g2 > 1e-9 * r
            dt = np.where(good, -g1 / np.where(good, g2, 1.0), -np.sign(g1) * 0.05)
            dt = np.clip(dt, -0.2, 0.2)
            if np.max(np.abs(dt)) < 1e-6:       # the clearance is then within g'' dt^2 / 2 < 1e-12 m of its minimum
                break
            tn = t + dt
            out = ~((tn > lo) & (tn < hi)) & np.isfinite(lo) & np.isfinite(hi)
            t = np.where(out, 0.5 * (lo + hi), tn)
        else:
            # Newton did not settle: the minimum sits on a kink (a cell edge crossing the rim). Bisect on
            # the sign of g' inside the bracket the iterations found (g is continuous: to 1e-10 rad)
            bad = np.nonzero(~(np.abs(dt) < 1e-6))[0]
            for i in bad:
                if not (np.isfinite(lo[i]) and np.isfinite(hi[i])):
                    return self._generic(C, A, r)
                t[i] = self._bisect(lo[i], hi[i], C[i], u[i], v[i], float(r[i]))
            ev = self._eval(t, C, u, v, r)
            if ev is None:
                return self._generic(C, A, r)
            p, h, hx, hy, g1, g2 = ev
        self.t = t
        self.g = p[:, 2] - h
        k = 1.0 / np.sqrt(1.0 + hx * hx + hy * hy)
        nrm = np.empty((len(t), 3))
        nrm[:, 0] = -hx * k
        nrm[:, 1] = -hy * k
        nrm[:, 2] = k
        return p, nrm, (p[:, 2] - h) * k

    def _bisect(self, lo, hi, c, u, v, r):
        """The rim angle in [lo, hi] where g' changes sign (plain floats: one wheel)."""
        cx, cy, cz = (float(x) for x in c)
        ux, uy, uz = (float(x) for x in u)
        vx, vy, vz = (float(x) for x in v)
        nx1, ny1, ny, Hf = self.nx - 1, self.ny - 1, self.ny, self.Hf
        while hi - lo > 1e-10:
            t = 0.5 * (lo + hi)
            ct, st = math.cos(t), math.sin(t)
            px, py = cx + r * (ct * ux + st * vx), cy + r * (ct * uy + st * vy)
            a_ = min(max((px - self.ox) * self.isx, 0.0), nx1)
            b_ = min(max((py - self.oy) * self.isy, 0.0), ny1)
            i, j = min(int(a_), nx1 - 1), min(int(b_), ny1 - 1)
            fu, fv = a_ - i, b_ - j
            k = i * ny + j
            h00, h10, h01, h11 = float(Hf[k]), float(Hf[k + ny]), float(Hf[k + 1]), float(Hf[k + ny + 1])
            tw = h00 - h10 - h01 + h11
            hx = (h10 - h00 + tw * fv) * self.isx
            hy = (h01 - h00 + tw * fu) * self.isy
            dx, dy, dz = r * (ct * vx - st * ux), r * (ct * vy - st * uy), r * (ct * vz - st * uz)
            g1 = dz - hx * dx - hy * dy
            if g1 < 0.0:
                lo = t
            else:
                hi = t
        return 0.5 * (lo + hi)

    def _generic(self, C, A, r):
        ct = self.hf.wheel_contact(C, A, r)
        self.t = _angles_of(ct.point, C, A)
        self.g = ct.point[:, 2] - ct.terrain_point[:, 2]
        return ct.point, ct.normal, ct.distance

    def recheck(self, C, A, r, tol):
        """True (and the angles reseeded) when some wheel has a rim point clearly lower than its contact."""
        u, v = _rim_basis(A)
        t, g = self._seed(C, u, v, r)
        if t is None:
            return False
        worse = g < self.g - max(tol, 1e-9)
        if not worse.any():
            return False
        self.t = np.where(worse, t, self.t)
        return True

    angles = staticmethod(_angles_of)
