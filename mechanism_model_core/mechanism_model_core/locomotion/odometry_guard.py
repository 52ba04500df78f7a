"""Plausibility of one odometry step: measured wheel rates and the time step between two joint states.

Dead reckoning integrates every step into the pose for good, so one absurd measurement (a wheel rate of
1e300 rad/s, a stamp 1e8 s in the future) would corrupt odometry forever. :func:`odometry_step_problem` says
why a step must not be integrated, :class:`OdometryGuard` applies the rule to a stream of measurements and
keeps the base (time and wheel positions) of the last good one, so integration resumes from the last good
state. Units: rad/s, s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: a measured wheel rate may exceed its motor's limit by this factor (overshoot, encoder noise, a wheel
#: dragged downhill) before it is refused
RATE_MARGIN = 1.5
#: the longest time step integrated (s): longer gaps (a stalled publisher, a clock jump) are bridged, not
#: integrated; the locomotor stops the wheels after 0.25 s without joint states anyway
MAX_STEP = 0.5

#: kinds of problem (:attr:`StepProblem.kind`)
NEGATIVE_STEP, LONG_STEP, RATE = "negative_step", "long_step", "rate"


@dataclass(frozen=True)
class StepProblem:
    """Why a step is not integrated: ``kind`` (:data:`NEGATIVE_STEP`, :data:`LONG_STEP`, :data:`RATE`) and a
    sentence naming the values."""
    kind: str
    reason: str

    def __str__(self) -> str:
        return self.reason


def odometry_step_problem(rates, dt: float, max_rates, names=None, rate_margin: float = RATE_MARGIN,
                          max_step: float = MAX_STEP) -> StepProblem | None:
    """Why integrating wheel ``rates`` (rad/s, wheel order) over ``dt`` (s) would be wrong, or None.

    A negative ``dt`` (a stamp before the last one), one longer than ``max_step``, or a rate beyond
    ``rate_margin`` times its wheel's limit in ``max_rates`` (rad/s; an infinite limit accepts any finite
    rate) is a problem. ``names`` (wheel joint names) only make the reason readable."""
    if not math.isfinite(dt) or dt < 0:
        return StepProblem(NEGATIVE_STEP, f"time step {dt:.6g} s is negative (a stamp before the previous one)")
    if dt > max_step:
        return StepProblem(LONG_STEP, f"time step {dt:.6g} s is longer than {max_step:g} s")
    r = np.asarray(rates, dtype=float)
    limit = rate_margin * np.asarray(max_rates, dtype=float)
    bad = ~np.isfinite(r) | (np.abs(r) > limit)
    if np.any(bad):
        k = int(np.argmax(bad))
        who = names[k] if names is not None else f"wheel {k}"
        return StepProblem(RATE, f"{who} rate {r[k]:.6g} rad/s is beyond {rate_margin:g} x its limit "
                                 f"{float(np.asarray(max_rates, dtype=float)[k]):.6g} rad/s")
    return None


@dataclass
class OdometryGuard:
    """The rule of :func:`odometry_step_problem` over a stream of joint states. For each measurement
    (:meth:`step`) it answers the time step to integrate over (None: integrate nothing) and keeps the base
    -- the time and wheel positions the next step is measured from:

    * a good step: integrate ``dt``; the measurement becomes the base;
    * an implausible rate: integrate nothing; the base stays (the next good measurement spans the gap, its
      position differences measured from the last good positions);
    * a negative or too long time step: integrate nothing; the measurement becomes the base (time itself
      jumped: a stamp from the future is followed by a negative step and a second re-base, never by an
      integration across the jump).

    ``rejected`` counts the refusals by kind; ``last_problem`` is the latest."""

    max_rates: np.ndarray
    names: list | None = None
    rate_margin: float = RATE_MARGIN
    max_step: float = MAX_STEP
    base_time: float | None = None
    base_positions: dict | None = None
    rejected: dict = field(default_factory=lambda: {NEGATIVE_STEP: 0, LONG_STEP: 0, RATE: 0})
    last_problem: StepProblem | None = None

    def __post_init__(self):
        self.max_rates = np.asarray(self.max_rates, dtype=float)
        if not (math.isfinite(self.rate_margin) and self.rate_margin >= 1.0):
            raise ValueError(f"odometry rate margin must be a finite factor >= 1, got {self.rate_margin}")
        if not (math.isfinite(self.max_step) and self.max_step > 0):
            raise ValueError(f"odometry max step must be a positive number of seconds, got {self.max_step}")

    def step(self, t: float, rates, positions: dict) -> tuple[float | None, StepProblem | None]:
        """``(dt, problem)`` for a measurement at ``t`` (s) with wheel ``rates`` (rad/s) and ``positions``
        ({joint: rad}, for the next rates by difference): ``dt`` to integrate ``rates`` over, or None (the
        first measurement, a zero step, or ``problem``)."""
        if self.base_time is None:
            self._rebase(t, positions)
            return None, None
        dt = t - self.base_time
        problem = odometry_step_problem(rates, dt, self.max_rates, self.names, self.rate_margin, self.max_step)
        if problem is None:
            self._rebase(t, positions)
            return (dt if dt > 0 else None), None
        self.rejected[problem.kind] += 1
        self.last_problem = problem
        if problem.kind != RATE:
            self._rebase(t, positions)
        return None, problem

    def _rebase(self, t: float, positions: dict) -> None:
        self.base_time = t
        self.base_positions = dict(positions)

    @property
    def total_rejected(self) -> int:
        return sum(self.rejected.values())


__all__ = ["OdometryGuard", "StepProblem", "odometry_step_problem", "RATE_MARGIN", "MAX_STEP", "NEGATIVE_STEP",
           "LONG_STEP", "RATE"]
