"""Analytic IK of decomposable revolute chains through ``eaik`` (optional extra ``eaik``: ``pip install eaik``;
Ostermeier et al., "Automatic geometric decomposition for analytical inverse kinematics", 2025).

``eaik`` solves 1-6R chains whose axes it can decompose into Paden-Kahan subproblems (spherical wrists, three
parallel axes, intersecting axes...) and returns every branch in microseconds. A 7R chain is solved as IKFast
does: one joint (the *swept* joint) is held at a value and the other six solved in closed form: at the seed's
value, then at the values it has in the 10 configurations of the hint table (2,048 in-limit ones, drawn once)
whose frame pose is nearest the target, then sweeping outward from the seed's in steps of 1/64 of its range until
an in-limit branch appears. The swept joint is chosen when the solver is built, among the joints whose holding
leaves a decomposable 6R: the last one (else the third, else the first), unless another's seed value gives an
in-limit branch at once clearly more often, measured on 24 reachable targets from random seeds and from the
middle of the ranges (:meth:`EAIKSolver._measured_choice`; an SRS arm such as the iiwa sweeps its third joint: at
once for 86-99 % of targets, against 45 % for its last).

The chain's geometry is read from the core's own chain (:func:`~mechanism_model_core.kinematics.frame_chain`)
at zero: joint axes and origins in the ground frame, and the frame's rotation there -- or, when a problem locks
the joints before the first free one (a rover's chassis pose, a locked mast), in the frame where they end: the
target is moved into it, and one solver serves every pose of the base (:meth:`EAIKSolver.base_pose`). Every
analytic answer is confirmed by the core's forward kinematics before it counts (branches ``eaik`` marks as least-squares
approximations are dropped, and held values whose geometry ``eaik`` cannot decompose are skipped); of the first
swept value that has any in-limit branch, the one nearest the seed (whole turns chosen per joint; the sum of
squared joint differences) is returned, and the population LM (:class:`~..batch.LMPopulationSolver`) is the
fallback.

:func:`eaik_solver_for` detects the solver for a mechanism and frame (cached, None when ``eaik`` is absent or
the chain does not decompose); ``solve_ik(solver="auto")`` uses it for full-pose targets; ``solver="eaik"``
asks for it explicitly and raises :class:`~mechanism_model_core.errors.ModelStructureError` when the chain
does not fit. :func:`~.solutions.ik_solutions` lists every branch.
"""

from __future__ import annotations

import math
import time
import weakref

import numpy as np

from ...constraints import PoseConstraint
from ...data import memo
from ...errors import InvalidConfiguration, MechanismModelError, ModelStructureError
from ...kinematics import forward_kinematics, frame_chain
from ...model import Mechanism
from ...spatial import inverse, log_so3
from ..batch import ORIENTATION_WEIGHT, LMPopulationSolver, chain_engine, lane_data
from ..problem import IKOptions, IKProblem, IKResult
from ..registry import register_solver
from .axis_snap import SNAP_RATIO, snap_geometry
from .base_frame import BaseFrame, suffix_products
from .branch_turns import _in_limit_turns, _wide_bounds, _wide_level, nearest_first  # noqa: F401
from ...extras import install_hint

__all__ = ["EAIKSolver", "eaik_available", "eaik_solver_for"]

#: the sweep of a 7R chain's held joint: steps of its range / SWEEP_STEPS, outward from the seed's value
SWEEP_STEPS = 64
#: joints of a 7R chain tried first as the swept one (chain order from 0), then the others in order; of those
#: whose holding leaves a decomposable 6R, the first is kept unless another is measured better
#: (EAIKSolver._measured_choice)
SWEEP_ORDER = (6, 2, 0)
#: reachable targets (and as many random seeds, and the middle of the ranges) measured per joint to choose
CHOICE_SAMPLES = 24
CHOICE_RNG = 20261128
#: the rate of an in-limit branch at the seed's value by which another joint must beat the first to be swept
CHOICE_MARGIN = 0.15
#: eaik robots (about 2 kB each) kept per solver for the hint table's values, and for others met again (the middle
#: of a range); each cache is cleared when full
TABLE_ROBOTS_KEPT = 1024
ROBOTS_KEPT = 512
#: swept values tried after the seed's: those of the hint-table entries nearest the target (EAIKSolver.hints)
SWEEP_HINTS = 10
#: in-limit configurations (a fixed random draw) whose frame poses and swept values make the hint table
HINT_TABLE = 2048
HINT_RNG = 20261127
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


class _ChainClosedForm:
    """What the ``eaik``-based closed forms share (:class:`EAIKSolver`,
    :class:`~.near_decomposable.NearDecomposableSolver`): ``eaik``'s bindings (``_EAIK``; ``what`` names the solver
    in the :class:`MechanismModelError` raised without them), the chain from the ground to ``frame``
    (:attr:`chain`) of a mechanism held by weak reference (a solver is kept in the mechanism's own derived data),
    and the test of the one task such a solver takes (:meth:`_one_full_pose`)."""

    def __init__(self, mechanism: Mechanism, frame: str, what: str):
        EAIK = _eaik()
        if EAIK is None:
            raise MechanismModelError(f"{what} needs eaik: {install_hint('eaik')}")
        self._EAIK = EAIK
        self._mechanism = weakref.ref(mechanism)
        self.frame = frame
        self.ground = mechanism.ground
        self.chain = frame_chain(mechanism, frame)

    @property
    def mechanism(self) -> Mechanism | None:
        return self._mechanism()

    def _one_full_pose(self, problem: IKProblem) -> bool:
        """Whether ``problem`` is one full pose of :attr:`frame` (every axis, masked in the reference's axes: none)
        on this solver's mechanism, without a posture, relative to the ground or to a frame whose pose the problem
        holds constant."""
        if len(problem.tasks) != 1 or problem.posture is not None:
            return False
        c = problem.tasks[0]
        return (isinstance(c, PoseConstraint) and c.frame == self.frame and c.mask_frame == "reference"
                and len(c.kept_axes) == 6 and problem.mechanism is self.mechanism
                and (c.relative_to in (None, self.ground) or problem.holds(c.relative_to)))


class EAIKSolver(_ChainClosedForm):
    """Closed-form IK of the revolute chain from the ground to ``frame`` (module docstring). Raises
    :class:`ModelStructureError` when the chain has a prismatic joint, more than 7 joints, or no known
    decomposition, and :class:`MechanismModelError` when ``eaik`` is not installed."""

    name = "eaik"

    def __init__(self, mechanism: Mechanism, frame: str, theta=None, variable=None):
        """``theta`` (chain steps,) and ``variable`` (bool, chain steps): the steps held (``~variable``) at
        their ``theta`` values (a rover's chassis, locked joints); by default every step is variable."""
        super().__init__(mechanism, frame, "the closed-form solver")
        EAIK, m, ch = self._EAIK, mechanism, self.chain
        N = ch.n
        var = np.ones(N, dtype=bool) if variable is None else np.asarray(variable, dtype=bool)
        self.theta = np.zeros(N) if theta is None else np.array(theta, dtype=float)
        self.theta[var] = 0.0
        self.steps = np.flatnonzero(var)
        n = self.n = len(self.steps)
        #: held steps before the first variable one (a rover's chassis pose, a locked mast or torso): the solver
        #: works in the frame they end in (the first variable step's parent), whatever their values
        self.base_steps = int(self.steps[0]) if n else 0
        self.theta[:self.base_steps] = 0.0
        self.base = BaseFrame(m, ch, self.base_steps)
        if ch.any_prismatic and bool(np.any(ch.prismatic[var])):
            raise ModelStructureError(f"eaik: the chain to {frame!r} has a prismatic joint")
        if not 1 <= n <= 7:
            raise ModelStructureError(f"eaik: the chain to {frame!r} has {n} joints; 1 to 7 revolute joints fit")
        if m.couplings and any(m.coordinate_names[i] in m.couplings for i in ch.coords):
            raise ModelStructureError(f"eaik: the chain to {frame!r} carries coupled joints")
        # product of exponentials at the reference configuration (variables 0, held steps after the first
        # variable one at their values): the variable joints' axes and origins in the base frame, the frame's
        # rotation there
        C, Tf = suffix_products(ch, self.theta, self.base_steps)
        H = np.array([C[i][:3, 2] for i in self.steps])
        O = np.array([C[i][:3, 3] for i in self.steps])
        self.H = H
        self.P = chain_offsets(O, Tf)
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
        #: the chain's joints are every coordinate of the mechanism, in order (a problem's unknowns when all free)
        self._whole = bool(np.array_equal(self.coords, np.arange(m.nq)))
        self.swept = None
        self._robots = {}                 # 7R: eaik's robots by held value of the swept joint (_robot_at)
        self._table_robots = {}           # 7R: those of the hint table's values
        self._table_values = frozenset()
        self._robot6 = None               # 6R: eaik's robot
        #: the largest move of an axis (m; a turn counted as its angle times the reach bound) that made the
        #: chain decomposable (:func:`snap_geometry`), 0.0 when it decomposes as read
        self.snap = 0.0
        if not _decomposable(EAIK, H, self.P, self.R0, n):
            for turn in (False, True):              # the points moved alone first: the smaller error
                Hs, Os, snap = snap_geometry(H, O, SNAP_RATIO * self.reach, turn)
                Ps = chain_offsets(Os, Tf)
                if snap > 0.0 and _decomposable(EAIK, Hs, Ps, self.R0, n):
                    self.H, self.P, self.snap = Hs, Ps, snap
                    break
        if n == 7:
            options = []
            for i in SWEEP_ORDER + tuple(i for i in range(7) if i not in SWEEP_ORDER):
                r = _robot_or_none(EAIK, self.H, self.P, self.R0, [(i, 0.0)])
                if r is not None and r.has_known_decomposition():
                    options.append((i, r.get_kinematic_family()))
            if not options:
                raise ModelStructureError(f"eaik: no joint of the 7R chain to {frame!r} leaves a decomposable 6R "
                                          f"chain when held")
            k = self._measured_choice([i for i, _ in options]) if len(options) > 1 else 0
            self.swept, self.family = options[k]
            self._sweep = self._sweep_of(self.swept)
            self._table = self._hint_table()
            self._table_values = frozenset(self._table[2].tolist())
        else:
            r = _robot_or_none(EAIK, self.H, self.P, self.R0, [])
            if r is None or not r.has_known_decomposition():
                family = "eaik refused the geometry" if r is None else r.get_kinematic_family()
                raise ModelStructureError(f"eaik: the chain to {frame!r} has no known decomposition ({family})")
            self.family = r.get_kinematic_family()
            self._robot6 = r
        self._fallback = LMPopulationSolver()
        self._fallback_ready = False

    def _robot(self, value):
        if self.swept is None:
            return self._robot6
        return self._robot_at(self.swept, float(value))

    def _robot_at(self, i, v):
        """``eaik``'s 6R robot with joint ``i`` held at ``v`` (rad), or None where ``eaik`` knows no
        decomposition of that geometry. The swept joint's are kept by value, the hint table's values apart from
        the others (the middle of the range, values met again) so that random seeds do not evict them, at most
        :data:`TABLE_ROBOTS_KEPT` and :data:`ROBOTS_KEPT` (floats as keys: the caches add no object the garbage
        collector tracks, so that solves do not set off its collections)."""
        if i == self.swept:
            r = self._table_robots.get(v, _NONE)
            if r is _NONE:
                r = self._robots.get(v, _NONE)
            if r is not _NONE:
                return r
        r = _robot_or_none(self._EAIK, self.H, self.P, self.R0, [(i, v)])
        if r is not None and not r.has_known_decomposition():
            r = None
        if i == self.swept:
            if v in self._table_values:
                if len(self._table_robots) >= TABLE_ROBOTS_KEPT:
                    self._table_robots.clear()
                self._table_robots[v] = r
            else:
                if len(self._robots) >= ROBOTS_KEPT:
                    self._robots.clear()
                self._robots[v] = r
        return r

    def _exact_at(self, i, v, T):
        """The exact branches (k, 7) of the 7R chain with joint ``i`` held at ``v`` for pose ``T`` (base frame)
        (joint values as ``eaik`` gives them; least-squares approximations dropped), or None."""
        robot = self._robot_at(i, v)
        if robot is None:
            return None
        try:
            sol = robot.calculate_IK(T)
        except RuntimeError:                       # eaik: no decomposition of this geometry after all
            return None
        ls = sol.is_LS
        if ls.all():                               # none, or least-squares approximations only
            return None
        Q = np.asarray(sol.Q, dtype=float)[~ls]
        Q[:, i] = v
        return Q

    def _in_limits(self, Q, ref, wide=0):
        """The rows of ``Q`` that lie within the limits with whole turns chosen per joint nearest ``ref``
        (:func:`_in_limit_turns`; ``wide``: ``_wide_level(self._wide, ref)`` when the caller has it), nearest
        ``ref`` first (an array (k, n), k >= 1; :func:`~.branch_turns.nearest_first`), or None."""
        Q = _in_limit_turns(Q, ref, self._lo_in, self._hi_in, self.lower, self.upper, wide)
        return None if Q is None else nearest_first(Q, ref)

    def _sweep_of(self, i):
        """``(lo, hi, step)``: the range swept of joint ``i`` (finite; a full turn where unlimited) and the step
        of the sweep outward from the seed's value (1/SWEEP_STEPS of the range)."""
        lo = self.lower[i] if math.isfinite(self.lower[i]) else -math.pi
        hi = self.upper[i] if math.isfinite(self.upper[i]) else math.pi
        return float(lo), float(hi), float(hi - lo) / SWEEP_STEPS

    def _measured_choice(self, options) -> int:
        """Index into ``options`` (joints whose holding leaves a decomposable 6R, in :data:`SWEEP_ORDER`) of the
        joint to sweep: the one whose seed's value most often has an exact in-limit branch at once, measured on
        :data:`CHOICE_SAMPLES` reachable targets (in-limit configurations, a fixed random draw) from the middle
        of the ranges and from random seeds -- the lower of the two rates -- where it beats the first option by
        more than :data:`CHOICE_MARGIN` (an SRS arm such as the iiwa: its third joint, at once for 0.86-0.99 of
        the targets against 0.45 for its last). An option stops being measured once it cannot win."""
        lo = np.where(np.isfinite(self.lower), self.lower, -math.pi)
        hi = np.where(np.isfinite(self.upper), self.upper, math.pi)
        rng = np.random.default_rng(CHOICE_RNG)
        N = CHOICE_SAMPLES
        targets = self._poses(lo + rng.random((N, 7)) * (hi - lo))
        seeds = (np.tile(0.5 * (lo + hi), (N, 1)), lo + rng.random((N, 7)) * (hi - lo))
        best, best_rate = 0, -1.0
        for k, i in enumerate(options):
            lo_s, hi_s, _ = self._sweep_of(i)
            need = 0.0 if k == 0 else best_rate + CHOICE_MARGIN      # the rate to beat
            rate = 1.0
            for S in seeds:
                hits = misses = 0
                for T, ref in zip(targets, S):
                    Q = self._exact_at(i, min(max(float(ref[i]), lo_s), hi_s), T)
                    if Q is not None and self._in_limits(Q, ref) is not None:
                        hits += 1
                    else:
                        misses += 1
                        if misses > N * (1.0 - need):                # cannot reach the rate to beat
                            break
                rate = min(rate, hits / N)
                if misses > N * (1.0 - need):
                    break
            if k == 0 or rate > need:
                best, best_rate = k, rate
        return best

    def base_pose(self, q) -> np.ndarray:
        """The ground pose (4x4) of the solver's base frame -- where the held steps before the first variable
        one end (the identity when there are none) -- at full coordinates ``q`` (an array). Every pose the
        solver takes or gives (``T`` of :meth:`candidates`, :meth:`branches`, :meth:`hints`) is in this
        frame (:class:`~.base_frame.BaseFrame`)."""
        return self.base.pose(q)

    def _confirmed(self, T, Q, tol):
        """The rows of ``Q`` whose forward kinematics (the core's chain from the base frame) reaches ``T``
        within ``tol``."""
        out = []
        th = self.theta.copy()
        for q in Q:
            th[self.steps] = q
            Tf = suffix_products(self.chain, th, self.base_steps)[1]
            if np.linalg.norm(Tf[:3, 3] - T[:3, 3]) <= tol and \
                    np.linalg.norm(log_so3(Tf[:3, :3] @ T[:3, :3].T)) <= tol:
                out.append(q)
        return out

    def branches(self, T, swept_value: float = 0.0, tol: float | None = CONFIRM_TOL) -> list[np.ndarray]:
        """Every exact analytic branch (chain joint values, limits not applied) for the frame at pose ``T`` in
        the base frame (:meth:`base_pose`), confirmed by forward kinematics within ``tol`` (None: not confirmed
        here; the caller does); for a 7R chain, with the swept joint at ``swept_value``."""
        robot = self._robot(swept_value)
        if robot is None:
            return []
        sol = robot.calculate_IK(np.asarray(T, dtype=float))
        Q = [np.array(q, dtype=float) for q, ls in zip(sol.Q, sol.is_LS) if not ls]
        if not Q or tol is None:
            return Q
        return self._confirmed(T, Q, tol)

    def accepts(self, problem: IKProblem) -> bool:
        return self._one_full_pose(problem) and (problem.all_free or bool(problem.free_mask[self.coords].all()))

    def _sweep_values(self, ref, hints=(), T=None):
        """The swept joint's values in sweep order (a generator): its ``ref`` value (clamped into range), then the
        ``hints`` (values, or a function of ``T`` giving them, called only once the first value is spent;
        clamped into range), then the range's ends, then outward from ``ref``'s in steps of 1/SWEEP_STEPS of its
        range, alternately above and below, within the range."""
        lo, hi, step = self._sweep
        v0 = min(max(float(ref[self.swept]), lo), hi)
        yield v0
        for h in (hints(T) if callable(hints) else hints):
            yield min(max(float(h), lo), hi)
        # the range's ends exactly: a pose with several joints at their limits (a stow pose, an arm folded
        # against its stops) can have an in-limit branch only there, which the steps below never hit
        if v0 != lo:
            yield lo
        if v0 != hi:
            yield hi
        for k in range(1, SWEEP_STEPS + 1):
            up, down = v0 + k * step, v0 - k * step
            if up > hi and down < lo:
                break
            if up <= hi:
                yield up
            if down >= lo:
                yield down

    def candidates(self, T, ref, deadline=math.inf, tol=None, hints=()):
        """In-limit branches nearest ``ref`` first (rows of chain joint values, an array or a list, empty when
        none; confirmed within ``tol`` when given,
        else the caller confirms them); for a 7R chain, from the first swept value that gives any: ``ref``'s,
        then the ``hints`` (values of the swept joint to try next, or a function of ``T`` giving them, such as
        :meth:`hints`, called only when ``ref``'s value gives none), then outward from ``ref``'s."""
        T = np.asarray(T, dtype=float)
        wide = _wide_level(self._wide, ref)
        if self.swept is None:
            sol = self._robot6.calculate_IK(T)
            ls = sol.is_LS
            k = np.count_nonzero(ls)                     # least-squares branches: dropped (none, usually)
            Q = np.asarray(sol.Q, dtype=float)
            B = None if k == ls.shape[0] else self._in_limits(Q[~ls] if k else Q, ref, wide)
            if B is not None and tol is not None:
                B = self._confirmed(T, B, tol)
            return [] if B is None else B
        i = self.swept
        for v in self._sweep_values(ref, hints, T):
            if time.perf_counter() > deadline:
                break
            Q = self._exact_at(i, v, T)
            if Q is None:
                continue
            B = self._in_limits(Q, ref, wide)
            if B is not None and tol is not None:
                B = self._confirmed(T, B, tol)
            if B is not None and len(B):
                return B
        return []

    def solve(self, problem: IKProblem, options: IKOptions) -> IKResult:
        c = problem.tasks[0]
        x0 = problem.x_of(problem.template)
        # (accepts: every chain joint is an unknown; all of them free: the unknowns are the coordinates)
        cols = self.coords if problem.all_free else self._columns(problem)
        T = c.target
        if c.relative_to is not None or self.base_steps:  # the target in the base frame (the held prefix's end)
            T = self.base.target(problem.template, T, c.relative_to)
        tx, ty, tz = T[:3, 3].tolist()
        ox, oy, oz = self._origin
        dx, dy, dz = tx - ox, ty - oy, tz - oz
        far = math.sqrt(dx * dx + dy * dy + dz * dz) > self.reach + options.tol_position
        plain = problem.plain_pose is not None
        hints = () if far or self.swept is None else self.hints
        if self.swept is not None and not self._fallback_ready:
            self._prepare_fallback(problem, options)
        whole = problem.all_free and self._whole              # the chain's joints are the unknowns, in order
        for q in ([] if far else self.candidates(T, x0[cols], options.deadline, hints=hints)):
            if whole:
                x = np.array(q, dtype=float)
            else:
                x = x0.copy()
                x[cols] = q
            # the result's residuals are the core's forward kinematics: the confirmation of the branch
            # (a plain pose: the frame's pose alone, handed to result rather than evaluated a second time)
            if plain:
                qf = problem.expand_chain(x, self.coords, q)
                r = problem.result(x, True, "converged", options, 1, 0, self.name,
                                   residual=problem.plain_residual(qf), q=qf)
            else:
                r = problem.result(x, True, "converged", options, 1, 0, self.name)
            if r.success and r.residuals[0].satisfied:
                return r
            if self.snap and whole:         # a snapped chain's branch: Gauss-Newton on the exact chain
                x = self._polished(problem, x, options.tol_position, options.tol_orientation)
                if x is not None:
                    r = problem.result(x, True, "converged", options, 1 + SNAP_STEPS, 0, self.name)
                    if r.success and r.residuals[0].satisfied:
                        return r
        res = self._fallback.solve(problem, options)
        res.solver = f"{self.name}+{res.solver}"
        return res

    def _columns(self, problem: IKProblem):
        """Where the chain's joints sit among ``problem``'s unknowns, kept in its structure by frame: a solver
        that accepts the problem has the frame's chain joints that are unknowns as :attr:`coords` (the others are
        held), which the structure and the frame decide."""
        consts = problem.structure.solver_constants
        cols = consts.get(("eaik columns", self.frame))
        if cols is None:
            cols = consts[("eaik columns", self.frame)] = np.searchsorted(problem.free, self.coords)
        return cols

    def _polished(self, problem: IKProblem, q, tp, to):
        """Up to :data:`SNAP_STEPS` Gauss-Newton steps (joint limits clamped) on the exact chain from the snapped
        chain's branch ``q`` (the chain's joints, every one an unknown), until within ``tp`` (m) and ``to``
        (rad); the configuration reached, or None."""
        E = chain_engine(problem)
        if E is None or not E.all_vars:
            return None
        pt, RtT = lane_data(problem)[2:4]
        r, J, _, _ = E._eval1(q, pt, RtT)
        for _ in range(SNAP_STEPS):
            q = E._step_one(q, r, J, 1e-12)[0]
            r, J, ep, er = E._eval1(q, pt, RtT)
            if ep <= tp and er <= to:
                return q
        return None

    def _prepare_fallback(self, problem: IKProblem, options: IKOptions) -> None:
        """On a 7R chain's first solve: the fallback's lane engine and seed table (about 1 in 200 targets has
        a feasible arc of the swept joint narrower than the sweep's step and needs the fallback), built now and
        not billed to the caller's budget rather than in the solve that first needs them."""
        t0 = time.perf_counter()
        E = chain_engine(problem)
        if E is not None:
            E.seed_table()
        self._fallback_ready = True
        if time.perf_counter() - t0 > 0.5e-3:
            options.deadline += time.perf_counter() - t0

    def _hint_table(self):
        """``(A (K, 12), n2 (K,), v (K,))``: the frame's pose in the base frame (position, rotation rows) at
        :data:`HINT_TABLE` in-limit configurations, the squared position norms and the swept joint's values
        there (forward kinematics of the core, one batch)."""
        lo = np.where(np.isfinite(self.lower), self.lower, -math.pi)
        hi = np.where(np.isfinite(self.upper), self.upper, math.pi)
        X = lo + np.random.default_rng(HINT_RNG).random((HINT_TABLE, 7)) * (hi - lo)
        F = self._poses(X)
        A = np.ascontiguousarray(np.hstack([F[:, :3, 3], F[:, :3, :3].reshape(-1, 9)]))
        return A, np.sum(A[:, :3] ** 2, axis=1), X[:, self.swept].copy()

    def _poses(self, X) -> np.ndarray:
        """(B, 4, 4) poses of the frame in the base frame at chain joint values ``X`` (B, n), held steps at
        theirs (the base's at 0)."""
        m = self.mechanism
        Q = np.tile(np.asarray(m.home, dtype=float), (X.shape[0], 1))
        Q[:, self.chain.coords] = self.theta
        Q[:, self.coords] = X
        F = forward_kinematics(m, Q).pose(self.frame).reshape(-1, 4, 4)
        if self.base_steps:
            F = inverse(self.base_pose(Q[0])) @ F
        return F

    def hints(self, T):
        """The swept joint's values in the hint table's configurations whose frame pose is nearest pose ``T``
        (base frame), nearest first (a generator; at most :data:`SWEEP_HINTS`), by ``|p - p_t|^2 + w (3 -
        trace(R_t^T R))`` (m^2, w = the lane engine's ORIENTATION_WEIGHT m^2/rad^2): in-limit configurations
        near the pose, whose swept value usually has an in-limit branch where the seed's has none."""
        A, n2, values = self._table
        v = np.empty(12)
        np.multiply(T[:3, 3], -2.0, out=v[:3])
        np.multiply(T[:3, :3].ravel(), -ORIENTATION_WEIGHT, out=v[3:])
        S = A @ v
        S += n2
        for _ in range(SWEEP_HINTS):
            k = int(S.argmin())
            yield values[k]
            S[k] = np.inf


#: Gauss-Newton steps on the exact chain for a snapped chain's branch that misses the tolerances
SNAP_STEPS = 2


def _decomposable(EAIK, H, P, R0, n) -> bool:
    """Whether ``eaik`` decomposes the chain (axes ``H``, offsets ``P``, end rotation ``R0``) of ``n`` joints:
    as it is (6R or fewer), or with some joint held (7R)."""
    if n == 7:
        return any(r is not None and r.has_known_decomposition()
                   for r in (_robot_or_none(EAIK, H, P, R0, [(i, 0.0)]) for i in range(7)))
    r = _robot_or_none(EAIK, H, P, R0, [])
    return r is not None and r.has_known_decomposition()


def chain_offsets(O, Tf) -> np.ndarray:
    """``eaik``'s offsets (n + 1, 3) of a revolute chain with axis points ``O`` (n, 3) and frame pose ``Tf`` (4x4)
    at its zero configuration: the first point, the steps between consecutive points, the frame's origin from
    the last (m)."""
    return np.vstack([O[0], np.diff(O, axis=0), Tf[:3, 3] - O[-1]])


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
    built once per mechanism, frame and -- for a ``problem`` with locked joints on the chain -- which ones, and
    the values of those after the first free joint (not those before it: :func:`_held`); a memo of the
    mechanism's derived data, :mod:`...data`."""
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
    """``(cache key, theta, variable)``: the chain steps a problem holds (locked joints) and their values. The
    values of held steps before the first variable one (a rover's chassis pose, a locked mast) are not in the
    key: the solver works in the frame they end in (:attr:`EAIKSolver.base_steps`), so one solver serves every
    pose of a mobile base; those after it are."""
    if problem is None or problem.all_free:
        return frame, None, None
    ch = frame_chain(mechanism, frame)
    variable = problem.free_mask[ch.coords]
    if variable.all():
        return frame, None, None
    theta = np.array(problem.template[ch.coords], dtype=float)
    k = int(variable.argmax()) if variable.any() else 0
    after = theta[k:][~variable[k:]]
    return (frame, variable.tobytes(), after.tobytes()), theta, variable


#: closed forms kept per mechanism (frames, and values of locked joints after a free one on the chain)
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


register_solver("eaik", _Explicit)
