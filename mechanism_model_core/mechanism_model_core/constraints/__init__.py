"""Constraints for inverse kinematics (CLARAty 8.2-8.8; MSim's targets, locks, closures and postures).

A constraint says what a configuration should satisfy. Each one gives a *residual* ``r(q)`` that is zero
when it holds and its Jacobian ``dr/dq`` (rows of ``r``, columns in ``mechanism.coordinate_names`` order),
both from one shared forward pass (:class:`Evaluation`): every frame's pose and geometric Jacobian is
computed at most once per solver iteration, whatever the number of constraints that use it.

Cartesian constraints (the pose of ``frame`` in ``relative_to``; the ground when ``relative_to`` is None):

* :class:`PoseConstraint` -- full pose, or a subset of its six axes through ``mask``;
* :class:`PositionConstraint`, :class:`OrientationConstraint` -- the two halves;
* :class:`PointAtConstraint` -- an axis of ``frame`` points at a point (a mast camera looking at a target);
* :class:`ContactConstraint` -- ``frame``'s origin on a surface's plane and its normal aligned with (or
  opposed to) the surface normal (a wheel or a foot on terrain);
* :class:`LoopClosure` -- two frames of the mechanism coincide (closed chains, CLARAty 4.4).

Joint constraints: :class:`JointCoupling` (linear ``joint = a . q + b`` or a non-linear expression read by
the safe evaluator), :class:`JointTarget`, :class:`JointLock` (joints held exactly where they are) and
:class:`Posture` (a rest configuration, always the lowest priority).

Residual conventions (the residual is *current minus desired*):

* position rows: ``p - p_target`` in metres, in ``relative_to``'s axes;
* orientation rows: ``log(R @ R_target.T)`` (rotation vector, radians) in ``relative_to``'s axes; their
  Jacobian is the exact derivative (the angular-velocity rows times the inverse left Jacobian of SO(3));
* ``mask`` holds six weights (or booleans) over ``[x, y, z, rx, ry, rz]``; a zero drops the row, so an
  unconstrained direction stays free. With ``mask_frame="target"`` the axes are the target frame's
  (e.g. ``mask=(1, 1, 1, 1, 1, 0)`` lets a symmetric tool turn freely about its own z axis).

Weights and priorities: within one priority level the solver minimises ``sum(weight * mask_i * r_i**2)``.
**A lower priority number is a higher priority; 0 is the highest level in ordinary use** (negative numbers
are allowed and rank higher still). Levels are solved strictly in order: a lower level only moves in the
null space of the levels above it. :class:`Posture` always ranks below every other level. Joint locks,
joint limits and the model's own couplings are not weighted at all: the solver enforces them exactly
(locked joints and coupled joints are eliminated from the unknowns, limits are an active set), which realises
MSim's order *invariant > limit > lock > target > posture* for them.

Constraints can also be read from a small XML file with
:func:`mechanism_model_core.io.constraints_xml.load_constraints` (CLARAty 8.8; also
``mechanism_model_core.load_constraints``).

Constraints are immutable: a solver calls ``bind(mechanism)`` once per problem and evaluates what it returns
(the constraint itself for the Cartesian kinds, a new :class:`BoundConstraint` holding coordinate indices for
the joint kinds), so one constraint object serves any number of mechanisms and threads.

One module per kind: :mod:`.base` (the interface and the shared pass), :mod:`.cartesian`, :mod:`.pointing`,
:mod:`.contact`, :mod:`.joint`. A new kind is a frozen dataclass with ``bind``, ``evaluate``, ``dimension``
(and ``errors``) in a new module, exported here.
"""

from .base import BoundConstraint, Constraint, Evaluation, _Common  # noqa: F401  (_Common: base of constraint dataclasses)
from .cartesian import LoopClosure, OrientationConstraint, PoseConstraint, PositionConstraint
from .contact import ContactConstraint
from .joint import JointCoupling, JointLock, JointTarget, Posture
from .pointing import PointAtConstraint
from ..spatial import inverse_left_jacobian_so3, log_so3


__all__ = [
    "BoundConstraint", "Constraint", "ContactConstraint", "Evaluation", "JointCoupling", "JointLock", "JointTarget",
    "LoopClosure", "OrientationConstraint", "PointAtConstraint", "PoseConstraint", "PositionConstraint",
    "Posture", "log_so3", "inverse_left_jacobian_so3",
]
