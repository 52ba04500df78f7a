"""What an IK problem takes from its mechanism and locked joints alone (:class:`ProblemStructure`, kept in
the mechanism's derived data per tuple of locked names, so that a solve does not rebuild it), and the
per-mechanism tables it reads."""

from __future__ import annotations

import math

import numpy as np

from ..data import derived
from ..errors import InvalidConfiguration
from ..kinematics import frame_chain
from ..model import Mechanism

__all__ = ["ProblemStructure", "angle_coordinates"]


class ProblemStructure:
    """What an :class:`IKProblem` takes from its mechanism and locked joints alone (cached per mechanism and
    tuple of locked names, so that a solve does not rebuild it): the unknowns, locked and coupled indices,
    the unknowns' bounds with the limits of linearly coupled joints folded in, the coupled coordinates whose
    limits are checked instead, and the full-turn unknowns. Read-only, but for the coupled values of the last
    :meth:`apply_couplings` and the solvers' constants (:attr:`solver_constants`, filled on first use)."""

    def __init__(self, mechanism: Mechanism, lock_idx: dict):
        lock_idx = dict(lock_idx)
        dependent = {mechanism.coordinate_index(n) for n in mechanism.couplings}
        # a coupled coordinate locked without a value is fine when every joint it follows is locked (or so
        # determined) too, as when locking "everything but the mast" on a rover with a differential
        determined: set[int] = set()
        for n, expr in mechanism.couplings.items():          # dependencies first
            i = mechanism.coordinate_index(n)
            if i in lock_idx and lock_idx[i] is None and all(
                    (k in lock_idx or k in determined) for k in map(mechanism.coordinate_index, expr.variables)):
                del lock_idx[i]
                determined.add(i)
        bad = sorted(mechanism.coordinate_names[i] for i in lock_idx if i in dependent)
        if bad:
            raise InvalidConfiguration(f"cannot lock coupled coordinate(s) {bad}: lock the joints they follow")
        self.mechanism = mechanism
        self.free = _ro(np.array([i for i in range(mechanism.nq) if i not in dependent and i not in lock_idx],
                                 dtype=int))
        self.locked = _ro(np.array(sorted(lock_idx), dtype=int))
        mask = np.zeros(mechanism.nq, dtype=bool)
        mask[self.free] = True
        self.free_mask = _ro(mask)
        #: indices of the coupled (dependent) coordinates
        self.dependent = frozenset(dependent)
        self.all_free = len(self.free) == mechanism.nq
        self.has_couplings = bool(mechanism.couplings)
        #: the coordinates the couplings read (their expressions' variables)
        self.coupling_sources = _ro(coupling_sources(mechanism))
        lo = np.array(mechanism.lower_limits[self.free])
        hi = np.array(mechanism.upper_limits[self.free])
        self._fold_coupling_limits(lo, hi)
        self.lower, self.upper = _ro(lo), _ro(hi)
        #: the bounds per coordinate (nq,): the unknowns' at theirs, -inf / inf elsewhere (a seed is put within
        #: the unknowns' bounds by two full-length calls, without a gather and a scatter)
        lo_q, hi_q = np.full(mechanism.nq, -np.inf), np.full(mechanism.nq, np.inf)
        lo_q[self.free], hi_q[self.free] = lo, hi
        self.lower_q, self.upper_q = _ro(lo_q), _ro(hi_q)
        span = hi - lo
        self.wrap = _ro((~mechanism.coordinate_is_prismatic[self.free]) & np.isfinite(span) &
                        (span >= 2 * math.pi - 1e-9))
        # the periodic unknowns without a joint constraint (IKProblem._init_periodic): a mask over the
        # unknowns, their positions among them and their coordinates
        self.periodic = _ro(angle_coordinates(mechanism)[self.free])
        self.any_periodic = bool(self.periodic.any())
        self.periodic_at = np.flatnonzero(self.periodic).tolist()
        self.periodic_coords = _ro(self.free[self.periodic])
        self.periodic_bounds = (self.lower[self.periodic].tolist(), self.upper[self.periodic].tolist())
        #: (lower - 1e-9, upper + 1e-9) per coordinate as float lists for IKProblem.within_limits on
        #: mechanisms of up to FLOAT_CHECK_MAX coordinates (a loop over floats beats the array calls there)
        self.within = ((mechanism.lower_limits - 1e-9).tolist(), (mechanism.upper_limits + 1e-9).tolist()) \
            if mechanism.nq <= FLOAT_CHECK_MAX else None
        self.dependent_coords = _ro(np.array(sorted(dependent), dtype=int))
        self._last_coupled = None         # (source values, coupled values) of the last apply_couplings
        #: per-task constants of solvers on this structure, by the solver's own key (solvers._ChainKernel)
        self.solver_constants = {}
        self._plain_chains: dict = {}     # plain_chain's answers by frame
        del self.mechanism

    def plain_chain(self, mechanism: Mechanism, frame: str) -> bool:
        """Whether a single pose constraint on ``frame`` is solved on a *plain chain* of ``mechanism``: no joint of
        the frame's chain is coupled or read by a coupling (its joints are unknowns or locked). An answer that
        moves the chain's joints alone then has the full coordinates of the seed (couplings applied) with the
        chain's replaced, no coupling evaluated (:meth:`~.problem.IKProblem.expand_chain`: the closed forms'
        answers). Computed once per frame (a race computes the same value twice)."""
        hit = self._plain_chains.get(frame)
        if hit is None:
            coords = frame_chain(mechanism, frame).coords
            hit = self._plain_chains[frame] = not (np.isin(coords, self.coupling_sources).any()
                                                   or np.isin(coords, self.dependent_coords).any())
        return hit

    def apply_couplings(self, mechanism: Mechanism, q: np.ndarray) -> np.ndarray:
        """``mechanism.apply_couplings(q)``: ``q`` (a new float array, modified) with every coupled coordinate
        set from its expression. The expressions read only the coupling sources, so the coupled values of the
        last call are reused when the sources hold the same values (seeds of a mechanism whose coupled joints
        follow joints the solves leave alone: a Panda's fingers); thread-safe (one tuple, replaced whole)."""
        src = self.coupling_sources
        key = q[src].tobytes()
        last = self._last_coupled
        if last is not None and last[0] == key:
            q[self.dependent_coords] = last[1]
            return q
        out = mechanism.apply_couplings(q)
        self._last_coupled = (key, out[self.dependent_coords])
        return out

    def _fold_coupling_limits(self, lo, hi):
        """Fold the limits of coupled coordinates that follow one unknown linearly into that unknown's
        bounds; the others (non-linear or several-variable couplings) are listed in ``limit_checked`` and
        solvers keep them within limits by rejecting steps that would leave them (see :meth:`violation`)."""
        m = self.mechanism
        pos = {int(i): k for k, i in enumerate(self.free)}
        checked = []
        lins = derived(m, "ik.coupling_linear_forms", _linear_forms)     # constant per mechanism, parsed once
        for name, expr in m.couplings.items():
            lin = lins[name]
            i = m.coordinate_index(name)
            bounded = bool(np.isfinite(m.lower_limits[i]) or np.isfinite(m.upper_limits[i]))
            if lin is None or len(lin[0]) != 1:
                if bounded:
                    checked.append(i)
                continue
            (var, a), b = next(iter(lin[0].items())), lin[1]
            k = pos.get(m.coordinate_index(var))
            if k is None or a == 0:
                continue
            i = m.coordinate_index(name)
            bounds = sorted(((m.lower_limits[i] - b) / a, (m.upper_limits[i] - b) / a))
            lo[k] = max(lo[k], bounds[0])
            hi[k] = min(hi[k], bounds[1])
            if lo[k] > hi[k]:
                raise InvalidConfiguration(f"limits of {name!r} and of {var!r} leave no valid value")
        #: coupled coordinates (indices into q) whose limits are checked rather than folded into bounds
        self.limit_checked = _ro(np.array(checked, dtype=int))
        self.lc_lo = _ro(m.lower_limits[self.limit_checked])
        self.lc_hi = _ro(m.upper_limits[self.limit_checked])


def coupling_sources(m: Mechanism) -> np.ndarray:
    """The coordinate indices (sorted, int) that ``m``'s couplings read (their expressions' variables)."""
    return np.array(sorted({m.coordinate_index(v) for e in m.couplings.values() for v in e.variables}), dtype=int)


def _ro(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


#: structures kept per mechanism (a memo of its derived data, :mod:`..data`, by tuple of locked names)
STRUCTURE_MAX = 64
#: coordinates up to which IKProblem.within_limits compares floats rather than arrays
FLOAT_CHECK_MAX = 32


def _linear_forms(m: Mechanism) -> dict:
    """``{coupled coordinate: linear_coefficients() of its expression}`` of ``m``."""
    return {name: expr.linear_coefficients() for name, expr in m.couplings.items()}


def angle_coordinates(m: Mechanism) -> np.ndarray:
    """Per coordinate of ``m`` (kept in its derived data, read-only): the angle of a one-axis revolute joint
    that no model coupling reads."""
    return derived(m, "ik.angle_coordinates", _build_angle_coordinates)


def _build_angle_coordinates(m: Mechanism) -> np.ndarray:
    angle = np.zeros(m.nq, dtype=bool)
    for j in m.joints:
        if j.dof == 1 and j.type.value in ("revolute", "continuous"):
            angle[m.joint_slice(j.name).start] = True
    for expr in m.couplings.values():
        for v in expr.variables:
            angle[m.coordinate_index(v)] = False
    angle.flags.writeable = False
    return angle
