"""The one-configuration forward pass for large models: a number of numpy calls that grows with the square
root of the tree's depth, and arithmetic and memory linear in the number of segments and frames.

The block pass of :mod:`.kinematics` makes one numpy call per block of up to three segments, and its
trigonometric coefficients take about 7 KB per segment: the right trade for a robot of 6 to 60 joints, but
on a model of thousands of links its Python loop and its coefficient traffic (more than the processor's
caches hold) dominate. This pass evaluates the same output from plain 4x4 products stacked over many nodes:

*Nodes* are the moving segments and the frames that are not at a segment's origin (a frame is a node with a
constant local transform). Node ``i``'s local transform (transposed, as the block pass chains) is
``L_i.T = K0_i + w1_i K1_i + w2_i K2_i``, with ``(w1, w2) = (cos q, sin q)`` for a revolute segment,
``(d, 0)`` for a prismatic one and ``(0, 0)`` for a frame: sine and cosine of each angle, so exact for any
finite angle.

*Bands*: the depths of the tree are cut into bands of ``s`` levels (``s`` about the square root of the
depth). Step ``j = 1 .. s-1`` composes, for all bands at once, every node at level ``j`` of its band onto
its parent: ``R_i = L_i R_parent`` (a stacked product over the level's nodes), which leaves every node's
pose relative to its band's *anchor* (the last node above the band, or the ground). Then the anchors' world
poses are chained band after band (one stacked product per band), and a last stacked product gives every
node's world pose ``R_i W_anchor(i)``. About ``2 sqrt(depth)`` numpy calls and two 4x4 products per node:
a 3,000-link chain takes 55 + 55 steps, a wide tree a handful.

The output has the layout of the block pass with one entry per block (``m = 1``): node ``b``'s extended
transposed pose ``E.T`` (4 x 12, see ``_GROUND_EXT``) in ``out[b]``, so frame lookup and the
Jacobian's gather indices are shared with the block pass. Checked against the plain definition and the
block pass in ``test/core/test_kinematics_passes.py``; figures in ``benchmarks/bench_scale.py``.
"""

from __future__ import annotations

import math

import numpy as np

from .data import PerThread

_matmul = np.matmul


def _ro(a, dtype=float):
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


# the constants of kinematics' passes (test_kinematics_banded checks they are the same; kinematics imports
# this module, so it cannot import them from there): Rz(t) = C0 + cos t CC + sin t CS, Tz(d) = I + d EZ,
# and the extension E = GROUND_EXT @ T = [T; P1 T; P2 T] (P1, P2: cyclic permutations of x, y, z)
_C0 = _ro(np.diag([0.0, 0.0, 1.0, 1.0]))
_CC = _ro(np.diag([1.0, 1.0, 0.0, 0.0]))
_CS = _ro([[0.0, -1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
_EZ = _ro(np.outer(np.eye(4)[2], np.eye(4)[3]))
_GROUND_EXT = _ro(np.vstack([np.eye(4), np.eye(4)[[1, 2, 0, 3]], np.eye(4)[[2, 0, 1, 3]]]))


def _flat(b, i, j):
    """Flat index of ``E[i, j]`` of entry ``b`` in the (entries, 4, 12) output (kinematics._flat, m = 1)."""
    return (np.asarray(b) * 4 + j) * 12 + i


class BandedPlan:
    """Constants of the banded pass (read-only arrays). Shares with the block plan the attributes that
    lookups and Jacobians read: ``m`` (1), ``nb`` (output entries), ``seg_be``, ``frame_be``, ``seg_flat``,
    ``frame_flat``. ``scratch``: per-thread work arrays (a :class:`~.data.PerThread`, reused between
    calls: a fresh megabyte-sized temporary per call costs more in page faults than the arithmetic)."""

    __slots__ = ("nb", "n_seg", "m", "s", "coords", "K", "prismatic", "level_steps", "anchor_steps",
                 "anchor_of", "n_anchor", "frame_T", "frame_src", "ground_frames", "seg_be", "frame_be",
                 "seg_flat", "frame_flat", "revolute", "scratch", "run")


def _slice_or_index(idx: np.ndarray):
    """A slice when ``idx`` is a contiguous ascending range (a view instead of a gather), else ``idx``."""
    if idx.size and int(idx[-1]) - int(idx[0]) + 1 == idx.size and (idx.size == 1 or np.all(np.diff(idx) == 1)):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return _ro(idx, np.intp)


def _depths(parent) -> list:
    """Depth of every node (0: on the ground) from ``parent`` (-1: the ground; parents before children)."""
    dep = [0] * len(parent)
    for i, p in enumerate(parent):
        if p >= 0:
            dep[i] = dep[p] + 1
    return dep


def _band_width(max_depth: int) -> int:
    return max(1, int(round(math.sqrt(max_depth + 1))))


def estimated_cost(c) -> float:
    """Rough cost of one banded pass in the units of ``kinematics._estimated_cost`` (fitted alongside it):
    a fixed part, the level and band steps, and the per-segment arithmetic."""
    dep = _depths((np.asarray(c.seg_parent[1:]) - 1).tolist())
    d = max(dep) if dep else 0
    s = _band_width(d)
    return 8.0 + 0.77 * (s - 1 + d // s + 1) + 0.17 * len(dep)


def plan_banded(c) -> BandedPlan:
    """Compile the banded pass of the compiled tree ``c`` (a :class:`model.SegmentTree`)."""
    S = c.n_seg
    N = S - 1                                        # moving segments: segment s is node s - 1
    kind = np.asarray(c.seg_kind)
    parent = np.asarray(c.seg_parent, np.intp)[1:] - 1      # parent node, -1 for the ground
    frame_seg = np.asarray(c.frame_seg, np.intp)
    frame_T = np.asarray(c.frame_T)
    eye = np.eye(4)
    F = len(frame_seg)
    depth = np.array(_depths(parent.tolist()), np.intp)     # segments are in tree order: parents first
    s = _band_width(int(depth.max()) if N else 0)
    band = depth // s
    level = depth % s
    # --- order nodes by (level in band, band): every level step is one contiguous slice
    order = np.lexsort((np.arange(N), band, level))  # new position -> old node
    pos = np.empty(N, np.intp)
    pos[order] = np.arange(N)                        # old node -> new position
    parent_new = np.where(parent[order] >= 0, pos[np.maximum(parent[order], 0)], -1)
    level_o = level[order]
    band_o = band[order]
    bounds = np.searchsorted(level_o, np.arange(s + 1))
    level_steps = []
    for j in range(1, s):
        a, b = int(bounds[j]), int(bounds[j + 1])
        if a < b:
            level_steps.append((slice(a, b), _slice_or_index(parent_new[a:b])))
    # --- anchors: nodes at the last level of a band that have children in the next band
    has_child = np.zeros(N, bool)
    has_child[parent_new[parent_new >= 0]] = True
    anchors = np.flatnonzero((level_o == s - 1) & has_child)   # ascending position = by band (same level)
    anchor_slot = np.zeros(N, np.intp)                          # position -> slot in the anchor array (1..)
    anchor_slot[anchors] = np.arange(1, anchors.size + 1)
    # anchor of each node: slot of its ancestor at the last level of the previous band (0: the ground)
    anchor_of = np.zeros(N, np.intp)
    first = np.arange(int(bounds[0]), int(bounds[1]))           # a band's first level hangs on the anchor
    anchor_of[first] = np.where(parent_new[first] >= 0, anchor_slot[np.maximum(parent_new[first], 0)], 0)
    for j in range(1, s):                                       # the rest inherit their parent's anchor
        a, b = int(bounds[j]), int(bounds[j + 1])
        anchor_of[a:b] = anchor_of[parent_new[a:b]]
    anchor_steps = []
    anchor_band = band_o[anchors]
    for bb in np.unique(anchor_band):
        sel = anchors[anchor_band == bb]
        dst = _slice_or_index(anchor_slot[sel])
        assert type(dst) is slice                               # anchors of one band are contiguous
        src = anchor_of[sel]
        anchor_steps.append((dst, _slice_or_index(sel), slice(0, 1) if not src.any() else _slice_or_index(src)))
    # --- local transforms: L.T = K0 + w1 K1 + w2 K2 (transposed, flattened to 16)
    Pt = np.swapaxes(np.asarray(c.seg_P[1:]).reshape(-1, 4, 4), 1, 2)
    rev = (kind[1:] == 1)[:, None, None]
    # (P M).T = M.T P.T; revolute M = C0 + cos CC + sin CS; prismatic M = I + d EZ
    K = np.stack([np.where(rev, _C0.T @ Pt, Pt), np.where(rev, _CC.T @ Pt, _EZ.T @ Pt),
                  np.where(rev, _CS.T @ Pt, 0.0)])
    bp = BandedPlan()
    bp.m, bp.s, bp.n_seg = 1, s, N
    bp.K = _ro(K[:, order].reshape(3, N, 16))
    bp.coords = _ro(np.asarray(c.seg_coord[1:])[order], np.intp)
    pri_o = (kind[1:] == 2)[order]
    bp.prismatic = _ro(np.flatnonzero(pri_o), np.intp) if pri_o.any() else None
    bp.revolute = None
    bp.level_steps = tuple(level_steps)
    bp.anchor_steps = tuple(anchor_steps)
    bp.anchor_of = _ro(anchor_of, np.intp)
    bp.n_anchor = anchors.size
    # --- frames: at a segment's origin they share its entry; the others (leaves) follow the segments
    alias = np.array([sg > 0 and np.array_equal(frame_T[f], eye) for f, sg in enumerate(frame_seg)], bool)
    moving = np.flatnonzero(~alias & (frame_seg > 0))
    fixed = np.flatnonzero(frame_seg == 0)                      # on the ground: constant
    bp.frame_T = _ro(np.swapaxes(frame_T[moving], 1, 2))
    bp.frame_src = _ro(pos[frame_seg[moving] - 1], np.intp)
    bp.ground_frames = _ro(np.swapaxes(frame_T[fixed], 1, 2) @ _GROUND_EXT.T)
    bp.nb = N + moving.size + fixed.size
    seg_be = np.zeros((S, 2), np.intp)
    seg_be[1:, 0] = pos
    frame_be = np.zeros((F, 2), np.intp)
    frame_be[moving, 0] = N + np.arange(moving.size)
    frame_be[fixed, 0] = N + moving.size + np.arange(fixed.size)
    al = np.flatnonzero(alias)
    frame_be[al] = seg_be[frame_seg[al]]
    seg_be[0] = frame_be[int(fixed[0])]                         # the ground's own frame
    bp.seg_be = _ro(seg_be, np.intp)
    bp.frame_be = _ro(frame_be, np.intp)
    ii, jj = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    bp.seg_flat = _ro(_flat(seg_be[:, 0, None, None], ii, jj), np.intp)
    bp.frame_flat = _ro(_flat(frame_be[:, 0, None, None], ii, jj), np.intp)
    bp.scratch = PerThread(lambda: _scratch_arrays(bp))
    bp.run = bp                      # what kinematics hands to the pass: the plan itself
    return bp


def _scratch_arrays(bp: BandedPlan):
    """A thread's work arrays of the pass (:class:`~.data.PerThread`: each thread fills its own)."""
    N = bp.n_seg
    W = np.empty((bp.n_anchor + 1, 4, 12))
    W[0] = _GROUND_EXT.T
    return np.empty((N, 16)), np.empty((N, 16)), W, np.empty((N, 4, 12))


def banded_pass(bp: BandedPlan, q, qq=None):
    """Pass output for one configuration, shape (entries, 4, 12): entry ``b``'s ``E.T`` in ``out[b]`` (the
    block pass's layout with one entry per block). ``qq`` is unused (sine and cosine are exact)."""
    R2, T2, W, G = bp.scratch.value
    x = q.take(bp.coords)
    w1 = np.cos(x)
    w2 = np.sin(x)
    pri = bp.prismatic
    if pri is not None:
        w1[pri] = x[pri]
    K0, K1, K2 = bp.K
    np.multiply(K1, w1[:, None], out=R2)
    R2 += K0
    np.multiply(K2, w2[:, None], out=T2)
    R2 += T2
    R = R2.reshape(-1, 4, 4)
    # levels 1 .. s-1 of every band at once: R_i = L_i @ R_parent (poses relative to the band's anchor)
    for dst, src in bp.level_steps:
        _matmul(R[dst], R[src], out=R[dst])
    # anchors band after band (slot 0: the ground's extended pose)
    for dst, node, src in bp.anchor_steps:
        _matmul(R[node], W[src], out=W[dst])
    out = np.empty((bp.nb, 4, 12))
    N = bp.n_seg
    _matmul(R, W.take(bp.anchor_of, axis=0, out=G), out=out[:N])
    nf = bp.frame_src.size
    if nf:
        _matmul(bp.frame_T, out.take(bp.frame_src, axis=0), out=out[N:N + nf])
    out[N + nf:] = bp.ground_frames
    return out
