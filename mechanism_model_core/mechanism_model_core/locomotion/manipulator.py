"""Manipulator_Model: one chain of a mechanism seen as an arm or a mast (CLARAty 11-12).

>>> arm = ManipulatorModel(load_model(model_path("mer/mer_idd.xml")), tool="mi")
>>> T = arm.fk(q)                                   # T_base_tool, 4x4
>>> J = arm.jacobian(q)                             # 6 x n, rows [linear; angular] in base axes
>>> res = arm.ik(T_target, q0)                      # IKResult over the chain's coordinates
>>> path = arm.cartesian_path([T1, T2], q0, max_step=0.005, jump_threshold=0.0)
>>> traj = arm.time_parameterize(path.positions)    # JointTrajectory within velocity/acceleration limits

**The chain.** ``base`` is a frame of the mechanism (default: the frame of the body that carries the first
moving joint above the tool, e.g. ``panda_link0``, ``chassis`` on a rover; give ``base="arm_mount"`` to
measure from a mount frame) and ``tools`` the frames the chain ends in (the MER turret's ``mi``, ``apxs``,
``mb``, ``rat``). The chain is compiled into its own :class:`~mechanism_model_core.model.Mechanism` whose
ground is the base frame and whose bodies are those on the paths from the base to the tools (a rover's
wheels, a hand's fingers are not in it). "Chain coordinates" are that mechanism's coordinates, in the
order of :attr:`joint_names`; every pose and Jacobian is in the base frame. :meth:`chain_q` and
:meth:`full_q` convert from and to the whole mechanism's coordinates; :meth:`T_world_base` places the
base for a given whole-mechanism state.

**Specialized solvers** (CLARAty 11.3, 12.2). The chain mechanism keeps the mechanism's name, so the
closed forms registered with :func:`mechanism_model_core.specialized.register_specialized` for
(mechanism name, tool frame) are used automatically by :meth:`ik` and by the Cartesian paths (the MER IDD's
YPPPY closed form ships registered). :func:`register_chain_solver` registers one for an adaptation; the
library's adaptations (:mod:`.presets`: ``R8ArmModel``, ``R8MastModel``, ``MERArmModel``,
``MoonriseArmModel``) register theirs. A solver that also offers ``all_solutions(T)`` lets the
Cartesian path choose, at every step, the branch nearest the previous configuration.

**Cartesian paths** (:meth:`cartesian_path`; :mod:`.cartesian_path` has the algorithm) follow MoveIt's
``computeCartesianPath``: straight lines through waypoints in bounded steps, each step's IK from the previous
step's solution, stopping at the first step that fails or jumps; :class:`CartesianPath` is the outcome.

**Pointing** (:meth:`point_at`): an axis of a frame aimed at a point, within the joint limits, in one call.
**Gravity compensation** (:meth:`gravity_torques`): through :mod:`mechanism_model_core.statics`.
**Serialization** (11.5): :meth:`description`; the ``<Manipulator_Model>`` file is
:mod:`mechanism_model_core.io.manipulator_xml`'s (``save_manipulator``, ``load_manipulator``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..builder import build_mechanism, edit
from ..constraints import PointAtConstraint, PoseConstraint
from ..data import memo
from ..errors import InvalidConfiguration, MechanismModelError, ModelStructureError, UnknownFrame
from ..ik import ConstraintManager, IKResult, solve_ik
from ..jacobians import jacobian
from ..kinematics import forward_kinematics
from ..model import BodySpec, Mechanism
from ..spatial import inverse
from ..ik.closed_form import YPPPSolver, YPPPYSolver
from ..ik.registry import find_specialized, register_specialized
from .cartesian_path import CartesianPath, cartesian_path
from .trajectory import JointTrajectory, time_parameterize
from ..ik.closed_form.pan_tilt import pan_tilt_solutions
from ..statics import gravity_torques

__all__ = ["CartesianPath", "ManipulatorModel", "PointingResult", "register_chain_solver"]

#: default acceleration limit when the model gives none: the velocity limit reached in this many seconds
DEFAULT_ACCELERATION_TIME = 0.5


def register_chain_solver(mechanism_name: str, tool: str, factory: Callable[[Mechanism], object]) -> None:
    """Use ``factory(chain_mechanism)`` as the IK solver for pose targets of ``tool`` on manipulators of
    mechanisms named ``mechanism_name`` (the chain mechanism keeps that name; its ground is the base frame).
    ``factory`` raises :class:`ModelStructureError` when the chain lacks the expected structure, which
    leaves the generic solver in charge. Thin wrapper over :func:`~mechanism_model_core.specialized.
    register_specialized`."""
    register_specialized(mechanism_name, tool, factory)


# ---------------------------------------------------------------------------------------------- chain
def _chain_mechanism(m: Mechanism, base: str, tools: Sequence[str]) -> Mechanism:
    """The sub-mechanism from frame ``base`` to the bodies carrying ``tools`` (see the module docstring)."""
    bref = m.frame(base)
    B = bref.body
    T_B_F = m.frame_in_body(base)
    T_F_B = inverse(T_B_F)
    keep: list[str] = []
    for t in tools:
        path = m.path_to_ground(m.frame(t).body)
        if B not in path:
            raise ModelStructureError(f"tool frame {t!r} does not hang from the base frame {base!r} "
                                      f"(its bodies up to the ground: {path})")
        for b in reversed(path[:path.index(B)]):
            if b not in keep:
                keep.append(b)
    specs = {s.name: s for s in m.bodies}
    bspec = specs[B]
    ground_frames = {k: T_F_B @ T for k, T in bspec.frames.items() if k != base}
    if B != base and B != m.ground:
        ground_frames[B] = T_F_B.copy()              # the base body's own frame stays addressable
    ground = BodySpec(base, None, None, ground_frames, frame_kinds={k: v for k, v in bspec.frame_kinds.items()
                                                                    if k in ground_frames})
    out = [ground]
    kept_coords = set()
    for b in keep:
        s = specs[b]
        j = s.joint
        if s.parent == B:
            j = j.with_(placement=T_F_B @ j.placement)
            s = BodySpec(s.name, base, j, s.frames, s.mass, s.shapes, s.graphics, s.frame_kinds)
        kept_coords.update(j.coordinate_names)
        out.append(s)
    for s in out[1:]:
        if s.joint is not None and s.joint.coupling is not None:
            missing = [v for v in m.couplings.get(s.joint.name).variables if v not in kept_coords] \
                if s.joint.name in m.couplings else []
            if missing:
                raise ModelStructureError(f"joint {s.joint.name!r} of the chain follows {missing}, which are not "
                                          f"in the chain from {base!r}")
    chain = build_mechanism(m.name, out, base, m.source, dict(m.metadata, chain_of=m.name, chain_base=base))
    return chain


def _default_base(m: Mechanism, tool: str) -> str:
    """Frame of the parent body of the top joint of the run of single-DOF moving joints above ``tool``."""
    path = m.path_to_ground(m.frame(tool).body)
    top = None
    for b in path[:-1]:
        j = m.body(b).joint
        if j is None or j.dof == 0:
            continue
        if j.dof != 1:
            break
        top = b
    if top is None:
        raise ModelStructureError(f"no moving joint above the tool frame {tool!r}")
    return m.body(top).parent.name


# ---------------------------------------------------------------------------------------------- results
@dataclass
class PointingResult:
    """Outcome of :meth:`ManipulatorModel.point_at`: chain configuration ``q``, ``success`` (the axis
    points at the target within ``tolerance``), ``error`` (pointing angle error, rad), ``reason``
    (``"ok"``, ``"limits"`` when the joint limits stop the mast short of the target, ``"unreachable"``)
    and ``message``."""

    q: np.ndarray
    success: bool
    error: float
    reason: str
    message: str = ""
    joint_names: tuple = ()


# ---------------------------------------------------------------------------------------------- model
class ManipulatorModel:
    """A view of one chain of ``mechanism`` (CLARAty Manipulator_Model, 11-12). See the module docstring.

    ``tool``: the default tool frame; ``tools``: every tool frame of the chain (default ``[tool]``);
    ``base``: the chain's base frame (default: see :func:`_default_base`); ``name``: a label (default the
    mechanism's name); ``acceleration_limits``: per chain joint (rad/s^2 or m/s^2; default velocity limit /
    0.5 s, as the model files carry no acceleration limits).
    """

    def __init__(self, mechanism: Mechanism, tool: str | None = None, base: str | None = None,
                 tools: Sequence[str] | None = None, name: str | None = None, acceleration_limits=None):
        if tool is None:
            if not tools:
                raise InvalidConfiguration("a manipulator needs a tool frame")
            tool = tools[0]
        tools = list(tools) if tools else [tool]
        if tool not in tools:
            tools.insert(0, tool)
        for f in tools + ([base] if base else []):
            if not mechanism.has_frame(f):
                raise UnknownFrame(f, mechanism.frame_names)
        self.mechanism = mechanism
        self.tool = tool
        self.tools = tuple(tools)
        self.base = base or _default_base(mechanism, tool)
        self.name = name or mechanism.name
        self.chain = _chain_mechanism(mechanism, self.base, self.tools)
        c = self.chain
        self.joint_names: tuple = tuple(c.coordinate_names)
        self._full_index = np.array([mechanism.coordinate_index(n) for n in self.joint_names], dtype=int)
        self.lower = np.array(c.lower_limits)
        self.upper = np.array(c.upper_limits)
        vel = []
        for n in self.joint_names:
            v = c.joint(c.coordinate_joint[c.coordinate_index(n)]).velocity
            vel.append(v)
        self.velocity_limits = np.array(vel, dtype=float)
        if acceleration_limits is None:
            acc = self.velocity_limits / DEFAULT_ACCELERATION_TIME
        else:
            acc = np.broadcast_to(np.asarray(acceleration_limits, dtype=float), (c.nq,)).copy()
        self.acceleration_limits = acc
        self._acc_given = acceleration_limits is not None

    # ------------------------------------------------------------------ coordinates
    @property
    def n(self) -> int:
        return self.chain.nq

    @property
    def home(self) -> np.ndarray:
        return np.array(self.chain.home)

    def _q(self, q) -> np.ndarray:
        if q is None:
            return self.home
        if isinstance(q, dict):
            return self.chain.configuration(q)
        a = np.asarray(q, dtype=float)
        if a.shape != (self.n,) or not np.all(np.isfinite(a)):
            raise InvalidConfiguration(f"{self.name}: expected {self.n} finite chain coordinates "
                                       f"{list(self.joint_names)}, got shape {a.shape}")
        return a

    def chain_q(self, q_full) -> np.ndarray:
        """The chain coordinates taken from a whole-mechanism configuration."""
        return self.mechanism.configuration(q_full)[self._full_index]

    def full_q(self, q, q_full=None) -> np.ndarray:
        """A whole-mechanism configuration: ``q_full`` (home by default) with the chain's coordinates set."""
        out = self.mechanism.configuration(q_full).copy()
        out[self._full_index] = self._q(q)
        return self.mechanism.apply_couplings(out) if self.mechanism.couplings else out

    def T_world_base(self, q_full=None) -> np.ndarray:
        """Pose of the base frame in the mechanism's ground for a whole-mechanism state."""
        return forward_kinematics(self.mechanism, self.mechanism.configuration(q_full)).pose(self.base)

    def within_limits(self, q, tol: float = 0.0) -> bool:
        q = self._q(q)
        return not (np.any(q < self.lower - tol) or np.any(q > self.upper + tol))

    # ------------------------------------------------------------------ kinematics in chain coordinates
    def fk(self, q=None, tool: str | None = None) -> np.ndarray:
        """``T_base_tool`` (4x4) at chain configuration ``q`` (or a batch (B, n) -> (B, 4, 4))."""
        q = np.asarray(self.home if q is None else q, dtype=float)
        return forward_kinematics(self.chain, q).pose(tool or self.tool)

    def jacobian(self, q=None, tool: str | None = None, convention="LOCAL_WORLD_ALIGNED") -> np.ndarray:
        """6 x n Jacobian of ``tool`` (rows [linear; angular]); LOCAL_WORLD_ALIGNED: the tool origin's
        velocity and the angular velocity in base axes; WORLD: the base frame's spatial velocity; LOCAL:
        tool axes."""
        return jacobian(self.chain, self._q(q), tool or self.tool, convention=convention)

    def ik(self, T_base_tool, q0=None, tool: str | None = None, mask=None, **solve_kw) -> IKResult:
        """Chain configuration putting ``tool`` at ``T_base_tool`` (``mask``: 6 weights [x y z rx ry rz] in the
        target's axes, e.g. ``(1, 1, 1, 0, 1, 1)`` to leave the rotation about the tool's x free). Uses the
        registered specialized solver for this mechanism and tool when the target suits it, else the generic
        solver; ``solve_kw`` go to :func:`~mechanism_model_core.ik.solve_ik`. ``result.q`` holds chain
        coordinates."""
        c = PoseConstraint(tool or self.tool, T_base_tool, mask=mask,
                           mask_frame="reference" if mask is None else "target")
        return solve_ik(self.chain, [c], self._q(q0), **solve_kw)

    @property
    def prismatic(self) -> np.ndarray:
        """Per chain joint: True for a length (prismatic), False for an angle."""
        return np.array(self.chain.coordinate_is_prismatic, dtype=bool)

    def specialized_solver(self, tool: str | None = None):
        """The registered specialized solver for full-pose targets of ``tool`` on this chain, or None."""
        tool = tool or self.tool
        return memo(self, "manipulator.specialized_solvers").get(tool, lambda: find_specialized(
            ConstraintManager(self.chain, [PoseConstraint(tool, self.fk(self.home, tool))]).problem(self.home)))

    # ------------------------------------------------------------------ Cartesian paths
    def moving_bodies(self) -> frozenset:
        """Bodies of the whole mechanism that the chain's joints move (the chain's bodies and everything they
        carry, e.g. a hand's fingers)."""
        chain = {s.name for s in self.chain.bodies if s.joint is not None}
        m = self.mechanism
        return frozenset(b.name for b in m.bodies if chain.intersection(m.path_to_ground(b.name)))

    def cartesian_path(self, waypoints, q_start=None, **kw) -> CartesianPath:
        """Straight-line Cartesian path of the tool from its pose at ``q_start`` (default: home) through
        ``waypoints`` (4x4 ``T_base_tool``, or one), MoveIt ``computeCartesianPath`` semantics: see
        :func:`.cartesian_path.cartesian_path` for the keywords (``tool``, ``max_step`` m,
        ``max_rotation_step`` rad, ``jump_threshold``, ``absolute_jump_threshold``, ``mask``, tolerances,
        ``is_valid``, ``avoid_collisions`` with ``environment``, ``q_full`` and ``collision_margin``)."""
        return cartesian_path(self, waypoints, q_start, **kw)

    def straight_line(self, T_goal, q_start=None, **kw) -> CartesianPath:
        """:meth:`cartesian_path` to one goal pose."""
        return self.cartesian_path([T_goal], q_start, **kw)

    def time_parameterize(self, positions, velocity_scaling: float = 1.0,
                          acceleration_scaling: float = 1.0, **kw) -> JointTrajectory:
        """Time-optimal trajectory through chain configurations ``positions`` ((N, n)) within the chain's
        velocity and acceleration limits, scaled by the factors in (0, 1] (MoveIt's scaling factors); see
        :func:`~mechanism_model_core.locomotion.trajectory.time_parameterize`. Joints without a velocity
        limit in the model get 1 rad/s (m/s)."""
        for what, f in (("velocity_scaling", velocity_scaling), ("acceleration_scaling", acceleration_scaling)):
            if not (0 < f <= 1):
                raise InvalidConfiguration(f"{what} must be in (0, 1], got {f!r}")
        v = np.where(np.isfinite(self.velocity_limits), self.velocity_limits, 1.0)
        a = np.where(np.isfinite(self.acceleration_limits), self.acceleration_limits,
                     v / DEFAULT_ACCELERATION_TIME)
        return time_parameterize(positions, v * velocity_scaling, a * acceleration_scaling, self.joint_names, **kw)

    # ------------------------------------------------------------------ pointing
    def point_at(self, target_point, q0=None, frame: str | None = None, axis=None,
                 tolerance: float = 1e-4, q_full=None, **solve_kw) -> PointingResult:
        """Turn the chain so that ``axis`` of ``frame`` (in that frame's axes; default: z for a frame whose
        name ends in ``_optical``, the REP-103 optical convention, else x, a camera's line of sight in the
        library models) points at ``target_point``: 3 numbers (metres, base frame) or the name of any frame
        of the mechanism (its origin, with the rest of the mechanism at ``q_full``, home by default).

        A two-axis chain (pan-tilt) whose line of sight is perpendicular to its second axis is solved in
        closed form (:mod:`~mechanism_model_core.ik.closed_form.pan_tilt`: exact, the in-range solution nearest ``q0``); a longer chain ending in such a pair (a mast's
        deploy joint below its pan-tilt) first tries that closed form with its other joints held at ``q0``.
        Otherwise, or when no
        exact solution is within the joint limits, the generic solver runs from ``q0`` and from the guess
        that turns every joint toward the target, and the best is returned with its residual: ``error``
        (rad) is the angle between the line of sight and the target at the configuration returned,
        ``reason`` ``"limits"`` when the joint ranges stop the chain short (the target outside the
        reachable cone) or ``"unreachable"``. ``success`` when the error is within ``tolerance`` (rad)."""
        frame = frame or self.tool
        if axis is None:
            axis = (0.0, 0.0, 1.0) if frame.endswith("_optical") else (1.0, 0.0, 0.0)
        if isinstance(target_point, str):
            if not self.mechanism.has_frame(target_point):
                raise UnknownFrame(target_point, self.mechanism.frame_names)
            qf = self.full_q(self._q(q0), q_full)
            fk_full = forward_kinematics(self.mechanism, qf)
            target_point = (np.linalg.inv(fk_full.pose(self.base)) @ fk_full.pose(target_point))[:3, 3]
        p = np.asarray(target_point, dtype=float).reshape(-1)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise InvalidConfiguration(f"target_point needs 3 finite numbers, got {target_point!r}")
        exact = pan_tilt_solutions(self.chain, frame, axis, p, q_near=self._q(q0))
        if exact:
            q = exact[0]
            err = self.pointing_error(q, p, frame, axis)
            return PointingResult(q, bool(err <= tolerance), err, "ok" if err <= tolerance else "unreachable",
                                  "", self.joint_names)
        q = self._held_pan_tilt(p, frame, axis, self._q(q0))
        if q is not None:
            err = self.pointing_error(q, p, frame, axis)
            if err <= tolerance:
                return PointingResult(q, True, err, "ok", "", self.joint_names)
        c = PointAtConstraint(frame, p, axis=axis)
        best = None
        kw = {"timeout": 2.0, "max_iterations": 500, "restarts": False, **solve_kw}   # bounded by iterations
        for start in self._pointing_seeds(p, frame, axis, self._q(q0)):
            r = solve_ik(self.chain, [c], start, tol_orientation=tolerance, **kw)
            err = r.residuals[0].orientation
            if best is None or err < best[1]:
                best = (r, err)
            if r.success:
                break
        r, err = best
        ok = bool(err <= tolerance)
        reason = "ok" if ok else ("limits" if r.reason == "limits" or not self._free_reach(p, frame, axis, c)
                                  else "unreachable")
        msg = "" if ok else (f"the target is {err:.4g} rad off the pointing axis at the best configuration "
                             f"({'the joint limits stop the chain short of it' if reason == 'limits' else r.reason})")
        return PointingResult(r.q, ok, float(err), reason, msg, self.joint_names)

    def _held_pan_tilt(self, p, frame, axis, q0):
        """A chain longer than two joints ending in a pan-tilt (a mast with a deploy joint below its head):
        the closed form on the last two joints with the others held at ``q0`` (the chain configuration
        returned), or None when it does not apply or finds no in-range aim."""
        if self.n <= 2:
            return None
        tail = memo(self, "manipulator.pan_tilt_tails").get(frame, lambda: self._pan_tilt_tail(frame))
        if tail is None:
            return None
        parent, sub = tail
        T = self.fk(q0, parent)                          # the held joints place the pan-tilt's base
        local = (np.linalg.inv(T) @ np.append(p, 1.0))[:3]
        sols = pan_tilt_solutions(sub, frame, axis, local, q_near=q0[-2:])
        if not sols:
            return None
        q = q0.copy()
        q[-2:] = sols[0]
        return q

    def _pan_tilt_tail(self, frame):
        """``(pan-tilt base body, its two-joint chain)`` of the chain's last two joints aiming ``frame``, or
        None (kept per frame in the model's derived data, :mod:`..data`)."""
        try:
            joint = self.chain.coordinate_joint[self.n - 2]
            parent = self.chain.parent_body_of_joint(joint)
            sub = _chain_mechanism(self.mechanism, parent, (frame,))
        except MechanismModelError:
            return None
        return (parent, sub) if tuple(sub.coordinate_names) == tuple(self.joint_names[-2:]) else None

    def pointing_error(self, q, target_point, frame: str | None = None, axis=(1.0, 0.0, 0.0)) -> float:
        """Angle (rad) between ``axis`` of ``frame`` at chain configuration ``q`` and the direction from the
        frame's origin to ``target_point`` (base frame); pi when the target is at the origin."""
        T = self.fk(self._q(q), frame or self.tool)
        a = T[:3, :3] @ (np.asarray(axis, dtype=float) / np.linalg.norm(axis))
        d = np.asarray(target_point, dtype=float) - T[:3, 3]
        nd = float(np.linalg.norm(d))
        if nd < 1e-12:
            return math.pi
        return float(math.atan2(np.linalg.norm(np.cross(a, d)), a @ d))

    def _pointing_seeds(self, p, frame, axis, q0):
        yield q0
        # turn each joint, from the base out, so that the target is as close as possible to the axis
        q = q0.copy()
        for _ in range(2):
            for k, name in enumerate(self.joint_names):
                j = self.chain.joint(self.chain.coordinate_joint[k])
                if j.dof != 1 or j.type.value not in ("revolute", "continuous"):
                    continue
                grid = np.linspace(self.lower[k] if np.isfinite(self.lower[k]) else -math.pi,
                                   self.upper[k] if np.isfinite(self.upper[k]) else math.pi, 73)
                Qb = np.repeat(q[None], len(grid), axis=0)
                Qb[:, k] = grid
                T = forward_kinematics(self.chain, Qb).pose(frame)
                a = T[:, :3, :3] @ np.asarray(axis, dtype=float)
                d = p[None] - T[:, :3, 3]
                cosang = np.einsum("ij,ij->i", a, d) / np.maximum(np.linalg.norm(d, axis=1), 1e-12)
                q[k] = grid[int(np.argmax(cosang))]
        yield q

    def _free_reach(self, p, frame, axis, c) -> bool:
        """Whether the target can be pointed at with the limits removed (to tell 'limits' from 'unreachable')."""
        free = edit(self.chain)
        for s in self.chain.bodies[1:]:
            j = s.joint
            if j is not None and j.dof == 1 and j.type.value == "revolute":
                free.set_joint(s.name, j.with_(lower=(-math.inf,), upper=(math.inf,)))
        try:
            r = solve_ik(free.build(), [c], None, restarts=False, timeout=2.0, max_iterations=500)
        except MechanismModelError:
            return False
        return bool(r.success)

    # ------------------------------------------------------------------ statics
    def gravity_torques(self, q=None, q_full=None, gravity=(0.0, 0.0, -9.81), payloads=None) -> np.ndarray:
        """Joint torques (N m; N for prismatic joints) that hold the chain still against gravity (CLARAty
        13.4.4) at chain configuration ``q``, with the rest of the mechanism at ``q_full`` (home by default;
        its pose decides where "down" is for the chain). ``gravity``: m/s^2 in the mechanism's ground frame
        (:func:`mechanism_model_core.statics.gravity_torques` accepts its other forms too); ``payloads``:
        :class:`~mechanism_model_core.statics.Payload` point masses (an instrument, a sample). Computed by
        :mod:`mechanism_model_core.statics` on the whole mechanism, so everything the chain carries (a hand,
        fingers beyond the tool frame) is included; returned in the order of :attr:`joint_names`."""
        qf = self.full_q(q, q_full)
        tau = gravity_torques(self.mechanism, qf, gravity=gravity, payloads=payloads, coordinates="full")
        return np.asarray(tau, dtype=float)[self._full_index]

    # ------------------------------------------------------------------ serialization (11.5)
    def description(self) -> dict:
        """The model information of this manipulator (what
        :func:`~mechanism_model_core.io.manipulator_xml.manipulator_to_xml` writes)."""
        return {"name": self.name, "mechanism": self.mechanism.name, "model": self.mechanism.source,
                "kind": type(self).__name__, "base": self.base, "tool": self.tool, "tools": list(self.tools),
                "joints": list(self.joint_names),
                "acceleration_limits": self.acceleration_limits.tolist() if self._acc_given else None}

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.name!r}: {self.base} -> {', '.join(self.tools)}, "
                f"{self.n} joints {list(self.joint_names)}>")


#: closed forms of the library's arms for their chains: the Rocky 8 arm (alone, and on the assembled rover,
#: whose model is named "rocky8"); the MER IDD's instruments are registered by :mod:`..specialized` itself
for _name in ("rocky8_arm", "rocky8"):
    register_chain_solver(_name, "arm_tool", lambda m: YPPPYSolver(m, "arm_tool"))
del _name
#: the Moonrise digging arm's yaw-pitch-pitch-pitch closed form (locomotion.arm_solvers)
for _frame in ("scoop_tip", "scoop_mouth"):
    register_chain_solver("moonrise_arm", _frame, lambda m, _f=_frame: YPPPSolver(m, _f))
del _frame
