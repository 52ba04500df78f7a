"""Forward kinematics: the pose of every frame for one configuration or a batch (CLARAty 7.1).

>>> fk = forward_kinematics(mechanism, q)          # q: (nq,), (B, nq) or {name: value}
>>> fk.pose("tool")                                # T_ground_tool, 4x4 (or (B, 4, 4))
>>> fk.pose("tool", relative_to="mast_head")       # T_mast_head_tool
>>> fk.frame_array()                               # every frame, (F, 4, 4) or (B, F, 4, 4)

All poses are 4x4 homogeneous transforms in metres.

How it is computed
------------------
The compiled mechanism (:mod:`.model`) is a tree of *segments*, one per elementary motion, each a rotation
about or a translation along its own z axis: ``T_ground_seg[i] = T_ground_seg[parent] @ P[i] @ M(q)``.
Frames are constant offsets from segments. Two evaluation plans are compiled from that tree
(:class:`KinematicsPlan`), once per mechanism on first use, kept here (not in the model) and only read
afterwards, so threads share them without locks:

*One configuration* -- the cost is Python and numpy call overhead, not arithmetic, so the plan minimises
the number of numpy calls. Segments are cut into short runs along the tree (*blocks*). Every pose inside a
block, relative to the block's parent segment -- its segments and the frames that hang on them -- is a
trigonometric polynomial of the block's joint angles, ``sum_k C_k * sin(a_k . q + phi_k)``. So all the
local transforms of all blocks come from one ``sin`` of one small matrix-vector product and one stacked
matrix product with compiled coefficients (for a few small blocks, one matrix-vector product with the
block-diagonal coefficient matrix, which costs less numpy overhead); then one ``np.dot`` per block chains
the blocks together. A Jacobian is one gather from the pass output, one product and one difference.
The chain works on transposed poses (``T.T = L.T @ T_parent.T``) so that a block's poses stack into one
contiguous left operand, and it carries the world axes in three cyclic orders, which turns the cross
products of the Jacobian into elementwise products.

*A batch* -- the cost is memory traffic. A pose is held as its 12 components (rotation columns and
origin), each a row over the configurations, in chunks of 1024 configurations; per segment the parent's
components go through two small matrix products per chunk (below the size at which OpenBLAS starts
threads, which on a shared machine cost more than they gain) and three elementwise products over all
chunks. Nothing of shape (B, S, 4, 4) is built unless asked for. Intermediates that never leave a call are
per-thread work arrays, reused between calls (fresh megabyte temporaries cost page faults on every call).

The one-configuration plan and the Jacobian's cross-product trick are checked against the plain
definition (``Joint.transform`` composed along the tree) in ``test/core/test_kinematics_passes.py``;
timings are in ``BENCHMARKS.md`` (``benchmarks/bench_kinematics.py``).
"""

from __future__ import annotations

import itertools
import math
from enum import Enum

import numpy as np

from .data import ATTR as _DATA_ATTR, check_data as _check_data, data_of, work as _work
from .model import Mechanism
from .kinematics_banded import BandedPlan, banded_pass, estimated_cost as _banded_cost, plan_banded
from .errors import MechanismModelError
from .spatial import canonical_quaternion, cross_rows, matrix_to_quaternion, relative_motion

_dot = np.dot
_sin = np.sin
_matmul = np.matmul
_empty = np.empty
_subtract = np.subtract
_F64 = np.dtype(float)
_ndarray = np.ndarray
_isfinite = math.isfinite

#: The world axes in three cyclic orders, carried through the one-configuration pass: for every pose T
#: the pass computes ``E = [T; P1 @ T; P2 @ T]`` (12 x 4), whose rows 4:7 hold (y, z, x) and rows 8:11
#: hold (z, x, y) of rows 0:3. It stores E transposed (4 x 12).
_PERM1 = np.zeros((4, 4))
_PERM2 = np.zeros((4, 4))
for _i, _j in ((0, 1), (1, 2), (2, 0), (3, 3)):
    _PERM1[_i, _j] = 1.0
for _i, _j in ((0, 2), (1, 0), (2, 1), (3, 3)):
    _PERM2[_i, _j] = 1.0
_GROUND_EXT = np.vstack([np.eye(4), _PERM1, _PERM2])
#: rotation about z: Rz(t) = _C0 + cos t * _CC + sin t * _CS; translation along z: Tz(d) = I + d * _EZ
_C0 = np.diag([0.0, 0.0, 1.0, 1.0])
_CC = np.diag([1.0, 1.0, 0.0, 0.0])
_CS = np.zeros((4, 4))
_CS[0, 1], _CS[1, 0] = -1.0, 1.0
_EZ = np.zeros((4, 4))
_EZ[2, 3] = 1.0
#: 3x4 pose components in the batch layout: component 3*j + i holds T[i, j]
_EYE_COMPS = np.eye(4)[:3, :].T.reshape(12, 1).copy()
for _a in (_PERM1, _PERM2, _GROUND_EXT, _C0, _CC, _CS, _EZ, _EYE_COMPS):
    _a.setflags(write=False)


def _ro(a, dtype=float):
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


# ============================================================================ compile-time planning
class _SinglePlan:
    """Constant arrays of the one-configuration pass (see the module docstring)."""

    __slots__ = ("A", "b", "lin", "coef", "nb", "m", "T", "parents", "ground", "run", "frame_flat",
                 "seg_flat", "seg_be", "frame_be", "revolute")


class _FrameJacobian:
    """Per-frame constants of the Jacobian. ``gather`` (3, 2, 6, k) and ``gather_world`` (2, 2, 6, k): flat
    indices into the one-configuration pass output such that, with ``X, Yp, Yo = out.take(gather)``, the
    LOCAL_WORLD_ALIGNED columns are ``d[0] - d[1]`` for ``d = X * (Yp - Yo)`` (``X, Y = out.take(gather_world)``,
    ``d = X * Y`` for WORLD; see :func:`_single_columns`); the ancestors' coordinate columns (also as a
    slice when contiguous) and which of them are prismatic (the batch pass reads these)."""

    __slots__ = ("gather", "gather_world", "cols", "cols_slice", "full", "direct", "prismatic", "revolute",
                 "ancestors")


class _BatchPlan:
    """Per segment: the matrices that map the parent's 12 pose components to this segment's."""

    __slots__ = ("steps", "frame_M", "frame_identity", "frame_const")


def _trig_expansion(factors):
    """Expand ``prod_k factors[k](theta_k)`` for factors ``{-1: A, 0: B, +1: C}`` (each
    ``A e^{-i t} + B + C e^{i t}``) into ``{n: complex 4x4}`` over integer vectors ``n``."""
    out = {(): np.eye(4, dtype=complex)}
    for f in factors:
        nxt = {}
        for n, M in out.items():
            for k, Fk in f.items():
                key = n + (k,)
                nxt[key] = nxt.get(key, 0) + M @ Fk
        out = nxt
    return out


def _revolute_factor(P):
    return {0: P @ _C0 + 0j, 1: P @ (_CC - 1j * _CS) / 2, -1: P @ (_CC + 1j * _CS) / 2}


#: up to this many entries, the coefficient product of the one-configuration pass is one matrix-vector
#: product with a block-diagonal matrix instead of a stacked matmul (2-core EPYC, numpy 2: about 0.55 us +
#: 0.11 ns per entry, against about 2.3 us for the stacked product of a few blocks)
_BLOCK_DIAGONAL_MAX = 12_000
#: above this many coordinates the pass's term matrix is stored sparse (each row has at most 3 entries)
_DENSE_MAX_NQ = 64
#: revolute coordinates are reduced to (-pi, pi] (exactly, through sin and cos) when |q| exceeds this:
#: the pass evaluates cos(x) as sin(x + pi/2), exact to a few ulp of x only while x is small
_REDUCE_ABOVE = 64.0
_REDUCE2 = _REDUCE_ABOVE * _REDUCE_ABOVE


def _estimated_cost(layout) -> float:
    """Rough microseconds of the parts of one pass that depend on the block layout (fitted on a 2-core
    Xeon, numpy 2): one np.dot and its views per block, and the coefficient product, which grows with
    the number of trigonometric terms; where the product is one matrix-vector product with the
    block-diagonal coefficients (small plans, see ``_BLOCK_DIAGONAL_MAX``), about 1.75 us less numpy
    overhead and the zeros' work instead (refitted on a 2-core EPYC: Panda, UR5, 10-joint chain)."""
    blocks, m = layout[0], layout[2]
    nb = len(blocks)
    T = max(_n_terms(c_kind, g) for (_, g, _), c_kind in zip(blocks, layout[-1]))
    stacked = 1e-4 * nb * T * 16 * m
    cost = 0.75 * nb + stacked
    if nb * T * nb * m * 16 <= _BLOCK_DIAGONAL_MAX:
        cost += 1.1e-4 * nb * T * nb * m * 16 - stacked - 1.75
    return cost


def _n_terms(is_slider: bool, g) -> int:
    return 2 if is_slider else 3 ** len(g)


#: above this many moving segments the one-configuration pass may be the banded pass of
#: :mod:`.kinematics_banded` (cost linear in the model), where that is estimated faster than the blocks
BANDED_ABOVE_SEGMENTS = 32


def plan_single(c, nq: int):
    """Compile the one-configuration pass of the compiled tree ``c`` (a :class:`model.SegmentTree`): runs of
    up to 1, 2 or 3 segments per block, whichever is estimated fastest; the banded pass for large models
    where it is estimated faster (long chains from about 150 segments, wide trees from about 40)."""
    layouts = [_layout(c, r) for r in ((1, 2, 3) if c.n_seg > 2 else (1,))]
    best = min(layouts, key=_estimated_cost)
    if c.n_seg - 1 > BANDED_ABOVE_SEGMENTS and _banded_cost(c) < _estimated_cost(best):
        return plan_banded(c)
    return _plan_single(c, nq, best)


def _layout(c, r_max: int):
    """Cut the segment tree into blocks of runs of up to ``r_max`` segments (see _plan_single)."""
    S = c.n_seg
    parent = [int(p) for p in c.seg_parent]
    kind = [int(k) for k in c.seg_kind]
    children = [[] for _ in range(S)]
    for i in range(1, S):
        children[parent[i]].append(i)
    # --- groups: runs of segments along the tree; a run ends where the tree branches or at a slider
    groups: list[list[int]] = []
    group_of = {}
    for i in range(1, S):
        p = parent[i]
        g = group_of.get(p)
        if (g is not None and groups[g][-1] == p and len(groups[g]) < r_max and len(children[p]) == 1
                and kind[i] == 1 and kind[p] == 1):
            groups[g].append(i)
        else:
            g = len(groups)
            groups.append([i])
        group_of[i] = g
    # --- entries of each group: its last segment first (children chain onto it), then the others, then
    #     frames with a non-identity offset; a frame with identity offset shares its segment's entry
    frames_on = [[] for _ in range(S)]
    frame_alias = {}
    eye = np.eye(4)
    for f, (s, Tf) in enumerate(zip(c.frame_seg, c.frame_T)):
        s = int(s)
        if s > 0 and np.array_equal(Tf, eye):
            frame_alias[f] = s
        else:
            frames_on[s].append(f)
    # entry = (depth in group or -1 for ground constants, offset matrix or None, what)
    units = []   # (parent segment or 0, segments, entries)
    for g in groups:
        ent = [(len(g) - 1, None, ("seg", g[-1]))]
        ent += [(k, None, ("seg", s)) for k, s in enumerate(g[:-1])]
        for k, s in enumerate(g):
            ent += [(k, np.asarray(c.frame_T[f]), ("frame", f)) for f in frames_on[s]]
        units.append((parent[g[0]], g, ent))
    if frames_on[0]:
        const = [(-1, np.asarray(c.frame_T[f]), ("frame", f)) for f in frames_on[0]]
        host = next((u for u in units if u[0] == 0), None)
        if host is not None:        # constants ride along in a block that hangs on the ground anyway
            host[2].extend(const)
        else:
            units.append((0, [], const))
    counts = [len(u[2]) for u in units]
    m = max(1, min(max(counts), 8))
    # --- blocks: a unit with more than m entries spills into extra blocks with the same parent
    blocks = []          # (parent segment, segments, entries)
    first_block_of_group = {}
    for (p, g, ent) in units:
        for k0 in range(0, len(ent), m):
            if k0 == 0 and g:
                first_block_of_group[g[-1]] = len(blocks)
            blocks.append((p, g, ent[k0:k0 + m]))
    sliders = [bool(g) and kind[g[0]] == 2 for (_, g, _) in blocks]
    return blocks, first_block_of_group, m, frame_alias, sliders


def _plan_single(c, nq: int, layout) -> _SinglePlan:
    """The constants of the one-configuration pass for a block layout: per block, its trigonometric terms
    (rows of ``A``, phases ``b``) and the coefficient matrices of every entry; where each segment and frame
    lands in the output; per frame, the gather indices of its Jacobian."""
    blocks, first_block_of_group, m, frame_alias, _ = layout
    S = c.n_seg
    kind = [int(k) for k in c.seg_kind]
    eye = np.eye(4)
    nb = len(blocks)
    # --- trigonometric terms of each block
    term_rows, coef_blocks = [], []
    for (p, g, ent) in blocks:
        if g and kind[g[0]] == 2:            # a slider is alone in its group: terms 1 and d
            a_lin = {int(c.seg_coord[g[0]]): 1.0}
            P = np.asarray(c.seg_P[g[0]])
            coefs = []
            for depth, F, _ in ent:
                Fm = eye if F is None else F
                coefs.append([Fm, np.zeros((4, 4))] if depth < 0 else [P @ Fm, P @ _EZ @ Fm])
            rows = [({}, math.pi / 2, False), (a_lin, 0.0, True)]
        else:
            factors = [_revolute_factor(np.asarray(c.seg_P[s])) for s in g]
            reps = [n for n in itertools.product((-1, 0, 1), repeat=len(g))
                    if any(n) and n[[i for i, v in enumerate(n) if v][0]] > 0]
            rows = [({}, math.pi / 2, False)]     # the constant term: sin(pi/2) = 1
            for n in reps:
                a = {}                                      # sparse row: coordinate -> multiple
                for k, v in enumerate(n):
                    ci = int(c.seg_coord[g[k]])
                    a[ci] = a.get(ci, 0) + v
                rows.append((a, math.pi / 2, False))        # cos(n . q)
                rows.append((a, 0.0, False))                # sin(n . q)
            coefs = []
            for depth, F, _ in ent:
                Fm = eye if F is None else F
                if depth < 0:
                    coefs.append([Fm] + [np.zeros((4, 4))] * (2 * len(reps)))
                    continue
                exp = _trig_expansion(factors[:depth + 1])
                full = {n + (0,) * (len(g) - depth - 1): M for n, M in exp.items()}
                row = [full.get((0,) * len(g), np.zeros((4, 4))).real @ Fm]
                for n in reps:
                    a_n = full.get(n, np.zeros((4, 4), complex))
                    # a_n e^{i n.q} + conj(a_n) e^{-i n.q} = 2 Re(a_n) cos(n.q) - 2 Im(a_n) sin(n.q)
                    row.append(2 * a_n.real @ Fm)
                    row.append(-2 * a_n.imag @ Fm)
                coefs.append(row)
        term_rows.append(rows)
        coef_blocks.append(coefs)
    T = max(len(r) for r in term_rows) if term_rows else 1
    a_rows, a_cols, a_vals = [], [], []
    bvec = np.zeros((nb, T))
    lin = []
    coef = np.zeros((nb, T, m, 4, 4))     # coefficient t of entry e, transposed: rows 4e:4e+4 of the block
    for bi, (rows, coefs) in enumerate(zip(term_rows, coef_blocks)):
        for t, (a, ph, is_lin) in enumerate(rows):
            for ci, v in a.items():
                if v:
                    a_rows.append(bi * T + t)
                    a_cols.append(ci)
                    a_vals.append(float(v))
            bvec[bi, t] = ph
            if is_lin:
                lin.append(bi * T + t)
        for e, row in enumerate(coefs):
            for t, Cm in enumerate(row):
                coef[bi, t, e] = np.asarray(Cm).T
    sp = _SinglePlan()
    if nq > _DENSE_MAX_NQ:
        # long chains and wide trees: each row touches at most 3 coordinates; a dense (rows x nq) matrix
        # would grow with the square of the model
        from scipy.sparse import csr_matrix

        sp.A = csr_matrix((a_vals, (a_rows, a_cols)), shape=(nb * T, nq))
    else:
        A = np.zeros((nb * T, nq))
        np.add.at(A, (np.array(a_rows, np.intp), np.array(a_cols, np.intp)), a_vals)
        sp.A = _ro(A)
    sp.b = _ro(bvec.reshape(nb * T))
    sp.lin = _ro(lin, np.intp) if lin else None
    sp.coef = _ro(coef.reshape(nb, T, m * 16))
    sp.nb, sp.m, sp.T = nb, m, T
    sp.parents = tuple(-1 if p == 0 else first_block_of_group[p] for (p, g, ent) in blocks)
    sp.ground = _ro(_GROUND_EXT.T)
    # coordinates of revolute segments: reduced to (-pi, pi] before the pass when large (see _single_pass)
    rev = sorted({int(c.seg_coord[i]) for i in range(1, S) if kind[i] == 1})
    sp.revolute = _ro(rev, np.intp) if rev else None
    # --- where each segment and frame ended up: (block, entry) in the pass output
    seg_be = [(0, 0)] * S
    frame_be = [(0, 0)] * len(c.frame_seg)
    for bi, (p, g, ent) in enumerate(blocks):
        for e, (_, _, (what, idx)) in enumerate(ent):
            if what == "seg":
                seg_be[idx] = (bi, e)
            else:
                frame_be[idx] = (bi, e)
    for f, s_ in frame_alias.items():
        frame_be[f] = seg_be[s_]
    ground_frame = next(f for f, s_ in enumerate(c.frame_seg) if s_ == 0)  # the ground's own frame
    seg_be[0] = frame_be[ground_frame]
    sp.seg_be = _ro(seg_be, np.intp)
    sp.frame_be = _ro(frame_be, np.intp)
    ii, jj = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    sb, fb = sp.seg_be, sp.frame_be
    sp.seg_flat = _ro(_flat(m, sb[:, 0, None, None], sb[:, 1, None, None], ii, jj), np.intp)
    sp.frame_flat = _ro(_flat(m, fb[:, 0, None, None], fb[:, 1, None, None], ii, jj), np.intp)
    chain = sp.parents == tuple(range(-1, nb - 1))     # each block hangs on the one before
    # the coefficient product: for a few small blocks one matrix-vector product with the block-diagonal
    # coefficient matrix (zeros included) costs less than numpy's stacked matmul of the blocks
    if nb * T * nb * m * 16 <= _BLOCK_DIAGONAL_MAX:
        wshape, kc = None, np.zeros((nb * T, nb * m * 16))
        for bi in range(nb):
            kc[bi * T:(bi + 1) * T, bi * m * 16:(bi + 1) * m * 16] = sp.coef[bi]
        kc = _ro(kc)
    else:
        wshape, kc = (nb, 1, T), sp.coef
    sp.run = (sp.A, sp.b, sp.lin, wshape, kc, (nb, 4 * m, 4), (nb, 4 * m, 12), sp.ground,
              nb if chain else sp.parents)
    return sp


def _flat(m, b, e, i, j):
    """Flat index of ``E[i, j]`` (i < 12, j < 4) of entry e of block b in the (nb, 4m, 12) output."""
    return ((np.asarray(b) * m + np.asarray(e)) * 4 + j) * 12 + i


def _ancestors(tree, s: int) -> np.ndarray:
    """Moving segments from the ground to segment ``s`` (inclusive, ascending)."""
    out = []
    parent = tree.seg_parent
    while s > 0:
        out.append(s)
        s = int(parent[s])
    return np.array(out[::-1], dtype=np.intp)


def _frame_jacobian(tree, sp: _SinglePlan, f: int) -> _FrameJacobian:
    """Per-frame Jacobian constants (built on first use: their size grows with the frame's depth).

    The gather indices (factor, half, row of the result, ancestor) place, per ancestor column and row of the result ([linear; angular]), the factors
    of :func:`_single_columns`. Revolute, LOCAL_WORLD_ALIGNED: ``X = [[P1 z, z], [P2 z, z]]``, ``Yp = [[P2 p,
    1], [P1 p, 0]]``, ``Yo = [[P2 o, 0], [P1 o, 0]]``, so ``X * (Yp - Yo)`` is ``[[P1 z * P2 d, z], [P2 z * P1 d,
    0]]`` (``d = p - o``) and the difference of its two halves is ``[z x d; z]``. WORLD: ``X = [[P2 z, z], [P1
    z, z]]``, ``Y = [[P1 o, 1], [P2 o, 0]]``: ``[o x z; z]``. Prismatic: ``X = z``, ``Y = [[1, 0], [0, 0]]``:
    ``[z; 0]``. The exact 1 and 0 are read from the ground frame's entry (a constant pose: the extended
    identity, whatever the model's numbers)."""
    nq = tree.nq
    anc = _ancestors(tree, int(tree.frame_seg[f]))
    k = len(anc)
    m = sp.m
    r3 = np.arange(3)[:, None]
    fj = _FrameJacobian()
    fj.ancestors = _ro(anc, np.intp)
    ab = sp.seg_be[anc, 0]
    ae = sp.seg_be[anc, 1]
    fb, fe = (int(v) for v in sp.frame_be[f])
    gb, ge = (int(v) for v in sp.seg_be[0])              # the ground's own frame: a constant entry
    one = np.full((3, k), _flat(m, gb, ge, 3, 3), np.intp)
    zero = np.full((3, k), _flat(m, gb, ge, 3, 0), np.intp)
    ones = np.ones(k, np.intp)

    def seg(i, j):                                        # rows i + (0, 1, 2), column j of every ancestor
        return np.broadcast_to(_flat(m, ab, ae, i + r3, j), (3, k))

    def frm(i):
        return np.broadcast_to(_flat(m, fb * ones, fe * ones, i + r3, 3), (3, k))

    z, P1z, P2z = seg(0, 2), seg(4, 2), seg(8, 2)
    P1o, P2o, P1p, P2p = seg(4, 3), seg(8, 3), frm(4), frm(8)
    pri = tree.seg_kind[anc] == 2
    lwa = np.array([[[P1z, z], [P2z, z]], [[P2p, one], [P1p, zero]], [[P2o, zero], [P1o, zero]]])
    world = np.array([[[P2z, z], [P1z, z]], [[P1o, one], [P2o, zero]]])
    for g in (lwa, world):                  # (factor, half, linear/angular, row, ancestor)
        for j in np.flatnonzero(pri):
            g[0, ..., j] = z[:, j]
            g[1:, ..., j] = zero[:, j]
            g[1, 0, 0, :, j] = one[:, j]
    fj.gather = _ro(lwa.reshape(3, 2, 6, k), np.intp)
    fj.gather_world = _ro(world.reshape(2, 2, 6, k), np.intp)
    cols = tree.seg_coord[anc]
    fj.cols = _ro(cols, np.intp)
    fj.cols_slice = (slice(int(cols[0]), int(cols[-1]) + 1)
                     if k and int(cols[-1]) - int(cols[0]) + 1 == k and np.all(np.diff(cols) == 1) else None)
    fj.direct = k == nq and fj.cols_slice == slice(0, nq)
    fj.full = fj.direct
    if not fj.full and k == nq:
        fj.full = bool(np.array_equal(np.sort(cols), np.arange(nq)))
    fj.prismatic = _ro(np.flatnonzero(pri), np.intp) if pri.any() else None
    fj.revolute = _ro(np.flatnonzero(~pri), np.intp) if pri.any() else None
    return fj


def plan_batch(c) -> _BatchPlan:
    """Compile the batch pass: per moving segment, matrices acting on the parent's 12 pose components.

    With ``t`` the 12 components of a pose (a column, ``t[3*j + i] = T[i, j]``), ``T_p @ P`` has the
    components ``kron(P.T, I3) @ t_p``. A revolute segment on the ground keeps the constant parts that
    multiply cos q and sin q (rotation columns 0 and 1) and the constant columns 2 and 3; on a moving parent
    it keeps ``kron(P.T, I3)`` (12 x 12): the pass turns columns 0 and 1 of ``T_p P`` by q afterwards
    (``c0' = cos q c0 + sin q c1``, ``c1' = cos q c1 - sin q c0``), a third fewer products than
    multiplying the cos and sin parts separately.
    """
    steps = []
    eye3 = np.eye(3)
    for i in range(1, c.n_seg):
        P = np.asarray(c.seg_P[i])
        p = int(c.seg_parent[i])
        if c.seg_kind[i] == 1:
            Mcs = np.vstack([np.kron((P @ _CC).T, eye3)[:6], np.kron((P @ _CS).T, eye3)[:6]])   # 12 x 12
            M1 = np.kron((P @ _C0).T, eye3)[6:]                                                   # 6 x 12
            if p == 0:
                steps.append((1, -1, _ro(Mcs @ _EYE_COMPS), _ro(M1 @ _EYE_COMPS)))
            else:
                steps.append((1, p - 1, _ro(np.kron(P.T, eye3)), None))
        else:
            M = np.kron(P.T, eye3)
            steps.append((2, p - 1, _ro(M @ _EYE_COMPS if p == 0 else M), None))
    bp = _BatchPlan()
    bp.steps = tuple(steps)
    eye = np.eye(4)
    bp.frame_identity = tuple(bool(np.array_equal(F, eye)) for F in c.frame_T)
    bp.frame_M = _ro(np.array([np.kron(np.asarray(F).T, eye3) for F in c.frame_T]))
    bp.frame_const = _ro(bp.frame_M @ _EYE_COMPS)        # components of frames fixed to the ground
    return bp


# ============================================================================ plans, per mechanism
class KinematicsPlan:
    """Everything the passes precompute for one mechanism, kept here and not in the model (Pinocchio keeps
    its Model free of algorithm state the same way). Built on first use by :func:`kinematics_plan` and
    cached while the mechanism lives; only read afterwards, so threads share it without locks.

    ``single``: the one-configuration plan (built with the plan); ``batch``, per-frame Jacobian constants,
    joint-step (TF edge) coefficients and frame chains: built on first use, because their size grows with
    the model (the per-frame Jacobian constants with each frame's depth)."""

    __slots__ = ("tree", "nq", "qshape", "single", "single_pass", "run_pass", "frame_index", "frame_take", "_batch",
                 "_edges", "_jac", "_chains", "__weakref__")

    def __init__(self, mechanism: Mechanism):
        t = mechanism.segment_tree
        self.tree = t
        self.nq = t.nq
        self.qshape = (t.nq,)
        self.single = plan_single(t, t.nq)
        banded = type(self.single) is BandedPlan
        self.single_pass = banded_pass if banded else _single_pass     # (plan, q[, q . q])
        self.run_pass = banded_pass if banded else _pass                # (plan.run, q), |q_i| <= 64 known
        self.frame_index = {n: i for i, n in enumerate(mechanism.frame_names)}
        #: frame name -> flat indices of its pose in the one-configuration pass output
        self.frame_take = {n: self.single.frame_flat[i] for n, i in self.frame_index.items()}
        self._batch = None
        self._edges = None
        self._jac = {}
        self._chains = {}

    @property
    def batch(self) -> _BatchPlan:
        b = self._batch
        if b is None:
            b = self._batch = plan_batch(self.tree)
        return b

    def frame_jacobian(self, f: int) -> _FrameJacobian:
        fj = self._jac.get(f)
        if fj is None:
            fj = self._jac[f] = _frame_jacobian(self.tree, self.single, f)
        return fj


def kinematics_plan(mechanism: Mechanism) -> KinematicsPlan:
    """The evaluation plan of ``mechanism``: built once, kept in the mechanism's derived data
    (:mod:`.data`, dropped when the mechanism is collected)."""
    return data_of(mechanism).set_kinematics(lambda: KinematicsPlan(mechanism))


def _frame_index(plan: KinematicsPlan, mechanism: Mechanism, frame: str) -> int:
    i = plan.frame_index.get(frame)
    if i is None:
        return mechanism.frame(frame).index         # raises UnknownFrame (or accepts a non-str key)
    return i


# ============================================================================ the passes
def _reduced(q, rev):
    """``q`` with the revolute coordinates ``rev`` brought to (-pi, pi] through their exact sine and cosine
    (the angle is only ever used through sin and cos, so nothing changes but the rounding)."""
    q = q.copy()
    r = q[rev]
    q[rev] = np.arctan2(np.sin(r), np.cos(r))
    return q


def _single_pass(sp, q, qq=math.inf):
    """Pass output for one configuration, shape (nb, 4m, 12): rows 4e:4e+4 of block b hold ``E.T`` (see
    _GROUND_EXT) for the pose of the block's e-th entry (segment or frame). ``qq``: ``q . q`` when the
    caller has it (large angles are reduced first; unknown means check)."""
    if qq == math.inf:
        qq = q.dot(q)
    if not qq <= _REDUCE2 and sp.revolute is not None:
        q = _reduced(q, sp.revolute)
    return _pass(sp.run, q)


def _pass(run, q):
    """:func:`_single_pass` for a ``q`` known to need no reduction (every |q_i| <= 64: ``q . q`` within
    ``_REDUCE2``); the hot path of :func:`forward_kinematics`."""
    A, b, lin, wshape, coef, kshape, oshape, ground, parents = run
    x = A.dot(q)
    x += b
    if lin is None:
        w = _sin(x, out=x)
    else:
        w = _sin(x)
        w[lin] = x[lin]
    # block b: [L_0.T; L_1.T; ...] (4m x 4), each L relative to the block's parent segment
    if wshape is None:                 # coef: the block-diagonal coefficient matrix
        K = w.dot(coef).reshape(kshape)
    else:
        K = _matmul(w.reshape(wshape), coef).reshape(kshape)
    out = _empty(oshape)
    # the right operand of each block: the first entry (a pose) of its parent block, or the ground's
    if type(parents) is int:           # a chain of blocks, each on the one before
        prev = ground
        for i in range(parents):
            o = out[i]
            K[i].dot(prev, o)         # the method skips np.dot's dispatch: 0.1 us a call
            prev = o[:4]
    else:
        firsts = []
        for i, p in enumerate(parents):
            o = out[i]
            K[i].dot(ground if p < 0 else firsts[p], o)
            firsts.append(o[:4])
    return out


#: Configurations per chunk of the batch pass. Every matrix product is done per chunk (np.matmul over the
#: chunks: one BLAS call per chunk, looped in C): OpenBLAS spreads
#: a product over its threads above about 262144 multiply-adds, which for these thin products costs far
#: more than it gains (a batch ran five to eight times slower on a loaded 2-core machine); 12 x 12 x 1024
#: stays below that threshold. Elementwise work runs on all chunks at once.
_CHUNK = 1024


def _chunking(B: int):
    bc = min(B, _CHUNK) or 1
    return -(-B // bc), bc


def _batch_pass(plan: KinematicsPlan, Q, Tb=None):
    """Batch pass: pose components of every moving segment, shape (S - 1, n_chunks, 12, chunk): the
    configurations ``Q`` (B, nq) are cut into chunks (the last one padded with zeros), and component
    ``3*j + i`` of a pose is ``T[i, j]``. ``Tb``: an array of that shape to fill (else a new one)."""
    steps = plan.batch.steps
    B = Q.shape[0]
    nch, bc = _chunking(B)
    S1 = len(steps)
    if Tb is None:
        Tb = np.empty((S1, nch, 12, bc))
    if not S1:
        return Tb
    coord = plan.tree.seg_coord[1:]
    X = _work("kinematics.X", (S1, nch * bc))
    np.take(Q.T, coord, axis=0, out=X[:, :B], mode="clip")         # coord: valid columns
    if nch * bc != B:
        X[:, B:] = 0.0
    X = X.reshape(S1, nch, 1, bc)
    cs = np.cos(X, out=_work("kinematics.cos", X.shape))
    sn = np.sin(X, out=_work("kinematics.sin", X.shape))
    U = _work("kinematics.U", (nch, 3, bc))
    V = _work("kinematics.V", (nch, 3, bc))
    for i, (kind, p, M, M1) in enumerate(steps):
        Ti = Tb[i]
        if kind == 1:
            if p < 0:            # the parent is the ground: M and M1 are constant columns
                np.multiply(cs[i], M[:6], out=Ti[:, :6])
                Ti[:, :6] += sn[i] * M[6:]
                Ti[:, 6:] = M1
            else:
                _matmul(M, Tb[p], out=Ti)        # T_p P; one BLAS product per chunk, looped in C
                c0, c1 = Ti[:, 0:3], Ti[:, 3:6]  # then turn columns 0 and 1 by q
                s = sn[i]
                s0 = np.multiply(c0, s, out=U)
                s1 = np.multiply(c1, s, out=V)
                c = cs[i]
                c0 *= c
                c0 += s1
                c1 *= c
                c1 -= s0
        else:
            if p < 0:
                Ti[...] = M
            else:
                _matmul(M, Tb[p], out=Ti)
            Ti[:, 9:] += Ti[:, 6:9] * X[i]
    return Tb


def _batch_frame_comps(plan: KinematicsPlan, Tb, f):
    """(n_chunks, 12, chunk) pose components of frame ``f`` from the batch pass: a view of ``Tb`` or of a
    constant, or this thread's work array (read it before the next call)."""
    s = int(plan.tree.frame_seg[f])
    bp = plan.batch
    if s == 0:
        return np.broadcast_to(bp.frame_const[f], Tb.shape[1:])
    if bp.frame_identity[f]:
        return Tb[s - 1]
    src = Tb[s - 1]
    return _matmul(bp.frame_M[f], src, out=_work("kinematics.W", src.shape))


def _comps_to_poses(W, B: int):
    """Components (n_chunks, 12, chunk) -> poses (B, 4, 4); (F, n_chunks, 12, chunk) -> (B, F, 4, 4)."""
    if W.ndim == 3:
        nch, _, bc = W.shape
        out = np.empty((nch, bc, 4, 4))
        out[..., :3, :] = W.reshape(nch, 4, 3, bc).transpose(0, 3, 2, 1)
        out[..., 3, :3] = 0.0
        out[..., 3, 3] = 1.0
        return out.reshape(nch * bc, 4, 4)[:B]
    F, nch, _, bc = W.shape
    out = np.empty((nch, bc, F, 4, 4))
    out[..., :3, :] = W.reshape(F, nch, 4, 3, bc).transpose(1, 4, 0, 3, 2)
    out[..., 3, :3] = 0.0
    out[..., 3, 3] = 1.0
    return out.reshape(nch * bc, F, 4, 4)[:B]


def _batch_segments(plan: KinematicsPlan, Tb, B: int):
    """(B, S, 4, 4) segment poses, ground first."""
    out = np.empty((B, plan.tree.n_seg, 4, 4))
    out[:, 0] = np.eye(4)
    out[:, 1:] = _comps_to_poses(Tb, B)
    return out


# ------------------------------------------------------------------ Jacobian columns on the passes
def _single_columns(out, fj, nq: int, world: bool) -> np.ndarray:
    """6 x nq Jacobian of one frame relative to the ground from the one-configuration pass output.

    Column of a revolute ancestor with axis z and origin o: angular z; linear z x (p - o) for the frame
    origin p (LOCAL_WORLD_ALIGNED) or o x z (WORLD). A prismatic ancestor: linear z, angular 0. The pass
    carries every vector in three cyclic orders P1, P2, so each cross product is two elementwise products,
    ``z x d = P1 z * P2 d - P2 z * P1 d``; one gather lays out both products of every column next to its
    angular part (see :func:`_frame_jacobian`), so the whole matrix is a gather, a product and a difference.
    """
    if world:
        G = out.take(fj.gather_world)         # X, Y (integer indexing: unpacking an array costs more)
        D = G[0] * G[1]
    else:
        G = out.take(fj.gather)               # X, Yp, Yo
        D = G[1] - G[2]
        D *= G[0]
    if fj.direct:
        return _subtract(D[0], D[1])
    J = np.zeros((6, nq))
    if fj.cols.size:
        J[:, fj.cols] = D[0] - D[1]
    return J


def _batch_columns(plan: KinematicsPlan, Tb, f: int, B: int):
    """(B, 6, nq) LOCAL_WORLD_ALIGNED Jacobian of frame ``f`` relative to the ground, and the frame's pose
    components, from the batch pass. The columns are computed as rows over the configurations, then turned
    into (B, 6, nq) by one copy."""
    nq = plan.nq
    W = _batch_frame_comps(plan, Tb, f)
    nch, _, bc = W.shape
    fj = plan.frame_jacobian(f)
    anc = fj.ancestors
    k = anc.size
    if k == 0:
        return np.zeros((B, 6, nq)), W
    if anc[-1] - anc[0] + 1 == k:                     # a chain: a view, no copy
        A = Tb[anc[0] - 1:anc[-1], :, 6:]
    else:
        A = Tb[anc - 1, :, 6:]                          # (k, n_chunks, 6, chunk): axis z, origin
    Z = A[:, :, :3]
    D = np.subtract(W[None, :, 9:], A[:, :, 3:], out=_work("kinematics.D", (k, nch, 3, bc)))
    G = _work("kinematics.G", (6, k, nch, bc))          # rows [linear; angular] x ancestor x configuration
    tmp = _work("kinematics.G1", (k, nch, bc))
    for i, (a, b) in enumerate(((1, 2), (2, 0), (0, 1))):
        np.multiply(Z[:, :, a], D[:, :, b], out=G[i])
        G[i] -= np.multiply(Z[:, :, b], D[:, :, a], out=tmp)
    G[3:] = Z.transpose(2, 0, 1, 3)
    if fj.prismatic is not None:
        G[:3, fj.prismatic] = Z[fj.prismatic].transpose(2, 0, 1, 3)
        G[3:, fj.prismatic] = 0.0
    cols = fj.cols
    if fj.full and fj.cols_slice == slice(0, nq):
        J = np.array(G.transpose(2, 3, 0, 1), order="C").reshape(nch * bc, 6, nq)     # a copy: G is work
    else:
        J = np.zeros((nch, bc, 6, nq))
        J[..., cols] = G.transpose(2, 3, 0, 1)
        J = J.reshape(nch * bc, 6, nq)
    return J[:B], W


# ============================================================================ public API
def _configuration(mechanism: Mechanism, q, nq: int):
    """``mechanism.configuration(q)``, with a shortcut for a finite float array of length nq."""
    if type(q) is np.ndarray and q.dtype is _F64 and q.ndim == 1 and q.shape[0] == nq:
        # q . q is finite for finite q; it overflows above 1e154 only, and then the full check decides
        if _isfinite(q.dot(q)):
            return q
    return mechanism.configuration(q)


def segment_poses(mechanism: Mechanism, q, *, data=None) -> np.ndarray:
    """``T_ground_segment`` for every segment of :attr:`Mechanism.segment_tree`: shape (S, 4, 4) for one
    configuration, (B, S, 4, 4) for a batch. Prefer :func:`forward_kinematics` to reuse one pass."""
    return forward_kinematics(mechanism, q, data=data).segments


def batch_segment_components(mechanism: Mechanism, Q, *, data=None) -> np.ndarray:
    """The batch pass's own layout, for algorithms that work on it directly (statics' batch gravity): pose
    components of every moving segment, shape (S - 1, n_chunks, 12, chunk); component ``3*j + i`` of a pose
    is ``T_ground_seg[i, j]``; the configurations ``Q`` (B, nq) are cut into chunks of up to 1024 (the last
    one padded with zeros)."""
    p = _check_data(mechanism, data).set_kinematics(lambda: KinematicsPlan(mechanism))
    Q = _configuration(mechanism, Q, p.nq)
    if Q.ndim != 2:
        Q = Q[None]
    return _batch_pass(p, Q)


def single_pass_index(mechanism: Mechanism, frames: bool = False) -> np.ndarray:
    """The one-configuration pass's own layout, for algorithms that gather a few pose entries directly
    (statics' gravity and contact Jacobians): flat indices (S, 4, 4) such that
    ``single_pass_output(m, q).take(idx)[s, i, j]`` is ``T_ground_seg[s][i, j]``; with ``frames=True``,
    (F, 4, 4) for the frames in :attr:`Mechanism.frame_names` order. Read-only, built with the plan."""
    sp = kinematics_plan(mechanism).single
    return sp.frame_flat if frames else sp.seg_flat


def single_pass_output(mechanism: Mechanism, q: np.ndarray, qq: float = math.inf, *, data=None) -> np.ndarray:
    """The raw output of the one-configuration pass for the full configuration ``q`` (a finite float array
    (nq,), couplings filled in: :meth:`Mechanism.configuration` gives one; ``qq``: ``q . q`` when the caller
    has it); a new array, read it with the indices of :func:`single_pass_index`."""
    d = getattr(mechanism, _DATA_ATTR, None)
    if data is not None and d is not data:
        _check_data(mechanism, data)
    p = None if d is None else d.kinematics
    if p is None:
        p = kinematics_plan(mechanism)
    return p.single_pass(p.single, q, qq)


class ForwardKinematics:
    """The result of :func:`forward_kinematics`: answers the pose of any frame relative to any other, and
    the Jacobian of any frame from the same pass.

    It holds the poses of one configuration (or a batch) and the mechanism; it does not modify either,
    and every array it returns is a new array. ``q`` is the full joint-coordinate array used (couplings
    filled in). ``segments`` gives the poses of the compiled segments, ``T_ground_segment`` (S, 4, 4) or
    (B, S, 4, 4).
    """

    __slots__ = ("mechanism", "q", "_plan", "_out", "_tb")

    def __init__(self, mechanism: Mechanism, q):
        fk = forward_kinematics(mechanism, q)
        self.mechanism, self.q, self._plan, self._out, self._tb = (fk.mechanism, fk.q, fk._plan, fk._out,
                                                                   fk._tb)

    @property
    def batched(self) -> bool:
        return self.q.ndim == 2

    @property
    def segments(self) -> np.ndarray:
        p = self._plan
        if self._out is not None:
            return self._out.take(p.single.seg_flat)
        return _batch_segments(p, self._tb, self.q.shape[0])

    def pose(self, frame: str, relative_to: str | None = None) -> np.ndarray:
        """``T_relative_to_frame`` (ground when ``relative_to`` is None): 4x4, or (B, 4, 4) for a batch."""
        if relative_to is None:
            out = self._out
            if out is not None:
                idx = self._plan.frame_take.get(frame)
                if idx is not None:
                    return out.take(idx)
        T = self._world(frame)
        if relative_to is None or relative_to == self.mechanism.ground:
            return T
        return _relative(self._world(relative_to), T)

    def position(self, frame: str, relative_to: str | None = None) -> np.ndarray:
        """Origin of ``frame`` in ``relative_to`` (metres)."""
        return self.pose(frame, relative_to)[..., :3, 3]

    def rotation(self, frame: str, relative_to: str | None = None) -> np.ndarray:
        """3x3 orientation of ``frame`` in ``relative_to``."""
        return self.pose(frame, relative_to)[..., :3, :3]

    def _world(self, frame: str) -> np.ndarray:
        p = self._plan
        f = p.frame_index.get(frame)
        if f is None:
            f = _frame_index(p, self.mechanism, frame)
        if self._out is not None:
            return self._out.take(p.single.frame_flat[f])
        return _comps_to_poses(_batch_frame_comps(p, self._tb, f), self.q.shape[0])

    def frame_array(self) -> np.ndarray:
        """Poses of all frames in :attr:`Mechanism.frame_names` order, shape (F, 4, 4) or (B, F, 4, 4)."""
        p = self._plan
        if self._out is not None:
            return self._out.take(p.single.frame_flat)
        return _comps_to_poses(_batch_all_frame_comps(p, self._tb), self.q.shape[0])

    def all_poses(self) -> dict[str, np.ndarray]:
        """``{frame name: T_ground_frame}`` for every body frame and named frame, computed at once."""
        W = self.frame_array()
        if W.ndim == 4:
            W = np.moveaxis(W, 1, 0)
        return dict(zip(self.mechanism.frame_names, W))

    def ground_jacobian(self, frame: str, point: str = "frame") -> np.ndarray:
        """Geometric Jacobian of ``frame`` relative to the ground, rows [linear; angular] in ground axes:
        (6, nq), or (B, 6, nq) for a batch. ``point="frame"``: the linear rows are the velocity of the
        frame's origin (LOCAL_WORLD_ALIGNED); ``point="ground"``: of the body point at the ground's origin
        (WORLD). Other conventions and reference frames: :meth:`jacobian`."""
        p = self._plan
        f = p.frame_index.get(frame)
        if f is None:
            f = _frame_index(p, self.mechanism, frame)
        if self._out is not None:
            fj = p._jac.get(f)
            if fj is None:
                fj = p.frame_jacobian(f)
            return _single_columns(self._out, fj, p.nq, point == "ground")
        return _batch_ground_jacobian(p, self._tb, f, self.q.shape[0], point)

    def jacobian(self, frame: str, relative_to: str | None = None, convention="LOCAL_WORLD_ALIGNED"):
        """The geometric Jacobian of ``frame`` at this configuration (see :func:`.jacobians.jacobian`),
        reusing this forward pass."""
        return frame_jacobian(self, frame, relative_to, convention)


def _batch_ground_jacobian(p: KinematicsPlan, Tb, f: int, B: int, point: str) -> np.ndarray:
    """(B, 6, nq) Jacobian of frame ``f`` relative to the ground from the batch pass (see
    :meth:`ForwardKinematics.ground_jacobian`); a new array (``Tb`` may be work space)."""
    J, W = _batch_columns(p, Tb, f, B)
    if point == "ground":
        pos = _comps_to_poses(W, B)[:, :3, 3]
        J = J.copy()
        J[:, :3, :] -= _cross_cols(J[:, 3:, :], pos)
    return J


def _cross_cols(W, p):
    """Columns of ``W`` (B, 3, n) crossed with ``p`` (B, 3): ``w_k x p`` for every column k."""
    out = np.empty(W.shape)
    out[:, 0] = W[:, 1] * p[:, 2, None] - W[:, 2] * p[:, 1, None]
    out[:, 1] = W[:, 2] * p[:, 0, None] - W[:, 0] * p[:, 2, None]
    out[:, 2] = W[:, 0] * p[:, 1, None] - W[:, 1] * p[:, 0, None]
    return out


def _batch_all_frame_comps(plan: KinematicsPlan, Tb):
    """(F, n_chunks, 12, chunk) pose components of every frame."""
    F = len(plan.tree.frame_seg)
    out = np.empty((F,) + Tb.shape[1:])
    for f in range(F):
        out[f] = _batch_frame_comps(plan, Tb, f)
    return out


def _relative(Tr, T):
    """``inverse(Tr) @ T`` for rigid transforms (4x4 or stacks)."""
    return relative_motion(T, None, Tr, None)[0]


def forward_kinematics(mechanism: Mechanism, q=None, *, data=None) -> ForwardKinematics:
    """Forward kinematics of every frame of ``mechanism`` for joint values ``q``.

    ``q``: array (nq,), batch (B, nq), independent-only values, or a ``{coordinate: value}`` mapping
    (see :meth:`Mechanism.configuration`); ``None`` means the home configuration. ``data``: the mechanism's
    :class:`~.data.Data` (``data_of(mechanism)``, checked), as Pinocchio's functions take ``data``; found from
    the mechanism when None (every function of the kernel that takes a mechanism takes ``data=`` alike).
    """
    d = getattr(mechanism, _DATA_ATTR, None)
    if data is not None and d is not data:
        _check_data(mechanism, data)
    p = None if d is None else d.kinematics
    if p is None:
        p = kinematics_plan(mechanism)
    fk = _new(ForwardKinematics)
    fk.mechanism = mechanism
    fk._plan = p
    if type(q) is _ndarray and q.dtype is _F64 and q.shape == p.qshape and q.dot(q) <= _REDUCE2:
        # the common case (the shortcut of Mechanism.configuration, inlined): one finite configuration with no
        # coordinate beyond 64, so no large-angle reduction either; NaN, inf and large values take the path below
        fk.q = q
        fk._out = p.run_pass(p.single.run, q)
        fk._tb = None
        return fk
    q = mechanism.configuration(q)
    fk.q = q
    if q.ndim == 1:
        fk._out = p.single_pass(p.single, q)
        fk._tb = None
    else:
        fk._out = None
        fk._tb = _batch_pass(p, q)
    return fk


def ground_jacobian(mechanism: Mechanism, q, frame: str, point: str = "frame", *, data=None) -> np.ndarray:
    """``forward_kinematics(mechanism, q).ground_jacobian(frame, point)`` (relative to the ground; (6, nq) or
    (B, 6, nq); ``point="frame"``: LOCAL_WORLD_ALIGNED, ``"ground"``: WORLD): :func:`.jacobians.jacobian`'s
    path for those two conventions, lean for one plain configuration of a frame whose Jacobian constants
    exist (no result object is built)."""
    d = getattr(mechanism, _DATA_ATTR, None)
    if data is not None and d is not data:
        _check_data(mechanism, data)
    p = None if d is None else d.kinematics
    if p is not None and type(q) is _ndarray and q.dtype is _F64 and q.shape == p.qshape:
        fj = p._jac.get(p.frame_index.get(frame))
        if fj is not None and q.dot(q) <= _REDUCE2:
            return _single_columns(p.run_pass(p.single.run, q), fj, p.nq, point == "ground")
    if p is not None and (type(q) is not _ndarray or q.ndim == 2):
        Q = mechanism.configuration(q)
        if Q.ndim == 2:                 # a batch: the pass output is work space (no result object keeps it)
            f = _frame_index(p, mechanism, frame)
            B = Q.shape[0]
            nch, bc = _chunking(B)
            Tb = _batch_pass(p, Q, _work("kinematics.Tb", (len(p.batch.steps), nch, 12, bc)))
            return _batch_ground_jacobian(p, Tb, f, B, point)
        q = Q
    return forward_kinematics(mechanism, q, data=data).ground_jacobian(frame, point)


_new = object.__new__


def relative_pose(mechanism: Mechanism, q, frame: str, relative_to: str | None = None, *,
                  data=None) -> np.ndarray:
    """``T_relative_to_frame`` for joint values ``q`` (a shortcut for ``forward_kinematics(...).pose``)."""
    return forward_kinematics(mechanism, q, data=data).pose(frame, relative_to)


# ============================================================================ Jacobian conventions
class Convention(str, Enum):
    WORLD = "WORLD"
    LOCAL = "LOCAL"
    LOCAL_WORLD_ALIGNED = "LOCAL_WORLD_ALIGNED"

    @classmethod
    def parse(cls, value) -> "Convention":
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).upper())
        except ValueError:
            raise MechanismModelError(f"unknown Jacobian convention {value!r}; use "
                                      f"{', '.join(c.value for c in cls)}") from None


WORLD = Convention.WORLD
LOCAL = Convention.LOCAL
LOCAL_WORLD_ALIGNED = Convention.LOCAL_WORLD_ALIGNED


def _finish(Jf, Tf, Jr, Tr, conv: Convention) -> np.ndarray:
    """Apply ``relative_to`` and the reference convention to world-aligned columns.

    ``Jf``/``Tf``: LOCAL_WORLD_ALIGNED Jacobian (..., 6, nq) and pose of the frame relative to the ground;
    ``Jr``/``Tr`` the same for the reference frame, or None for the ground.
    """
    if Jr is None:
        R = Tf[..., :3, :3]
        p = Tf[..., :3, 3]
        J = Jf
    else:
        T, J = relative_motion(Tf, Jf, Tr, Jr)
        R = T[..., :3, :3]
        p = T[..., :3, 3]
    if conv is Convention.LOCAL_WORLD_ALIGNED:
        return J
    if conv is Convention.WORLD:
        out = J.copy()
        # v_origin_of_r = v_p + w x (0 - p) = v_p - w x p  -> column-wise: lin - ang x p
        out[..., :3, :] = J[..., :3, :] - cross_rows(np.swapaxes(J[..., 3:, :], -1, -2),
                                                 p[..., None, :]).swapaxes(-1, -2)
        return out
    RT = np.swapaxes(R, -1, -2)
    return np.concatenate([RT @ J[..., :3, :], RT @ J[..., 3:, :]], axis=-2)


_CONVENTIONS = {c: c for c in Convention}
_CONVENTIONS.update({c.value: c for c in Convention})


def frame_jacobian(fk: "ForwardKinematics", frame: str, relative_to=None, convention=None) -> np.ndarray:
    """The Jacobian of ``frame`` relative to ``relative_to`` in ``convention`` from the pass of ``fk`` (see
    :func:`.jacobians.jacobian` for the conventions)."""
    if convention is None:
        convention = Convention.LOCAL_WORLD_ALIGNED
    conv = _CONVENTIONS.get(convention) if isinstance(convention, str) else None
    if conv is None:
        conv = Convention.parse(convention)
    m = fk.mechanism
    if relative_to is None or relative_to == m.ground:
        if conv is Convention.LOCAL_WORLD_ALIGNED:
            return fk.ground_jacobian(frame)
        if conv is Convention.WORLD:
            return fk.ground_jacobian(frame, "ground")
        J = fk.ground_jacobian(frame)
        Rt = np.swapaxes(fk.rotation(frame), -1, -2)
        return np.concatenate([Rt @ J[..., :3, :], Rt @ J[..., 3:, :]], axis=-2)
    return _finish(fk.ground_jacobian(frame), fk.pose(frame), fk.ground_jacobian(relative_to),
                   fk.pose(relative_to), conv)


# ============================================================================ joint steps (TF edges)
class _EdgePlan:
    __slots__ = ("K0", "K1", "K2", "coords", "prismatic", "coords2", "scale2", "C", "ones")


def _quaternion_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of quaternions ``(x, y, z, w)`` (shape (..., 4)), signs kept (no canonical sign)."""
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz], axis=-1)


def _edge_plan(plan: KinematicsPlan) -> _EdgePlan:
    ep = plan._edges
    if ep is not None:
        return ep
    t = plan.tree
    L, R = np.asarray(t.seg_L[1:]), np.asarray(t.seg_R[1:])
    pri = np.asarray(t.seg_kind[1:]) == 2
    ep = _EdgePlan()
    # revolute: L Rz(q) R = L C0 R + cos q L CC R + sin q L CS R; prismatic: L R + d L EZ R
    ep.K0 = _ro(np.where(pri[:, None, None], L @ R, L @ _C0 @ R))
    ep.K1 = _ro(np.where(pri[:, None, None], L @ _EZ @ R, L @ _CC @ R))
    ep.K2 = _ro(np.where(pri[:, None, None], 0.0, L @ _CS @ R))
    ep.coords = _ro(t.seg_coord[1:], np.intp)
    ep.prismatic = _ro(np.flatnonzero(pri), np.intp) if pri.any() else None
    # the same edges as translation and quaternion (joint_step_xyzquat): features f = (cos x, cos x/2, sin x,
    # sin x/2, x, 1) of each step's value x, and per step a (6, 7) matrix C with xyzquat = f @ C. The
    # translation is column 3 of K0 + c K1 + s K2 (c = x, s = 0 for a prismatic step); the rotation L Rz(x) R
    # is qL (cos x/2 + sin x/2 k) qR = cos(x/2) qL qR + sin(x/2) qL k qR, with one sign of qL and qR in both
    # terms (a prismatic step: qL qR, constant)
    n = len(pri)
    ep.coords2 = _ro(np.concatenate([ep.coords, ep.coords]), np.intp)
    ep.scale2 = _ro(np.concatenate([np.ones(n), np.full(n, 0.5)]))
    ep.ones = _ro(np.ones(n))
    qL = matrix_to_quaternion(L[:, :3, :3])
    qR = matrix_to_quaternion(R[:, :3, :3])
    qa = _quaternion_product(qL, qR)
    qb = _quaternion_product(_quaternion_product(qL, np.array([0.0, 0.0, 1.0, 0.0])), qR)
    C = np.zeros((n, 6, 7))
    rev = ~pri
    C[:, 5, :3] = ep.K0[:, :3, 3]
    C[rev, 0, :3] = ep.K1[rev, :3, 3]
    C[rev, 2, :3] = ep.K2[rev, :3, 3]
    C[pri, 4, :3] = ep.K1[pri, :3, 3]
    C[rev, 1, 3:] = qa[rev]
    C[rev, 3, 3:] = qb[rev]
    C[pri, 5, 3:] = qa[pri]
    ep.C = _ro(C)
    plan._edges = ep
    return ep


def joint_transforms(mechanism: Mechanism, q, *, data=None) -> np.ndarray:
    """The transform across every single-axis joint step, as a TF publisher needs them (robot_state_publisher
    takes the same from KDL's segments): shape (S - 1, 4, 4), or (B, S - 1, 4, 4) for a batch.

    One entry per moving segment of :attr:`Mechanism.segment_tree` (segment ``i`` is entry ``i - 1``): the
    mechanism's moving joints in body order, a multi-DOF joint (planar, ball, floating) as its single-axis
    steps in order. Entry ``i - 1`` is ``T_from_to`` with ``from`` the parent body frame for a joint's first
    step (the previous step's frame otherwise) and ``to`` the frame after the step (the child body frame
    after a joint's last step): for a one-DOF joint ``placement @ M(q + offset)``. Exact for any finite
    angle (sine and cosine of each angle, no sums of angles)."""
    d = getattr(mechanism, _DATA_ATTR, None)
    if data is not None and d is not data:
        _check_data(mechanism, data)
    p = None if d is None else d.kinematics
    if p is None:
        p = kinematics_plan(mechanism)
    q = _configuration(mechanism, q, p.nq)
    ep = _edge_plan(p)
    x = q[..., ep.coords]
    c = np.cos(x)
    s = np.sin(x)
    if ep.prismatic is not None:
        c[..., ep.prismatic] = x[..., ep.prismatic]
        s[..., ep.prismatic] = 0.0
    return ep.K0 + c[..., None, None] * ep.K1 + s[..., None, None] * ep.K2


def joint_step_xyzquat(mechanism: Mechanism, q, *, data=None) -> np.ndarray:
    """The transforms of :func:`joint_transforms` as a TF message carries them, without building matrices:
    shape (S - 1, 7) (or (B, S - 1, 7) for a batch), each row ``(x, y, z, qx, qy, qz, qw)`` (Pinocchio's
    XYZQUAT layout): the translation in metres in the ``from`` frame, then the rotation's quaternion in the
    package's sign convention (:func:`~.spatial.canonical_quaternion`). A revolute step's quaternion is the
    fixed quaternions of its frames around ``cos(q/2) + sin(q/2) k``: the same rotation as the matrix to
    rounding, at a fraction of the cost of converting the matrices."""
    d = getattr(mechanism, _DATA_ATTR, None)
    if data is not None and d is not data:
        _check_data(mechanism, data)
    p = None if d is None else d.kinematics
    if p is None:
        p = kinematics_plan(mechanism)
    q = _configuration(mechanism, q, p.nq)
    ep = _edge_plan(p)
    n = len(ep.coords)
    z = q[..., ep.coords2] * ep.scale2           # (x, x/2) of every step
    ones = ep.ones if z.ndim == 1 else np.ones(z.shape[:-1] + (n,))
    f = np.concatenate([np.cos(z), np.sin(z), z[..., :n], ones], axis=-1)
    f = f.reshape(z.shape[:-1] + (6, n)).swapaxes(-1, -2)[..., None, :]        # (..., n, 1, 6)
    out = (f @ ep.C)[..., 0, :]
    w = out[..., 6]
    if not w.all():
        out[..., 3:] = canonical_quaternion(out[..., 3:])
        return out
    # w > 0 kept, w < 0 flipped; + 0.0 turns the flips' negative zeros into zeros, as canonical_quaternion
    out[..., 3:] *= np.where(w < 0.0, -1.0, 1.0)[..., None]
    out[..., 3:] += 0.0
    return out


# ============================================================================ one frame's chain
class FrameChain:
    """The moving segments from the ground to one frame, for solvers that iterate on one chain (IK): the
    chain's pose and Jacobian without evaluating the rest of the tree. Get it with :func:`frame_chain`.

    ``coords`` (n,): the coordinate of each step, ground first; ``revolute``/``prismatic``: boolean masks.
    :meth:`evaluate` takes the step values ``theta`` (n,) (``q[coords]``) and returns ``T_ground_frame`` and
    the (6, n) LOCAL_WORLD_ALIGNED Jacobian over the steps. Constant and shared; the scratch arrays are
    the caller's (:meth:`workspace`), so threads may evaluate the same chain at once."""

    __slots__ = ("n", "coords", "F", "Pm", "coef", "revolute", "prismatic", "any_prismatic")

    def __init__(self, tree, f: int):
        anc = _ancestors(tree, int(tree.frame_seg[f]))
        n = self.n = len(anc)
        self.coords = _ro(tree.seg_coord[anc], np.intp)
        self.F = _ro(tree.frame_T[f])
        P = np.asarray(tree.seg_P[anc]).reshape(n, 4, 4)
        rev = np.asarray(tree.seg_kind[anc]) == 1
        # local transform L(t) = P + sin t * P CS + (1 - cos t) * P (-CC) + t * P EZ
        coef = np.zeros((n, 3, 16))
        coef[rev, 0] = (P[rev] @ _CS).reshape(-1, 16)
        coef[rev, 1] = (P[rev] @ -_CC).reshape(-1, 16)
        coef[~rev, 2] = (P[~rev] @ _EZ).reshape(-1, 16)
        self.Pm = _ro(P.reshape(n, 16))
        self.coef = _ro(coef)
        self.revolute = _ro(rev, bool)
        self.prismatic = _ro(~rev, bool)
        self.any_prismatic = bool((~rev).any())

    def workspace(self):
        """Scratch arrays for :meth:`evaluate` (one set per thread)."""
        return np.zeros((self.n, 1, 3)), np.zeros((self.n, 4, 4))

    def step_transforms(self, theta, start: int = 0, w=None) -> np.ndarray:
        """The local transforms (m, 4, 4) of steps ``start`` .. ``start + m - 1`` at their values ``theta``
        (m,) (rad or m): ``L(t) = P + sin t * P CS + (1 - cos t) * P (-CC) + t * P EZ``. ``w``: an (m, 1, 3)
        scratch array (the caller's, e.g. :meth:`workspace`'s)."""
        m = len(theta)
        if w is None:
            w = np.empty((m, 1, 3))
        np.sin(theta, out=w[:, 0, 0])
        np.subtract(1.0, np.cos(theta), out=w[:, 0, 1])
        w[:, 0, 2] = theta
        stop = start + m
        return (self.Pm[start:stop] + np.matmul(w, self.coef[start:stop])[:, 0, :]).reshape(m, 4, 4)

    def evaluate(self, theta, work=None):
        """``(T_ground_frame, J)`` at step values ``theta`` (n,): J is (6, n), rows [linear; angular] in
        ground axes, linear the velocity of the frame's origin."""
        n = self.n
        w, T = self.workspace() if work is None else work
        L = self.step_transforms(theta, 0, w)
        T[0] = L[0]
        for i in range(1, n):
            np.dot(T[i - 1], L[i], out=T[i])
        Tf = T[n - 1] @ self.F
        p = Tf[:3, 3]
        z = T[:, :3, 2]                               # step axes (+z of every step) in the ground frame
        d = p - T[:, :3, 3]
        J = np.empty((6, n))
        # linear rows: z x d (revolute), z (prismatic); angular rows: z (revolute), 0 (prismatic)
        J[0] = z[:, 1] * d[:, 2] - z[:, 2] * d[:, 1]
        J[1] = z[:, 2] * d[:, 0] - z[:, 0] * d[:, 2]
        J[2] = z[:, 0] * d[:, 1] - z[:, 1] * d[:, 0]
        J[3:] = z.T
        if self.any_prismatic:
            pri = self.prismatic
            J[:3, pri] = z[pri].T
            J[3:, pri] = 0.0
        return Tf, J


def frame_chain(mechanism: Mechanism, frame: str) -> FrameChain:
    """The :class:`FrameChain` from the ground to ``frame`` (cached with the mechanism's plan)."""
    p = kinematics_plan(mechanism)
    f = _frame_index(p, mechanism, frame)
    ch = p._chains.get(f)
    if ch is None:
        ch = p._chains[f] = FrameChain(p.tree, f)
    return ch


