"""Forward kinematics: the pose of every frame for one configuration or a batch (CLARAty 7.1).

>>> fk = forward_kinematics(mechanism, q)          # q: (nq,), (B, nq) or {name: value}
>>> fk.pose("tool")                                # T_ground_tool, 4x4 (or (B, 4, 4))
>>> fk.pose("tool", relative_to="mast_head")       # T_mast_head_tool

All poses are 4x4 homogeneous transforms in metres. One pass computes the pose of every moving segment;
body frames and named frames are constant offsets from them and are composed on request (or all at once
with :meth:`ForwardKinematics.all_poses`).
"""

from __future__ import annotations

import numpy as np

from .model import Mechanism
from .spatial import inverse

_dot = np.dot


def segment_poses(mechanism: Mechanism, q: np.ndarray) -> np.ndarray:
    """``T_ground_segment`` for every compiled segment: shape (S, 4, 4) for q of shape (nq,), or
    (B, S, 4, 4) for a batch (B, nq). ``q`` must already be a full, validated coordinate array."""
    c = mechanism._compiled
    if q.ndim == 1:
        return _segment_poses_single(c, q)
    return _segment_poses_batch(c, q)


def _segment_poses_single(c, q):
    theta = np.zeros(c.n_seg)
    theta[1:] = q[c.seg_coord[1:]]
    w = np.empty((c.n_seg, 1, 3))
    np.sin(theta, out=w[:, 0, 0])
    w[:, 0, 1] = 1.0 - np.cos(theta)
    w[:, 0, 2] = theta
    L = (c.seg_P.reshape(c.n_seg, 1, 16) + w @ c.seg_local_coef).reshape(c.n_seg, 4, 4)
    T = L.copy()
    Tv = list(T)
    Lv = list(L)
    for i, p in c.loop:
        _dot(Tv[p], Lv[i], out=Tv[i])
    return T


def _segment_poses_batch(c, q):
    B = q.shape[0]
    S = c.n_seg
    T = np.empty((B, S, 4, 4))
    T[:, 0] = np.eye(4)
    kinds = c.seg_kind
    for i in range(1, S):
        p = c.seg_parent[i]
        P = c.seg_P[i]
        # G = T_parent @ P: one GEMM over the batch
        if p == 0:
            G = np.broadcast_to(P, (B, 4, 4))
        else:
            G = (T[:, p].reshape(B * 4, 4) @ P).reshape(B, 4, 4)
        x = q[:, c.seg_coord[i]]
        Ti = T[:, i]
        if kinds[i] == 1:   # rotation about z mixes the first two columns
            cs = np.cos(x)[:, None]
            sn = np.sin(x)[:, None]
            g0 = G[:, :, 0]
            g1 = G[:, :, 1]
            Ti[:, :, 0] = cs * g0 + sn * g1
            Ti[:, :, 1] = cs * g1 - sn * g0
            Ti[:, :, 2:] = G[:, :, 2:]
        else:               # translation along z moves the origin along the third column
            Ti[:, :, :3] = G[:, :, :3]
            Ti[:, :, 3] = G[:, :, 3] + x[:, None] * G[:, :, 2]
    return T


class ForwardKinematics:
    """The result of :func:`forward_kinematics`: answers the pose of any frame relative to any other.

    It holds the segment poses of one configuration (or a batch) and the mechanism; it does not modify
    either. ``q`` is the full joint-coordinate array used (couplings filled in).
    """

    __slots__ = ("mechanism", "q", "segments")

    def __init__(self, mechanism: Mechanism, q: np.ndarray, segments: np.ndarray):
        self.mechanism = mechanism
        self.q = q
        self.segments = segments

    @property
    def batched(self) -> bool:
        return self.q.ndim == 2

    def pose(self, frame: str, relative_to: str | None = None) -> np.ndarray:
        """``T_relative_to_frame`` (ground when ``relative_to`` is None): 4x4, or (B, 4, 4) for a batch."""
        T = self._world(frame)
        if relative_to is None or relative_to == self.mechanism.ground:
            return T
        return inverse(self._world(relative_to)) @ T

    def position(self, frame: str, relative_to: str | None = None) -> np.ndarray:
        """Origin of ``frame`` in ``relative_to`` (metres)."""
        return self.pose(frame, relative_to)[..., :3, 3]

    def rotation(self, frame: str, relative_to: str | None = None) -> np.ndarray:
        """3x3 orientation of ``frame`` in ``relative_to``."""
        return self.pose(frame, relative_to)[..., :3, :3]

    def _world(self, frame: str) -> np.ndarray:
        ref = self.mechanism.frame(frame)
        c = self.mechanism._compiled
        if self.q.ndim == 1:
            return _dot(self.segments[ref.segment], c.frame_T[ref.index])
        return self.segments[:, ref.segment] @ c.frame_T[ref.index]

    def all_poses(self) -> dict[str, np.ndarray]:
        """``{frame name: T_ground_frame}`` for every body frame and named frame, computed in one batched
        product."""
        c = self.mechanism._compiled
        if self.q.ndim == 1:
            W = self.segments[c.frame_seg] @ c.frame_T
        else:
            W = self.segments[:, c.frame_seg] @ c.frame_T
            W = np.moveaxis(W, 1, 0)
        return dict(zip(self.mechanism._frames, W))

    def frame_array(self) -> np.ndarray:
        """Poses of all frames in :attr:`Mechanism.frame_names` order, shape (F, 4, 4) or (B, F, 4, 4)."""
        c = self.mechanism._compiled
        if self.q.ndim == 1:
            return self.segments[c.frame_seg] @ c.frame_T
        return self.segments[:, c.frame_seg] @ c.frame_T


def forward_kinematics(mechanism: Mechanism, q=None) -> ForwardKinematics:
    """Forward kinematics of every frame of ``mechanism`` for joint values ``q``.

    ``q``: array (nq,), batch (B, nq), independent-only values, or a ``{coordinate: value}`` mapping
    (see :meth:`Mechanism.configuration`); ``None`` means the home configuration.
    """
    qf = mechanism.configuration(q)
    return ForwardKinematics(mechanism, qf, segment_poses(mechanism, qf))


def relative_pose(mechanism: Mechanism, q, frame: str, relative_to: str | None = None) -> np.ndarray:
    """``T_relative_to_frame`` for joint values ``q`` (a shortcut for ``forward_kinematics(...).pose``)."""
    return forward_kinematics(mechanism, q).pose(frame, relative_to)
