"""The TF tree of a mechanism, edge by edge, as robot_state_publisher would publish it for the URDF that
:func:`mechanism_model_core.io.urdf.to_urdf` writes.

* Every body is a frame named like the body, every named frame a frame named like it.
* Static edges (published once on ``/tf_static``): bodies on fixed joints (``T_parent_body``) and named
  frames (``T_body_frame``).
* Moving edges (published on ``/tf`` for every joint state): one per single-DOF joint
  (``T_parent_body = placement @ M(q + offset)``); a multi-DOF joint (floating, planar, ball) is the chain
  of single-axis steps the URDF export writes, through intermediate frames ``<coordinate>_link``
  (``chassis.x_link`` ...), so RViz finds a transform for every URDF link.

This is bookkeeping over the model's constants, not kinematics of its own: composing the edges gives the
core's forward kinematics (the tests check exactly that).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechanism_model_core.joints import JointType
from mechanism_model_core.model import Mechanism


@dataclass(frozen=True)
class StaticEdge:
    parent: str
    child: str
    T: np.ndarray          # T_parent_child, 4x4


class MovingEdges:
    """All moving edges of a mechanism, evaluated together: ``T_parent_child = pre @ M(q[coord] + offset)``
    with ``M`` a rotation about (``kind`` R) or translation along (``kind`` P) a unit ``axis``."""

    def __init__(self, parents, children, pre, revolute, axes, coords, offsets, joints=None,
                 floating=None):
        self.parents = list(parents)
        self.children = list(children)
        self.pre = np.asarray(pre, dtype=float).reshape(-1, 4, 4)
        self.revolute = np.asarray(revolute, dtype=bool)
        self.axes = np.asarray(axes, dtype=float).reshape(-1, 3)
        self.coords = np.asarray(coords, dtype=int)
        self.offsets = np.asarray(offsets, dtype=float)
        #: name of the joint each edge belongs to, and whether that joint is floating (6 DOF)
        self.joints = list(joints) if joints is not None else [""] * len(self.children)
        self.floating = np.asarray(floating if floating is not None else [False] * len(self.children),
                                   dtype=bool)
        a = self.axes
        K = np.zeros((len(a), 3, 3))
        K[:, 0, 1], K[:, 0, 2] = -a[:, 2], a[:, 1]
        K[:, 1, 0], K[:, 1, 2] = a[:, 2], -a[:, 0]
        K[:, 2, 0], K[:, 2, 1] = -a[:, 1], a[:, 0]
        self._K = K
        self._K2 = K @ K

    def __len__(self) -> int:
        return len(self.children)

    def subset(self, keep) -> "MovingEdges":
        """The edges where boolean array ``keep`` is true, in the same order."""
        k = np.asarray(keep, dtype=bool)
        idx = np.flatnonzero(k)
        return MovingEdges([self.parents[i] for i in idx], [self.children[i] for i in idx], self.pre[k],
                           self.revolute[k], self.axes[k], self.coords[k], self.offsets[k],
                           [self.joints[i] for i in idx], self.floating[k])

    def transforms(self, q: np.ndarray) -> np.ndarray:
        """``T_parent_child`` of every moving edge, shape (E, 4, 4), for full joint coordinates ``q``."""
        x = q[self.coords] + self.offsets
        E = len(x)
        M = np.zeros((E, 4, 4))
        s = np.where(self.revolute, np.sin(x), 0.0)[:, None, None]
        c1 = np.where(self.revolute, 1.0 - np.cos(x), 0.0)[:, None, None]
        M[:, :3, :3] = np.eye(3) + s * self._K + c1 * self._K2
        M[:, :3, 3] = np.where(self.revolute, 0.0, x)[:, None] * self.axes
        M[:, 3, 3] = 1.0
        return self.pre @ M


def build_tf_tree(mechanism: Mechanism) -> tuple[list[StaticEdge], MovingEdges]:
    """(static edges, moving edges) of ``mechanism``'s TF tree."""
    static: list[StaticEdge] = []
    parents, children, pre, rev, axes, coords, offsets, joints, floating = [], [], [], [], [], [], [], [], []
    for spec in mechanism.bodies:
        j = spec.joint
        if j is not None:
            if j.dof == 0:
                static.append(StaticEdge(spec.parent, spec.name, np.array(j.placement, dtype=float)))
            else:
                start = mechanism.joint_slice(j.name).start
                motions = j.elementary_motions()
                parent = spec.parent
                for k, (kind, axis, ci) in enumerate(motions):
                    last = k == len(motions) - 1
                    child = spec.name if last else f"{j.coordinate_names[ci]}_link"
                    parents.append(parent)
                    children.append(child)
                    pre.append(np.array(j.placement, dtype=float) if k == 0 else np.eye(4))
                    rev.append(kind == "R")
                    axes.append(np.asarray(axis, dtype=float))
                    coords.append(start + ci)
                    offsets.append(j.offset if j.dof == 1 else 0.0)
                    joints.append(j.name)
                    floating.append(j.type is JointType.FLOATING)
                    parent = child
        for fname, T in spec.frames.items():
            static.append(StaticEdge(spec.name, fname, np.array(T, dtype=float)))
    return static, MovingEdges(parents, children, pre, rev, axes, coords, offsets, joints, floating)
