"""The odometry plausibility rule (issue 19, item 4): one absurd joint state -- a wheel rate of 1e300 rad/s,
a stamp 1e8 s in the future, a stamp from the past -- is refused and counted, and dead reckoning goes on from
the last good state, so the pose after the stream equals the pose of the stream without the bad message."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from mechanism_model_core.locomotion.odometry_guard import (LONG_STEP, NEGATIVE_STEP, RATE, OdometryGuard,
                                                            odometry_step_problem)
from mechanism_model_core.locomotion.wheeled import Odometry

LIMITS = np.array([3.0, 3.0])
NAMES = ["left_drive", "right_drive"]


def test_single_steps():
    assert odometry_step_problem([1.0, -2.0], 0.02, LIMITS) is None
    assert odometry_step_problem([4.4, 0.0], 0.02, LIMITS) is None                  # within 1.5 x 3
    p = odometry_step_problem([1e300, 0.0], 0.02, LIMITS, NAMES)
    assert p.kind == RATE and "left_drive" in str(p) and "1e+300" in str(p)
    assert odometry_step_problem([math.nan, 0.0], 0.02, LIMITS).kind == RATE
    assert odometry_step_problem([0.0, 0.0], -0.01, LIMITS).kind == NEGATIVE_STEP
    assert odometry_step_problem([0.0, 0.0], 1e8, LIMITS).kind == LONG_STEP
    assert odometry_step_problem([0.0, 0.0], math.nan, LIMITS).kind == NEGATIVE_STEP
    assert odometry_step_problem([1e6, 0.0], 0.02, [math.inf, 3.0]) is None          # no limit: any finite rate
    with pytest.raises(ValueError):
        OdometryGuard(LIMITS, rate_margin=0.5)
    with pytest.raises(ValueError):
        OdometryGuard(LIMITS, max_step=math.inf)


def _run(stream, guard):
    """Differential-drive dead reckoning (track 1 m, wheel radius 0.1 m) of ``stream``: (t, rates)."""
    odo = Odometry()
    for t, rates in stream:
        dt, _ = guard.step(t, rates, {})
        if dt is not None:
            v = 0.1 * (rates[0] + rates[1]) / 2
            w = 0.1 * (rates[1] - rates[0]) / 1.0
            odo.update((v, 0.0, w), dt)
    return odo.pose


@given(st.lists(st.tuples(st.floats(-3, 3), st.floats(-3, 3)), min_size=5, max_size=40),
       st.integers(1, 3), st.sampled_from(["rate", "future", "past"]))
def test_one_absurd_message_costs_at_most_its_own_step(rates, where, kind):
    """The bad message is refused; for a bad rate the next good message spans its gap (the same pose as
    without it, the rates held); for a bad stamp the integration re-bases and loses at most two steps."""
    times = [0.02 * k for k in range(len(rates))]
    good = list(zip(times, rates))
    k = min(where, len(good) - 1)
    bad = {"rate": (times[k] - 0.01, (1e300, 0.0)), "future": (times[k] - 0.01 + 1e8, rates[k]),
           "past": (times[k] - 10.0, rates[k])}[kind]
    g = OdometryGuard(LIMITS, NAMES)
    pose = _run(good[:k] + [bad] + good[k:], g)
    assert g.total_rejected >= 1 and np.all(np.isfinite(pose))
    reference = _run(good, OdometryGuard(LIMITS, NAMES))
    # a step is at most 0.02 s x 0.3 m/s: losing two of them moves the end pose by at most 1.2 cm (+ turn)
    assert np.hypot(*(pose[:2] - reference[:2])) <= 0.02 + 1e-9
    if kind == "rate":
        assert g.rejected[RATE] == 1


def test_the_issues_two_messages():
    """1e300 rad/s, then a stamp 1e8 s ahead: odometry keeps the pose of the good stream around them."""
    g = OdometryGuard(LIMITS, NAMES)
    stream = [(0.02 * k, (2.0, 2.0)) for k in range(50)]
    stream.insert(20, (0.41, (1e300, 1e300)))
    stream.insert(30, (0.59 + 1e8, (2.0, 2.0)))
    pose = _run(stream, g)
    assert g.rejected == {NEGATIVE_STEP: 1, LONG_STEP: 1, RATE: 1}
    # 0.98 s at 0.2 m/s = 0.196 m, less the step lost to the re-bases (0.02 s x 0.2 m/s)
    assert 0.19 <= pose[0] <= 0.1961 and abs(pose[1]) < 1e-12 and abs(pose[2]) < 1e-12
