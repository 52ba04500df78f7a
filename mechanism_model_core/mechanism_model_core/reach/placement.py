"""Inverse reachability: where a rover should stop so that its arm reaches a target (base placement).

>>> result = place_base(rover, "chassis:arm_tool", target=(2.0, 0.5, 0.1), direction=(0, 0, -1),
...                     terrain=Plane.from_slope(0.15), reach_map=rmap)
>>> best = result.placements[0]            # x, y, yaw of the body; q (whole rover), arm_q; margins
>>> result.success, result.message         # False and why when no placement reaches the target

The target is a point (m) and an approach direction (the tool's approach ``axis``, e.g. an instrument's
+z, points along it; roll free) in the ground frame, on ``terrain``. Candidates are the body poses
``(x, y, yaw)`` on a grid of ``step`` m within ``radius`` m of the target (default: the arm's reach plus
the horizontal offset of its base in the body) and ``yaws`` headings. For each candidate:

1. **settled** on the terrain (:meth:`~mechanism_model_core.locomotion.wheeled.WheeledLocomotorModel.settle`:
   body z, roll, pitch and the suspension joints; candidates that do not settle are dropped);
2. **looked up** in the reachability map of the chain (``reach_map``; optional): the target, in the arm
   base's frame of the settled rover, must fall in a voxel whose sample nearest the approach direction was
   reached; the map's index there, its manipulability and the tip-over margin rank the candidates;
3. **verified**, best-ranked first until ``max_results`` pass: IK of the arm chain for the target (seeded
   from the map's configuration of the voxel), then forward kinematics of the *whole* rover at the settled
   configuration with the arm's solution puts the tool on the target within ``tol_position`` m and the
   approach axis along the direction within ``tol_orientation`` rad; the support-polygon margin (m) of the
   wheel contacts with the centre of mass of the whole rover (arm deployed) is at least ``min_stability``;
   with coal installed and shapes in the model, no self-collision; and no body the arm moves (other than the
   tool's) has its origin below the terrain.

The score of a verified placement is ``index + manipulability / best manipulability + min(1, stability /
0.25 m)`` (index 1 without a map), so a placement deep in the reachable region, well conditioned and far
from tipping ranks first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..collision import in_collision
from ..constraints import PointAtConstraint, PositionConstraint
from ..errors import InvalidConfiguration
from ..ik import solve_ik
from ..kinematics import forward_kinematics, ground_jacobian
from ..locomotion.manipulator import ManipulatorModel
from ..locomotion.wheeled import WheeledLocomotorModel
from ..statics.mass import center_of_mass
from ..statics.stability import support_polygon_margin
from .compute import manipulability
from .grid import chain_reach
from .map import ReachMap, chain_of, model_hash
from .storage import check_identity
from .sampling import AXES

__all__ = ["Placement", "PlacementResult", "place_base"]

STABILITY_SCALE = 0.25


@dataclass
class Placement:
    """One verified base placement (ground frame; m, rad): body ``x``, ``y``, ``yaw``; ``q`` the whole
    mechanism's configuration (settled, arm at ``arm_q``, chain coordinates in ``arm_joints`` order);
    ``index`` (map's index at the target's voxel, NaN without a map), ``manipulability``, ``stability``
    (support-polygon margin, m), ``position_error`` (m) and ``orientation_error`` (rad) from the whole
    rover's FK, ``score``; ``body_pose`` the settled pose (4x4, ground frame) of ``body_frame``."""

    x: float
    y: float
    yaw: float
    q: np.ndarray
    arm_q: np.ndarray
    arm_joints: tuple
    index: float
    manipulability: float
    stability: float
    position_error: float
    orientation_error: float
    score: float = 0.0
    #: the settled body frame's pose (4x4, ground frame)
    body_pose: np.ndarray | None = None
    body_frame: str = ""


@dataclass
class PlacementResult:
    """``placements`` best first; counts of the candidates ``tried``, ``settled``, passing the map
    (``in_map``), ``verified``; ``rejected`` {reason: count}; ``message`` says why nothing was found."""

    placements: list
    tried: int
    settled: int
    in_map: int
    verified: int
    rejected: dict = field(default_factory=dict)
    message: str = ""

    @property
    def success(self) -> bool:
        return bool(self.placements)


def _vec3(v, name) -> np.ndarray:
    try:
        a = np.asarray(v, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidConfiguration(f"{name} must be 3 numbers, got {v!r}") from None
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InvalidConfiguration(f"{name} must be 3 finite numbers, got {v!r}")
    return a


def _num(v, name, lo, hi) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InvalidConfiguration(f"{name} must be a number, got {v!r}") from None
    if not (math.isfinite(f) and lo <= f <= hi):
        raise InvalidConfiguration(f"{name} must be in [{lo}, {hi}], got {v!r}")
    return f


def place_base(mechanism, chain, target, direction, terrain, *, reach_map: ReachMap | None = None,
               locomotor: WheeledLocomotorModel | None = None, axis: str | None = None, radius: float | None = None,
               step: float = 0.1, yaws: int = 12, max_results: int = 5, max_candidates: int = 200_000,
               min_stability: float = 0.0, tol_position: float = 1e-3, tol_orientation: float = 1e-2,
               max_iterations: int = 500, check_collisions: bool = True) -> PlacementResult:
    """Rank and verify base placements (module docstring). ``chain``: ``"base:tip"`` of the arm in
    ``mechanism`` (a wheeled rover); ``reach_map``: a map of that chain (checked against the model);
    ``axis``: the tool's approach axis (default: the map's, else ``"z"``). Every argument is checked before
    any work; a request of more than ``max_candidates`` candidates is refused with its size."""
    t = _vec3(target, "target")
    d = _vec3(direction, "direction")
    if np.linalg.norm(d) < 1e-9:
        raise InvalidConfiguration("direction must be a non-zero vector")
    d = d / np.linalg.norm(d)
    base, tip, cm = chain_of(mechanism, chain)
    if reach_map is not None:
        if (reach_map.base, reach_map.tool) != (base, tip):
            raise InvalidConfiguration(f"the map is of {reach_map.base}:{reach_map.tool}, not {base}:{tip}")
        check_identity(reach_map.attrs, model_hash(cm, tip), "reach_map")
    axis = axis or (reach_map.axis if reach_map is not None else "z")
    if axis not in AXES:
        raise InvalidConfiguration(f"axis must be one of {sorted(AXES)}, got {axis!r}")
    step = _num(step, "step", 1e-3, 100.0)
    min_stability = _num(min_stability, "min_stability", -100.0, 100.0)
    if isinstance(yaws, bool) or not isinstance(yaws, (int, np.integer)) or not 1 <= yaws <= 3600:
        raise InvalidConfiguration(f"yaws must be an integer in [1, 3600], got {yaws!r}")
    if isinstance(max_results, bool) or not isinstance(max_results, (int, np.integer)) or max_results < 1:
        raise InvalidConfiguration(f"max_results must be an integer >= 1, got {max_results!r}")
    arm = ManipulatorModel(mechanism, tool=tip, base=base)
    loco = locomotor if locomotor is not None else WheeledLocomotorModel(mechanism)
    body = loco.spec.body_frame
    fk0 = forward_kinematics(mechanism, mechanism.home)
    offset = np.linalg.norm(np.linalg.solve(fk0.pose(body), fk0.pose(base))[:2, 3])
    reach = float(reach_map.request["reach"]) if reach_map is not None else chain_reach(cm, tip)
    radius = reach + offset if radius is None else _num(radius, "radius", 0.0, 1e4)
    k = int(math.floor(radius / step))
    n_est = (2 * k + 1) ** 2 * yaws
    if n_est > max_candidates:
        raise InvalidConfiguration(f"placement search too large: about {n_est:.3g} candidates ({2 * k + 1} x "
                                   f"{2 * k + 1} positions at {step:g} m, {yaws} headings); cap {max_candidates}")
    g = np.arange(-k, k + 1) * step
    X, Y = np.meshgrid(t[0] + g, t[1] + g, indexing="ij")
    keep = (X - t[0]) ** 2 + (Y - t[1]) ** 2 <= radius * radius
    xy = np.stack([X[keep], Y[keep]], 1)
    headings = np.arange(yaws) * 2 * math.pi / yaws - math.pi
    a_tool = np.array(AXES[axis], dtype=float)
    rejected: dict = {}

    def reject(why):
        rejected[why] = rejected.get(why, 0) + 1

    ranked = []
    tried = settled_n = in_map = 0
    for x, y in xy:
        for yaw in headings:
            tried += 1
            s = loco.settle(terrain, float(x), float(y), float(yaw))
            if not s.success:
                reject("did not settle")
                continue
            settled_n += 1
            T_wb = forward_kinematics(mechanism, s.q).pose(base)
            p_b = T_wb[:3, :3].T @ (t - T_wb[:3, 3])
            d_b = T_wb[:3, :3].T @ d
            if np.linalg.norm(p_b) > reach + tol_position:
                reject("beyond the arm's reach")
                continue
            idx, q_seed, manip = 1.0, None, 0.0
            if reach_map is not None:
                v = reach_map.voxel_of(p_b)
                if v is None or not reach_map.reachable(p_b, d_b):
                    reject("not reachable in the map")
                    continue
                in_map += 1
                idx = float(reach_map.index[v])
                manip = float(reach_map.manipulability[v])
                qv = reach_map.q[v]
                q_seed = None if np.any(np.isnan(qv)) else qv.astype(float)
            com = center_of_mass(mechanism, s.q)
            stab0 = support_polygon_margin(s.points, com).margin
            ranked.append((-(idx + min(1.0, stab0 / STABILITY_SCALE)) - 1e-3 * manip, tried, x, y, yaw, s, p_b, d_b,
                           q_seed, idx))
    ranked.sort(key=lambda r: (r[0], r[1]))
    out = []
    for _, _, x, y, yaw, s, p_b, d_b, q_seed, idx in ranked:
        if len(out) >= max_results:
            break
        cons = [PositionConstraint(tip, p_b), PointAtConstraint(tip, p_b + d_b, axis=a_tool)]
        seeds = [q_seed] if q_seed is not None else []
        seeds.append(arm.chain_q(s.q))
        res = None
        for q0 in seeds:
            res = solve_ik(cm, cons, q0, timeout=60.0, tol_position=tol_position / 10,
                           tol_orientation=tol_orientation / 10, max_iterations=max_iterations, rng=0)
            if res.success:
                break
        if not res.success:
            reject("no IK solution")
            continue
        q_full = arm.full_q(res.q, s.q)
        fk = forward_kinematics(mechanism, q_full)
        T = fk.pose(tip)
        e_p = float(np.linalg.norm(T[:3, 3] - t))
        e_o = float(np.arccos(np.clip((T[:3, :3] @ a_tool) @ d, -1.0, 1.0)))
        if e_p > tol_position or e_o > tol_orientation:
            reject("FK check failed")
            continue
        stab = support_polygon_margin(s.points, center_of_mass(mechanism, q_full)).margin
        if not stab >= min_stability:
            reject("not stable")
            continue
        if check_collisions and _collides(mechanism, arm, q_full, terrain, tip):
            reject("collision")
            continue
        m = float(manipulability(ground_jacobian(cm, res.q, tip)[None])[0])
        out.append(Placement(float(x), float(y), float(yaw), q_full, res.q.copy(), tuple(cm.coordinate_names),
                             idx if reach_map is not None else math.nan, m, float(stab), e_p, e_o,
                             body_pose=fk.pose(body), body_frame=body))
    best_m = max((p.manipulability for p in out), default=0.0) or 1.0
    for p in out:
        p.score = (1.0 if math.isnan(p.index) else p.index) + p.manipulability / best_m + \
            min(1.0, p.stability / STABILITY_SCALE)
    out.sort(key=lambda p: -p.score)
    passed = f", {in_map} passed the map" if reach_map is not None else ""
    msg = "" if out else (f"no placement reaches the target: {tried} candidates, {settled_n} settled{passed}; "
                          f"rejected: " + ", ".join(f"{k} {v}" for k, v in sorted(rejected.items())))
    return PlacementResult(out, tried, settled_n, in_map, len(out), rejected, msg)


def _collides(mechanism, arm: ManipulatorModel, q_full, terrain, tip) -> bool:
    """Self-collision (coal and shapes permitting) or a body the arm moves (the tool's excepted) with its
    origin below the terrain."""
    fk = forward_kinematics(mechanism, q_full)
    tool_body = mechanism.frame(tip).body
    pts = np.array([fk.pose(b)[:3, 3] for b in sorted(arm.moving_bodies()) if b != tool_body])
    if len(pts) and np.any(terrain.clearance(pts) < -1e-3):
        return True
    if any(s.shapes for s in mechanism.bodies):
        try:
            return bool(in_collision(mechanism, q_full))
        except ImportError:     # pragma: no cover - coal absent: only the terrain check
            return False
    return False
