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

**Cartesian paths** follow MoveIt's ``computeCartesianPath``: the tool moves from its pose at the start
configuration through each waypoint on straight lines (orientation by slerp), in steps of at most
``max_step`` metres (and ``max_rotation_step`` radians); each step's IK starts from the previous step's
solution (branch continuity); the path stops at the first step whose IK fails or whose joint-space jump is
too large (``jump_threshold``, relative to the mean step as in MoveIt; ``absolute_jump_threshold`` in
radians); ``fraction`` is the share of the steps achieved. See :class:`CartesianPath`.

**Pointing** (:meth:`point_at`): an axis of a frame aimed at a point, within the joint limits, in one call.
**Gravity compensation** (:meth:`gravity_torques`): through :mod:`mechanism_model_core.statics`.
**Serialization** (11.5): :meth:`description`; the ``<Manipulator_Model>`` file is
:mod:`mechanism_model_core.io.manipulator_xml`'s (``save_manipulator``, ``load_manipulator``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..builder import edit
from ..constraints import PointAtConstraint, PoseConstraint, log_so3
from ..errors import InvalidConfiguration, MechanismModelError, ModelStructureError, UnknownFrame
from ..ik import ConstraintManager, IKResult, solve_ik
from ..jacobians import jacobian
from ..kinematics import forward_kinematics
from ..model import BodySpec, Mechanism
from ..spatial import axis_angle_matrix, inverse, wrap_angle
from ..ik.closed_form import YPPPSolver, YPPPYSolver
from ..ik.path_tracker import PathTracker
from ..ik.registry import find_specialized, register_specialized
from .trajectory import JointTrajectory, time_parameterize
from ..ik.closed_form.pan_tilt import pan_tilt_solutions
from ..collision import collisions, in_collision
from ..statics import gravity_torques

__all__ = ["CartesianPath", "ManipulatorModel", "PointingResult", "register_chain_solver"]

#: default acceleration limit when the model gives none: the velocity limit reached in this many seconds
DEFAULT_ACCELERATION_TIME = 0.5
#: Cartesian paths solve the steps of a segment in blocks (sizes adapted between these bounds: doubled while
#: whole blocks converge in two Newton iterations, halved when one stops short; the Newton iterations per
#: block and the resolved-rate passes are the path tracker's, ik.path_tracker)
_BLOCK_START, _BLOCK_MIN, _BLOCK_MAX = 16, 2, 32


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
    chain = Mechanism(m.name, out, base, m.source, dict(m.metadata, chain_of=m.name, chain_base=base))
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
class CartesianPath:
    """Outcome of :meth:`ManipulatorModel.cartesian_path` (MoveIt ``computeCartesianPath`` semantics).

    ``positions``: (K+1, n) chain configurations, the start first, one per achieved step. ``poses``:
    (K+1, 4, 4) the commanded tool poses (``T_base_tool``) of those steps. ``fraction``: achieved steps /
    all steps of the request (1.0 when the whole path was achieved). ``reason``: ``"ok"``, ``"unreachable"``
    (a step's IK failed: position/orientation error above tolerance), ``"limits"`` (the IK stopped against
    a joint limit), ``"jump"`` (a joint-space jump above the threshold), ``"collision"`` (a step's
    configuration collides, with ``avoid_collisions``), ``"invalid"`` (the state validity callback refused
    a step); ``message`` says where. ``waypoint_index``: for each achieved step, the index
    of the waypoint its segment leads to.
    """

    joint_names: tuple
    positions: np.ndarray
    poses: np.ndarray
    fraction: float
    reason: str = "ok"
    message: str = ""
    waypoint_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    steps_total: int = 0
    solver: str = ""

    @property
    def success(self) -> bool:
        return self.fraction >= 1.0


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
        self._pan_tilt_tails = {}       # frame -> (pan-tilt base body, its two-joint chain) or None

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
        key = ("_spec", tool)
        cache = self.__dict__.setdefault("_spec_cache", {})
        if key not in cache:
            cm = ConstraintManager(self.chain, [PoseConstraint(tool, self.fk(self.home, tool))])
            cache[key] = find_specialized(cm.problem(self.home))
        return cache[key]

    # ------------------------------------------------------------------ Cartesian paths
    def cartesian_path(self, waypoints, q_start=None, *, tool: str | None = None, max_step: float = 0.01,
                       max_rotation_step: float | None = None, jump_threshold: float = 0.0,
                       absolute_jump_threshold: float = 0.0, mask=None, tol_position: float = 1e-6,
                       tol_orientation: float = 1e-5, is_valid: Callable[[np.ndarray], bool] | None = None,
                       max_iterations: int = 12, avoid_collisions: bool = False, environment=None,
                       q_full=None, collision_margin: float = 0.0) -> CartesianPath:
        """Straight-line Cartesian path of ``tool`` from its pose at ``q_start`` through ``waypoints`` (a
        sequence of 4x4 ``T_base_tool``, or one), MoveIt ``computeCartesianPath`` semantics (module docstring).

        ``max_step`` (m, > 0): largest translation between steps; ``max_rotation_step`` (rad, default
        ``max_step`` read as radians, as MoveIt's single ``eef_step``): largest rotation between steps.
        ``jump_threshold``: a step whose joint-space distance exceeds this factor times the mean step
        distance ends the path there (0 disables; MoveIt's relative test); ``absolute_jump_threshold``
        (rad, or m for prismatic joints; one number or one per chain joint): the same against a fixed bound on
        each joint's change (0 disables).
        ``mask``: 6 weights [x y z rx ry rz] in each target's axes (zeros free that direction: a 5-DOF arm's
        rotation about its tool axis). ``is_valid(q_chain) -> bool`` (e.g. a collision check) can refuse a
        step. ``avoid_collisions`` (MoveIt's flag): every step's configuration is checked for collisions of
        the whole mechanism (``q_full``, home by default, with the chain's joints set) -- self-collision and,
        with ``environment`` (a :class:`~mechanism_model_core.collision.Environment`), obstacles and terrain
        -- closer than ``collision_margin`` (m); the path stops before the first colliding step (reason
        ``"collision"``, the message naming the bodies), as MoveIt's ``computeCartesianPath`` stops at the
        first invalid waypoint. Needs the collision extra (``pip install 'mechanism_model_core[collision]'``).
        Each step's IK: damped Newton steps from a prediction continuing the previous steps' solutions along
        the segment -- the steps of a segment are solved in blocks of up to 32 at once (batched forward
        kinematics and Jacobians; every configuration confirmed within the tolerances by forward kinematics,
        none further than 0.5 rad from its predecessor); the prediction is the quadratic extrapolation of the
        last three solutions, or for a redundant chain (more than 6 joints) the least-norm joint motion of
        the tool's displacements at the last solution, so that the self-motion does not drift (the joints
        move about as far as with IK seeded with the previous solution, MoveIt's way). A step a block
        cannot confirm is solved alone: up to ``max_iterations`` damped Newton steps from the previous step's
        solution; where they do not converge, the registered closed form (the branch
        nearest the previous solution) or else the generic solver from the previous solution decides.
        ``solver`` in the result says which were used (``"newton"``, ``"newton+ypppy"``). Raises :class:`InvalidConfiguration` for non-finite or malformed waypoints or parameters.
        """
        tool = tool or self.tool
        if tool not in self.tools:
            raise UnknownFrame(tool, list(self.tools))
        wps = _check_waypoints(waypoints)
        if not (math.isfinite(max_step) and max_step > 0):
            raise InvalidConfiguration(f"max_step must be a positive length in metres, got {max_step!r}")
        rot_step = max_step if max_rotation_step is None else float(max_rotation_step)
        if not (math.isfinite(rot_step) and rot_step > 0):
            raise InvalidConfiguration(f"max_rotation_step must be positive, got {max_rotation_step!r}")
        if not (math.isfinite(jump_threshold) and jump_threshold >= 0):
            raise InvalidConfiguration(f"jump_threshold must be >= 0 (0 disables it), got {jump_threshold!r}")
        try:
            ajt = np.broadcast_to(np.asarray(absolute_jump_threshold, dtype=float), (self.n,))
        except ValueError:
            raise InvalidConfiguration(f"absolute_jump_threshold: one number or one per chain joint, got "
                                       f"{absolute_jump_threshold!r}") from None
        if not (np.all(np.isfinite(ajt)) and np.all(ajt >= 0)):
            raise InvalidConfiguration(f"absolute_jump_threshold must be >= 0 (0 disables it), got "
                                       f"{absolute_jump_threshold!r}")
        jump_on = ajt > 0
        any_jump = bool(jump_on.any())
        q = self._q(q_start)
        if not self.within_limits(q, 1e-9):
            raise InvalidConfiguration(f"{self.name}: the start configuration is outside the joint limits")
        m6 = None if mask is None else np.asarray(mask, dtype=float).reshape(-1)
        if m6 is not None and (m6.shape != (6,) or not np.all(np.isfinite(m6)) or np.any(m6 < 0)):
            raise InvalidConfiguration(f"mask needs 6 non-negative weights, got {mask!r}")
        colliding = None
        if avoid_collisions:
            colliding = self._collision_checker(q_full, environment, collision_margin)
        elif environment is not None:
            raise InvalidConfiguration("an environment is only used with avoid_collisions=True")
        closed = None if (m6 is not None and np.any(m6 == 0)) else self.specialized_solver(tool)
        if closed is not None and not hasattr(closed, "all_solutions"):
            closed = None
        # the targets of every step, segment by segment (positions on the line, rotations by slerp)
        blocks, wp_of = [], []
        T_prev = self.fk(q, tool)
        for k, T in enumerate(wps):
            dp = float(np.linalg.norm(T[:3, 3] - T_prev[:3, 3]))
            phi = log_so3(T_prev[:3, :3].T @ T[:3, :3])       # in the previous pose's axes
            ang = float(np.linalg.norm(phi))
            steps = max(1, int(math.ceil(max(dp / max_step, ang / rot_step) - 1e-9)))
            u = np.arange(1, steps + 1) / steps
            Ti = np.zeros((steps, 4, 4))
            Ti[:, 3, 3] = 1.0
            Ti[:, :3, 3] = (1 - u)[:, None] * T_prev[:3, 3] + u[:, None] * T[:3, 3]
            Ti[:, :3, :3] = T_prev[:3, :3] @ axis_angle_matrix(phi / ang, u * ang) if ang > 1e-15 else T_prev[:3, :3]
            blocks.append(Ti)
            wp_of += [k] * steps
            T_prev = T
        targets = np.concatenate(blocks)
        total = len(targets)
        seg_end = np.empty(total, dtype=int)         # for each step, the index after its segment's last step
        start = 0
        for Ti in blocks:
            seg_end[start:start + len(Ti)] = start + len(Ti)
            start += len(Ti)
        qs = [q]
        used_closed = False
        tracker = PathTracker(self, tool, m6, tol_position, tol_orientation, max_iterations)
        batch = m6 is None
        redundant = self.n > 6
        size = _BLOCK_START
        reason, message = "ok", ""
        i = 0
        while i < total:
            # predictor along the segment: quadratic extrapolation of the last three solutions, linear after
            # the segment's first step
            extrapolate = len(qs) > 2 and i >= 2 and wp_of[i - 2] == wp_of[i]
            Qb = None
            if batch and extrapolate:
                # a block of the next steps at once: guesses extrapolated k steps ahead, batched Newton steps
                # from them, every accepted configuration confirmed within tolerance by forward kinematics
                m = min(size, int(seg_end[i]) - i)
                if redundant:
                    # a redundant chain: the least-norm joint motion for the tool's displacements (resolved
                    # rate at the last solution), so that no self-motion is extrapolated (it would carry on
                    # from step to step, which IK seeded with the previous solution does not do)
                    G = tracker.resolved_rate(qs[-1], targets[i - 1], targets[i:i + m])
                else:
                    d1 = qs[-1] - qs[-2]
                    d2 = d1 - (qs[-2] - qs[-3])
                    k = np.arange(1, m + 1, dtype=float)[:, None]
                    G = qs[-1] + k * d1 + (0.5 * k * (k + 1)) * d2
                Qb, its = tracker.block(targets[i:i + m], qs[-1], G)
                if len(Qb) == m:
                    if its <= 2:
                        size = min(2 * size, _BLOCK_MAX)
                else:
                    size = max(_BLOCK_MIN, size // 2)
            if Qb is None or len(Qb) == 0:
                # one step: Newton steps from the previous solution (keeps the branch); where they do not
                # converge, the closed form (nearest branch) or the generic solver decides
                if extrapolate:
                    guess = 3 * (qs[-1] - qs[-2]) + qs[-3]
                elif len(qs) > 1 and wp_of[i - 1] == wp_of[i]:
                    guess = 2 * qs[-1] - qs[-2]
                else:
                    guess = None
                qn, why = tracker.step(targets[i], qs[-1], guess, fallback=closed is None)
                if qn is None and closed is not None:
                    qn, why = _closed_form_step(self, closed, targets[i], qs[-1], tool, tol_position,
                                                tol_orientation)
                    if qn is not None:
                        used_closed = True
                if qn is None:
                    reason, message = why, f"step {i + 1} of {total} (towards waypoint {wp_of[i]}): " + _WHY[why]
                    break
                Qb = qn[None]
            # the per-step tests, in order: absolute jump, collision, validity callback
            n_ok = len(Qb)
            if any_jump:
                D = np.abs(np.diff(np.vstack([qs[-1], Qb]), axis=0))
                over = jump_on & (D > ajt)
                rows = np.nonzero(over.any(axis=1))[0]
                if rows.size:
                    r = int(rows[0])
                    d = D[r]
                    j = int(np.argmax(np.where(over[r], d / np.where(jump_on, ajt, 1.0), 0.0)))
                    n_ok, reason = r, "jump"
                    message = (f"step {i + r + 1} of {total}: joint {self.joint_names[j]!r} would move "
                               f"{d[j]:.4g} (> absolute jump threshold {ajt[j]:.4g})")
            if colliding is not None or is_valid is not None:
                for r in range(n_ok):
                    hit = colliding(Qb[r]) if colliding is not None else ""
                    if hit:
                        n_ok, reason = r, "collision"
                        message = (f"step {i + r + 1} of {total} (towards waypoint {wp_of[i + r]}): in "
                                   f"collision ({hit})")
                        break
                    if is_valid is not None and not is_valid(Qb[r]):
                        n_ok, reason = r, "invalid"
                        message = f"step {i + r + 1} of {total} (towards waypoint {wp_of[i + r]}): state refused"
                        break
            qs.extend(Qb[:n_ok])
            i += n_ok
            if reason != "ok":
                break
        poses = [self.fk(q, tool)] + list(targets[:len(qs) - 1])
        Q = np.array(qs)
        if jump_threshold > 0 and len(Q) > 2:     # MoveIt's relative test: a step above factor x mean
            d = np.linalg.norm(np.diff(Q, axis=0), axis=1)
            limit = jump_threshold * float(np.mean(d))
            big = np.nonzero(d > limit)[0]
            if big.size:
                k = int(big[0])
                Q = Q[:k + 1]
                poses = poses[:k + 1]
                reason = "jump"
                message = (f"step {k + 1} of {total}: joint-space jump {d[k]:.4g} > {jump_threshold:g} x mean "
                           f"step {limit / jump_threshold:.4g}")
        achieved = len(Q) - 1
        fraction = 1.0 if total == 0 else achieved / total
        solver_name = "newton" + (f"+{closed.name}" if used_closed else "")
        return CartesianPath(self.joint_names, Q, np.array(poses), fraction, reason, message,
                             np.array(wp_of[:achieved], dtype=int), total, solver_name)

    def moving_bodies(self) -> frozenset:
        """Bodies of the whole mechanism that the chain's joints move (the chain's bodies and everything they
        carry, e.g. a hand's fingers)."""
        chain = {s.name for s in self.chain.bodies if s.joint is not None}
        m = self.mechanism
        return frozenset(b.name for b in m.bodies if chain.intersection(m.path_to_ground(b.name)))

    def _collision_checker(self, q_full, environment, margin):
        """``hit(q_chain)``: '' when no body the chain moves collides (with another body of the mechanism or
        an obstacle of ``environment``), else the colliding pairs. Pairs of bodies the chain does not move
        are the same at every step of a path and are not its business (a rover's wheels resting on the
        terrain; MoveIt users allow such pairs in the allowed collision matrix)."""
        margin = float(margin)
        if not (math.isfinite(margin) and margin >= 0):
            raise InvalidConfiguration(f"collision_margin must be >= 0 m, got {margin!r}")
        base = self.mechanism.configuration(q_full).copy()
        moving = self.moving_bodies()

        def hit(q_chain) -> str:
            q = self.full_q(q_chain, base)
            if not in_collision(self.mechanism, q, environment=environment, margin=margin):
                return ""
            found = collisions(self.mechanism, q, environment=environment, margin=margin)
            if not found:
                return "contact"                      # the two queries disagree: refuse the step
            pairs = sorted({f"{c.body_a}-{c.body_b}" for c in found
                            if c.body_a in moving or (c.body_b in moving and not c.environment)})
            return ", ".join(pairs[:4])
        return hit

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
        cache = self._pan_tilt_tails
        if frame not in cache:
            tail = None
            try:
                joint = self.chain.coordinate_joint[self.n - 2]
                parent = self.chain.parent_body_of_joint(joint)
                sub = _chain_mechanism(self.mechanism, parent, (frame,))
                if tuple(sub.coordinate_names) == tuple(self.joint_names[-2:]):
                    tail = (parent, sub)
            except MechanismModelError:
                pass
            cache[frame] = tail
        if cache[frame] is None:
            return None
        parent, sub = cache[frame]
        T = self.fk(q0, parent)                          # the held joints place the pan-tilt's base
        local = (np.linalg.inv(T) @ np.append(p, 1.0))[:3]
        sols = pan_tilt_solutions(sub, frame, axis, local, q_near=q0[-2:])
        if not sols:
            return None
        q = q0.copy()
        q[-2:] = sols[0]
        return q

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


_WHY = {"unreachable": "no IK solution within tolerance (the pose is out of reach or off the arm's reachable set)",
        "limits": "the IK stopped against a joint limit"}


def _check_waypoints(waypoints) -> list[np.ndarray]:
    A = np.asarray(waypoints, dtype=float) if not isinstance(waypoints, np.ndarray) else waypoints.astype(float)
    if A.ndim == 2:
        A = A[None]
    if A.ndim != 3 or A.shape[1:] != (4, 4):
        raise InvalidConfiguration(f"waypoints must be 4x4 poses, got an array of shape {A.shape}")
    out = []
    for k, T in enumerate(A):
        if not np.all(np.isfinite(T)):
            raise InvalidConfiguration(f"waypoint {k} has a non-finite (NaN or infinite) entry")
        R = T[:3, :3]
        if float(np.abs(R @ R.T - np.eye(3)).max()) > 1e-6 or np.linalg.det(R) < 0 or \
                np.any(np.abs(T[3] - (0, 0, 0, 1)) > 1e-12):
            raise InvalidConfiguration(f"waypoint {k} is not a rigid transform (rotation not orthonormal, or "
                                       f"last row not 0 0 0 1)")
        out.append(T)
    return out


def _pose_errors(T, Tt):
    return float(np.linalg.norm(T[:3, 3] - Tt[:3, 3])), float(np.linalg.norm(log_so3(T[:3, :3] @ Tt[:3, :3].T)))


def _closed_form_step(arm, solver, T, q_prev, tool, tol_p, tol_o):
    """The closed-form branch nearest ``q_prev`` (each angle by the turn nearest it) that is within limits and
    reaches ``T`` (forward kinematics confirms it)."""
    cands = []
    for q in solver.all_solutions(T):
        q = np.asarray(q, dtype=float)
        q = q_prev + wrap_angle(q - q_prev)       # nearest turn per joint
        cands.append((float(np.max(np.abs(q - q_prev))), q))
    cands.sort(key=lambda c: c[0])
    hit_limits = False
    for _, q in cands:
        pe, oe = _pose_errors(arm.fk(q, tool), T)
        if pe > tol_p or oe > tol_o:
            continue
        if np.any(q < arm.lower - 1e-12) or np.any(q > arm.upper + 1e-12):
            hit_limits = True
            continue
        return np.clip(q, arm.lower, arm.upper), "ok"
    return None, "limits" if hit_limits else "unreachable"


#: closed forms of the library's arms for their chains: the Rocky 8 arm (alone, and on the assembled rover,
#: whose model is named "rocky8"); the MER IDD's instruments are registered by :mod:`..specialized` itself
for _name in ("rocky8_arm", "rocky8"):
    register_chain_solver(_name, "arm_tool", lambda m: YPPPYSolver(m, "arm_tool"))
del _name
#: the Moonrise digging arm's yaw-pitch-pitch-pitch closed form (locomotion.arm_solvers)
for _frame in ("scoop_tip", "scoop_mouth"):
    register_chain_solver("moonrise_arm", _frame, lambda m, _f=_frame: YPPPSolver(m, _f))
del _frame
