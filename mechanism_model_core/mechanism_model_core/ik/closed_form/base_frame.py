"""The locked joints at the start of a chain as a moving base frame, for closed-form IK solvers.

On a mobile manipulator the chain from the ground to the tool starts with the base's pose (a floating joint's
six steps), maybe a mast or torso, all locked in an IK request (the IK service locks every joint but the
arm's). Those held steps before the first free one only move the frame the arm stands in: a solver that
works in the frame where they end (the first free step's parent) and moves each target into it serves every
pose of the base, where one keyed with their values was rebuilt each time the base moved.

:class:`BaseFrame` places that frame (:meth:`~BaseFrame.pose`) and moves targets into it
(:meth:`~BaseFrame.target`); :func:`suffix_products` gives the chain's step poses from the base frame on.
"""

from __future__ import annotations

import weakref

import numpy as np

from ...kinematics import forward_kinematics, frame_chain

__all__ = ["BaseFrame", "suffix_products"]

_NONE = object()


class BaseFrame:
    """The frame where the first ``k`` steps of chain ``chain`` (a :class:`~...kinematics.FrameChain` of
    ``mechanism``) end; with ``k = 0``, the ground. Shared by the threads that share its solver."""

    def __init__(self, mechanism, chain, k: int):
        self._mechanism = weakref.ref(mechanism)
        self.ground = mechanism.ground
        self.chain = chain
        self.k = int(k)
        self._idx = chain.coords[:k]                 # the base steps' coordinates
        self._rel = {}                              # reference frames on the base steps (_on_base), by name
        self._last = (-1, b"", None, None)          # the last base pose's inverse (atomic swap)

    def pose(self, q, start: int = 0) -> np.ndarray:
        """The ground pose (4x4) of the base frame at full coordinates ``q`` (an array); from ``start`` on: its
        pose in the frame where step ``start - 1`` ends (the identity when ``start >= k``)."""
        k = self.k
        if start >= k:
            return np.eye(4)
        L = self.chain.step_transforms(q[self._idx[start:]], start)
        T = L[0]
        for i in range(1, k - start):
            T = np.dot(T, L[i])
        return T

    def target(self, q, T, rel=None) -> np.ndarray:
        """Pose ``T`` (4x4), given in frame ``rel`` (None or the ground: the ground frame; else a frame whose
        pose the locked joints hold), in the base frame at full coordinates ``q``. A ``rel`` on the base steps
        (whose chain is their first ones: the chassis of a rover whose pose is locked, as the IK service's
        requests give it) is placed by the base steps after it alone; any other by forward kinematics."""
        start = 0
        if rel is not None and rel != self.ground:
            hit = self._rel.get(rel, _NONE)
            if hit is _NONE:
                hit = self._rel[rel] = self._on_base(rel)
            if hit is None:
                T = forward_kinematics(self._mechanism(), q).pose(rel) @ T
            else:
                start, F = hit
                T = F @ T
        if start >= self.k:
            return T
        key = q[self._idx[start:]].tobytes()
        last = self._last                  # a base that stays put: its inverse pose once
        if last[0] != start or last[1] != key:
            B = self.pose(q, start)
            R = np.ascontiguousarray(B[:3, :3].T)
            last = self._last = (start, key, R, R @ B[:3, 3])
        R = last[2]
        out = np.empty((4, 4))
        out[:3, :3] = np.dot(R, T[:3, :3])
        out[:3, 3] = np.dot(R, T[:3, 3]) - last[3]
        out[3] = (0.0, 0.0, 0.0, 1.0)
        return out

    def _on_base(self, rel):
        """``(j, F)`` when frame ``rel``'s chain is the first ``j <= k`` base steps (the same segments): its
        constant pose ``F`` in the frame where they end; else None."""
        m = self._mechanism()
        if m is None:
            return None
        rc = frame_chain(m, rel)
        j, ch = rc.n, self.chain
        if j > self.k or not np.array_equal(rc.coords, ch.coords[:j]) \
                or not np.array_equal(rc.Pm, ch.Pm[:j]) or not np.array_equal(rc.coef, ch.coef[:j]):
            return None
        return j, np.array(rc.F, dtype=float)


def suffix_products(ch, theta, k):
    """``(C, Tf)``: the poses (a list by chain step; None before ``k``) where chain ``ch``'s steps from ``k`` on
    end, and the frame's pose, both in the frame where step ``k - 1`` ends, at step values ``theta`` (n,)."""
    L = ch.step_transforms(np.asarray(theta[k:], dtype=float), k)
    C = [None] * k + [L[0]]
    for i in range(1, len(L)):
        C.append(C[-1] @ L[i])
    return C, C[-1] @ ch.F

