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
from mechanism_model_core.kinematics import joint_step_xyzquat, joint_transforms
from mechanism_model_core.model import Mechanism


@dataclass(frozen=True)
class StaticEdge:
    parent: str
    child: str
    T: np.ndarray          # T_parent_child, 4x4


class MovingEdges:
    """All moving edges of a mechanism, evaluated together by the core
    (:func:`mechanism_model_core.kinematics.joint_transforms`): edge ``k`` is entry ``index[k]`` of it,
    ``T_parent_child = placement @ M(q + offset)`` for a one-DOF joint."""

    def __init__(self, mechanism: Mechanism, parents, children, index, joints, floating):
        self.mechanism = mechanism
        self.parents = list(parents)
        self.children = list(children)
        self.index = np.asarray(index, dtype=int)
        #: name of the joint each edge belongs to, and whether that joint is floating (6 DOF)
        self.joints = list(joints)
        self.floating = np.asarray(floating, dtype=bool)
        n_steps = mechanism.segment_tree.n_seg - 1
        self._all = len(self.index) == n_steps and bool(np.all(self.index == np.arange(n_steps)))

    def __len__(self) -> int:
        return len(self.children)

    def subset(self, keep) -> "MovingEdges":
        """The edges where boolean array ``keep`` is true, in the same order."""
        k = np.asarray(keep, dtype=bool)
        idx = np.flatnonzero(k)
        return MovingEdges(self.mechanism, [self.parents[i] for i in idx], [self.children[i] for i in idx],
                           self.index[k], [self.joints[i] for i in idx], self.floating[k])

    def transforms(self, q: np.ndarray) -> np.ndarray:
        """``T_parent_child`` of every moving edge, shape (E, 4, 4), for full joint coordinates ``q``."""
        return joint_transforms(self.mechanism, q)[self.index]

    def xyzquat(self, q: np.ndarray) -> np.ndarray:
        """The same edges as a TF message carries them: shape (E, 7), each row the translation ``x, y, z``
        (m) then the quaternion ``x, y, z, w`` (:func:`mechanism_model_core.kinematics.joint_step_xyzquat`)."""
        p = joint_step_xyzquat(self.mechanism, q)
        return p if self._all else p[self.index]


def build_tf_tree(mechanism: Mechanism) -> tuple[list[StaticEdge], MovingEdges]:
    """(static edges, moving edges) of ``mechanism``'s TF tree."""
    static: list[StaticEdge] = []
    parents, children, joints, floating = [], [], [], []
    for spec in mechanism.bodies:
        j = spec.joint
        if j is not None:
            if j.dof == 0:
                static.append(StaticEdge(spec.parent, spec.name, np.array(j.placement, dtype=float)))
            else:
                motions = j.elementary_motions()
                parent = spec.parent
                for k, (kind, axis, ci) in enumerate(motions):
                    last = k == len(motions) - 1
                    child = spec.name if last else f"{j.coordinate_names[ci]}_link"
                    parents.append(parent)
                    children.append(child)
                    joints.append(j.name)
                    floating.append(j.type is JointType.FLOATING)
                    parent = child
        for fname, T in spec.frames.items():
            static.append(StaticEdge(spec.name, fname, np.array(T, dtype=float)))
    # the core's joint steps come in the same order: moving joints in body order, then each joint's steps
    n_steps = mechanism.segment_tree.n_seg - 1
    if n_steps != len(children):
        raise RuntimeError(f"TF tree: {len(children)} moving edges but {n_steps} joint steps in the model")
    return static, MovingEdges(mechanism, parents, children, np.arange(len(children)), joints, floating)
