"""Closed-form branches put into a chain's joint limits by whole turns (the per-solve kernel of
:class:`~.eaik_solver.EAIKSolver`): each joint's value moved to the turn nearest the seed, then one turn up or
down into its limits; on arms whose every range spans a full turn, the steps that cannot change anything are
skipped (:func:`_wide_level`). Few numpy calls on small (k, n) arrays: a solve pays their call overhead, not their
arithmetic."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["WIDE_MARGIN"]

_TURN = 2 * math.pi


#: margin (rad) of :func:`_wide_level`'s bounds: far above the rounding of the nearest-turn formula on joints
#: within +-100 rad (about 1e-13)
WIDE_MARGIN = 1e-9


def _wide_bounds(lo, hi):
    """For :func:`_wide_level`, when every joint's range spans a full turn or more (finite ones within +-100 rad:
    a UR arm's joints, continuous joints): ``(lo, hi, lo + pi + m, hi - pi - m)`` as float lists (``m`` =
    :data:`WIDE_MARGIN`; the last two may be empty ranges); else None."""
    ok = (np.isinf(lo) & np.isinf(hi)) | ((np.abs(lo) <= 100.0) & (np.abs(hi) <= 100.0) & (hi - lo >= _TURN))
    if not ok.all():
        return None
    return (lo.tolist(), hi.tolist(), (lo + (math.pi + WIDE_MARGIN)).tolist(),
            (hi - (math.pi + WIDE_MARGIN)).tolist())


def _wide_level(bounds, ref) -> int:
    """What :func:`_in_limit_turns` may skip for seed ``ref`` on joints of :func:`_wide_bounds` ``bounds``:
    2 when every ``ref`` value lies at least a half turn (and the margin) inside its range -- the nearest
    turns of every branch are within the limits; 1 when ``ref`` is within the limits -- a whole turn up or
    down brings every nearest turn (within a half turn of ``ref``) into them, since each range spans a turn
    or more and the in-limit test's bounds are 1e-12 wider; 0 otherwise."""
    if bounds is None:
        return 0
    level = 2
    for r, a, b, c, d in zip(ref.tolist(), *bounds):
        if not a <= r <= b:
            return 0
        if not c <= r <= d:
            level = 1
    return level


def _in_limit_turns(Q, ref, lo_in, hi_in, lo, hi, wide=0):
    """The rows of branches ``Q`` (k, n) that lie within limits once every joint is moved by whole turns to
    the value nearest ``ref`` and then, where that is out of range, one turn up or down (``lo_in``/``hi_in``:
    the limits widened by the in-limit test's margin), clamped into ``[lo, hi]``; None when no row does.
    ``wide`` (:func:`_wide_level`): 2 -- the nearest turns are within the limits already, 1 -- every row
    is within them after the turn up or down (the steps that would change nothing are skipped).
    Elementwise, in place on a fresh array: a solve pays numpy's call overhead, not arithmetic, here."""
    D = np.subtract(Q, ref, order="C")             # (eaik's Q is column-major: the calls below are faster on rows)
    k = D * (1.0 / _TURN)
    np.rint(k, out=k)                               # np.round's own kernel for 0 decimals
    k *= _TURN
    D += ref
    D -= k                                          # ref + (Q - ref) - turn * round((Q - ref) / turn)
    if wide == 2:
        return D
    np.add(D, _TURN, out=D, where=D < lo_in)
    np.subtract(D, _TURN, out=D, where=D > hi_in)
    if wide == 1:
        np.maximum(D, lo, out=D)
        np.minimum(D, hi, out=D)
        return D
    ok = D >= lo_in
    ok &= D <= hi_in
    inside = np.logical_and.reduce(ok, axis=1)
    n = np.count_nonzero(inside)
    if not n:
        return None
    if n < inside.shape[0]:
        D = D[inside]
    np.maximum(D, lo, out=D)
    np.minimum(D, hi, out=D)
    return D
