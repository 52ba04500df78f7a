"""Generalized gravity and the joint torques of applied wrenches (CLARAty 2.2.2.2, 13.4.4).

Sign convention (Pinocchio's): every function returns the generalized force the *joints* must supply to
hold the mechanism still, ``tau = g(q) - sum_k J_k^T w_k``, with ``g(q)`` the generalized gravity
(:func:`gravity_torques`, Pinocchio's ``computeGeneralizedGravity``) and ``w_k`` the wrenches *applied to* the
mechanism by its surroundings (:func:`wrench_torques` returns ``sum_k J_k^T w_k``). N m for revolute
coordinates, N for prismatic ones.

Coupled mechanisms (a mimic joint, a differential): the coupled coordinates are not free, so the torques
are returned on the independent coordinates by the chain rule, ``tau_ind = D^T tau_full`` with ``D =
dq_full/dq_ind`` (:meth:`Mechanism.coupling_jacobian`), in the order of
:attr:`Mechanism.independent_coordinates`; ``coordinates="full"`` gives the per-coordinate torques.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..data import check_data, derived
from ..errors import InvalidConfiguration, MechanismModelError, UnknownFrame
from ..kinematics import forward_kinematics, segment_poses, single_pass_output
from ..model import Mechanism
from .mass import Payload, _segment_masses, lever_weights, mass_model
from ..kinematics import batch_segment_components, single_pass_index

__all__ = ["Wrench", "gravity_torques", "wrench_torques", "static_torques", "parse_gravity"]

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
_DEFAULT_G = np.array(DEFAULT_GRAVITY)
_DEFAULT_G.setflags(write=False)
_DEFAULT_LIST = list(DEFAULT_GRAVITY)
#: skew(g) = _SKEW @ g, i.e. r @ (_SKEW @ g) = r x g
_SKEW = np.zeros((3, 3, 3))
for _i, _j, _k, _s in ((0, 1, 2, -1), (0, 2, 1, 1), (1, 0, 2, 1), (1, 2, 0, -1), (2, 0, 1, -1), (2, 1, 0, 1)):
    _SKEW[_i, _j, _k] = _s
_SKEW.setflags(write=False)
#: -skew(g) for the default gravity (the hot path of a controller's feed-forward)
_DEFAULT_NEG_SKEW = _SKEW.dot(-_DEFAULT_G)
_DEFAULT_NEG_SKEW.setflags(write=False)
_F64 = np.dtype(float)
_ONES4 = np.ones(4)
_ONES4.setflags(write=False)


@dataclass(frozen=True, eq=False)
class Wrench:
    """A wrench applied *to* the mechanism at the origin of ``frame``: ``force`` (N) and ``torque`` (N m,
    about that origin), both in the axes of ``expressed_in`` (any frame of the model; ``None`` is the
    ground). ``Wrench("tool", force, expressed_in="tool")`` is a force measured by a wrist sensor."""

    frame: str
    force: tuple = (0.0, 0.0, 0.0)
    torque: tuple = (0.0, 0.0, 0.0)
    expressed_in: str | None = None

    def __post_init__(self):
        for what in ("force", "torque"):
            v = np.asarray(getattr(self, what), dtype=float)
            if v.shape[-1:] != (3,) or not np.all(np.isfinite(v)):
                raise MechanismModelError(f"wrench at {self.frame!r}: {what} must be 3 finite numbers "
                                          f"(or (B, 3) for a batch), got {getattr(self, what)!r}")
            object.__setattr__(self, what, v)

    @property
    def vector(self) -> np.ndarray:
        """``[force; torque]`` (6,) in ``expressed_in``'s axes."""
        return np.concatenate([self.force, self.torque], axis=-1)


def parse_gravity(gravity) -> np.ndarray:
    """Gravity as a finite 3-vector (m/s^2, ground frame); a clear error otherwise."""
    if gravity is DEFAULT_GRAVITY or gravity is None:
        return _DEFAULT_G
    g = np.asarray(gravity, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise InvalidConfiguration(f"gravity must be 3 finite numbers (m/s^2, ground frame), got {gravity!r}")
    if g.tolist() == _DEFAULT_LIST:
        return _DEFAULT_G           # its constants are precomputed
    return g


def _is_affine(node, variables) -> bool:
    """True when the parsed expression ``node`` is affine in ``variables`` (sums, differences, negation,
    products and quotients by constants): its derivative is then the same everywhere."""
    def has_var(n):
        return any(isinstance(x, ast.Name) and x.id in variables for x in ast.walk(n))

    if isinstance(node, ast.Expression):
        return _is_affine(node.body, variables)
    if isinstance(node, (ast.Constant, ast.Name)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_affine(node.operand, variables)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.Add, ast.Sub)):
            return _is_affine(node.left, variables) and _is_affine(node.right, variables)
        if isinstance(node.op, ast.Mult):
            return ((not has_var(node.left) and _is_affine(node.right, variables))
                    or (not has_var(node.right) and _is_affine(node.left, variables)))
        if isinstance(node.op, ast.Div):
            return not has_var(node.right) and _is_affine(node.left, variables)
    return not has_var(node)


_NOT_CONSTANT = object()
def _constant_coupling_jacobian(mechanism: Mechanism):
    """The coupling Jacobian when every coupling is affine (URDF mimic joints, gear ratios): computed once
    per mechanism and kept in its derived data (:mod:`..data`); ``None`` otherwise."""
    D = derived(mechanism, "statics.constant_coupling_jacobian", _coupling_jacobian_if_constant)
    return None if D is _NOT_CONSTANT else D


def _coupling_jacobian_if_constant(mechanism: Mechanism):
    try:
        if all(_is_affine(ast.parse(e.source, mode="eval"), e.variables) for e in mechanism.couplings.values()):
            D = np.array(mechanism.coupling_jacobian(mechanism.home))
            D.setflags(write=False)
            return D
    except SyntaxError:
        pass
    return _NOT_CONSTANT


def coupling_jacobian(mechanism: Mechanism, qf: np.ndarray) -> np.ndarray:
    """``dq_full / dq_independent`` at ``qf``: (n, m) for one configuration (as
    :meth:`Mechanism.coupling_jacobian`), (B, n, m) for a batch, evaluated on whole arrays."""
    D = _constant_coupling_jacobian(mechanism)
    if D is not None:
        return D if qf.ndim == 1 else np.broadcast_to(D, (qf.shape[0],) + D.shape)
    if qf.ndim == 1:
        return mechanism.coupling_jacobian(qf)
    names = mechanism.coordinate_names
    index = {c: i for i, c in enumerate(names)}
    indep = mechanism.independent_coordinates
    B = qf.shape[0]
    D = np.zeros((B, len(names), len(indep)))
    for k, c in enumerate(indep):
        D[:, index[c], k] = 1.0
    for name, expr in mechanism.couplings.items():
        env = {v: qf[:, index[v]] for v in expr.variables}
        row = np.zeros((B, len(indep)))
        for var, grad in expr.gradient(env).items():
            row += np.reshape(grad, (-1, 1)) * D[:, index[var]]
        D[:, index[name]] = row
    return D


def _to_coordinates(mechanism: Mechanism, qf: np.ndarray, tau: np.ndarray, coordinates: str) -> np.ndarray:
    if coordinates not in ("full", "independent"):
        raise MechanismModelError(f"coordinates must be 'independent' or 'full', got {coordinates!r}")
    if coordinates == "full" or not mechanism.couplings:
        return tau
    D = _constant_coupling_jacobian(mechanism)
    if D is not None:
        if tau.ndim == 1:
            return tau @ D
        # a batch: column by column over D's few non-zeros (a (B, n) x (n, m) product would start
        # OpenBLAS threads, far slower than the arithmetic on a loaded machine)
        out = np.zeros((tau.shape[0], D.shape[1]))
        for r, c in zip(*np.nonzero(D)):
            out[:, c] += D[r, c] * tau[:, r]
        return out
    D = coupling_jacobian(mechanism, qf)
    return (np.swapaxes(D, -1, -2) @ tau[..., None])[..., 0]


class _SinglePlan:
    """Constants of the one-configuration gravity path of one mechanism (built on first use, cached beside
    it in a weak mapping; read-only).

    From the kinematics pass output (:func:`~mechanism_model_core.kinematics.single_pass_output`) one gather
    (``index``) reads ``P`` -- the columns of every mass-carrying segment's pose, 4 components each (rows
    ``(s, b)``: ``T_ground_seg[s][:, b]``) -- and ``Z`` -- the moving segments' axes ``(z_i, 0)``. Then

    * ``r = V @ P`` (k, 4): ``(H_i - M_i o_i, 0)`` for a revolute segment ``i`` (``M_i``, ``H_i``: mass and
      world first moment of its subtree, ``o_i`` its origin) and ``(0, 0, 0, M_i)`` for a prismatic one;
    * ``w = Z @ K(g)`` (k, 4): ``(z_i x g, -z_i . g)``;
    * ``tau_i``, the row sum of ``r * w``: ``(H_i - M_i o_i) . (z_i x g)`` (revolute) or ``-M_i z_i . g``
      (prismatic), the generalized gravity of segment ``i``'s coordinate;
    * ``to_indep`` / ``to_full`` (k, m) / (k, n): the chain rule onto the coordinates (``None``: the
      segments already are the coordinates in order; ``False``: couplings that are not affine, so no
      constant chain rule).
    """

    __slots__ = ("index", "nP", "V", "K_default", "to_indep", "to_full", "q_shape", "batch_indep", "batch_full",
                 "full4", "indep4")

    def __init__(self, mechanism: Mechanism):
        mm = mass_model(mechanism)
        seg = single_pass_index(mechanism)                           # (S, 4, 4) flat indices of T[i, j]
        S = seg.shape[0]
        k = len(mm.moving)
        V = np.array(mm.V).reshape(k, S, 4)
        pri = np.flatnonzero(~mm.moving_revolute)
        V[pri] = 0.0
        V[pri, 0, 3] = mm.sub_moving_mass[pri]                      # the ground's pose is the identity
        V = V.reshape(k, 4 * S)
        cols = np.flatnonzero(np.any(V != 0.0, axis=0))
        P_index = seg.transpose(0, 2, 1).reshape(4 * S, 4)[cols]    # row (s, b): T_s[:, b]
        Z_index = seg[mm.moving, :, 2]                               # (z, 0)
        self.index = _ro_int(np.vstack([P_index, Z_index]))
        self.nP = len(cols)
        self.V = _ro_float(V[:, cols])
        self.K_default = _gravity_matrix(_DEFAULT_G)
        n = mechanism.nq
        sel = np.zeros((k, n))
        sel[np.arange(k), mm.moving_coord] = 1.0
        in_order = mm.coords_in_order
        self.to_full = None if in_order else _ro_float(sel)
        #: the shape of a configuration the hot path takes as it stands (a full-length array: as
        #: Mechanism.configuration, couplings are not re-applied to it)
        self.q_shape = (n,)
        if not mechanism.couplings:
            self.to_indep = self.to_full
        else:
            D = _constant_coupling_jacobian(mechanism)
            self.to_indep = False if D is None else _ro_float(sel @ D)      # False: not constant
        #: to_full / to_indep with every row repeated 4 times: the row sum of r * w and the chain rule in
        #: one product ((r * w).ravel() @ M4); None where there is no such constant matrix
        self.full4 = None if in_order else _ro_float(np.repeat(sel, 4, axis=0))
        self.indep4 = (None if self.to_indep is None or self.to_indep is False
                       else _ro_float(np.repeat(self.to_indep, 4, axis=0)))
        self.batch_full = None if in_order else _BatchMap(sel)
        self.batch_indep = (self.batch_full if not mechanism.couplings else
                            False if self.to_indep is False else _BatchMap(self.to_indep))


def _ro_int(a) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.intp)
    a.setflags(write=False)
    return a


def _ro_float(a) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=float)
    a.setflags(write=False)
    return a


def _gravity_matrix(g: np.ndarray) -> np.ndarray:
    """(4, 4) ``K`` with ``(z, 0) @ K = (z x g, -z . g, 0, 0)[:4]``: columns 0..2 the cross product, column
    3 the negated projection (row 3 zero)."""
    K = np.zeros((4, 4))
    K[:3, :3] = _SKEW.dot(g)
    K[:3, 3] = -g
    return _ro_float(K)


def _single_plan(mechanism: Mechanism):
    """The one-configuration gravity plan (False for a mechanism with no moving mass), in its derived data."""
    return derived(mechanism, "statics.gravity_plan",
                   lambda m: _SinglePlan(m) if len(mass_model(m).moving) else False)


def _gravity_single(sp: _SinglePlan, out: np.ndarray, g: np.ndarray, to=None) -> np.ndarray:
    """Generalized gravity from the kinematics pass output ``out``: per moving segment (k,), or with ``to``
    one of the plan's ``*4`` matrices (the chain rule with the row sum folded in), on those coordinates."""
    PZ = out.take(sp.index)
    nP = sp.nP
    r = sp.V.dot(PZ[:nP])
    w = PZ[nP:].dot(sp.K_default if g is _DEFAULT_G else _gravity_matrix(g))
    r *= w
    return r.dot(_ONES4) if to is None else r.reshape(-1).dot(to)


def _gravity_full(mechanism: Mechanism, qf: np.ndarray, g: np.ndarray, payloads, segs=None) -> np.ndarray:
    """Per-coordinate generalized gravity: for moving segment ``i`` with subtree mass ``M_i`` and world first
    moment ``H_i``, ``-z_i . ((H_i - M_i o_i) x g)`` (revolute) or ``-M_i z_i . g`` (prismatic)."""
    if qf.ndim == 1 and not payloads and segs is None:
        sp = _single_plan(mechanism)
        if sp:
            return _gravity_single(sp, single_pass_output(mechanism, qf), g, sp.full4)
    mm = mass_model(mechanism)
    if payloads:
        sm, sh = _segment_masses(mechanism, mm, payloads, None)
        hom = np.concatenate([sh, sm[:, None]], axis=1)[:, :, None]
        M = mm.sub_moving @ sm
    else:
        hom, M = mm.seg_hom, mm.sub_moving_mass
    if segs is None:
        if qf.ndim == 2:
            return _gravity_batch(mm, _batch_components(mechanism, qf), hom, M, g, qf.shape)
        segs = segment_poses(mechanism, qf)
    if segs.ndim == 4:      # poses given: back to components (S - 1, 1, 12, B)
        C = segs[:, 1:, :3, :].transpose(1, 3, 2, 0).reshape(segs.shape[1] - 1, 1, 12, segs.shape[0])
        return _gravity_batch(mm, C, hom, M, g, qf.shape)
    V = mm.V if not payloads else lever_weights(mm, sm, sh)
    r = V.dot(segs[:, :3, :].transpose(0, 2, 1).reshape(-1, 3))   # (k, 3): H - M o, one product
    z = segs[1:, :3, 2] if mm.moving_is_tail else segs[mm.moving, :3, 2]
    t = np.matmul(r, _DEFAULT_NEG_SKEW if g is _DEFAULT_G else _SKEW.dot(-g))   # -(r x g)
    t *= z
    t = t.sum(axis=-1)                                         # -z . (r x g)
    if mm.any_prismatic:
        t = np.where(mm.moving_revolute, t, -M * np.matmul(z, g))
    if mm.coords_in_order:
        return t
    tau = np.zeros(qf.shape)
    tau[..., mm.moving_coord] = t
    return tau


def _batch_components(mechanism: Mechanism, Q: np.ndarray) -> np.ndarray:
    """Pose components of every moving segment from the kinematics batch pass, (S - 1, chunks, 12, chunk):
    component ``3*j + i`` is ``T[i, j]``, configurations in chunks (the last padded). The one place statics
    reads the batch pass's layout (it saves building (B, S, 4, 4) poses and transposing them back)."""
    return batch_segment_components(mechanism, Q)


def _batch_moving_torques(mm, Tb, hom, M, g) -> np.ndarray:
    """Generalized gravity of the moving segments, (k, chunks * chunk) (padded configurations at the end),
    from the batch pass's pose components ``Tb`` (S - 1, chunks, 12, chunk) of segments 1..S-1: each step
    is one BLAS call or one elementwise pass over the batch, and only the components that ``z x g`` needs
    are formed (two of three for gravity along an axis)."""
    S1, nch, _, bc = Tb.shape
    comps = Tb.reshape(S1, nch, 4, 3 * bc)                              # column j of T: rows 3j..3j+2
    h = np.matmul(hom[1:].reshape(S1, 1, 1, 4), comps)                 # R h_seg + m o
    k = len(mm.moving)
    # subtree sums by one pass from the leaves (a (k, S) x (S, 3B) product would start OpenBLAS threads,
    # which on a loaded 2-core machine cost 100 times the arithmetic)
    H = h.reshape(S1, nch, 3, bc)
    for seg, parent in mm.accumulate:
        H[parent - 1] += H[seg - 1]
    if k != S1:
        H = H[mm.moving - 1]
    Tm = Tb if k == S1 else Tb[mm.moving - 1]
    Mb = M[:, None, None]
    gx, gy, gz = (float(v) for v in g)
    # t = r . (z x g), r = H - M o; (z x g) = (z1 gz - z2 gy, z2 gx - z0 gz, z0 gy - z1 gx)
    t = None
    for a, ((c1, i1), (c2, i2)) in enumerate((((gz, 7), (-gy, 8)), ((gx, 8), (-gz, 6)), ((gy, 6), (-gx, 7)))):
        if not (c1 or c2):
            continue
        r = H[:, :, a, :]
        r -= Mb * Tm[:, :, 9 + a, :]
        w = c1 * Tm[:, :, i1, :] if c1 else c2 * Tm[:, :, i2, :]
        if c1 and c2:
            w += c2 * Tm[:, :, i2, :]
        w *= r
        if t is None:
            t = w
        else:
            t += w
    if t is None:                                                        # no gravity
        t = np.zeros((k, nch, bc))
    if mm.any_prismatic:
        pri = np.flatnonzero(~mm.moving_revolute)
        Tp = Tm[pri]
        t[pri] = -M[pri, None, None] * (gx * Tp[:, :, 6, :] + gy * Tp[:, :, 7, :] + gz * Tp[:, :, 8, :])
    return t.reshape(k, nch * bc)


def _gravity_batch(mm, Tb, hom, M, g, shape) -> np.ndarray:
    """The batch form of :func:`_gravity_full`: per-coordinate torques (B, n)."""
    t = _batch_moving_torques(mm, Tb, hom, M, g)[:, :shape[0]]
    if mm.coords_in_order:
        return np.ascontiguousarray(t.T)
    tau = np.zeros(shape)
    tau[:, mm.moving_coord] = t.T
    return tau


class _BatchMap:
    """A constant (k, m) chain-rule matrix applied to per-segment batch torques (k, B) without a BLAS
    product (which would start threads): one row gather, then the few extra terms of coupled columns."""

    __slots__ = ("rows", "scale", "extra")

    def __init__(self, D: np.ndarray):
        k, m = D.shape
        rows, scale, extra = np.zeros(m, dtype=np.intp), np.ones(m), []
        for c in range(m):
            nz = np.flatnonzero(D[:, c])
            if len(nz):
                rows[c], scale[c] = nz[0], D[nz[0], c]
                extra += [(c, int(r), float(D[r, c])) for r in nz[1:]]
            else:
                scale[c] = 0.0
        self.rows = _ro_int(rows)
        self.scale = None if np.all(scale == 1.0) else _ro_float(scale)
        self.extra = tuple(extra)

    def apply(self, t: np.ndarray) -> np.ndarray:
        """(B, m) from (k, B)."""
        out = t.take(self.rows, axis=0)
        if self.scale is not None:
            out *= self.scale[:, None]
        for c, r, w in self.extra:
            out[c] += w * t[r]
        return np.ascontiguousarray(out.T)


def _configuration(mechanism: Mechanism, q) -> np.ndarray:
    """``mechanism.configuration(q)`` with a shortcut for a finite float array of length nq (the hot path
    of a controller's feed-forward)."""
    if type(q) is np.ndarray and q.dtype is _F64 and q.ndim == 1 and q.shape[0] == mechanism.nq \
            and math.isfinite(q.dot(q)):
        return q          # as Mechanism.configuration: a full-length array is taken as it stands
    return mechanism.configuration(q)


def gravity_torques(mechanism: Mechanism, q, gravity=DEFAULT_GRAVITY,
                    payloads: Sequence[Payload] | None = None, coordinates: str = "independent", *,
                    data=None) -> np.ndarray:
    """Generalized gravity ``g(q)``: the joint torques (N m) and forces (N) that hold the mechanism still
    against ``gravity`` (m/s^2, ground frame), with optional :class:`~.mass.Payload` point masses.

    ``q``: one configuration (anything :meth:`Mechanism.configuration` takes) or a batch (B, n); returns
    (n,) or (B, n) on the independent coordinates (see the module docstring) or, with
    ``coordinates="full"``, on every coordinate. Any tree: multi-DOF joints get one entry per coordinate
    (a floating base's entries are the force and torque that would hold the base)."""
    if data is not None:
        check_data(mechanism, data)
    sp = _single_plan(mechanism)
    if sp and not payloads:
        # the hot path of a controller's feed-forward: a finite float array of length nq
        if type(q) is np.ndarray and q.dtype is _F64 and q.shape == sp.q_shape:
            qq = q.dot(q)
            if math.isfinite(qq):
                g = _DEFAULT_G if gravity is DEFAULT_GRAVITY else parse_gravity(gravity)
                M = sp.to_indep if coordinates == "independent" else sp.to_full if coordinates == "full" else False
                if M is not False:
                    return _gravity_single(sp, single_pass_output(mechanism, q, qq), g,
                                           None if M is None else sp.indep4 if M is sp.to_indep else sp.full4)
    g = parse_gravity(gravity)
    qf = _configuration(mechanism, q)
    if sp and not payloads and qf.ndim == 2:
        bm = sp.batch_indep if coordinates == "independent" else sp.batch_full if coordinates == "full" else False
        if bm is not False:
            mm = mass_model(mechanism)
            t = _batch_moving_torques(mm, _batch_components(mechanism, qf), mm.seg_hom, mm.sub_moving_mass, g)
            t = t[:, :qf.shape[0]]
            return np.ascontiguousarray(t.T) if bm is None else bm.apply(t)
    if sp and not payloads and qf.ndim == 1:
        M = sp.to_indep if coordinates == "independent" else sp.to_full if coordinates == "full" else False
        if M is not False:
            return _gravity_single(sp, single_pass_output(mechanism, qf), g,
                                   None if M is None else sp.indep4 if M is sp.to_indep else sp.full4)
    return _to_coordinates(mechanism, qf, _gravity_full(mechanism, qf, g, payloads), coordinates)


def _wrench_full(mechanism: Mechanism, qf: np.ndarray, wrenches, fk=None) -> np.ndarray:
    tau = np.zeros(qf.shape)
    if not wrenches:
        return tau
    fk = forward_kinematics(mechanism, qf) if fk is None else fk
    for w in wrenches:
        if not isinstance(w, Wrench):
            raise MechanismModelError(f"expected a Wrench, got {w!r}")
        if not mechanism.has_frame(w.frame):
            raise UnknownFrame(w.frame, mechanism.frame_names)
        f, n = w.force, w.torque
        if w.expressed_in is not None and w.expressed_in != mechanism.ground:
            if not mechanism.has_frame(w.expressed_in):
                raise UnknownFrame(w.expressed_in, mechanism.frame_names)
            R = fk.rotation(w.expressed_in)
            f = (R @ f[..., None])[..., 0]
            n = (R @ n[..., None])[..., 0]
        J = fk.jacobian(w.frame)                  # LOCAL_WORLD_ALIGNED: velocity of the frame's origin
        tau += (np.swapaxes(J[..., :3, :], -1, -2) @ f[..., None])[..., 0]
        tau += (np.swapaxes(J[..., 3:, :], -1, -2) @ n[..., None])[..., 0]
    return tau


def wrench_torques(mechanism: Mechanism, q, wrenches: Sequence[Wrench],
                   coordinates: str = "independent", *, data=None) -> np.ndarray:
    """``sum_k J_k^T w_k``: the generalized force that the :class:`Wrench` es applied to the mechanism exert
    on its coordinates (the joints feel it; to hold the mechanism they supply its negative). Shapes as
    :func:`gravity_torques`; a wrench's force and torque may be (B, 3) for a batch."""
    if data is not None:
        check_data(mechanism, data)
    qf = mechanism.configuration(q)
    return _to_coordinates(mechanism, qf, _wrench_full(mechanism, qf, wrenches), coordinates)


def static_torques(mechanism: Mechanism, q, gravity=DEFAULT_GRAVITY, wrenches: Sequence[Wrench] = (),
                   payloads: Sequence[Payload] | None = None, coordinates: str = "independent", *,
                   data=None) -> np.ndarray:
    """Joint torques and forces that hold the mechanism still under ``gravity``, ``payloads`` and applied
    ``wrenches``: ``g(q) - sum_k J_k^T w_k`` (Pinocchio's ``computeStaticTorque``). Shapes as
    :func:`gravity_torques`. ``gravity=(0, 0, 0)`` gives the torques of the wrenches alone (``-J^T w``;
    with ``w = -F`` the familiar ``J^T F`` for a force ``F`` the tool exerts on its surroundings)."""
    if data is not None:
        check_data(mechanism, data)
    g = parse_gravity(gravity)
    qf = mechanism.configuration(q)
    tau = _gravity_full(mechanism, qf, g, payloads) - _wrench_full(mechanism, qf, wrenches)
    return _to_coordinates(mechanism, qf, tau, coordinates)
