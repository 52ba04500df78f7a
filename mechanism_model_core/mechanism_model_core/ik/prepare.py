"""IK's caches built ahead of time (issue 20: "the first solve on a model is as fast as the thousandth").

A solve builds what it needs of a mechanism on first use -- the chain, the problem's structure, the closed
form of the chain (``eaik``'s decomposition; a 7R chain's swept joint measured on sample targets, its hint
table; a near-decomposable chain's criterion measured on 64 sample targets), the lane engine and its seed
table -- and does not bill that to the caller's budget, but the caller still waits for it: 2-20 ms of wall
time on the first solve of a frame. :func:`prepare_ik` builds all of it for the frames a caller will ask
about, before the first request (the IK service does it at start-up for its motor groups' tip frames):

>>> prepare_ik(arm, ["tool0"])                       # every joint free
>>> prepare_ik(rover, group_tip_frames(rover, arm_joints), locked=others)   # the IK service's requests

It solves, for each frame, targets at a few fixed in-limit configurations (the middle of the ranges and random
draws) -- full poses, positions and orientations -- from the seed ``q0`` and from the middle of the ranges,
exactly as ``solve_ik`` with ``solver="auto"`` would: the closed form ``auto`` picks, its fallbacks (the lane
engines with their seed tables and restart sequence) and the problem's structure for the ``locked`` names. The
caches live in the mechanism's derived data (:mod:`..data`), so a solve afterwards finds them; what a solve then
still builds depends on its own values only: the ``eaik`` robot of a 7R chain's swept joint at a new seed value
(a few microseconds), the lane engine of a chain whose locked joints after its first free one take new values
(its tables shared). Answers do not depend on whether a mechanism was prepared.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ..constraints import OrientationConstraint, PoseConstraint, PositionConstraint
from ..errors import InvalidConfiguration
from ..kinematics import forward_kinematics, frame_chain
from ..model import Mechanism
from .batch import chain_engine
from .solve import problem_and_solver, solve_ik

__all__ = ["PreparedFrame", "group_tip_frames", "prepare_ik"]

#: in-limit configurations whose frame poses are solved for each frame (besides the middle of the ranges)
PREPARE_TARGETS = 3
#: the generator seed of those configurations
PREPARE_RNG = 20261128
#: the time budget of each of those solves (s; solve_ik's default): what a first solve builds is not billed to it
PREPARE_TIMEOUT = 0.05
#: the constraint kinds prepared by default: a full pose, and the frame's position or orientation alone (each
#: has a lane engine of its own; the IK service's constraints come in all three)
KINDS = ("pose", "position", "orientation")


@dataclass(frozen=True)
class PreparedFrame:
    """What :func:`prepare_ik` did for one frame: the ``locked`` names it was prepared with, the ``solver``
    ``solve_ik(solver="auto")`` takes for a full pose of it (``"eaik"``, ``"near-eaik"``, ``"lm"``, ``"dls"``
    or a registered closed form's name) and the wall-clock ``seconds`` it took."""

    frame: str
    locked: tuple
    solver: str
    seconds: float


def prepare_ik(mechanism: Mechanism, frames: Iterable[str], *, locked: Sequence[str] = (), q0=None,
               targets: int = PREPARE_TARGETS, kinds: Sequence[str] = KINDS) -> list[PreparedFrame]:
    """Build the caches a ``solve_ik`` on each of ``frames`` would build on first use -- for a full pose, and
    (``kinds``: any of ``"pose"``, ``"position"``, ``"orientation"``) for the frame's position or orientation
    alone -- with the joints ``locked`` held at their ``q0`` values (home when None): pass the names in the order
    the solves will (the problem structure is kept per tuple of locked names). ``targets``: random in-limit
    configurations whose poses are solved besides the middle of the ranges, each from ``q0`` and from the middle
    of the ranges. Returns one :class:`PreparedFrame` per frame. Raises :class:`~.errors.UnknownFrame`,
    :class:`~.errors.UnknownJoint` or :class:`~.errors.InvalidConfiguration` for names, kinds or a ``q0`` that do
    not fit the mechanism. Thread-safe as solves are; calling it again builds nothing new."""
    if isinstance(frames, str):
        frames = [frames]
    locked = tuple(locked)
    if isinstance(targets, bool) or not isinstance(targets, int) or targets < 0:
        raise InvalidConfiguration(f"targets must be an integer >= 0, got {targets!r}")
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not set(kinds) <= set(KINDS):
        raise InvalidConfiguration(f"kinds must be among {KINDS}, got {kinds!r}")
    q = mechanism.configuration(q0)
    if q.ndim != 1:
        raise InvalidConfiguration("q0 must be one configuration, not a batch")
    out = []
    for frame in frames:
        t0 = time.perf_counter()
        ch = frame_chain(mechanism, frame)               # UnknownFrame for a name the mechanism lacks
        c = PoseConstraint(frame, forward_kinematics(mechanism, q).pose(frame))
        P, solver = problem_and_solver(mechanism, c, q, locked=locked)   # the structure of these names, the closed
                                                                         # form and its criteria
        E = chain_engine(P)
        if E is not None:                                # the population LM: every closed form's fallback
            E.seed_table()
            E.restarts(0, 1)
        free = [i for i in ch.coords if P.free_mask[i]]
        lo, hi = mechanism.lower_limits[free], mechanism.upper_limits[free]
        lo = np.where(np.isfinite(lo), lo, -math.pi)
        hi = np.where(np.isfinite(hi), hi, math.pi)
        rng = np.random.default_rng(PREPARE_RNG)
        configs = [0.5 * (lo + hi)] + [lo + rng.random(len(free)) * (hi - lo) for _ in range(targets)]
        q_mid = P.template.copy()
        q_mid[free] = configs[0]
        poses = []
        for x in configs:
            qt = P.template.copy()
            qt[free] = x
            if mechanism.couplings:                      # coupled joints follow: a pose the chain can reach
                qt = mechanism.apply_couplings(qt)
            poses.append(forward_kinematics(mechanism, qt).pose(frame))
        for kind in kinds:                               # a position or orientation alone: its engine and tables,
            if kind != "pose":                           # one solve (no closed form: nothing else is built)
                task = _task(kind, frame, poses[0])
                E = chain_engine(problem_and_solver(mechanism, task, q, locked=locked)[0])
                if E is not None:
                    E.seed_table()                       # (the DLS's restarts start from it)
                    E.restarts(0, 1)
                solve_ik(mechanism, task, q, locked=locked, timeout=PREPARE_TIMEOUT)
        if "pose" in kinds:                              # full poses last: their paths the warmest afterwards
            for T in poses:
                for seed in (q, q_mid):
                    solve_ik(mechanism, PoseConstraint(frame, T), seed, locked=locked, timeout=PREPARE_TIMEOUT)
        out.append(PreparedFrame(frame, locked, getattr(solver, "name", type(solver).__name__),
                                 time.perf_counter() - t0))
    return out


def _task(kind: str, frame: str, T: np.ndarray):
    """The constraint of ``kind`` on ``frame`` toward pose ``T`` (4x4, ground)."""
    if kind == "position":
        return PositionConstraint(frame, T[:3, 3])
    if kind == "orientation":
        return OrientationConstraint(frame, T[:3, :3])
    return PoseConstraint(frame, T)


def group_tip_frames(mechanism: Mechanism, joints: Iterable[str]) -> list[str]:
    """The frames an IK request for the group of ``joints`` (coordinate names: a motor group's) names as its
    tip: every frame whose chain from the ground ends at the group's last joint and holds all of the group's
    joints -- the link that joint moves and the frames fixed to it (a tool flange, a camera mount) -- in the
    mechanism's frame order. Empty when the joints do not lie on one chain (a rover's wheels) or are not
    coordinates of the mechanism."""
    idx = set()
    for name in joints:
        if name not in mechanism.coordinate_indices:
            return []
        idx.add(mechanism.coordinate_index(name))
    if not idx:
        return []
    out = []
    for f in mechanism.frame_names:
        coords = frame_chain(mechanism, f).coords
        if len(coords) and int(coords[-1]) in idx and idx <= set(np.asarray(coords).tolist()):
            out.append(f)
    return out
