"""Analytic IK of decomposable revolute chains through ``eaik`` (optional extra ``eaik``: ``pip install eaik``;
Ostermeier et al., "Automatic geometric decomposition for analytical inverse kinematics", 2025).

``eaik`` solves 1-6R chains whose axes it can decompose into Paden-Kahan subproblems (spherical wrists, three
parallel axes, intersecting axes...) and returns every branch in microseconds. A 7R chain is solved as IKFast
does: one joint (the *swept* joint, chosen when the solver is built: the last one, else the third, else the
first whose locking leaves a decomposable 6R) is held at a value and the other six solved in closed form: at
the seed's value, then at the values it has in the lane engine's seed-table configurations whose pose is nearest
the target, then sweeping outward from the seed's in steps of 1/64 of its range until an in-limit branch appears.

The chain's geometry is read from the core's own chain (:func:`~mechanism_model_core.kinematics.frame_chain`)
at zero: joint axes and origins in the ground frame, and the frame's rotation there. Every analytic answer is
confirmed by the core's forward kinematics before it counts (branches ``eaik`` marks as least-squares
approximations are dropped); the in-limit branch nearest the seed (whole turns chosen per joint) is returned,
and the population LM (:class:`~..batch.LMPopulationSolver`) is the fallback.

:func:`eaik_solver_for` detects the solver for a mechanism and frame (cached, None when ``eaik`` is absent or
the chain does not decompose); ``solve_ik(solver="auto")`` uses it for full-pose targets; ``solver="eaik"``
asks for it explicitly and raises :class:`~mechanism_model_core.errors.ModelStructureError` when the chain
does not fit. :func:`ik_solutions` lists every branch.
"""

from __future__ import annotations

import math
import threading
import time
import weakref

import numpy as np

from ...constraints import PoseConstraint
from ...data import memo
from ...errors import InvalidConfiguration, MechanismModelError, ModelStructureError
from ...kinematics import forward_kinematics, frame_chain
from ...model import Mechanism
from ...spatial import log_so3, wrap_angle
from ..batch import LMPopulationSolver, chain_engine, lane_data
from ..problem import IKOptions, IKProblem, IKResult
from ..registry import register_solver
from ...extras import install_hint

__all__ = ["EAIKSolver", "eaik_available", "eaik_solver_for", "ik_solutions"]

#: the sweep of a 7R chain's held joint: steps of its range / SWEEP_STEPS, outward from the seed's value
SWEEP_STEPS = 64
#: swept values tried after the seed's: those of the seed-table entries nearest the target (EAIKSolver._hints)
SWEEP_HINTS = 5
#: a branch counts when forward kinematics puts the frame within this of the target (m, rad)
CONFIRM_TOL = 1e-9


_EAIK_MODULE = []      # [module or None] once looked up: every solve_ik asks, and a failed import is slow


def _eaik():
    if not _EAIK_MODULE:
        try:
            import eaik.pybindings.EAIK as EAIK     # optional extra: imported where it is used
        except ImportError:
            EAIK = None
        _EAIK_MODULE.append(EAIK)
    return _EAIK_MODULE[0]


def eaik_available() -> bool:
    """True when the optional ``eaik`` package is installed."""
    return _eaik() is not None


class EAIKSolver:
    """Closed-form IK of the revolute chain from the ground to ``frame`` (module docstring). Raises
    :class:`ModelStructureError` when the chain has a prismatic joint, more than 7 joints, or no known
    decomposition, and :class:`MechanismModelError` when ``eaik`` is not installed."""

    name = "eaik"

    def __init__(self, mechanism: Mechanism, frame: str, theta=None, variable=None):
        """``theta`` (chain steps,) and ``variable`` (bool, chain steps): the steps held (``~variable``) at
        their ``theta`` values (a rover's chassis, locked joints); by default every step is variable."""
        EAIK = _eaik()
        if EAIK is None:
            raise MechanismModelError(f"the closed-form solver needs eaik: {install_hint('eaik')}")
        m = mechanism
        self._mechanism = weakref.ref(m)
        self.frame = frame
        self.ground = m.ground
        ch = frame_chain(m, frame)
        self.chain = ch
        N = ch.n
        var = np.ones(N, dtype=bool) if variable is None else np.asarray(variable, dtype=bool)
        self.theta = np.zeros(N) if theta is None else np.array(theta, dtype=float)
        self.theta[var] = 0.0
        self.steps = np.flatnonzero(var)
        n = self.n = len(self.steps)
        if ch.any_prismatic and bool(np.any(ch.prismatic[var])):
            raise ModelStructureError(f"eaik: the chain to {frame!r} has a prismatic joint")
        if not 1 <= n <= 7:
            raise ModelStructureError(f"eaik: the chain to {frame!r} has {n} joints; 1 to 7 revolute joints fit")
        if m.couplings and any(m.coordinate_names[i] in m.couplings for i in ch.coords):
            raise ModelStructureError(f"eaik: the chain to {frame!r} carries coupled joints")
        # product of exponentials at the reference configuration (variables 0, held steps at their values):
        # the variable joints' axes and origins in the ground, the frame's rotation there
        Tf, _ = ch.evaluate(self.theta)
        P = ch.Pm.reshape(N, 4, 4)
        w = np.stack([np.sin(self.theta), 1.0 - np.cos(self.theta), self.theta], axis=1)
        Ls = (ch.Pm + np.einsum("nk,nkj->nj", w, ch.coef)).reshape(N, 4, 4)
        C = [Ls[0]]
        for i in range(1, N):
            C.append(C[-1] @ Ls[i])
        del P
        H = np.array([C[i][:3, 2] for i in self.steps])
        O = np.array([C[i][:3, 3] for i in self.steps])
        self.H = H
        self.P = np.vstack([O[0], np.diff(O, axis=0), Tf[:3, 3] - O[-1]])
        self.R0 = Tf[:3, :3].copy()
        self.coords = np.array(ch.coords)[self.steps]
        # reach bound: no pose farther than this from the first joint's origin (sum of the origin offsets)
        self.origin = O[0].copy()
        self._origin = tuple(self.origin.tolist())
        self.reach = float(np.sum(np.linalg.norm(self.P[1:], axis=1)))
        lo, hi = m.lower_limits[self.coords], m.upper_limits[self.coords]
        self.lower, self.upper = lo, hi
        self._lo_in, self._hi_in = lo - 1e-12, hi + 1e-12      # the in-limit test's bounds
        self._wide = _wide_bounds(lo, hi)
        self._EAIK = EAIK
        self.swept = None
        self._robots = {}
        self._lock = threading.Lock()
        if n == 7:
            order = [6, 2, 0] + [i for i in range(7) if i not in (6, 2, 0)]
            for i in order:
                r = _robot_or_none(EAIK, H, self.P, self.R0, [(i, 0.0)])
                if r is not None and r.has_known_decomposition():
                    self.swept = i
                    self.family = r.get_kinematic_family()
                    break
            else:
                raise ModelStructureError(f"eaik: no joint of the 7R chain to {frame!r} leaves a decomposable 6R "
                                          f"chain when held")
        else:
            r = _robot_or_none(EAIK, H, self.P, self.R0, [])
            if r is None or not r.has_known_decomposition():
                family = "eaik refused the geometry" if r is None else r.get_kinematic_family()
                raise ModelStructureError(f"eaik: the chain to {frame!r} has no known decomposition ({family})")
            self.family = r.get_kinematic_family()
            self._robots[None] = r
        if self.swept is not None:
            i = self.swept
            lo_s = self.lower[i] if math.isfinite(self.lower[i]) else -math.pi
            hi_s = self.upper[i] if math.isfinite(self.upper[i]) else math.pi
            k = np.arange(1, SWEEP_STEPS + 1) * (hi_s - lo_s) / SWEEP_STEPS
            self._sweep = (lo_s, hi_s, np.concatenate([[0.0], np.stack([k, -k], axis=1).ravel()]))
        self._fallback = LMPopulationSolver()

    @property
    def mechanism(self) -> Mechanism | None:
        return self._mechanism()

    def _robot(self, value):
        if self.swept is None:
            return self._robots[None]
        return _robot_or_none(self._EAIK, self.H, self.P, self.R0, [(self.swept, float(value))])

    def _confirmed(self, T, Q, tol):
        """The rows of ``Q`` whose forward kinematics (the core's chain) reaches ``T`` within ``tol``."""
        out = []
        th = self.theta.copy()
        for q in Q:
            th[self.steps] = q
            Tf, _ = self.chain.evaluate(th)
            if np.linalg.norm(Tf[:3, 3] - T[:3, 3]) <= tol and \
                    np.linalg.norm(log_so3(Tf[:3, :3] @ T[:3, :3].T)) <= tol:
                out.append(q)
        return out

    def branches(self, T, swept_value: float = 0.0, tol: float | None = CONFIRM_TOL) -> list[np.ndarray]:
        """Every exact analytic branch (chain joint values, limits not applied) for the frame at ground pose
        ``T``, confirmed by forward kinematics within ``tol`` (None: not confirmed here; the caller does);
        for a 7R chain, with the swept joint at ``swept_value``."""
        robot = self._robot(swept_value)
        if robot is None:
            return []
        sol = robot.calculate_IK(np.asarray(T, dtype=float))
        Q = [np.array(q, dtype=float) for q, ls in zip(sol.Q, sol.is_LS) if not ls]
        if not Q or tol is None:
            return Q
        return self._confirmed(T, Q, tol)

    def accepts(self, problem: IKProblem) -> bool:
        if len(problem.tasks) != 1 or problem.posture is not None:
            return False
        c = problem.tasks[0]
        return (isinstance(c, PoseConstraint) and c.frame == self.frame and c.mask_frame == "reference"
                and len(c.kept_axes) == 6 and problem.mechanism is self.mechanism
                and (problem.all_free or bool(problem.free_mask[self.coords].all()))
                and (c.relative_to in (None, self.ground) or problem.holds(c.relative_to)))

    def _nearest(self, q, ref):
        """``q`` with whole turns chosen per joint to lie within limits nearest ``ref``; None if it cannot."""
        q = ref + wrap_angle(q - ref)
        lo, hi = self.lower, self.upper
        q = np.where(q < lo - 1e-12, q + 2 * math.pi, q)
        q = np.where(q > hi + 1e-12, q - 2 * math.pi, q)
        if np.all(q >= lo - 1e-12) and np.all(q <= hi + 1e-12):
            return np.clip(q, lo, hi)
        return None

    def _sweep_values(self, ref, hints=()):
        """The swept joint's values in sweep order: its ``ref`` value (clamped into range), then the ``hints``
        (clamped into range), then outward from ``ref``'s in steps of 1/SWEEP_STEPS of its range, alternately
        above and below, within the range."""
        i = self.swept
        lo, hi, offsets = self._sweep
        v = min(max(float(ref[i]), lo), hi) + offsets
        v = v[(v >= lo) & (v <= hi)].tolist()
        if len(hints):
            v[1:1] = self._swept_in_range(hints)
        return v

    def _swept_in_range(self, values) -> list:
        """Values of the swept joint clamped into its range."""
        lo, hi, _ = self._sweep
        return [min(max(float(h), lo), hi) for h in values]

    def candidates(self, T, ref, deadline=math.inf, tol=None, hints=()):
        """In-limit branches nearest ``ref`` first (chain joint values; confirmed within ``tol`` when given,
        else the caller confirms them); for a 7R chain, from the first swept value that gives any: ``ref``'s,
        then the ``hints`` (values of the swept joint to try next, or a function giving them, called only when
        ``ref``'s value gives none), then outward from ``ref``'s."""
        T = np.asarray(T, dtype=float)
        lo, hi = self.lower, self.upper
        wide = _wide_level(self._wide, ref)
        values = [None] if self.swept is None else self._sweep_values(ref, () if callable(hints) else hints)
        EAIK, H, P, R0, i = self._EAIK, self.H, self.P, self.R0, self.swept
        for k, v in enumerate(values):
            if k == 1 and callable(hints):               # ref's value gave none: the hints next
                values[1:1] = self._swept_in_range(hints())
                v = values[1]
            if v is None:
                robot = self._robots[None]
            else:
                if time.perf_counter() > deadline:
                    break
                robot = _robot_or_none(EAIK, H, P, R0, [(i, v)])
                if robot is None:
                    continue
            sol = robot.calculate_IK(T)
            Q = np.asarray(sol.Q, dtype=float)
            if Q.shape[0] == 0:
                continue
            ls = np.asarray(sol.is_LS, dtype=bool)
            if np.count_nonzero(ls):
                Q = Q[~ls]                        # least-squares approximations are not answers
                if Q.shape[0] == 0:
                    continue
            if v is not None:
                Q = Q.copy()
                Q[:, i] = v
            Q = _in_limit_turns(Q, ref, self._lo_in, self._hi_in, lo, hi, wide)
            if Q is None:
                continue
            if tol is not None:
                Q = np.array(self._confirmed(T, Q, tol)).reshape(-1, Q.shape[1])
                if Q.shape[0] == 0:
                    continue
            if Q.shape[0] == 1:
                return [Q[0]]
            D = Q - ref
            D *= D
            return [Q[k] for k in np.add.reduce(D, axis=1).argsort(kind="stable")]
        return []

    def solve(self, problem: IKProblem, options: IKOptions) -> IKResult:
        c = problem.tasks[0]
        x0 = problem.x_of(problem.template)
        # (accepts: every chain joint is an unknown; all of them free: the unknowns are the coordinates)
        cols = self.coords if problem.all_free else np.searchsorted(problem.free, self.coords)
        T = c.target
        if c.relative_to not in (None, self.ground):     # a frame the locked joints hold: T in the ground frame
            T = forward_kinematics(problem.mechanism, problem.template).pose(c.relative_to) @ T
        tx, ty, tz = T[:3, 3].tolist()
        ox, oy, oz = self._origin
        dx, dy, dz = tx - ox, ty - oy, tz - oz
        far = math.sqrt(dx * dx + dy * dy + dz * dz) > self.reach + options.tol_position
        plain = problem.plain_pose is not None
        hints = () if far or self.swept is None else (lambda: self._hints(problem, options, cols))
        for q in ([] if far else self.candidates(T, x0[cols], options.deadline, hints=hints)):
            x = x0.copy()
            x[cols] = q
            # the result's residuals are the core's forward kinematics: the confirmation of the branch
            # (a plain pose: the frame's pose alone, handed to result rather than evaluated a second time)
            if plain:
                qf = problem.expand(x)
                r = problem.result(x, True, "converged", options, 1, 0, self.name,
                                   residual=problem.plain_residual(qf), q=qf)
            else:
                r = problem.result(x, True, "converged", options, 1, 0, self.name)
            if r.success and r.residuals[0].satisfied:
                return r
        res = self._fallback.solve(problem, options)
        res.solver = f"{self.name}+{res.solver}"
        return res


    def _hints(self, problem: IKProblem, options: IKOptions, cols) -> np.ndarray:
        """The swept joint's values in the lane engine's seed-table configurations whose frame pose is nearest
        the target (:meth:`~..batch.LaneEngine.nearest_starts`: in-limit configurations near the pose, whose
        swept value usually has an in-limit branch where the seed's has none: a Panda solve from a random
        seed tries 2 swept values at the median instead of 7). Building the table is not billed."""
        t0 = time.perf_counter()
        E = chain_engine(problem)
        if E is None:
            return ()
        E.seed_table()
        if time.perf_counter() - t0 > 0.5e-3:          # the first solve built the caches: not billed
            options.deadline += time.perf_counter() - t0
        j = np.flatnonzero(E.var_x == cols[self.swept])
        if not j.size:
            return ()
        _, _, pt, RtT, _ = lane_data(problem)
        near = E.nearest_starts(pt[None], RtT[None], SWEEP_HINTS)
        return () if near is None else near[0][:, int(j[0])]


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
    D = Q - ref
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


def _robot_or_none(EAIK, H, P, R0, fixed):
    """``eaik``'s robot for axes ``H``, offsets ``P``, end rotation ``R0`` and held joints, or None where
    ``eaik`` refuses the geometry (it raises RuntimeError for some degenerate axis pairs)."""
    try:
        return EAIK.Robot(H.T, P.T, R0, fixed, True)
    except (RuntimeError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------- detection
_NONE = object()


def eaik_solver_for(mechanism: Mechanism, frame: str, problem: IKProblem | None = None):
    """The :class:`EAIKSolver` of ``frame``'s chain, or None (``eaik`` absent, or the chain does not fit);
    built once per mechanism, frame and -- for a ``problem`` with locked joints on the chain -- the locked
    joints' values (a memo of the mechanism's derived data, :mod:`...data`)."""
    if not eaik_available():
        return None
    key, theta, variable = _held(mechanism, frame, problem)
    solvers = memo(mechanism, "ik.eaik_solvers", _MAX_PER_MECHANISM)
    hit = solvers.peek(key)
    if hit is None:
        try:
            hit = EAIKSolver(mechanism, frame, theta, variable)
        except ModelStructureError:
            hit = _NONE
        hit = solvers.put(key, hit)
    return None if hit is _NONE else hit


def _held(mechanism, frame, problem):
    """``(cache key, theta, variable)``: the chain steps a problem holds (locked joints) and their values."""
    if problem is None or problem.all_free:
        return frame, None, None
    ch = frame_chain(mechanism, frame)
    variable = problem.free_mask[ch.coords]
    if variable.all():
        return frame, None, None
    theta = np.array(problem.template[ch.coords], dtype=float)
    return (frame, variable.tobytes(), theta[~variable].tobytes()), theta, variable


#: closed forms kept per mechanism (frames, and poses of locked joints on the chain)
_MAX_PER_MECHANISM = 64


class _Explicit:
    """``solve_ik(..., solver="eaik")``: the closed form for the problem's chain, or a clear error."""

    name = "eaik"

    def solve(self, problem: IKProblem, options: IKOptions) -> IKResult:
        c = problem.tasks[0] if len(problem.tasks) == 1 else None
        if not isinstance(c, PoseConstraint):
            raise InvalidConfiguration("solver 'eaik' takes one PoseConstraint (full pose, no mask)")
        s = eaik_solver_for(problem.mechanism, c.frame, problem)
        if s is None:                                     # raises the reason (no eaik, or no decomposition)
            _, theta, variable = _held(problem.mechanism, c.frame, problem)
            EAIKSolver(problem.mechanism, c.frame, theta, variable)
        if not s.accepts(problem):
            raise InvalidConfiguration(f"solver 'eaik' does not fit this problem: it needs a full pose of "
                                       f"{c.frame!r} in the ground frame or in a frame the locked joints "
                                       f"hold, no mask or posture, the chain's joints free")
        return s.solve(problem, options)


def ik_solutions(mechanism: Mechanism, frame: str, T, q_ref=None, *, within_limits: bool = True,
                 swept_value: float | None = None) -> np.ndarray:
    """Every analytic IK branch putting ``frame`` at ground pose ``T``: (k, nq) full configurations (the
    other joints at ``q_ref``, home by default), nearest ``q_ref`` first; only in-limit ones (whole turns
    chosen per joint) unless ``within_limits=False``. A 7R chain's swept joint is held at ``swept_value``
    (default: its ``q_ref`` value). Raises :class:`ModelStructureError` when the chain has no closed form."""
    s = eaik_solver_for(mechanism, frame)
    if s is None:
        EAIKSolver(mechanism, frame)                      # raises the reason
    T = np.asarray(T, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise InvalidConfiguration(f"T must be a finite 4x4 pose, got shape {T.shape}")
    q_ref = mechanism.configuration(q_ref)
    ref = q_ref[s.coords]
    v = 0.0 if s.swept is None else (ref[s.swept] if swept_value is None else float(swept_value))
    out = []
    for q in s.branches(T, v):
        if s.swept is not None:
            q[s.swept] = v
        if within_limits:
            q = s._nearest(q, ref)
            if q is None:
                continue
        full = q_ref.copy()
        full[s.coords] = q
        out.append((float(np.sum((q - ref) ** 2)), full))
    out.sort(key=lambda t: t[0])
    return np.array([q for _, q in out]).reshape(-1, mechanism.nq)


register_solver("eaik", _Explicit)
