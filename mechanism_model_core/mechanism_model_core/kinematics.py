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
Frames are constant offsets from segments. Two evaluation plans are compiled from that tree, once per
mechanism, and only read afterwards (the mechanism stays immutable and thread-safe):

*One configuration* -- the cost is Python and numpy call overhead, not arithmetic, so the plan minimises
the number of numpy calls. Segments are cut into short runs along the tree (*blocks*). Every pose inside a
block, relative to the block's parent segment -- its segments and the frames that hang on them -- is a
trigonometric polynomial of the block's joint angles, ``sum_k C_k * sin(a_k . q + phi_k)``. So all the
local transforms of all blocks come from one ``sin`` of one small matrix-vector product and one stacked
matrix product with compiled coefficients; then one ``np.dot`` per block chains the blocks together.
The chain works on transposed poses (``T.T = L.T @ T_parent.T``) so that a block's poses stack into one
contiguous left operand, and it carries the world axes in three cyclic orders, which turns the cross
products of the Jacobian into elementwise products.

*A batch* -- the cost is memory traffic. A pose is held as its 12 components (rotation columns and
origin), each a row over the configurations, in chunks of 1024 configurations; per segment the parent's
components go through two small matrix products per chunk (below the size at which OpenBLAS starts
threads, which on a shared machine cost more than they gain) and three elementwise products over all
chunks. Nothing of shape (B, S, 4, 4) is built unless asked for.

The one-configuration plan and the Jacobian's cross-product trick are checked against the plain
definition (``Joint.transform`` composed along the tree) in ``test/core/test_kinematics_batch_perf_invariants.py``;
timings are in ``BENCHMARKS.md`` (``benchmarks/bench_kinematics.py``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .model import Mechanism

_dot = np.dot
_sin = np.sin
_F64 = np.dtype(float)
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
                 "seg_flat", "jac")


class _FrameJacobian:
    """Per-frame constants of the Jacobian: where the pass output holds the ancestor segments' axes and
    origins and the frame's origin (flat indices, shape (7, 3, k): z, P1 z, P2 z, P2 o, P1 o, P2 p, P1 p),
    the ancestors' coordinate columns (also as a slice when contiguous) and which of them are prismatic."""

    __slots__ = ("index", "cols", "cols_slice", "full", "prismatic", "revolute")


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


def _estimated_cost(layout) -> float:
    """Rough microseconds of the parts of one pass that depend on the block layout (fitted on a 2-core
    Xeon, numpy 2): one np.dot and its views per block, and the coefficient product, which grows with
    the number of trigonometric terms."""
    blocks, m = layout[0], layout[2]
    T = max(_n_terms(c_kind, g) for (_, g, _), c_kind in zip(blocks, layout[-1]))
    return 0.75 * len(blocks) + 1e-4 * len(blocks) * T * 16 * m


def _n_terms(is_slider: bool, g) -> int:
    return 2 if is_slider else 3 ** len(g)


def plan_single(c, nq: int) -> _SinglePlan:
    """Compile the one-configuration pass of the compiled tree ``c`` (a :class:`model._Compiled`): runs of
    up to 1, 2 or 3 segments per block, whichever is estimated fastest."""
    layouts = [_layout(c, r) for r in ((1, 2, 3) if c.n_seg > 2 else (1,))]
    return _plan_single(c, nq, min(layouts, key=_estimated_cost))


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
            a_lin = np.zeros(nq)
            a_lin[int(c.seg_coord[g[0]])] = 1.0
            P = np.asarray(c.seg_P[g[0]])
            coefs = []
            for depth, F, _ in ent:
                Fm = eye if F is None else F
                coefs.append([Fm, np.zeros((4, 4))] if depth < 0 else [P @ Fm, P @ _EZ @ Fm])
            rows = [(np.zeros(nq), math.pi / 2, False), (a_lin, 0.0, True)]
        else:
            factors = [_revolute_factor(np.asarray(c.seg_P[s])) for s in g]
            reps = [n for n in itertools.product((-1, 0, 1), repeat=len(g))
                    if any(n) and n[[i for i, v in enumerate(n) if v][0]] > 0]
            rows = [(np.zeros(nq), math.pi / 2, False)]     # the constant term: sin(pi/2) = 1
            for n in reps:
                a = np.zeros(nq)
                for k, v in enumerate(n):
                    a[int(c.seg_coord[g[k]])] += v
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
    A = np.zeros((nb, T, nq))
    bvec = np.zeros((nb, T))
    lin = []
    coef = np.zeros((nb, T, m, 4, 4))     # coefficient t of entry e, transposed: rows 4e:4e+4 of the block
    for bi, (rows, coefs) in enumerate(zip(term_rows, coef_blocks)):
        for t, (a, ph, is_lin) in enumerate(rows):
            A[bi, t] = a
            bvec[bi, t] = ph
            if is_lin:
                lin.append(bi * T + t)
        for e, row in enumerate(coefs):
            for t, Cm in enumerate(row):
                coef[bi, t, e] = np.asarray(Cm).T
    sp = _SinglePlan()
    sp.A = _ro(A.reshape(nb * T, nq))
    sp.b = _ro(bvec.reshape(nb * T))
    sp.lin = _ro(lin, np.intp) if lin else None
    sp.coef = _ro(coef.reshape(nb, T, m * 16))
    sp.nb, sp.m, sp.T = nb, m, T
    sp.parents = tuple(-1 if p == 0 else first_block_of_group[p] for (p, g, ent) in blocks)
    sp.ground = _ro(_GROUND_EXT.T)
    # --- where each segment and frame ended up: (block, entry) in the pass output
    seg_be = [(0, 0)] * S
    frame_be = [(0, 0)] * len(c.frame_seg)
    for bi, (p, g, ent) in enumerate(blocks):
        for e, (_, _, (what, idx)) in enumerate(ent):
            if what == "seg":
                seg_be[idx] = (bi, e)
            else:
                frame_be[idx] = (bi, e)
    for f, s in frame_alias.items():
        frame_be[f] = seg_be[s]
    ground_frame = next(f for f, s in enumerate(c.frame_seg) if s == 0)  # the ground's own frame
    seg_be[0] = frame_be[ground_frame]

    def flat(b, e, i, j):
        """Flat index of ``E[i, j]`` (i < 12, j < 4) of entry e of block b in the (nb, 4m, 12) output."""
        return ((np.asarray(b) * m + np.asarray(e)) * 4 + j) * 12 + i

    ii, jj = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    sp.seg_flat = _ro([flat(b, e, ii, jj) for b, e in seg_be], np.intp)
    sp.frame_flat = _ro([flat(b, e, ii, jj) for b, e in frame_be], np.intp)
    chain = sp.parents == tuple(range(-1, nb - 1))     # each block hangs on the one before
    sp.run = (sp.A, sp.b, sp.lin, (nb, 1, T), sp.coef, (nb, 4 * m, 4), (nb, 4 * m, 12), sp.ground,
              nb if chain else sp.parents)
    # --- per-frame Jacobian constants
    jac = []
    r3 = np.arange(3)[:, None]
    for f in range(len(c.frame_seg)):
        anc = [int(a) for a in c.seg_ancestors[int(c.frame_seg[f])]]
        fj = _FrameJacobian()
        ab = np.array([seg_be[a][0] for a in anc], np.intp)
        ae = np.array([seg_be[a][1] for a in anc], np.intp)
        fb, fe = frame_be[f]
        ones = np.ones(len(anc), np.intp)
        fj.index = _ro([flat(ab, ae, r3, 2), flat(ab, ae, 4 + r3, 2), flat(ab, ae, 8 + r3, 2),
                        flat(ab, ae, 8 + r3, 3), flat(ab, ae, 4 + r3, 3),
                        flat(fb * ones, fe * ones, 8 + r3, 3), flat(fb * ones, fe * ones, 4 + r3, 3)],
                       np.intp).reshape(7, 3, len(anc))
        cols = [int(c.seg_coord[a]) for a in anc]
        fj.cols = _ro(cols, np.intp)
        fj.cols_slice = (slice(cols[0], cols[-1] + 1)
                         if cols and cols == list(range(cols[0], cols[-1] + 1)) else None)
        fj.full = sorted(cols) == list(range(nq))
        pri = [kind[a] == 2 for a in anc]
        fj.prismatic = _ro(np.flatnonzero(pri), np.intp) if any(pri) else None
        fj.revolute = _ro(np.flatnonzero(~np.array(pri, bool)), np.intp) if any(pri) else None
        jac.append(fj)
    sp.jac = tuple(jac)
    return sp


def plan_batch(c) -> _BatchPlan:
    """Compile the batch pass: per moving segment, matrices acting on the parent's 12 pose components.

    With ``t`` the 12 components of a pose (a column, ``t[3*j + i] = T[i, j]``), ``T_p @ P`` has the
    components ``kron(P.T, I3) @ t_p``. A revolute segment's matrix is split into the parts that multiply
    cos q and sin q (rotation columns 0 and 1) and the constant part (columns 2 and 3).
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
                steps.append((1, p - 1, _ro(Mcs), _ro(M1)))
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


# ============================================================================ the passes
def _single_pass(c, q):
    """Pass output for one configuration, shape (nb, 4m, 12): rows 4e:4e+4 of block b hold ``E.T`` (see
    _GROUND_EXT) for the pose of the block's e-th entry (segment or frame)."""
    A, b, lin, wshape, coef, kshape, oshape, ground, parents = c.single.run
    x = A.dot(q)
    x += b
    if lin is None:
        w = _sin(x, out=x)
    else:
        w = _sin(x)
        w[lin] = x[lin]
    # block b: [L_0.T; L_1.T; ...] (4m x 4), each L relative to the block's parent segment
    K = np.matmul(w.reshape(wshape), coef).reshape(kshape)
    out = np.empty(oshape)
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


#: Configurations per chunk of the batch pass. Every matrix product is done per chunk: OpenBLAS spreads
#: a product over its threads above about 262144 multiply-adds, which for these thin products costs far
#: more than it gains (a batch ran five to eight times slower on a loaded 2-core machine); 12 x 12 x 1024
#: stays below that threshold. Elementwise work runs on all chunks at once.
_CHUNK = 1024


def _chunking(B: int):
    bc = min(B, _CHUNK) or 1
    return -(-B // bc), bc


def _batch_pass(c, Q):
    """Batch pass: pose components of every moving segment, shape (S - 1, n_chunks, 12, chunk): the
    configurations ``Q`` (B, nq) are cut into chunks (the last one padded with zeros), and component
    ``3*j + i`` of a pose is ``T[i, j]``."""
    steps = c.batch.steps
    B = Q.shape[0]
    nch, bc = _chunking(B)
    S1 = len(steps)
    Tb = np.empty((S1, nch, 12, bc))
    if not S1:
        return Tb
    if nch * bc == B:
        X = Q.T[c.seg_coord[1:]]
    else:
        X = np.zeros((S1, nch * bc))
        X[:, :B] = Q.T[c.seg_coord[1:]]
    X = X.reshape(S1, nch, 1, bc)
    cs = np.cos(X)
    sn = np.sin(X)
    Y = np.empty((nch, 12, bc))
    rng = range(nch)
    for i, (kind, p, M, M1) in enumerate(steps):
        Ti = Tb[i]
        if kind == 1:
            if p < 0:            # the parent is the ground: M and M1 are constant columns
                np.multiply(cs[i], M[:6], out=Ti[:, :6])
                Ti[:, :6] += sn[i] * M[6:]
                Ti[:, 6:] = M1
            else:
                Tp = Tb[p]
                for k in rng:
                    M.dot(Tp[k], Y[k])
                    M1.dot(Tp[k], Ti[k, 6:])
                np.multiply(Y[:, :6], cs[i], out=Ti[:, :6])
                np.multiply(Y[:, 6:], sn[i], out=Y[:, 6:])
                Ti[:, :6] += Y[:, 6:]
        else:
            if p < 0:
                Ti[...] = M
            else:
                Tp = Tb[p]
                for k in rng:
                    M.dot(Tp[k], Ti[k])
            Ti[:, 9:] += Ti[:, 6:9] * X[i]
    return Tb


def _batch_frame_comps(c, Tb, f):
    """(n_chunks, 12, chunk) pose components of frame ``f`` from the batch pass."""
    s = int(c.frame_seg[f])
    if s == 0:
        return np.broadcast_to(c.batch.frame_const[f], Tb.shape[1:])
    if c.batch.frame_identity[f]:
        return Tb[s - 1]
    src = Tb[s - 1]
    M = c.batch.frame_M[f]
    out = np.empty(src.shape)
    for k in range(src.shape[0]):
        M.dot(src[k], out[k])
    return out


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


def _batch_segments(c, Tb, B: int):
    """(B, S, 4, 4) segment poses, ground first."""
    out = np.empty((B, c.n_seg, 4, 4))
    out[:, 0] = np.eye(4)
    out[:, 1:] = _comps_to_poses(Tb, B)
    return out


# ============================================================================ public API
def segment_poses(mechanism: Mechanism, q: np.ndarray) -> np.ndarray:
    """``T_ground_segment`` for every compiled segment: shape (S, 4, 4) for q of shape (nq,), or
    (B, S, 4, 4) for a batch (B, nq). ``q`` must already be a full, validated coordinate array.

    Prefer :func:`forward_kinematics` and :meth:`ForwardKinematics.jacobian` to reuse one pass; this
    function builds the full segment array, which the fast paths avoid."""
    c = mechanism._compiled
    if q.ndim == 1:
        return _single_pass(c, q).take(c.single.seg_flat)
    return _batch_segments(c, _batch_pass(c, q), q.shape[0])


def _configuration(mechanism: Mechanism, q):
    """``mechanism.configuration(q)``, with a shortcut for a finite float array of length nq."""
    if type(q) is np.ndarray and q.dtype is _F64 and q.ndim == 1 and q.shape[0] == mechanism._compiled.nq:
        # q . q is finite for finite q; it overflows above 1e154 only, and then the full check decides
        if _isfinite(q.dot(q)):
            return q
    return mechanism.configuration(q)


class ForwardKinematics:
    """The result of :func:`forward_kinematics`: answers the pose of any frame relative to any other.

    It holds the poses of one configuration (or a batch) and the mechanism; it does not modify either,
    and every array it returns is a new array. ``q`` is the full joint-coordinate array used (couplings
    filled in). ``segments`` gives the poses of the compiled segments, ``T_ground_segment`` (S, 4, 4) or
    (B, S, 4, 4).
    """

    __slots__ = ("mechanism", "q", "_segs", "_out", "_tb")

    def __init__(self, mechanism: Mechanism, q: np.ndarray, segments: np.ndarray | None = None):
        self.mechanism = mechanism
        self.q = q
        self._segs = segments
        self._out = None
        self._tb = None
        if segments is None:
            if q.ndim == 1:
                self._out = _single_pass(mechanism._compiled, q)
            else:
                self._tb = _batch_pass(mechanism._compiled, q)

    @property
    def batched(self) -> bool:
        return self.q.ndim == 2

    @property
    def segments(self) -> np.ndarray:
        if self._segs is not None:
            return self._segs
        c = self.mechanism._compiled
        if self._out is not None:
            return self._out.take(c.single.seg_flat)
        return _batch_segments(c, self._tb, self.q.shape[0])

    def pose(self, frame: str, relative_to: str | None = None) -> np.ndarray:
        """``T_relative_to_frame`` (ground when ``relative_to`` is None): 4x4, or (B, 4, 4) for a batch."""
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
        m = self.mechanism
        ref = m._frames.get(frame)
        if ref is None:
            ref = m.frame(frame)        # raises UnknownFrame
        c = m._compiled
        if self._out is not None:
            return self._out.take(c.single.frame_flat[ref.index])
        if self._tb is not None:
            return _comps_to_poses(_batch_frame_comps(c, self._tb, ref.index), self.q.shape[0])
        if self.q.ndim == 1:
            return _dot(self._segs[ref.segment], c.frame_T[ref.index])
        return self._segs[:, ref.segment] @ c.frame_T[ref.index]

    def frame_array(self) -> np.ndarray:
        """Poses of all frames in :attr:`Mechanism.frame_names` order, shape (F, 4, 4) or (B, F, 4, 4)."""
        c = self.mechanism._compiled
        if self._out is not None:
            return self._out.take(c.single.frame_flat)
        if self._tb is not None:
            return _comps_to_poses(_batch_all_frame_comps(c, self._tb), self.q.shape[0])
        if self.q.ndim == 1:
            return self._segs[c.frame_seg] @ c.frame_T
        return self._segs[:, c.frame_seg] @ c.frame_T

    def all_poses(self) -> dict[str, np.ndarray]:
        """``{frame name: T_ground_frame}`` for every body frame and named frame, computed at once."""
        W = self.frame_array()
        if W.ndim == 4:
            W = np.moveaxis(W, 1, 0)
        return dict(zip(self.mechanism._frames, W))

    def jacobian(self, frame: str, relative_to: str | None = None, convention="LOCAL_WORLD_ALIGNED"):
        """The geometric Jacobian of ``frame`` at this configuration (see :func:`.jacobians.jacobian`),
        reusing this forward pass."""
        from .jacobians import jacobian_from_fk

        return jacobian_from_fk(self, frame, relative_to, convention)


def _batch_all_frame_comps(c, Tb):
    """(F, n_chunks, 12, chunk) pose components of every frame."""
    out = np.empty((len(c.frame_seg),) + Tb.shape[1:])
    for f in range(len(c.frame_seg)):
        out[f] = _batch_frame_comps(c, Tb, f)
    return out


def _relative(Tr, T):
    """``inverse(Tr) @ T`` for rigid transforms (4x4 or stacks)."""
    out = np.zeros(np.broadcast_shapes(Tr.shape, T.shape))
    RrT = np.swapaxes(Tr[..., :3, :3], -1, -2)
    out[..., :3, :3] = RrT @ T[..., :3, :3]
    out[..., :3, 3] = (RrT @ (T[..., :3, 3] - Tr[..., :3, 3])[..., None])[..., 0]
    out[..., 3, 3] = 1.0
    return out


def forward_kinematics(mechanism: Mechanism, q=None) -> ForwardKinematics:
    """Forward kinematics of every frame of ``mechanism`` for joint values ``q``.

    ``q``: array (nq,), batch (B, nq), independent-only values, or a ``{coordinate: value}`` mapping
    (see :meth:`Mechanism.configuration`); ``None`` means the home configuration.
    """
    c = mechanism._compiled
    if not (type(q) is np.ndarray and q.dtype is _F64 and q.ndim == 1 and q.shape[0] == c.nq
            and _isfinite(q.dot(q))):            # the shortcut of _configuration, inlined
        q = mechanism.configuration(q)
    fk = _new(ForwardKinematics)
    fk.mechanism = mechanism
    fk.q = q
    fk._segs = None
    if q.ndim == 1:
        fk._out = _single_pass(c, q)
        fk._tb = None
    else:
        fk._out = None
        fk._tb = _batch_pass(c, q)
    return fk


_new = object.__new__


def relative_pose(mechanism: Mechanism, q, frame: str, relative_to: str | None = None) -> np.ndarray:
    """``T_relative_to_frame`` for joint values ``q`` (a shortcut for ``forward_kinematics(...).pose``)."""
    return forward_kinematics(mechanism, q).pose(frame, relative_to)
