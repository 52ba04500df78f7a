"""The gaits of a legged locomotor (:class:`~.legged.LeggedLocomotorModel`): the named gaits and their duty
factors and phase offsets per leg (:data:`GAITS`), a leg's description (:class:`LegSpec`), a planned gait
(:class:`GaitPlan`), the minimum-jerk profile of a swing, and :class:`GaitInfeasible`. :mod:`.legged`
re-exports these names.

Units: metres, radians, seconds; phases and duty factors as fractions of the gait period.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import InvalidConfiguration, MechanismModelError
from .trajectory import JointTrajectory

__all__ = ["GAITS", "GaitInfeasible", "GaitPlan", "LegSpec"]


class GaitInfeasible(MechanismModelError):
    """A gait that cannot be walked as asked: ``reason`` is one of ``"margin"``, ``"reach"``, ``"speed"``,
    ``"legs"``; the message names the leg, the time and the quantity, and what to change."""

    def __init__(self, message: str, reason: str):
        self.reason = reason
        super().__init__(message)


@dataclass
class LegSpec:
    """One leg: ``name``, ``foot`` frame, ``joints`` (walking joints, hip to foot), ``held`` (other moving
    joints on the chain, kept at their value), ``side`` (+1 left, -1 right), ``neutral`` (foot point in the
    body frame at the standing configuration, m)."""

    name: str
    foot: str
    joints: tuple
    held: tuple
    side: float
    neutral: np.ndarray


@dataclass
class GaitPlan:
    """A planned gait. ``times`` (N,) s; ``q`` (N, nq) whole-mechanism configurations (floating base
    included); ``body`` (N, 4, 4) ``T_world_body``; ``feet`` (N, L, 3) foot points in the world; ``stance``
    (N, L) bool; ``margins`` (N,) static margin (m); ``trajectory``: the walking joints' JointTrajectory
    (velocities and accelerations by differences of the samples); ``legs``: leg names in column order of
    ``feet``; ``gait``, ``duty``, ``period`` (s), ``offsets``; ``twist`` (vx, vy, wz)."""

    gait: str
    twist: np.ndarray
    period: float
    duty: float
    offsets: dict
    legs: tuple
    times: np.ndarray
    q: np.ndarray
    body: np.ndarray
    feet: np.ndarray
    stance: np.ndarray
    margins: np.ndarray
    trajectory: JointTrajectory

    @property
    def min_margin(self) -> float:
        return float(np.min(self.margins))


def _gait_offsets(gait: str, legs: Sequence[LegSpec]):
    """Duty factor and phase offset per leg name for a named gait (legs classified from the neutral feet)."""
    left = sorted([l for l in legs if l.side > 0], key=lambda l: -l.neutral[0])    # front to rear
    right = sorted([l for l in legs if l.side < 0], key=lambda l: -l.neutral[0])
    n = len(legs)
    if gait in ("tripod", "wave", "ripple"):
        if n != 6 or len(left) != 3 or len(right) != 3:
            raise GaitInfeasible(f"the {gait} gait needs six legs, three a side (found {len(left)} left, "
                                 f"{len(right)} right)", "legs")
    elif gait == "crawl":
        if n != 4 or len(left) != 2 or len(right) != 2:
            raise GaitInfeasible(f"the crawl gait needs four legs, two a side (found {len(left)} left, "
                                 f"{len(right)} right)", "legs")
    else:
        raise InvalidConfiguration(f"unknown gait {gait!r}; known: {GAITS}")
    if gait == "tripod":
        # front-left, middle-right, rear-left swing together; then the other three
        return 0.5, {left[0].name: 0.0, right[1].name: 0.0, left[2].name: 0.0,
                     right[0].name: 0.5, left[1].name: 0.5, right[2].name: 0.5}
    if gait == "wave":
        # one leg at a time, rear to front on one side, then on the other: a wave front to back
        order = [left[2], left[1], left[0], right[2], right[1], right[0]]
        beta = 5.0 / 6.0
        # leg k swings during [k/6, (k+1)/6) of the cycle: psi = beta at the start of its swing
        return beta, {l.name: (beta - k / 6.0) % 1.0 for k, l in enumerate(order)}
    if gait == "ripple":
        beta = 2.0 / 3.0
        out = {}
        for k, l in enumerate([left[2], left[1], left[0]]):
            out[l.name] = (beta - k / 3.0) % 1.0
        for k, l in enumerate([right[2], right[1], right[0]]):
            out[l.name] = (beta - k / 3.0 - 0.5) % 1.0
        return beta, out
    # crawl: left hind, left fore, right hind, right fore
    beta = 0.75
    order = [left[1], left[0], right[1], right[0]]
    return beta, {l.name: (beta - k / 4.0) % 1.0 for k, l in enumerate(order)}


GAITS = ("tripod", "ripple", "wave", "crawl")


def _min_jerk(u):
    return u * u * u * (10.0 - 15.0 * u + 6.0 * u * u)
