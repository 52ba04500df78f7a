"""Closed-form starts for arms near a decomposable chain (optional extra ``eaik``), the field's trick for
offset wrists and for arms on a lift.

Two kinds of chain that :class:`~.eaik_solver.EAIKSolver` does not take get a closed form here:

* **held lift** (``"held"``): the chain's first joint is prismatic (a torso lift: TIAGo, Fetch) and the
  revolute joints after it decompose (with the 7R sweep for seven). The lift is held at a value -- the
  seed's, then the values it has in the lane engine's seed-table configurations nearest the target -- and
  the revolute part solved in closed form for the target moved by the lift's stroke. Answers are exact.
* **near-decomposable** (``"near"``): no exact decomposition, but moving the axes of three consecutive
  revolute joints onto their least-squares common point gives a chain ``eaik`` decomposes (a spherical
  wrist where the real one has small offsets: Baxter's 0.007 m, the xArm's 0.05 m). The approximate chain's
  in-limit branches nearest the seed are starts for a few lightly damped Gauss-Newton (Levenberg-Marquardt)
  steps on the exact chain (the lane engine's one-lane pass, :meth:`~..batch.LaneEngine._eval1`), which
  converge in two to five steps from a start that close; the population LM stays the fallback. Where one axis
  of the three alone misses the point where the other two meet (Baxter's first wrist axis, the xArm6's last),
  :class:`~.axis_offset.AxisOffset` makes the answer exact first: the chain with that axis moved there solved
  again for the target moved back by the exact chain's offset (Baxter: from the approximate branch; the
  xArm6: a secant iteration from the seed), so that one evaluation of the exact chain confirms it; the other
  two meet within the rounding :mod:`.axis_snap` snaps (a model file's 1.5708 for pi/2), as read or snapped.

A 7R chain is solved as :class:`~.eaik_solver.EAIKSolver` does, one joint held (*swept*: the first of joints
7, 3, 1, 4, 2, 5, 6 whose holding leaves a decomposable 6R -- for the near kind, of one family held at zero
and at a generic value, its axes snapped where a model file's rounding makes them miss (:mod:`.axis_snap`);
measured on Baxter, xArm7, TIAGo and Fetch, this order picks the joint of lowest or near-lowest median time)
at the seed's value, then -- when the swept joint
is the chain's first (Baxter's shoulder yaw) -- at the value that points the arm at the target
(:func:`~.swept_aim.toward`), then at its values in the seed-table configurations nearest the
target, then stepped outward from the seed's. The answer is the in-limit branch nearest the seed among those
of the first value that has one.

**Criterion of "near"**, measured when the solver is built: (1) geometry (:func:`concurrency_defect`): for
three axes (unit directions ``h_k``, points ``o_k``), the least-squares common point ``p`` minimizes
``sum_k |(I - h_k h_k^T)(p - o_k)|^2`` and the *defect* is the largest distance of an axis from ``p`` (m); a
triple is a candidate when its defect is at most :data:`NEAR_RATIO` (0.08) of the chain's reach bound (the sum
of the distances between consecutive axis points and to the frame, m), and the candidates are tried in
order of defect until one makes a chain ``eaik`` decomposes; (2) the answers: the approximate branches must
lead, in at most :data:`~.exact_refine.REFINE_STEPS` steps on the exact chain, to at least :data:`DIRECT_RATE` (60 %, 6R)
or :data:`DIRECT_RATE_SWEPT` (95 %, 7R) of :data:`MEASURE_TARGETS` (64) sample targets (fixed random in-limit
configurations and seeds) within 1e-6 m and rad -- the rates at which the closed form was measured to pay
against the population LM alone. Measured: Baxter's wrist 0.0067 m (0.006 of the reach), 98 %; the xArm6's
wrist 0.051 m (0.066), 92 %; random 7R chains with 0.1-0.2 m offsets 56-89 % (not near). A defect of micrometres is a
chain that is decomposable in all but rounding (the xArm7's URDF writes pi/2 as 1.5708, and its shoulder axes
miss each other by about 1e-6 m): :class:`~.eaik_solver.EAIKSolver` takes it with its axes snapped
(:func:`~.eaik_solver.snap_geometry`, within 1e-5 of the reach bound). A chain ``EAIKSolver`` takes keeps the
pure closed form (not built here); any other chain keeps the population LM.

On a mobile manipulator (a floating base's pose, a torso locked: the IK service locks every joint but the arm's)
the locked joints before the chain's first free one only move the frame the arm stands in: the solver is built
for the chain from the frame where they end (``base_steps``; a :class:`~.base_frame.BaseFrame` moves targets into
it) and kept without their values, one for every pose of the base, as :class:`~.eaik_solver.EAIKSolver` is; its
refining steps run on one lane engine with those joints at their home values. A locked joint after a free one
is declined (the population LM answers).

Every answer is the exact chain's: it counts only when the core's forward kinematics puts the frame within
the caller's tolerances, within the limits. :func:`~.solutions.ik_solutions` lists the branches of both kinds. Built once per mechanism and frame (a memo of the mechanism's
derived data, :mod:`...data`), outside the caller's budget.
"""

from __future__ import annotations

import math
import time
from functools import partial

import numpy as np

from ...constraints import PoseConstraint
from ...data import memo
from ...errors import ModelStructureError
from ...kinematics import frame_chain
from ...model import Mechanism
from ..batch import LMPopulationSolver, chain_engine, lane_data
from ..problem import IKOptions, IKProblem, IKResult, reach_bound
from .axis_offset import AxisOffset
from .axis_snap import SNAP_RATIO, snap_geometry
from .base_frame import BaseFrame
from .branch_turns import TurnWindow, nearest_first, nearest_order
from .eaik_solver import EAIKSolver, _ChainClosedForm, _eaik, _robot_or_none, chain_offsets, eaik_solver_for
from .exact_refine import REFINE_MU, REFINE_MU_6R, refine
from .near_geometry import chain_axes, concurrency_defect, decomposition, least_squares_flags_reliable
from .swept_aim import aim_geometry, toward

__all__ = ["NEAR_RATIO", "NearDecomposableSolver", "concurrency_defect", "near_decomposable_solver_for"]

#: a triple of axes is a candidate when its defect is at most this fraction of the chain's reach bound
#: (Baxter's wrist: 0.0067 m of 1.1 m, 0.006; the xArm6's: 0.051 m of 0.76 m, 0.066)
NEAR_RATIO = 0.08
#: seed-table configurations whose lift (held kind) and swept (7R) values are tried after the seed's
HINTS = 8
#: eaik robots kept by held value of the swept joint (:meth:`NearDecomposableSolver._robot_at`)
ROBOTS_KEPT = 1024
#: then swept values of a 7R chain stepped outward from the seed's (SWEEP_OUTWARD steps of 1/SWEEP_STEPS of the
#: range each way), before the population LM takes over
SWEEP_OUTWARD = 8
SWEEP_STEPS = 32
#: a chain is near a decomposable one when its approximate branches lead to at least DIRECT_RATE (6R) or
#: DIRECT_RATE_SWEPT (7R, a joint swept) of MEASURE_TARGETS sample targets (:meth:`NearDecomposableSolver.
#: _measure`; generator seed MEASURE_RNG). A 7R target the branches miss pays up to MAX_TRIES tries before the
#: population LM: random 7R chains with 0.1-0.2 m offsets measured 0.56-0.89 and were slower than the LM alone
#: (300 targets each: CPU medians -13 % to +37 %, means +25 % to +90 %), Baxter 0.98 and the xArm7 1.0 faster
#: (medians 0.6x and 0.4x); a 6R one tries once (xArm6 0.92: median 0.65x, mean 0.82x; a random 6R chain at 0.69:
#: 0.73x, 0.89x)
DIRECT_RATE = 0.6
DIRECT_RATE_SWEPT = 0.95
MEASURE_TARGETS = 64
MEASURE_RNG = 7
#: at most this many (lift, swept) values tried per solve (TIAGo, 400 targets: 4 hints and 12 tries left 8 %
#: to the population LM, 8 and 24 2 %; xArm7 2 % and 0.3 %)
MAX_TRIES = 24
#: approximate branches refined on the exact chain (:func:`.exact_refine.refine`)
REFINE_BRANCHES = 3


class NearDecomposableSolver(_ChainClosedForm):
    """Closed-form starts for the chain from the ground to ``frame`` (module docstring): ``kind`` is
    ``"held"`` or ``"near"``; ``triple`` (near) the chain steps whose axes were made concurrent and
    ``defect`` their defect (m). Raises :class:`ModelStructureError` when the chain is neither (or
    ``EAIKSolver`` decomposes it as it is), :class:`MechanismModelError` when ``eaik`` is absent.

    ``base_steps`` (``k``): the chain's first ``k`` steps are held by the problems it takes (a floating base's
    pose, a locked torso or mast: locked joints before the first free one) and only move the frame the arm
    stands in; the solver works in the frame where they end (:attr:`base`, a
    :class:`~.base_frame.BaseFrame`), whatever their values, so one solver serves every pose of the base."""

    name = "near-eaik"

    def __init__(self, mechanism: Mechanism, frame: str, base_steps: int = 0):
        super().__init__(mechanism, frame, "the near-decomposable closed form")
        EAIK, m, ch = self._EAIK, mechanism, self.chain
        if m.couplings and any(m.coordinate_names[i] in m.couplings for i in ch.coords):
            raise ModelStructureError(f"near-eaik: the chain to {frame!r} carries coupled joints")
        k = self.base_steps = int(base_steps)
        if not 0 <= k < ch.n:
            raise ModelStructureError(f"near-eaik: {k} held base steps on the chain to {frame!r} of {ch.n}")
        self.base = BaseFrame(m, ch, k)
        pri = np.asarray(ch.prismatic, dtype=bool)[k:]
        lift = len(pri) >= 2 and bool(pri[0]) and not pri[1:].any()
        if pri.any() and not lift:
            raise ModelStructureError(f"near-eaik: the chain to {frame!r} has a prismatic joint past its first")
        first = 1 if lift else 0
        steps = np.arange(k + first, ch.n)
        if len(steps) not in (6, 7):
            raise ModelStructureError(f"near-eaik: the chain to {frame!r} has {len(steps)} revolute joints; "
                                      f"6 or 7 fit")
        self.lift = lift
        self.steps = steps
        self.coords = np.array(ch.coords)[k:]
        H, O, Tf = chain_axes(ch, steps, k)
        d = decomposition(EAIK, H, O, Tf)
        self.triple, self.defect = None, 0.0
        #: the near kind: how far (m) its axes were snapped to meet or be parallel (:mod:`.axis_snap`; a model
        #: file's rounding), 0.0 when none was
        self.snapped = 0.0
        if d is not None:
            if not lift:
                raise ModelStructureError(f"near-eaik: the chain to {frame!r} decomposes as it is (EAIKSolver)")
            self.kind = "held"
        elif not lift and _eaik_takes(m, frame, k):
            raise ModelStructureError(f"near-eaik: the chain to {frame!r} decomposes with its axes snapped "
                                      f"(EAIKSolver)")
        else:
            reach = float(np.sum(np.linalg.norm(np.diff(O, axis=0), axis=1))
                          + np.linalg.norm(Tf[:3, 3] - O[-1]))
            # axes that miss meeting or being parallel by a model file's rounding snapped (axis_snap, as the exact
            # closed form does) to choose the triple and the swept joint (a rounded Baxter keeps the exact one's);
            # the solver's chain keeps the directions as read, its axes' points snapped (the branches are starts,
            # refined on the exact chain)
            tol = SNAP_RATIO * reach
            Hs, Os, self.snapped = snap_geometry(H, O, tol)
            H, O, _ = snap_geometry(H, O, tol, directions=False)
            O_exact = O
            found = []
            for i in range(len(steps) - 2):
                p, dd = concurrency_defect(Hs[i:i + 3], Os[i:i + 3])
                if dd <= NEAR_RATIO * reach:
                    found.append((dd, i, p))
            for dd, i, p in sorted(found, key=lambda t: t[0]):
                O2 = Os.copy()
                O2[i:i + 3] = p
                d = decomposition(EAIK, Hs, O2, Tf, probe=True)
                if d is not None:
                    O2 = O.copy()
                    O2[i:i + 3] = concurrency_defect(H[i:i + 3], O[i:i + 3])[0]
                    held = [] if d[0] is None else [(d[0], 0.0)]
                    r = _robot_or_none(EAIK, H, chain_offsets(O2, Tf), Tf[:3, :3], held)
                    if r is None or not r.has_known_decomposition():      # (as read, the first that decomposes)
                        d = decomposition(EAIK, H, O2, Tf)
                        if d is None:
                            continue
                    else:
                        d = (d[0], r.get_kinematic_family())
                    O = O2
                    self.triple, self.defect = tuple(int(s) for s in steps[i:i + 3]), dd
                    self._near_i = i
                    break
            if d is None:
                raise ModelStructureError(f"near-eaik: no triple of axes of the chain to {frame!r} within "
                                          f"{NEAR_RATIO} of its reach of a common point gives a decomposable chain")
            self.kind = "near"
        self.swept, self.family = d
        self.H = H
        self.P = chain_offsets(O, Tf)
        self.R0 = Tf[:3, :3].copy()
        # the lift: its axis (ground) and stroke limits; the revolute part's geometry is at lift 0
        lo, hi = m.lower_limits[self.coords], m.upper_limits[self.coords]
        self.lower, self.upper = lo, hi
        if lift:
            Ls0 = ch.Pm.reshape(ch.n, 4, 4)[k]
            self.lift_axis = Ls0[:3, :3] @ np.array([0.0, 0.0, 1.0])
        self._rlo, self._rhi = lo[first:], hi[first:]
        # one wrist axis alone off the point where the other two meet: exact answers by iteration (axis_offset;
        # its chain is the revolute one: not built on a lift, whose stroke it would not carry)
        self._offset = None if self.kind != "near" or lift else AxisOffset.of(
            partial(_robot_or_none, EAIK), H, O_exact, Tf, self._near_i, self.swept, lo, hi, reach)
        self._turns = TurnWindow(self._rlo, self._rhi)      # where the branches' values are put (whole turns)
        self._robot6 = None if self.swept is not None else _robot_or_none(EAIK, H, self.P, self.R0, [])
        if self.swept is not None:
            i = self.swept
            lo_s = self._rlo[i] if math.isfinite(self._rlo[i]) else -math.pi
            hi_s = self._rhi[i] if math.isfinite(self._rhi[i]) else math.pi
            k = np.arange(1, SWEEP_OUTWARD + 1) * (hi_s - lo_s) / SWEEP_STEPS
            self._sweep = (lo_s, hi_s, np.stack([k, -k], axis=1).ravel())
        self._robots = {}             # 7R: eaik's robots by held value of the swept joint (_robot_at)
        # a swept first joint: its value pointed at the target is the second try (swept_aim)
        self._aim = aim_geometry(H, O, Tf) if self.swept == 0 and not lift else None
        self._ref = None              # held base steps: the reference engine (_reference)
        # held base steps: the reach bound in the base frame (m), from the first free step's origin
        self._base_origin, self._base_reach = reach_bound(m, ch, self.base_steps)
        self.refine_mu = REFINE_MU_6R if self.swept is None else REFINE_MU
        self._flags_reliable = least_squares_flags_reliable(partial(_robot_or_none, EAIK, self.H, self.P, self.R0),
                                                            self.swept, self._rlo, self._rhi, MEASURE_RNG)
        # closed-form tries per solve (lift and swept values) before the population LM takes over
        self.max_tries = MAX_TRIES
        self._fallback = LMPopulationSolver()
        self.direct_rate = 1.0
        if self.kind == "near":
            self.direct_rate = self._measure()
            need = DIRECT_RATE if self.swept is None else DIRECT_RATE_SWEPT
            if self.direct_rate < need:
                raise ModelStructureError(
                    f"near-eaik: the chain to {frame!r} is too far from the decomposable one (defect "
                    f"{self.defect:.4f} m): its branches led to {100 * self.direct_rate:.0f} % of "
                    f"{MEASURE_TARGETS} sample targets, fewer than {100 * need:.0f} %")

    def _measure(self) -> float:
        """The fraction of :data:`MEASURE_TARGETS` sample targets (poses of fixed random in-limit
        configurations, from fixed random in-limit seeds) that the approximate branches lead to within
        1e-6 m and rad in at most :data:`~.exact_refine.REFINE_STEPS` Gauss-Newton steps on the exact chain."""
        m = self.mechanism
        c = PoseConstraint(self.frame, np.eye(4)).bind(m)
        held = [m.coordinate_names[i] for i in self.chain.coords[:self.base_steps]]
        P = IKProblem(m, [c], m.home, held, [c])
        E = chain_engine(P)
        if E is None or E.nv != len(self.coords):
            return 0.0
        q0 = np.asarray(m.home, dtype=float)
        rng = np.random.default_rng(MEASURE_RNG)
        lo, hi = E.consts.lo, E.consts.hi
        ok = 0
        for _ in range(MEASURE_TARGETS):
            q, x0 = lo + rng.random((2, E.nv)) * (hi - lo)
            _, Tf = E._frames(q[None])
            pt, RtT = Tf[0, :3, 3].copy(), Tf[0, :3, :3].T.copy()
            near = E.nearest_starts(pt[None], RtT[None], HINTS)
            Tb = self.base.target(q0, Tf[0]) if self.base_steps else Tf[0]
            Q = self.starts(Tb, x0, None if near is None else near[0])
            for qq in ([] if Q is None else Q[:REFINE_BRANCHES]):
                if refine(E, qq, pt, RtT, 1e-6, 1e-6, math.inf, self.refine_mu)[2]:
                    ok += 1
                    break
        return ok / MEASURE_TARGETS

    def accepts(self, problem: IKProblem) -> bool:
        if not self._one_full_pose(problem):
            return False
        if self.base_steps:         # the base steps held, the arm's free (_base_steps_of)
            return not problem.all_free and _base_steps_of(self.chain, problem) == self.base_steps
        return problem.all_free or bool(problem.free_mask[self.coords].all())

    # ------------------------------------------------------------------ closed-form branches
    def _branches(self, T, ref, v, start):
        """``(Q, exact)``: the in-limit branches (revolute part, whole turns nearest ``ref``) of the
        (approximate) revolute chain for ground pose ``T`` with the swept joint at ``v`` (None: 6R); ``exact``
        False when none reaches ``T`` (least-squares branches: the nearest approximations, still starts for the
        exact chain's steps); ``(None, False)`` when none is in limits. Exact branches come nearest ``ref``
        first and clipped to the limits; least-squares ones, when eaik's flags hold, as they are
        (:meth:`_nearest_first` orders the ones :meth:`starts` keeps). ``start``
        (:meth:`~.branch_turns.TurnWindow.start` of ``ref``): where each joint's turn starts. Few numpy calls on
        these (k <= 8, 7) arrays: each costs about a microsecond, several times the arithmetic."""
        robot = self._robot6 if v is None else self._robot_at(v)
        if robot is None:
            return None, False
        sol = robot.calculate_IK(T)
        Q = np.array(sol.Q, dtype=float)
        if Q.shape[0] == 0:
            return None, False
        if v is not None:
            Q[:, self.swept] = v
        Q = self._turns.place(Q, ref, start)                # each value in its joint's turn
        ok = np.logical_and.reduce(Q <= self._turns.hi_in, axis=1)
        if self._flags_reliable:      # the exact branches alone when there are any (eaik's flags hold)
            ks = np.greater(ok, sol.is_LS).nonzero()[0]         # in limits and not least-squares
            if len(ks):
                return self._nearest_first(Q[ks], ref), True
            ks = ok.nonzero()[0]
            return (Q[ks], False) if len(ks) else (None, False)
        ks = ok.nonzero()[0]
        if not len(ks):
            return None, False
        Q, ls = Q[ks], sol.is_LS[ks]
        if len(Q) > 1:
            order = nearest_order(Q, ref)
            Q, ls = Q.take(order, axis=0), ls[order]
        ls = ls.tolist()
        self._clip(Q)
        exact, found = [], 0          # eaik flags some exact branches least-squares too: the nearest checked
        for j, f in enumerate(ls):
            if f:
                d = (robot.fwdkin(Q[j])[:3] - T[:3]).ravel()
                f = not d @ d < 1e-18
            exact.append(not f)
            found += not f
            if found == REFINE_BRANCHES:
                break
        if not any(exact):
            return Q, False
        return (Q if len(exact) == len(Q) and all(exact) else Q[:len(exact)][np.array(exact)]), True

    def _robot_at(self, v):
        """``eaik``'s robot of the (approximate) revolute chain with the swept joint held at ``v`` (rad), or
        None; kept by value (the seed's and the seed table's values come back: a 2-3 us build each), at most
        :data:`ROBOTS_KEPT` (floats as keys: nothing for the garbage collector to track)."""
        r = self._robots.get(v, _NONE)
        if r is _NONE:
            r = _robot_or_none(self._EAIK, self.H, self.P, self.R0, [(self.swept, v)])
            if len(self._robots) >= ROBOTS_KEPT:
                self._robots.clear()
            self._robots[v] = r
        return r

    def _lift(self, v):
        return min(max(float(v), self.lower[0]), self.upper[0]) if self.lift else None

    def _tries(self, x0, hints):
        """``(lift, swept)`` values to try after the seed's own (None: no such joint): each seed-table
        configuration's own (``hints`` (h, n): nearest the target first), then the swept joint's range ends and
        the lift's stroke ends, then the swept joint stepped
        outward from the seed's (:data:`SWEEP_OUTWARD` steps of 1/:data:`SWEEP_STEPS` of its range each
        way)."""
        first = 1 if self.lift else 0
        lift = self._lift
        if self.swept is None:
            if not self.lift:
                return []
            return [(lift(h[0]), None) for h in hints] + [(float(s), None) for s in self._lift_ends(x0[0])]
        lo, hi, out = self._sweep
        j = first + self.swept
        v0 = min(max(float(x0[j]), lo), hi)
        s0 = lift(x0[0])
        if self.lift or not len(hints):
            tries = [(lift(h[0]), min(max(float(h[j]), lo), hi)) for h in hints]
        else:                       # one column's clip and list: no per-row numpy indexing
            tries = [(None, v) for v in np.minimum(np.maximum(hints[:, j], lo), hi).tolist()]
        # the strokes' ends exactly, after the hints: a pose with several joints at their limits (a stow pose,
        # an arm folded against its stops) can have an in-limit branch only there
        tries += [(s0, v) for v in (lo, hi) if v != v0]
        tries += [(float(s), v0) for s in self._lift_ends(x0[0])] if self.lift else []
        tries += [(s0, v) for v in (v0 + out).tolist() if lo <= v <= hi]
        return tries

    def _lift_ends(self, s0):
        """The lift's stroke ends other than the seed's value ``s0`` (m)."""
        s0 = self._lift(s0)
        return [v for v in (float(self.lower[0]), float(self.upper[0])) if math.isfinite(v) and v != s0]

    def starts(self, T, x0, near=None, deadline=math.inf):
        """Chain configurations (k, n) from the closed form for ground pose ``T``, nearest the seed ``x0``
        (n,) first: the first exact branches found -- at the seed's lift and swept values, then at the swept
        first joint's value pointed at the target (:func:`~.swept_aim.toward`), then (:meth:`_tries`) those of
        the seed-table configurations ``near`` (h, n) nearest the target (or a function giving them, called
        only when the values before give none), then the swept joint stepped
        outward, :attr:`max_tries` tries in all -- else the first approximate ones (least-squares branches, or
        the near kind's), else None."""
        first = 1 if self.lift else 0
        ref = x0[first:]
        start = self._turns.start(ref)
        v0 = None
        if self.swept is not None:
            lo, hi, _ = self._sweep
            v0 = min(max(float(x0[first + self.swept]), lo), hi)
        approx = None
        tries = [(self._lift(x0[0]), v0)]
        a = 0
        extend = 1                  # the try after which the seed table's hints are looked up
        while a < len(tries) and a < self.max_tries:
            s, v = tries[a]
            if a and time.perf_counter() > deadline:
                break
            a += 1
            Tl = T
            if s is not None:
                Tl = T.copy()
                Tl[:3, 3] -= s * self.lift_axis
            Q, exact = self._branches(Tl, ref, v, start)
            if Q is not None:
                if exact:
                    return Q if s is None else np.hstack([np.full((Q.shape[0], 1), s), Q])
                if approx is None:              # least-squares branches: starts if nothing better comes
                    approx = (Q, s)
            if a == 1 and self._aim is not None:       # a swept first joint: the arm pointed at the target next
                v = toward(self._aim, T, *self._sweep[:2])
                if v != v0:
                    tries.append((None, v))
                    extend = 2
                    continue
            if a == extend and (self.lift or self.swept is not None):
                hints = near() if callable(near) else near
                tries += self._tries(x0, () if hints is None else hints)
        if approx is None:
            return None
        Q, s = approx
        Q = self._nearest_first(Q, ref)
        return Q if s is None else np.hstack([np.full((Q.shape[0], 1), s), Q])

    def _nearest_first(self, Q, ref):
        """Branches ``Q`` (k, revolute part; rad) nearest ``ref`` first (:func:`~.branch_turns.nearest_first`),
        clipped to the limits: a new array when k > 1, else ``Q`` clipped in place (the callers' are their own)."""
        return self._clip(nearest_first(Q, ref))

    def _clip(self, Q):
        """``Q`` (k, revolute part; rad) clipped to the joint limits, in place (np.clip's arithmetic)."""
        np.maximum(Q, self._rlo, out=Q)
        np.minimum(Q, self._rhi, out=Q)
        return Q

    # ------------------------------------------------------------------ the solve
    def solve(self, problem: IKProblem, options: IKOptions) -> IKResult:
        if self.base_steps:
            return self._solve_on_base(problem, options)
        E = chain_engine(problem)
        if E is None or not E.all_vars:
            return self._fallback.solve(problem, options)
        t0 = time.perf_counter()
        E.seed_table()
        if time.perf_counter() - t0 > 0.5e-3:              # the first solve built the caches: not billed
            options.deadline += time.perf_counter() - t0
        xf, x0, pt, RtT, _ = lane_data(problem)
        T = np.empty((4, 4))                               # (np.eye's values: its Python-level call is slower)
        T[:3, :3] = RtT.T
        T[:3, 3] = pt
        T[3] = _LAST_ROW
        d = pt - E.origin
        if E.bound_applies and math.sqrt(float(d @ d)) > E.reach + options.tol_position:
            return self._fallback.solve(problem, options)
        plain = problem.plain_pose is not None and E.unit_weights and E.Rrow is None
        return self._solved(problem, options, E, T, pt, RtT, x0, xf, E.var_x, None if plain else False)

    def _solve_on_base(self, problem: IKProblem, options: IKOptions) -> IKResult:
        """:meth:`solve` with held base steps: the target moved into the base frame (:attr:`base`) for the closed
        form, and from there into the ground of the reference engine (:meth:`_reference`: the base steps at the
        mechanism's home values) for the refining steps and the seed-table hints -- one engine for every pose
        of the base, where the problem's own would be built for each (about 0.1 ms)."""
        t0 = time.perf_counter()
        ref = self._reference()
        if time.perf_counter() - t0 > 0.5e-3:              # the first solve built the caches: not billed
            options.deadline += time.perf_counter() - t0
        if ref is None:
            return self._fallback.solve(problem, options)
        E, B0 = ref
        c = problem.tasks[0]
        T = self.base.target(problem.template, c.target, c.relative_to)
        d = T[:3, 3] - self._base_origin
        if math.sqrt(float(d @ d)) > self._base_reach + options.tol_position:
            return self._fallback.solve(problem, options)        # beyond reach: the LM's report (its bound)
        Tr = B0 @ T
        pt, RtT = Tr[:3, 3].copy(), Tr[:3, :3].T.copy()
        xf = problem.x_of(problem.template)
        cols = np.searchsorted(problem.free, self.coords)
        # a plain pose in the ground: the engine's residual turned from its ground into the problem's
        G = c.target[:3, :3] @ RtT if (problem.plain_pose is not None and E.unit_weights and E.Rrow is None
                                       and c.relative_to in (None, self.ground)) else False
        return self._solved(problem, options, E, T, pt, RtT, xf[cols], xf, cols, G)

    def _reference(self):
        """``(E, B0)``: the lane engine of this chain with the base steps held at the mechanism's home values
        (its seed table built) and the base frame's ground pose there; None when there is none. Built once."""
        ref = self._ref
        if ref is None:
            m = self.mechanism
            c = PoseConstraint(self.frame, np.eye(4)).bind(m)
            held = [m.coordinate_names[i] for i in self.chain.coords[:self.base_steps]]
            E = chain_engine(IKProblem(m, [c], m.home, held, [c]))
            ref = False
            if E is not None and E.nv == len(self.coords):
                E.seed_table()
                ref = (E, self.base.pose(np.asarray(m.home, dtype=float)))
            self._ref = ref
        return ref or None

    def _solved(self, problem, options, E, T, pt, RtT, x0, xf, cols, G):
        """The answer from the closed-form starts for pose ``T`` (the solver's frame) refined on engine ``E``
        toward ``pt``, ``RtT`` (its ground), from the chain's values ``x0`` (the unknowns ``xf``, the chain's
        at ``cols``); ``G``: False -- the result evaluates its residual, None -- it is the engine's, else a
        rotation (3x3) that turns the engine's into the problem's ground. Else the population LM."""

        def near():                 # the seed-table hints, looked up only when the seed's values give no branch
            S = E.nearest_starts(pt[None], RtT[None], HINTS)
            return None if S is None else S[0]

        tp, to = options.tol_position, options.tol_orientation
        its = 0

        def answer(Q):              # the first of branches Q (k, n) that the refine takes to the target
            nonlocal its
            for q in Q[:REFINE_BRANCHES]:
                x, r, ok, k = refine(E, q, pt, RtT, tp, to, options.deadline, self.refine_mu)
                its += k
                if ok:
                    full = xf.copy()
                    full[cols] = x
                    if G is False:
                        r = None
                    elif G is not None:
                        r = np.concatenate([G @ r[:3], G @ r[3:]])
                    q = problem.expand_chain(full, self.coords, x)
                    return problem.result(full, True, "converged", options, its, 0, self.name, residual=r, q=q)
            return None

        off = self._offset              # one axis's offset carried by the target (axis_offset): its iterates first
        if off is not None and off.last:
            hit = off.solve(T, x0, 0.9 * tp)
            res = None if hit is None else answer(hit[0][None])
            if res is not None:
                return res
        Q = self.starts(T, x0, near, options.deadline)
        for q in () if Q is None or off is None else Q[:REFINE_BRANCHES]:   # (the last axis: its secant again)
            hit = off.solve(T, q, 0.9 * tp) if off.last else off.polish(T, q, 0.9 * tp)
            res = None if hit is None else answer(hit[0][None])
            if res is not None:
                return res
        res = None if Q is None else answer(Q)
        if res is None and off is not None and off.last:     # near the limits: other last-joint starts
            hit = off.solve_around(T, x0, 0.9 * tp, options.deadline)
            res = None if hit is None else answer(hit[0][None])
        if res is not None:
            return res
        res = self._fallback.solve(problem, options)
        res.solver = f"{self.name}+{res.solver}"
        return res


# ---------------------------------------------------------------------------------------------- detection
_NONE = object()
_LAST_ROW = (0.0, 0.0, 0.0, 1.0)


def near_decomposable_solver_for(mechanism: Mechanism, frame: str, problem: IKProblem | None = None):
    """The :class:`NearDecomposableSolver` of ``frame``'s chain, or None (``eaik`` absent, or the chain is
    decomposable as it is, or not near it, or ``problem`` locks a joint of the chain after a free one); built
    once per mechanism, frame and number of held base steps -- for a ``problem`` that locks the chain's first
    joints (a floating base's pose, a torso), those steps, whatever their values: one solver for every pose of
    a mobile base."""
    if _eaik() is None:
        return None
    k = 0 if problem is None or problem.all_free else _base_steps_of(frame_chain(mechanism, frame), problem)
    if k is None:
        return None
    key = frame if not k else (frame, k)
    solvers = memo(mechanism, "ik.near_decomposable", 64)
    hit = solvers.peek(key)
    if hit is None:
        try:
            hit = NearDecomposableSolver(mechanism, frame, k)
        except ModelStructureError:
            hit = _NONE
        hit = solvers.put(key, hit)
    return None if hit is _NONE else hit


def _base_steps_of(chain, problem):
    """The number of chain steps that ``problem`` holds before its first free one, when every step after that
    is free (0 when none is held); None when a held step follows a free one (or none is free)."""
    free = problem.free_mask[chain.coords]
    if not free.any():
        return None
    k = int(free.argmax())
    return k if free[k:].all() else None


def _eaik_takes(m, frame, k) -> bool:
    """Whether :class:`~.eaik_solver.EAIKSolver` decomposes ``frame``'s chain from step ``k`` on (with its axes
    snapped), the steps before held."""
    if not k:
        return eaik_solver_for(m, frame) is not None
    n = frame_chain(m, frame).n
    try:
        EAIKSolver(m, frame, np.zeros(n), np.arange(n) >= k)
    except ModelStructureError:
        return False
    return True

