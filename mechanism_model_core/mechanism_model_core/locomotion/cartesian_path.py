"""Cartesian paths of a manipulator (:class:`~.manipulator.ManipulatorModel`), with MoveIt's
``computeCartesianPath`` semantics: the tool moves from its pose at the start configuration through each
waypoint on straight lines (orientation by slerp), in steps of at most ``max_step`` metres (and
``max_rotation_step`` radians); each step's IK starts from the previous step's solution (branch continuity,
the arm's closed form where it has one with ``all_solutions``); the path stops at the first step whose IK
fails or whose joint-space jump is too large (``jump_threshold``, relative to the mean step as in MoveIt;
``absolute_jump_threshold`` in radians); ``fraction`` is the share of the steps achieved
(:class:`CartesianPath`).

:func:`cartesian_path` takes the arm first; :meth:`ManipulatorModel.cartesian_path` calls it. Poses are
4x4 ``T_base_tool`` in the arm's base frame (m, rad).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..collision import collisions, in_collision
from ..constraints import log_so3
from ..errors import InvalidConfiguration, UnknownFrame
from ..ik.path_tracker import PathTracker
from ..spatial import axis_angle_matrix, wrap_angle

__all__ = ["CartesianPath", "cartesian_path"]


#: Cartesian paths solve the steps of a segment in blocks (sizes adapted between these bounds: doubled while
#: whole blocks converge in two Newton iterations, halved when one stops short; the Newton iterations per
#: block and the resolved-rate passes are the path tracker's, ik.path_tracker)
_BLOCK_START, _BLOCK_MIN, _BLOCK_MAX = 16, 2, 32


@dataclass
class CartesianPath:
    """Outcome of :func:`cartesian_path` (MoveIt ``computeCartesianPath`` semantics).

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


def cartesian_path(arm, waypoints, q_start=None, *, tool: str | None = None, max_step: float = 0.01,
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
    first invalid waypoint. Needs the collision extra (``pip install coal``).
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
    tool = tool or arm.tool
    if tool not in arm.tools:
        raise UnknownFrame(tool, list(arm.tools))
    wps = _check_waypoints(waypoints)
    if not (math.isfinite(max_step) and max_step > 0):
        raise InvalidConfiguration(f"max_step must be a positive length in metres, got {max_step!r}")
    rot_step = max_step if max_rotation_step is None else float(max_rotation_step)
    if not (math.isfinite(rot_step) and rot_step > 0):
        raise InvalidConfiguration(f"max_rotation_step must be positive, got {max_rotation_step!r}")
    if not (math.isfinite(jump_threshold) and jump_threshold >= 0):
        raise InvalidConfiguration(f"jump_threshold must be >= 0 (0 disables it), got {jump_threshold!r}")
    try:
        ajt = np.broadcast_to(np.asarray(absolute_jump_threshold, dtype=float), (arm.n,))
    except ValueError:
        raise InvalidConfiguration(f"absolute_jump_threshold: one number or one per chain joint, got "
                                   f"{absolute_jump_threshold!r}") from None
    if not (np.all(np.isfinite(ajt)) and np.all(ajt >= 0)):
        raise InvalidConfiguration(f"absolute_jump_threshold must be >= 0 (0 disables it), got "
                                   f"{absolute_jump_threshold!r}")
    jump_on = ajt > 0
    any_jump = bool(jump_on.any())
    q = arm._q(q_start)
    if not arm.within_limits(q, 1e-9):
        raise InvalidConfiguration(f"{arm.name}: the start configuration is outside the joint limits")
    m6 = None if mask is None else np.asarray(mask, dtype=float).reshape(-1)
    if m6 is not None and (m6.shape != (6,) or not np.all(np.isfinite(m6)) or np.any(m6 < 0)):
        raise InvalidConfiguration(f"mask needs 6 non-negative weights, got {mask!r}")
    colliding = None
    if avoid_collisions:
        colliding = _collision_checker(arm, q_full, environment, collision_margin)
    elif environment is not None:
        raise InvalidConfiguration("an environment is only used with avoid_collisions=True")
    closed = None if (m6 is not None and np.any(m6 == 0)) else arm.specialized_solver(tool)
    if closed is not None and not hasattr(closed, "all_solutions"):
        closed = None
    # the targets of every step, segment by segment (positions on the line, rotations by slerp)
    blocks, wp_of = [], []
    T_prev = arm.fk(q, tool)
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
    tracker = PathTracker(arm, tool, m6, tol_position, tol_orientation, max_iterations)
    batch = m6 is None
    redundant = arm.n > 6
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
                qn, why = _closed_form_step(arm, closed, targets[i], qs[-1], tool, tol_position,
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
                message = (f"step {i + r + 1} of {total}: joint {arm.joint_names[j]!r} would move "
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
    poses = [arm.fk(q, tool)] + list(targets[:len(qs) - 1])
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
    return CartesianPath(arm.joint_names, Q, np.array(poses), fraction, reason, message,
                         np.array(wp_of[:achieved], dtype=int), total, solver_name)


def _collision_checker(arm, q_full, environment, margin):
    """``hit(q_chain)``: '' when no body the chain moves collides (with another body of the mechanism or
    an obstacle of ``environment``), else the colliding pairs. Pairs of bodies the chain does not move
    are the same at every step of a path and are not its business (a rover's wheels resting on the
    terrain; MoveIt users allow such pairs in the allowed collision matrix)."""
    margin = float(margin)
    if not (math.isfinite(margin) and margin >= 0):
        raise InvalidConfiguration(f"collision_margin must be >= 0 m, got {margin!r}")
    base = arm.mechanism.configuration(q_full).copy()
    moving = arm.moving_bodies()

    def hit(q_chain) -> str:
        q = arm.full_q(q_chain, base)
        if not in_collision(arm.mechanism, q, environment=environment, margin=margin):
            return ""
        found = collisions(arm.mechanism, q, environment=environment, margin=margin)
        if not found:
            return "contact"                      # the two queries disagree: refuse the step
        pairs = sorted({f"{c.body_a}-{c.body_b}" for c in found
                        if c.body_a in moving or (c.body_b in moving and not c.environment)})
        return ", ".join(pairs[:4])
    return hit
