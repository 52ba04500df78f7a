"""One configuration of one chain in a handful of numpy calls: the frame's pose, its ground Jacobian over the
unknowns, and a full pose's residual -- the iteration of the exact-chain refinements (the near-decomposable
closed form's Gauss-Newton steps, the lane engine's one-lane pass, :meth:`~.batch.LaneEngine._eval1`) and of
the DLS solver's single-chain kernel (:class:`~.solvers._ChainKernel`).

At this size every numpy call costs about half a microsecond whatever it computes, so the pass is arranged
for few calls rather than few flops:

* **One representation for the pose and the joint lines.** A pose ``T = (R, o)`` is carried as the 7x7
  matrix ``G(T) = [[R, [o]R, o], [0, R, 0], [0, 0, 1]]`` (``[o]`` the cross-product matrix): the adjoint and
  the homogeneous matrix in one, and ``G(AB) = G(A) G(B)``. Column 5 of a step's ground ``G`` is its joint's
  line ``(o x z; z; 0)`` for a joint turning about the step's z axis (the spatial Jacobian column), column 2
  is ``(z; 0; 0)`` for a slider along it; the product gives the Plucker moments that a pass of 4x4 matrices
  computes as cross products afterwards. At the frame's origin ``p`` a column ``(m; z)`` is
  ``(m + z x p; z)``: one 6x7 matrix ``Y(p)`` turns them all.
* **Steps grouped.** A step's ``G(L(t))`` is linear in ``w = (1, sin t, cos t)`` (revolute; ``(1, t, 0)`` for
  a slider), so the product of ``k`` consecutive steps, and the joint lines inside it relative to where the
  group starts, are linear in the ``3^k`` products of their ``w`` entries: one call (a product with a
  block-diagonal matrix, or a batched one past :data:`BLOCK_DIAGONAL` groups) gives every group's block, and
  the chain needs one 7x7 product per group after the first instead of one per step. The frame's fixed
  transform is folded into the last group; held steps are bound per problem (:meth:`ChainPass.held`): those
  between unknowns as constant arguments, those before the first unknown (a held base) as their pose.
* **Transposed blocks.** Each group's block is stored as ``[Pi^T; V^T]`` ((7 + k) x 7: its product and its
  joint lines), so that a prefix product is the first seven rows of its block (contiguous, as numpy's
  fast path for small products wants) and the next block is ``Z_i @ prefix^T``.
* **The residual in floats.** The orientation error ``log(R R_t^T)`` of a full pose comes from the
  antisymmetric part and trace of one 3x3 product as Python floats (angle from ``atan2``, exact at small
  angles; within 0.01 of pi, :func:`~..spatial.log_so3`'s axis from the symmetric part).

Everything per call is allocated in the call (no shared scratch: threads may evaluate one pass at once). A
pass's constants are built once per mechanism, frame and unknown steps (:func:`unbound_pass`, kept in the
mechanism's derived data) and shared by the DLS kernels and lane engines of every problem of that shape.
Checked against Pinocchio in ``test/core/test_ik_chain_pass.py``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..data import Memo, memo
from ..spatial import log_so3, skew

__all__ = ["ChainPass", "chain_passes", "unbound_pass"]

#: unbound chain passes kept per mechanism (a memo of its derived data, :mod:`..data`, by frame and unknown steps)
PASSES_MAX = 64

#: basis of G(Rz(t)) in w = (1, sin t, cos t), and of G(Tz(t)) in (1, t)
_REV = np.zeros((3, 7, 7))
_REV[0, 2, 2] = _REV[0, 5, 5] = _REV[0, 6, 6] = 1.0
_REV[1, 1, 0] = _REV[1, 4, 3] = 1.0
_REV[1, 0, 1] = _REV[1, 3, 4] = -1.0
_REV[2, 0, 0] = _REV[2, 1, 1] = _REV[2, 3, 3] = _REV[2, 4, 4] = 1.0
_PRI = np.zeros((3, 7, 7))
_PRI[0] = np.eye(7)
_PRI[1, 0, 4] = -1.0
_PRI[1, 1, 3] = 1.0
_PRI[1, 2, 6] = 1.0
#: Y(p)^T (7 x 6, flattened) = _Y0 + p @ _YP: rows (m, z, 1) -> columns (linear at p, angular)
_Y = np.zeros((6, 7))
_Y[:3, :3] = np.eye(3)
_Y[3:, 3:6] = np.eye(3)
_Y0 = _Y.T.ravel().copy()
_YP = np.zeros((3, 42))
for _a in range(3):
    _Yp = np.zeros((6, 7))
    _Yp[:3, 3:6] = -skew(np.eye(3)[_a])
    _YP[_a] = _Yp.T.ravel()
for _c in (_REV, _PRI, _Y0, _YP):
    _c.flags.writeable = False


#: chains of at most this many groups evaluate all groups' maps as one product with a block-diagonal matrix
#: (0.9 against 1.2 us for the batched product at 4 groups of 2 steps; its flops grow as the square of the groups)
BLOCK_DIAGONAL = 4


def g7(T) -> np.ndarray:
    """``G(T)`` (7x7) of a 4x4 pose: ``[[R, [o]R, o], [0, R, 0], [0, 0, 1]]``."""
    T = np.asarray(T, dtype=float)
    R, o = T[:3, :3], T[:3, 3]
    G = np.zeros((7, 7))
    G[:3, :3] = G[3:6, 3:6] = R
    G[:3, 3:6] = skew(o) @ R
    G[:3, 6] = o
    G[6, 6] = 1.0
    return G


def group_size(steps: int) -> int:
    """Steps per group: 3 where they divide evenly (6R: two groups, one chain product), else 2 (7 steps: four
    groups). Measured on Baxter, the Panda and an xArm6 (one pass, CPU): 2 and 3 within 3 % of each other,
    both 1.5 us below 1 (a product per step) and 4."""
    return 3 if steps % 3 == 0 else 2


class ChainPass:
    """The constants of one chain's pass over its steps ``k0 ..`` (see the module docstring), whatever the held
    steps' values; :meth:`held` binds those (a pass evaluates only once bound).

    ``chain``: the :class:`~..kinematics.FrameChain`; ``var_seg`` (nv,): the steps that are unknowns, in the
    order of ``x``; ``k0``: the first step passed over (the steps before it held: a mobile base's pose, a
    torso); ``k``: steps per group (default :func:`group_size`).
    """

    def __init__(self, chain, var_seg, k0: int = 0, k: int | None = None):
        n = chain.n
        nn = n - k0
        k = group_size(nn) if k is None else k
        g = -(-nn // k)
        N = g * k
        P = chain.Pm.reshape(n, 4, 4)
        prism = np.asarray(chain.prismatic, dtype=bool)
        col = {int(s): j for j, s in enumerate(var_seg)}
        # the arguments of the steps' w entries: a = x @ D + off, then sin (but of a slider's value); off =
        # off0 + (held steps' values) @ H
        D = np.zeros((len(var_seg), 3 * N))
        H = np.zeros((nn, 3 * N))
        off = np.zeros(3 * N)
        off[0::3] = 0.5 * math.pi            # sin(pi/2) == 1.0 exactly: the constant entry
        sine = np.ones(3 * N, dtype=bool)
        basis = np.empty((N, 3, 7, 7))        # per step: G(P) @ basis, the coefficients of its w entries
        line = np.zeros((N, 7))               # per step: its joint's line relative to where it starts
        for j in range(N):
            s = k0 + j
            if j >= nn:                       # padding: the identity
                basis[j] = 0.0
                basis[j, 0] = np.eye(7)
                continue
            GP = g7(P[s])
            if prism[s]:
                basis[j] = GP @ _PRI
                line[j] = GP[:, 2]
                slots = (3 * j + 1,)
                sine[3 * j + 1] = False
            else:
                basis[j] = GP @ _REV
                line[j] = GP[:, 5]
                slots = (3 * j + 1, 3 * j + 2)
                off[3 * j + 2] += 0.5 * math.pi          # cos t = sin(t + pi/2)
            for c in slots:
                if s in col:
                    D[col[s], c] = 1.0
                else:
                    H[j, c] = 1.0
        # per group, the products of every choice of one basis matrix per step (monomial index: the
        # choices as the digits of a base-3 number, the group's first step most significant) and the lines
        # of its steps (step i's depends on the steps before it only: the monomials whose later digits are 0)
        K = 3 ** k
        Q = np.zeros((g, K, 7 + k, 7))
        for grp in range(g):
            prod = np.eye(7)[None]
            for i in range(k):
                j = grp * k + i
                Q[grp, ::3 ** (k - i), 7 + i] = prod @ line[j]
                prod = (prod[:, None] @ basis[j][None]).reshape(-1, 7, 7)
            if grp == g - 1:
                prod = prod @ g7(chain.F)
            Q[grp, :, :7] = prod.transpose(0, 2, 1)
        digits = np.array(list(itertools.product(range(3), repeat=k)), dtype=np.intp).reshape(K, k)
        take = (3 * (np.arange(g)[:, None, None] * k + np.arange(k)) + digits[None]).reshape(g * K, k).T
        self.n_steps, self.k, self.groups, self.K = nn, k, g, K
        self._Q = Q.reshape(g, K, (7 + k) * 7)
        # up to BLOCK_DIAGONAL groups: the groups' maps as one block-diagonal matrix (one dot, no batched call)
        self._Qbig = None
        if g <= BLOCK_DIAGONAL:
            self._Qbig = np.zeros((g * K, g * (7 + k) * 7))
            for grp in range(g):
                self._Qbig[grp * K:(grp + 1) * K, grp * (7 + k) * 7:(grp + 1) * (7 + k) * 7] = self._Q[grp]
            self._Qbig.flags.writeable = False
        self._take = tuple(np.ascontiguousarray(t) for t in take)
        self.chain, self.k0 = chain, k0
        self._D, self._off0, self._H = D, off, (H if H.any() else None)
        self._off = self._preT = None         # bound by held()
        self._sine = None if sine.all() else sine
        loc = np.asarray(var_seg, dtype=np.intp) - k0
        self._sel = None if (len(loc) == nn and np.array_equal(loc, np.arange(nn))) else loc
        for a in (self._Q, self._D, self._off0, H, *self._take):
            a.flags.writeable = False

    def held(self, theta, fold: bool = False) -> "ChainPass":
        """This pass with the held steps at their values in ``theta`` (n,: the whole chain's step values, rad
        or m; the unknowns' entries are not read): the held steps inside the pass in its arguments' offsets,
        those before ``k0`` as their ground pose, applied to the first group's block by one 7x7 product a
        pass, or with ``fold`` folded into that group's map (a copy of the map: for a pass bound once and
        evaluated often, as a lane engine's). Unfolded, cheap (a few microseconds): the constants are shared."""
        theta = np.asarray(theta, dtype=float)
        b = object.__new__(ChainPass)
        for name, value in vars(self).items():        # (setattr keeps the attributes in the object's fast
            setattr(b, name, value)                   # layout, which a dict update would give up)
        off = self._off0.copy() if self._H is None else self._off0 + theta[self.k0:].dot(self._H)
        off.flags.writeable = False
        b._off = off
        k0 = self.k0
        if k0:
            L = self.chain.step_transforms(theta[:k0])
            pre = L[0]
            for i in range(1, k0):
                pre = pre.dot(L[i])
            preT = np.ascontiguousarray(g7(pre).T)
            if not fold:
                b._preT = preT
                return b
            K, w = self.K, (7 + self.k) * 7
            Q0 = (self._Q[0].reshape(K, 7 + self.k, 7) @ preT).reshape(K, w)
            if self._Qbig is not None:                # (the map the pass reads: copied, the other shared)
                Qb = self._Qbig.copy()
                Qb[:K, :w] = Q0
                Qb.flags.writeable = False
                b._Qbig = Qb
            else:
                Q = self._Q.copy()
                Q[0] = Q0
                Q.flags.writeable = False
                b._Q = Q
        return b

    def _blocks(self, x):
        """``(Ct, B)``: the frame's ``G`` transposed (7x7) and every group's block ``[prefix^T; lines^T]``
        ((g, 7 + k, 7); the lines rows are the joints' ground lines) at the unknowns ``x``."""
        a = x.dot(self._D)
        a += self._off
        if self._sine is None:
            np.sin(a, out=a)
        else:
            np.sin(a, out=a, where=self._sine)
        take = self._take
        mono = a.take(take[0])
        for t in take[1:]:
            mono *= a.take(t)
        g, k = self.groups, self.k
        if self._Qbig is not None:
            Z = mono.dot(self._Qbig).reshape(g, 7 + k, 7)
        else:
            Z = np.matmul(mono.reshape(g, 1, self.K), self._Q).reshape(g, 7 + k, 7)
        preT = self._preT
        if g == 1:
            if preT is not None:
                Z = Z[0].dot(preT).reshape(1, 7 + k, 7)
            return Z[0, :7], Z
        B = np.empty((g, 7 + k, 7))
        if preT is None:
            B[0] = Z[0]
        else:
            Z[0].dot(preT, out=B[0])
        c = B[0]
        for i in range(1, g):
            c = Z[i].dot(c[:7], out=B[i])
        return c[:7], B

    def _jacobian(self, Ct, B):
        """The ground Jacobian (6, nv) at the frame's origin from :meth:`_blocks`'s output."""
        Yt = Ct[6, :3].dot(_YP)
        Yt += _Y0
        JT = np.dot(B[:, 7:].reshape(self.groups * self.k, 7), Yt.reshape(7, 6))
        sel = self._sel
        return (JT[:self.n_steps] if sel is None else JT[sel]).T

    def frames(self, x):
        """``(Ct, J)`` at the unknowns ``x`` (nv,): ``Ct`` (7x7) the frame's ``G`` transposed (``Ct[:3, :3]``
        is ``R^T``, ``Ct[6, :3]`` the position, m), ``J`` (6, nv) its ground Jacobian over the unknowns (rows:
        linear, m/rad or m/m; angular)."""
        Ct, B = self._blocks(x)
        return Ct, self._jacobian(Ct, B)

    def pose_residual(self, x, pt, RtT, tp=-1.0, to=-1.0):
        """``(r (6,), J (6, nv), |r[:3]|, |r[3:]|)`` of a full pose target at the unknowns ``x``: ``r`` is the
        position error (m) and ``log(R R_t^T)`` (rad) in ground axes, ``pt`` (3,) the target position,
        ``RtT`` (3, 3) its rotation transposed. ``J`` is None when the errors are within ``tp`` (m) and
        ``to`` (rad) (a caller that stops there does not need it)."""
        Ct, B = self._blocks(x)
        (m00, m10, m20, _, _, _, _), (m01, m11, m21, _, _, _, _), (m02, m12, m22, _, _, _, _) = \
            RtT.T.dot(Ct[:3]).tolist()                                  # rows of (R R_t^T)^T
        p0, p1, p2 = Ct[6, :3].tolist()
        t0, t1, t2 = pt.tolist()
        e0, e1, e2 = p0 - t0, p1 - t1, p2 - t2
        v0, v1, v2 = m21 - m12, m02 - m20, m10 - m01                      # 2 sin(angle) axis
        c = 0.5 * (m00 + m11 + m22 - 1.0)                                # cos(angle)
        ep = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        if c > -0.99:
            s = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
            th = math.atan2(0.5 * s, c)
            f = th / s if s > 0.0 else 0.5
            r = np.array((e0, e1, e2, v0 * f, v1 * f, v2 * f))
            er = th
        else:                                                          # near pi: the axis from the symmetric part
            w = log_so3(np.array(((m00, m01, m02), (m10, m11, m12), (m20, m21, m22))))
            r = np.array((e0, e1, e2, w[0], w[1], w[2]))
            er = math.sqrt(float(w @ w))
        if ep <= tp and er <= to:
            return r, None, ep, er
        return r, self._jacobian(Ct, B), ep, er


def chain_passes(mechanism) -> Memo:
    """``mechanism``'s unbound chain passes, kept in its derived data (:mod:`..data`) for :func:`unbound_pass`:
    a holder that keeps no reference to the mechanism (a lane engine, itself kept in that data) holds this."""
    return memo(mechanism, "ik.chain_passes", PASSES_MAX)


def unbound_pass(passes: Memo, frame: str, chain, var_seg) -> ChainPass:
    """The :class:`ChainPass` of ``frame``'s chain (``chain``, its :class:`~..kinematics.FrameChain`) whose steps
    ``var_seg`` (nv,) are the unknowns, in the order of ``x``, the steps before the first of them held (a mobile
    base's pose, a torso): from ``passes`` (:func:`chain_passes` of the mechanism), built there on first use.
    Unbound: :meth:`ChainPass.held` binds the held steps' values (the one pass of the DLS kernel and the lane
    engine, :class:`~.solvers._ChainKernel` and :meth:`~.batch.LaneEngine._eval1`)."""
    key = (frame, var_seg.tobytes())
    cp = passes.peek(key)
    if cp is None:
        cp = passes.put(key, ChainPass(chain, var_seg, int(var_seg[0]) if len(var_seg) else 0))
    return cp
