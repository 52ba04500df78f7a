"""mechanism_model_core: one unified, stateless model of a robot's mechanism, and the kinematics on it.

Conventions (SI units, radians; ``T_a_b`` is the pose of b in a; quaternions (x, y, z, w); Jacobian rows
[linear; angular]) are documented in :mod:`mechanism_model_core.spatial` and
:mod:`mechanism_model_core.jacobians`.
"""

from .errors import (ExpressionError, InvalidConfiguration, MechanismModelError, ModelFileError,
                     ModelStructureError, NoSolution, UnknownBody, UnknownFrame, UnknownJoint,
                     UnsafeModelFileError)
from .joints import Joint, JointType
from .model import GROUND, Body, BodySpec, BoundingShape, MassProperties, Mechanism
from .builder import MechanismBuilder, attach, build_mechanism, edit
from .data import Data, data_of
from .kinematics import ForwardKinematics, forward_kinematics, relative_pose
from .jacobians import (LOCAL, LOCAL_WORLD_ALIGNED, WORLD, Convention, frame_velocity, jacobian)
from .io import load_model, save_model
from .io.constraints_xml import load_constraints
from .constraints import (ContactConstraint, JointCoupling, JointLock, JointTarget, LoopClosure,
                          OrientationConstraint, PointAtConstraint, PoseConstraint, PositionConstraint,
                          Posture)
from .ik import (ConstraintManager, IKResult, available_solvers, prepare_ik, register_solver, solve_ik,
                 solve_ik_batch)

__version__ = "0.1.0"

__all__ = [
    "Body", "BodySpec", "BoundingShape", "Convention", "Data", "ExpressionError", "ForwardKinematics", "GROUND",
    "InvalidConfiguration", "Joint", "JointType", "LOCAL", "LOCAL_WORLD_ALIGNED", "MassProperties",
    "Mechanism", "MechanismBuilder", "MechanismModelError", "ModelFileError", "ModelStructureError",
    "NoSolution", "UnknownBody", "UnknownFrame", "UnknownJoint", "UnsafeModelFileError", "WORLD",
    "attach", "build_mechanism", "data_of", "edit", "forward_kinematics", "frame_velocity", "jacobian",
    "load_model", "relative_pose",
    "save_model", "ContactConstraint", "JointCoupling", "JointLock", "JointTarget", "LoopClosure",
    "OrientationConstraint", "PointAtConstraint", "PoseConstraint", "PositionConstraint", "Posture",
    "load_constraints", "ConstraintManager", "IKResult", "available_solvers", "prepare_ik", "register_solver",
    "solve_ik", "solve_ik_batch",
]
