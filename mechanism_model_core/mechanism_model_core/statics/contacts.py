"""Contact loads: the forces at wheels and feet that hold a mechanism in static equilibrium (CLARAty
2.2.2.4), the torques its actuated joints supply, and which contacts would slip or lift off.

Model. Each :class:`Contact` is a point contact at the origin of a frame, with the terrain normal and a
Coulomb friction coefficient; it transmits a force ``f_i`` (N, ground frame) *from the terrain to the
mechanism*. With ``J_i`` the point Jacobian of the contact (on the body that touches the terrain: the wheel,
when ``wheel`` is given, so that the wheel's drive joint feels the traction) and ``D`` the coupling
Jacobian, equilibrium on the independent coordinates reads

    tau + D^T sum_i J_i^T f_i = g(q)            (``g``: generalized gravity and payloads minus applied wrenches)

where ``tau`` is zero on *passive* coordinates (a floating base, rocker and bogie pivots, every joint marked
``actuated="false"``) and free on actuated ones. The passive rows fix the contact forces: a rocker-bogie is
statically determinate in its normal loads this way. Where they do not (traction on a slope, a walker on
four feet), the solution is chosen:

* ``"least_traction"`` (default): the smallest tangential forces, then the smallest forces, among the
  exact solutions (a lexicographic least-norm problem solved with orthonormal null-space bases);
* ``"friction"``: if that solution leaves a contact outside its friction cone, the forces are redistributed
  within the cones (``|f_t| <= mu f_n``, ``f_n >= 0``) by a small constrained least-squares problem (scipy
  SLSQP), and only contacts that no redistribution can keep inside are reported as slipping.

A contact whose normal force would be negative cannot pull: it is *lifted* (force zero) and the others are
solved again (an active set), until every normal force is >= 0 or too few contacts remain
(``equilibrium=False``: the mechanism cannot stand there, the residual says by how much).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..data import SHARED, check_data, derived
from ..errors import MechanismModelError, UnknownBody, UnknownFrame
from ..joints import JointType
from ..kinematics import single_pass_output
from ..model import Mechanism
from ..spatial import cross_rows
from .gravity import (DEFAULT_GRAVITY, Wrench, _configuration, _gravity_full, _gravity_single, _single_plan,
                      _wrench_full, coupling_jacobian)
from .gravity import parse_gravity
from .mass import Payload
from .gravity import _constant_coupling_jacobian
from .mass import tree_arrays
from ..kinematics import single_pass_index

__all__ = ["Contact", "ContactLoads", "contact_loads", "passive_coordinates", "wheel_contacts"]


def _tangent_basis(n: np.ndarray) -> np.ndarray:
    """Columns (t1, t2, n): a right-handed orthonormal basis with ``n`` last."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = cross_rows(helper, n)
    t1 /= np.linalg.norm(t1)
    B = np.stack([t1, cross_rows(n, t1), n], axis=1)
    B.setflags(write=False)
    return B


@dataclass(frozen=True, eq=False)
class Contact:
    """A point contact at the origin of ``frame``.

    ``normal``: terrain normal (ground frame, pointing out of the terrain into the mechanism; normalized
    here). ``friction``: Coulomb coefficient ``mu >= 0``. ``wheel``: the body that rolls on the terrain when
    ``frame`` sits on a non-rolling carrier (a wheel's contact frame lives on its steering link so that it
    does not spin): the contact point is then taken as a point of that body, and its drive joint carries the
    traction torque.
    """

    frame: str
    normal: tuple = (0.0, 0.0, 1.0)
    friction: float = 0.5
    wheel: str | None = None

    def __post_init__(self):
        n = np.asarray(self.normal, dtype=float).reshape(-1)
        norm = float(np.linalg.norm(n)) if n.shape == (3,) and np.all(np.isfinite(n)) else 0.0
        if norm < 1e-12:
            raise MechanismModelError(f"contact {self.frame!r}: normal must be a non-zero finite 3-vector, "
                                      f"got {self.normal!r}")
        object.__setattr__(self, "normal", n / norm)
        try:
            mu = float(self.friction)
        except (TypeError, ValueError):
            raise MechanismModelError(f"contact {self.frame!r}: friction must be a number") from None
        if not np.isfinite(mu) or mu < 0:
            raise MechanismModelError(f"contact {self.frame!r}: friction coefficient must be finite and >= 0, "
                                      f"got {self.friction!r}")
        object.__setattr__(self, "friction", mu)
        object.__setattr__(self, "_basis", _tangent_basis(n / norm))

    @property
    def basis(self) -> np.ndarray:
        """Columns (t1, t2, n): the contact's tangent directions and its normal (ground frame)."""
        return self._basis.copy()


@dataclass(frozen=True, eq=False)
class ContactLoads:
    """Result of :func:`contact_loads`.

    ``forces`` (n, 3): force of the terrain on the mechanism at each contact (N, ground frame);
    ``normal_forces`` (n,) and ``tangential_forces`` (n, 3) split it along each contact's normal;
    ``friction_ratio`` (n,): ``|f_t| / f_n`` (inf for a loaded-free contact with traction, 0 when unloaded);
    ``slip`` and ``lift`` (n,) flags; ``torques`` on the independent coordinates (N m or N; zero on passive
    ones up to ``residual``) and ``actuated_torques`` by coordinate name; ``equilibrium``: the passive
    equations are met (``residual``, N or N m, is their largest violation); ``passive`` the passive
    coordinate names used."""

    contacts: tuple
    forces: np.ndarray
    normal_forces: np.ndarray
    tangential_forces: np.ndarray
    friction_ratio: np.ndarray
    slip: np.ndarray
    lift: np.ndarray
    torques: np.ndarray
    actuated_torques: dict
    equilibrium: bool
    residual: float
    passive: tuple
    method: str = "least_traction"
    coordinates: tuple = field(default=())


def passive_coordinates(mechanism: Mechanism) -> tuple:
    """Independent coordinates that no actuator drives: those of floating and planar joints (a free base)
    and of joints marked not actuated."""
    return derived(mechanism, "statics.passive_coordinates", _passive_coordinates)


def _passive_coordinates(mechanism: Mechanism) -> tuple:
    out = []
    for c in mechanism.independent_coordinates:
        j = mechanism.joint(mechanism.coordinate_joint[mechanism.coordinate_names.index(c)])
        if not j.actuated or j.type in (JointType.FLOATING, JointType.PLANAR):
            out.append(c)
    return tuple(out)


def wheel_contacts(mechanism: Mechanism, normal=(0.0, 0.0, 1.0), friction: float = 0.6) -> list[Contact]:
    """A :class:`Contact` for every frame named ``<wheel>_contact`` of the library's rover convention, rolling
    on the child body of joint ``<wheel>_drive`` when there is one."""
    out = []
    for name in mechanism.frame_names:
        if not name.endswith("_contact"):
            continue
        drive = name[: -len("_contact")] + "_drive"
        wheel = mechanism.child_body_of_joint(drive) if drive in mechanism.joint_names else None
        out.append(Contact(name, normal, friction, wheel))
    return out




class _ContactPlan:
    """Constants of one contact list (frames and touching bodies) on one mechanism, for one vectorized pass
    over the kinematics pass output: per (contact ``i``, ancestor segment ``a`` of the body that touches the
    terrain) pair ``j``, where to read ``z_a``, ``o_a`` and the contact point ``p_i`` (each also in the two
    cyclic component orders, so that ``z_a x (p_i - o_a)`` is elementwise), and where its column goes in
    the (3n, nq) point Jacobian."""

    __slots__ = ("gather", "prismatic", "prismatic_z", "scatter", "indep", "n", "nq", "points")

    def __init__(self, mechanism: Mechanism, contacts):
        t = tree_arrays(mechanism)
        seg = single_pass_index(mechanism)
        frm = single_pass_index(mechanism, frames=True)
        anc, owner, pts = [], [], []
        for i, c in enumerate(contacts):
            if not mechanism.has_frame(c.frame):
                raise UnknownFrame(c.frame, mechanism.frame_names)
            if c.wheel is not None and c.wheel not in mechanism.body_names:
                raise UnknownBody(c.wheel, mechanism.body_names)
            pts.append(frm[t.frame_index[c.frame], :3, 3])
            s = int(t.frame_seg[t.frame_index[c.wheel if c.wheel is not None else c.frame]])
            while s > 0:                       # the segments that move the touching body
                anc.append(s)
                owner.append(i)
                s = int(t.parent[s])
        anc = np.array(anc, dtype=np.intp)
        owner = np.array(owner, dtype=np.intp)
        pts = np.array(pts, dtype=np.intp).reshape(-1, 3)
        p1, p2 = np.array([1, 2, 0]), np.array([2, 0, 1])            # (y, z, x) and (z, x, y)
        z = seg[anc, :3, 2]
        o = seg[anc, :3, 3]
        p = pts[owner]
        # (z x d)_k = z_{p1(k)} d_{p2(k)} - z_{p2(k)} d_{p1(k)}, d = p - o: gathered as (3, 2, pairs, 3) =
        # (z, p, o) x (first term, second term); and z itself for prismatic segments
        self.gather = _ro_index(np.stack([np.stack([z[:, p1], z[:, p2]]), np.stack([p[:, p2], p[:, p1]]),
                                          np.stack([o[:, p2], o[:, p1]])]))
        pri = np.array([int(t.kind[a]) == 2 for a in anc], dtype=bool)
        self.prismatic = _ro_index(np.flatnonzero(pri)) if pri.any() else None
        self.prismatic_z = _ro_index(z[pri]) if pri.any() else None
        nq = mechanism.nq
        cols = np.array([int(t.coord[a]) for a in anc], dtype=np.intp)
        rows = (3 * owner[:, None] + np.arange(3)[None, :])                 # (pairs, 3): row 3 owner + k
        # flat index in the (3n, nq) Jacobian of component k of pair j's column
        self.scatter = _ro_index((rows * nq + cols[:, None]).ravel())
        # with constant couplings, straight into the (3n, m) Jacobian on the independent coordinates: each
        # full coordinate's column goes to the independent ones it depends on, weighted (np.bincount sums
        # the pairs that land on the same entry, e.g. a mimic joint and its master in one chain)
        self.indep = None
        if mechanism.couplings:
            D = _constant_coupling_jacobian(mechanism)
            if D is not None:
                m = D.shape[1]
                src, dst, wts = [], [], []
                flat_rows = rows.ravel()
                flat_cols = np.repeat(cols, 3)
                for e, (r, c) in enumerate(zip(flat_rows, flat_cols)):
                    for kk in np.flatnonzero(D[c]):
                        src.append(e)
                        dst.append(int(r) * m + int(kk))
                        wts.append(float(D[c, kk]))
                wts = np.array(wts)
                self.indep = (_ro_index(src), _ro_index(dst), None if np.all(wts == 1.0) else wts,
                              3 * len(contacts) * m, m)
        self.points = _ro_index(pts)
        self.n = len(contacts)
        self.nq = nq


def _ro_index(a) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.intp)
    a.setflags(write=False)
    return a


def _contact_plan(mechanism: Mechanism, contacts: tuple):
    """``(plan, B^T, bases, friction, normals, friction * (1 + 1e-9))`` of a contact tuple: the :class:`_ContactPlan` (shared by every list
    with the same frames and wheels) and the per-contact bases (n, 3, 3), their transposes and friction
    coefficients (n,). Cached per mechanism, by the contact objects themselves (a controller calls again
    with the same list) and by their frames (a service builds new ones per request)."""
    per = derived(mechanism, "statics.contact_plans", lambda m: {})     # a memo of at most 129 entries
    hit = per.get(contacts)
    if hit is None:
        if len(per) > 128:
            per.clear()
        key = tuple((c.frame, c.wheel) for c in contacts)
        plan = per.get(key)
        if plan is None:
            plan = per[key] = _ContactPlan(mechanism, contacts)
        bases = np.array([c._basis for c in contacts])             # (n, 3, 3) columns t1, t2, normal
        BT = np.ascontiguousarray(np.swapaxes(bases, 1, 2))
        mus = np.array([c.friction for c in contacts])
        normals = np.ascontiguousarray(bases[:, :, 2])
        mus_slip = mus * (1 + 1e-9)
        for a in (bases, BT, mus, normals, mus_slip):
            a.setflags(write=False)
        hit = per[contacts] = (plan, BT, bases, mus, normals, mus_slip)
    return hit


def _point_jacobians(plan: _ContactPlan, out: np.ndarray, independent: bool = False) -> np.ndarray:
    """(3n, nq) linear Jacobians (ground frame) of the contact points from the kinematics pass output
    ``out``, each point taken as a point of the body that touches the terrain (a wheel rolls: its drive
    joint moves the point); with ``independent=True`` (constant couplings only: ``plan.indep``), (3n, m)
    on the independent coordinates."""
    G = out.take(plan.gather)
    d = G[1] - G[2]
    d *= G[0]
    col = d[0] - d[1]
    if plan.prismatic is not None:
        col[plan.prismatic] = out.take(plan.prismatic_z)
    if independent:
        src, dst, wts, size, m = plan.indep
        v = col.ravel().take(src)
        if wts is not None:
            v *= wts
        return np.bincount(dst, weights=v, minlength=size).reshape(-1, m)
    J = np.zeros(3 * plan.n * plan.nq)
    J[plan.scatter] = col.ravel()
    return J.reshape(3 * plan.n, plan.nq)


def _svd_solve(A: np.ndarray, b: np.ndarray, tol: float):
    """Minimum-norm least-squares solution of ``A x = b`` and an orthonormal basis of null(A), from one
    SVD."""
    m, n = A.shape
    if m == 0:
        return np.zeros(n), np.eye(n)
    U, s, Vt = np.linalg.svd(A, full_matrices=True)
    rank = int((s > tol * max(1.0, s[0] if s.size else 1.0)).sum())
    x = Vt[:rank].T @ ((U[:, :rank].T @ b) / s[:rank])
    return x, Vt[rank:].T


def _lexicographic(A, b, T, tol):
    """Among the least-squares solutions of ``A x = b``: the one with the smallest ``|T x|``, then the
    smallest ``|x|``."""
    x0, N = _svd_solve(A, b, tol)
    if N.shape[1] == 0:
        return x0
    z, N_TN = _svd_solve(T @ N, -(T @ x0), tol)
    x1 = x0 + N @ z
    N2 = N @ N_TN
    return x1 - N2 @ (N2.T @ x1)


def _friction_redistribution(A, b, x0, mus, tol):
    """Forces within the friction cones nearest to least traction, or None when SLSQP finds none."""
    from scipy.optimize import minimize

    n = len(mus)
    tan_idx = np.array([[3 * i, 3 * i + 1] for i in range(n)]).reshape(-1)
    scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)

    def obj(x):
        return float(x[tan_idx] @ x[tan_idx]) / scale ** 2

    def obj_grad(x):
        g = np.zeros_like(x)
        g[tan_idx] = 2 * x[tan_idx] / scale ** 2
        return g

    def cone(x):
        X = x.reshape(n, 3)
        return np.concatenate([(mus ** 2 * X[:, 2] ** 2 - X[:, 0] ** 2 - X[:, 1] ** 2) / scale ** 2, X[:, 2] / scale])

    def cone_jac(x):
        X = x.reshape(n, 3)
        J = np.zeros((2 * n, 3 * n))
        for i in range(n):
            J[i, 3 * i:3 * i + 3] = np.array([-2 * X[i, 0], -2 * X[i, 1], 2 * mus[i] ** 2 * X[i, 2]]) / scale ** 2
            J[n + i, 3 * i + 2] = 1.0 / scale
        return J

    cons = [{"type": "eq", "fun": lambda x: (A @ x - b) / scale, "jac": lambda x: A / scale},
            {"type": "ineq", "fun": cone, "jac": cone_jac}]
    res = minimize(obj, x0, jac=obj_grad, constraints=cons, method="SLSQP",
                   options={"maxiter": 60, "ftol": 1e-12})
    x = res.x
    if not np.all(np.isfinite(x)) or np.abs(A @ x - b).max(initial=0.0) > tol * scale:
        return None
    X = x.reshape(n, 3)
    if np.any(np.hypot(X[:, 0], X[:, 1]) > mus * X[:, 2] * (1 + 1e-6) + 1e-9 * scale):
        return None
    return x


_LAPACK = None


def _lapack():
    global _LAPACK
    if _LAPACK is None:
        from scipy.linalg.lapack import dgecon, dgesv, dlange

        _LAPACK = (dgesv, dgecon, dlange)
    return _LAPACK


#: below this reciprocal condition number the least-traction KKT system is treated as singular (the normal
#: loads are not determined: a walker on coplanar feet) and the SVD route decides
_KKT_RCOND = 1e-10


def _least_traction_kkt(A: np.ndarray, b: np.ndarray):
    """The least-traction solution of ``A x = b`` (x: per contact (t1, t2, n)) from one KKT system, or None
    when that system is singular or ill-conditioned.

    Minimising ``|x_t|^2`` subject to ``A x = b`` is stationary where ``[W, A^T; A, 0] [x; -lam] = [0; b]``
    with ``W`` the identity on the tangential components and zero on the normal ones. That matrix is
    non-singular exactly when ``A`` has full row rank and no non-zero normal loads alone lie in the null
    space of ``A``: then the minimiser is unique, so it is also the lexicographic answer of
    :func:`_lexicographic` (the SVD route, used when this one declines)."""
    p, c = A.shape
    if p == 0 or c == 0:
        return None
    M = _kkt_template(p, c).copy()
    M[:c, c:] = A.T
    M[c:, :c] = A
    r = np.zeros(p + c)
    r[c:] = b
    dgesv, dgecon, dlange = _lapack()
    anorm = dlange("1", M)                              # the 1-norm, for the condition estimate
    lu, _, sol, info = dgesv(M, r, overwrite_a=True, overwrite_b=True)
    if info != 0 or not anorm > 0:
        return None
    rcond, info = dgecon(lu, anorm)
    if info != 0 or not rcond > _KKT_RCOND:
        return None
    return sol[:c]


def _kkt_template(p: int, c: int) -> np.ndarray:
    """The constant part of the KKT matrix: ``W`` (ones on the tangential diagonal), zeros elsewhere (a memo
    of :data:`..data.SHARED`, by size)."""
    templates = SHARED.memo("statics.kkt_templates", 256)
    M = templates.peek((p, c))
    if M is None:
        M = np.zeros((p + c, p + c))
        t = np.flatnonzero(np.arange(c) % 3 != 2)
        M[t, t] = 1.0
        M.setflags(write=False)
        M = templates.put((p, c), M)
    return M


def _least_traction(A, b, n, tol):
    """Least traction, then least norm, among the least-squares solutions of ``A x = b`` for ``n``
    contacts: the KKT route when it applies, else the SVD route."""
    x = _least_traction_kkt(A, b)
    return _lexicographic(A, b, _tangent_selector(n), tol) if x is None else x


def contact_loads(mechanism: Mechanism, q, contacts: Sequence[Contact], gravity=DEFAULT_GRAVITY,
                  wrenches: Sequence[Wrench] = (), payloads: Sequence[Payload] | None = None,
                  method: str = "least_traction", passive: Sequence[str] | None = None,
                  tol: float = 1e-9, *, data=None) -> ContactLoads:
    """Contact forces and actuated joint torques that hold ``mechanism`` still at ``q`` (one configuration)
    under ``gravity`` (m/s^2, ground frame), ``payloads`` and applied ``wrenches``, standing on ``contacts``.

    ``method``: ``"least_traction"`` or ``"friction"`` (see the module docstring). ``passive``: coordinate or
    joint names that carry no torque (default :func:`passive_coordinates`). Raises for unknown frames,
    bodies or names, bad friction or normals (at :class:`Contact` construction), NaN gravity.

    Cost: one kinematics pass; the point Jacobians from its output in a few array operations; the
    least-traction forces from one small symmetric linear system when they are determined (a rover on its
    wheels), an SVD route otherwise; a constrained optimiser only with ``method="friction"`` and a contact
    outside its friction cone.
    """
    if data is not None:
        check_data(mechanism, data)
    if method not in ("least_traction", "friction"):
        raise MechanismModelError(f"method must be 'least_traction' or 'friction', got {method!r}")
    contacts = tuple(contacts)
    if not contacts:
        raise MechanismModelError("contact_loads needs at least one contact")
    for c in contacts:
        if not isinstance(c, Contact):
            raise MechanismModelError(f"expected a Contact, got {c!r}")
    g = parse_gravity(gravity)
    qf = _configuration(mechanism, q)
    if qf.ndim != 1:
        raise MechanismModelError("contact_loads takes one configuration")
    plan, BT, bases, mus, normals, mus_slip = _contact_plan(mechanism, contacts)
    out = single_pass_output(mechanism, qf)
    indep = mechanism.independent_coordinates
    D = coupling_jacobian(mechanism, qf) if mechanism.couplings else None
    sp = _single_plan(mechanism)
    if sp and not payloads and sp.to_indep is not False:
        rhs = _gravity_single(sp, out, g, sp.indep4)              # on the independent coordinates
        if wrenches:
            w = _wrench_full(mechanism, qf, wrenches)
            rhs = rhs - (w if D is None else w.dot(D))
    else:
        tau_full = _gravity_full(mechanism, qf, g, payloads)
        if wrenches:
            tau_full = tau_full - _wrench_full(mechanism, qf, wrenches)
        rhs = tau_full if D is None else tau_full.dot(D)
    if D is None:
        Jc = _point_jacobians(plan, out)                          # (3n, nq)
    elif plan.indep is not None:
        Jc = _point_jacobians(plan, out, independent=True)        # (3n, m), constant couplings folded in
    else:
        Jc = _point_jacobians(plan, out).dot(D)
    n = len(contacts)
    # generalized force of the local contact forces: row 3i+k of Aloc is (J_i^T B_i[:, k])^T
    Aloc = np.matmul(BT, Jc.reshape(n, 3, -1)).reshape(3 * n, -1)
    # passive rows
    if passive is None:
        passive_names, prow, actuated_idx = _default_passive(mechanism)
    else:
        passive_names, prow, actuated_idx = _named_passive(mechanism, passive)
    A, b = Aloc[:, prow].T, rhs[prow]
    scale = max(1.0, float(abs(b).max(initial=0.0)))
    small = tol * scale
    x = _least_traction(A, b, n, tol)
    lifted = None                  # contacts taken out because they would have to pull
    for _ in range(n):
        fn = x[2::3]
        if not fn.min() < -small:
            break
        # lift the contact that pulls the hardest, then solve again without it
        if lifted is None:
            lifted = np.zeros(n, dtype=bool)
        lifted[int(np.argmin(np.where(lifted, np.inf, fn)))] = True
        x = np.zeros(3 * n)
        if not lifted.all():
            cols = np.repeat(~lifted, 3)
            x[cols] = _least_traction(A[:, cols], b, n - int(lifted.sum()), tol)
    X = x.reshape(n, 3)
    ftn = np.hypot(X[:, 0], X[:, 1])
    fn = X[:, 2]
    if method == "friction" and (lifted is None or not lifted.all()) and np.any(ftn > mus * fn + small):
        on = np.ones(n, dtype=bool) if lifted is None else ~lifted
        cols = np.repeat(on, 3)
        Ac = A[:, cols]
        # only where the equations leave the forces some freedom (a determinate problem has one answer)
        y = (_friction_redistribution(Ac, b, x[cols], mus[on], 1e-6)
             if Ac.shape[0] < Ac.shape[1] or np.linalg.matrix_rank(Ac) < Ac.shape[1] else None)
        if y is not None:
            x = np.zeros(3 * n)
            x[cols] = y
            X = x.reshape(n, 3)
            ftn = np.hypot(X[:, 0], X[:, 1])
            fn = X[:, 2]
    fn = fn.copy()
    residual = float(abs(A.dot(x) - b).max(initial=0.0))
    forces = np.matmul(bases, X[:, :, None])[:, :, 0]
    ft = forces - fn[:, None] * normals
    loaded = fn > small                       # a lifted contact carries exactly nothing: never loaded
    lift = ~loaded
    ratio = np.divide(ftn, fn, out=np.where(ftn > small, np.inf, 0.0), where=loaded)
    slip = loaded & (ftn > mus_slip * fn + small)
    torques = rhs - x.dot(Aloc)
    equilibrium = residual <= 1e-6 * scale
    if equilibrium:
        torques[prow] = 0.0
    tl = torques.tolist()
    actuated = {c: tl[i] for i, c in actuated_idx}
    return ContactLoads(contacts, forces, fn, ft, ratio, slip, lift, torques, actuated, bool(equilibrium),
                        residual, tuple(passive_names), method, tuple(indep))


def _named_passive(mechanism: Mechanism, passive):
    """:func:`_default_passive`'s triple for an explicit list of passive joint or coordinate names."""
    indep = mechanism.independent_coordinates
    names = []
    for name in passive:
        if name in mechanism.joint_names:
            names += [c for c in mechanism.joint(name).coordinate_names if c in indep]
        elif name in indep:
            names.append(name)
        else:
            raise MechanismModelError(f"passive: {name!r} is not a joint or an independent coordinate")
    names = tuple(dict.fromkeys(names))
    idx = {c: i for i, c in enumerate(indep)}
    prow = np.array([idx[c] for c in names], dtype=int)
    pset = set(names)
    return names, prow, tuple((i, c) for i, c in enumerate(indep) if c not in pset)


def _tangent_selector(n: int) -> np.ndarray:
    """(2n, 3n): picks the two tangential components of each contact's local force (a memo of
    :data:`..data.SHARED`, by contact count)."""
    selectors = SHARED.memo("statics.tangent_selectors", 256)
    T = selectors.peek(n)
    if T is None:
        T = np.zeros((2 * n, 3 * n))
        for i in range(n):
            T[2 * i, 3 * i] = T[2 * i + 1, 3 * i + 1] = 1.0
        T.setflags(write=False)
        T = selectors.put(n, T)
    return T


def _default_passive(mechanism: Mechanism):
    """(passive names, their rows among the independent coordinates, ((row, name) of the actuated ones))."""
    return derived(mechanism, "statics.default_passive", _build_default_passive)


def _build_default_passive(mechanism: Mechanism):
    names = passive_coordinates(mechanism)
    indep = mechanism.independent_coordinates
    idx = {c: i for i, c in enumerate(indep)}
    prow = np.array([idx[c] for c in names], dtype=int)
    pset = set(names)
    return names, prow, tuple((i, c) for i, c in enumerate(indep) if c not in pset)
