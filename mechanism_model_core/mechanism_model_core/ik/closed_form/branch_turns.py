"""Closed-form branches put into a chain's joint limits by whole turns, and ordered by distance to the seed.

Two ways of choosing a joint's turn, both on branches ``Q`` (k, n) of joint values (rad) against a seed ``ref``
(n,):

* :func:`_in_limit_turns` (the per-solve kernel of :class:`~.eaik_solver.EAIKSolver`): each joint's value moved
  to the turn nearest the seed, then one turn up or down into its limits; on arms whose every range spans a full
  turn, the steps that cannot change anything are skipped (:func:`_wide_level`);
* :class:`TurnWindow` (the near-decomposable solver's branches, :mod:`.near_decomposable`, and the offset-axis
  iteration's, :mod:`.axis_offset`): each value moved into the turn that starts at its joint's lower limit, so
  that the one in limits is found when the range is less than a turn.

:func:`nearest_order` and :func:`nearest_first` order branches by their squared distance to the seed (the sum of
the joints' squared differences, rad^2), nearest first, as every closed form lists its answers. Few numpy calls
on small (k, n) arrays: a solve pays their call overhead, not their arithmetic."""

from __future__ import annotations

import math

import numpy as np

from ...spatial import wrap_angle

__all__ = ["IN_LIMIT_MARGIN", "TurnWindow", "WIDE_MARGIN", "nearest_first", "nearest_order"]

_TURN = 2 * math.pi

#: a joint value counts as within its limits this far outside them (rad): the closed forms' in-limit test, which
#: then clamps the value onto the limit
IN_LIMIT_MARGIN = 1e-12


def nearest_order(Q, ref) -> np.ndarray:
    """The order (row indices) of branches ``Q`` (k, n; rad, or m for a slider) by their squared distance to
    ``ref`` (n,): the sum of the joints' squared differences, nearest first; rows at equal distance keep their
    order (``Q``: ``eaik``'s, which lists a pose's branches in the same order from one call to the next)."""
    D = Q - ref
    D *= D
    return np.add.reduce(D, axis=1).argsort(kind="stable")


def nearest_first(Q, ref) -> np.ndarray:
    """The rows of ``Q`` (k, n) in :func:`nearest_order` (a new array when k > 1, else ``Q`` itself)."""
    if Q.shape[0] < 2:
        return Q
    return Q.take(nearest_order(Q, ref), axis=0)


class TurnWindow:
    """The whole turn each joint of a revolute chain takes its closed-form values in, for limits ``lo``,
    ``hi`` (n,; rad, -inf/inf where a joint has none): a value is moved by whole turns into
    ``[lo - m, lo - m + 2 pi)`` (``m``: :data:`IN_LIMIT_MARGIN`), where the one within the limits lies when
    the range is less than a turn; a joint without a lower limit takes the turn nearest the seed, and a joint
    whose range spans a turn or more the turn above where that is nearer the seed and within range.

    ``lo_in``, ``hi_in``: the limits widened by the margin (the in-limit test's bounds); ``any_wide``: some joint
    with a lower limit has a range of a turn or more."""

    def __init__(self, lo, hi):
        lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
        self.lo_in, self.hi_in = lo - IN_LIMIT_MARGIN, hi + IN_LIMIT_MARGIN
        self._finite = np.isfinite(lo)
        self._all_finite = bool(self._finite.all())
        self.any_wide = bool(np.any(self._finite & (hi - lo >= _TURN)))

    def start(self, ref):
        """Where each joint's turn starts (n,; rad) for seed ``ref`` (n,): its lower limit less the margin, or
        ``ref - pi`` for a joint without one. A caller that places several branch sets for one seed computes it
        once and passes it to :meth:`place`."""
        if self._all_finite:
            return self.lo_in
        return np.where(self._finite, self.lo_in, ref - math.pi)

    def place(self, Q, ref, start=None):
        """Branches ``Q`` (k, n; rad) moved by whole turns into each joint's turn for seed ``ref`` (n,) (a new
        array; ``start``: :meth:`start` of ``ref`` when the caller has it). Values above the upper limit stay
        there: the caller's in-limit test drops those rows."""
        Q = wrap_angle(Q, lower=self.start(ref) if start is None else start)
        if self.any_wide:           # a range of a turn or more: the turn above where nearer ref and in range
            up = Q + _TURN
            nearer = np.abs(up - ref) < np.abs(Q - ref)
            nearer &= up <= self.hi_in
            np.copyto(Q, up, where=nearer)
        return Q


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
