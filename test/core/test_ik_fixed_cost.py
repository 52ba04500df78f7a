"""The shortcuts of ``solve_ik``'s fixed per-call cost give the values of the plain formulas they replace: the
in-limit turns of closed-form branches, the float limit check, the nearest-turn wrap, the row weights built on
first use, and the residuals of a result (checked against an independent forward kinematics)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mechanism_model_core import (InvalidConfiguration, Joint, MechanismBuilder, OrientationConstraint,
                                  PoseConstraint, PositionConstraint, forward_kinematics)
from mechanism_model_core.ik import solve_ik
from mechanism_model_core.kinematics import frame_chain
from mechanism_model_core.ik.batch import _shape_key
from mechanism_model_core.ik.solvers import _ChainKernel
from mechanism_model_core.ik.closed_form.eaik_solver import _in_limit_turns, _wide_bounds, _wide_level
from mechanism_model_core.ik.problem import IKProblem
from mechanism_model_core.ik.structure import FLOAT_CHECK_MAX, ProblemStructure
from mechanism_model_core.spatial import rot_x, rot_z, translation

from .robots import SAFETY, chain10, nonlinear_coupled_arm, ur5

TURN = 2 * math.pi


def _turns_by_the_formula(Q, ref, lo, hi, margin=1e-12):
    """Per branch and joint, in floats: the whole turn nearest ``ref``, then one turn up or down into
    ``[lo - margin, hi + margin]``; the rows that end inside, clamped into ``[lo, hi]``."""
    rows = []
    for q in Q.tolist():
        out = []
        for v, r, a, b in zip(q, ref.tolist(), lo.tolist(), hi.tolist()):
            d = v - r
            w = r + d - TURN * round(d / TURN)
            if w < a - margin:
                w += TURN
            if w > b + margin:
                w -= TURN
            out.append(w)
        if all(a - margin <= w <= b + margin for w, a, b in zip(out, lo.tolist(), hi.tolist())):
            rows.append([min(max(w, a), b) for w, a, b in zip(out, lo.tolist(), hi.tolist())])
    return rows


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), branches=st.integers(1, 8), joints=st.integers(1, 7),
       kind=st.sampled_from(["narrow", "wide", "unbounded", "mixed"]))
def test_in_limit_turns_are_the_formulas(seed, branches, joints, kind):
    rng = np.random.default_rng(seed)
    lo = rng.uniform(-3.5, -0.2, joints)
    hi = rng.uniform(0.2, 3.5, joints)
    if kind == "wide":
        lo, hi = lo - 3.0, hi + 3.0
    elif kind == "unbounded":
        lo, hi = np.full(joints, -np.inf), np.full(joints, np.inf)
    elif kind == "mixed":
        lo[0], hi[0] = -TURN, TURN
    Q = rng.uniform(-9.0, 9.0, (branches, joints))
    ref = rng.uniform(-3.0, 3.0, joints)
    Q[0, 0] = ref[0] + 0.5 * TURN                   # a tie of the rounding
    want = _turns_by_the_formula(Q, ref, lo, hi)
    got = _in_limit_turns(Q.copy(), ref, lo - 1e-12, hi + 1e-12, lo, hi)
    if not want:
        assert got is None
        return
    assert got.shape == (len(want), joints)
    np.testing.assert_allclose(got, np.array(want), rtol=0, atol=1e-12)
    assert np.all(got >= lo) and np.all(got <= hi)


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), branches=st.integers(1, 8), joints=st.integers(1, 7),
       kind=st.sampled_from(["turn", "two_turns", "continuous", "mixed", "seed_at_limits"]))
def test_in_limit_turns_on_wide_ranges_skip_only_what_changes_nothing(seed, branches, joints, kind):
    """Ranges of a full turn or more (a UR arm's +-pi and +-2 pi, continuous joints): the steps skipped for a
    seed within the limits (_wide_level 1) or a half turn inside them (2) give the rows of the full test, bit
    for bit."""
    rng = np.random.default_rng(seed)
    half = {"turn": np.full(joints, math.pi), "two_turns": np.full(joints, TURN), "continuous": np.full(joints, np.inf),
            "mixed": rng.choice([math.pi, TURN, np.inf, 1.5 * math.pi], joints),
            "seed_at_limits": rng.choice([math.pi, TURN], joints)}[kind]
    lo, hi = -half, half.copy()
    bounds = _wide_bounds(lo, hi)
    assert bounds is not None
    fin = np.where(np.isfinite(lo), lo, -10.0), np.where(np.isfinite(hi), hi, 10.0)
    ref = rng.uniform(*fin)
    if kind == "seed_at_limits":
        ref = np.where(rng.random(joints) < 0.5, lo, hi)
    elif kind == "two_turns" and seed % 2:
        ref = rng.uniform(-math.pi, math.pi, joints)          # a half turn inside: level 2
    Q = rng.uniform(-math.pi, math.pi, (branches, joints)) if seed % 3 else rng.uniform(-9, 9, (branches, joints))
    level = _wide_level(bounds, ref)
    assert level >= 1
    full = _in_limit_turns(Q.copy(), ref, lo - 1e-12, hi + 1e-12, lo, hi)
    fast = _in_limit_turns(Q.copy(), ref, lo - 1e-12, hi + 1e-12, lo, hi, level)
    assert full is not None and np.array_equal(full, fast)
    assert _wide_level(bounds, np.where(np.isfinite(hi), hi + 0.1, np.inf)) == (0 if np.isfinite(hi).any() else 2)


def test_wide_bounds_refuse_a_range_short_of_a_turn_or_far_out():
    assert _wide_bounds(np.array([-math.pi, -3.0]), np.array([math.pi, 3.0])) is None
    assert _wide_bounds(np.array([-math.pi, 100.0]), np.array([math.pi, 200.0])) is None
    assert _wide_bounds(np.array([-np.inf, -math.pi]), np.array([np.inf, math.pi])) is not None


def _problem(m, q0, constraints=None):
    T = forward_kinematics(m, q0).pose("tool")
    return IKProblem(m, constraints or [PoseConstraint("tool", T)], q0)


def _long_chain(n, limit=2.5):
    """``n`` revolute joints in a row (z, y, z, y ...), frame ``tool`` at the end."""
    b = MechanismBuilder(f"chain{n}")
    parent = None
    for i in range(n):
        b.add_body(f"link{i + 1}", parent, Joint.revolute(f"joint{i + 1}", np.eye(4) if i == 0 else
                                                          translation(0, 0, 0.05), axis=(0, 0, 1) if i % 2 == 0
                                                          else (0, 1, 0), lower=-limit, upper=limit))
        parent = f"link{i + 1}"
    b.add_frame(parent, "tool", translation(0, 0, 0.05))
    return b.build()


def test_float_limit_check_equals_the_mechanisms():
    """Small mechanisms compare floats (IKProblem.within_limits), larger ones arrays: both give
    Mechanism.within_limits's verdict at, just inside and just beyond every limit, and for NaN."""
    for m in (ur5(limit=2.0), chain10(limit=2.5), _long_chain(20), _long_chain(40)):
        assert (m.nq <= FLOAT_CHECK_MAX) == (_problem(m, m.home)._within is not None)
        P = _problem(m, m.home)
        lo, hi = m.lower_limits, m.upper_limits
        rng = np.random.default_rng(3)
        for i in range(m.nq):
            for v in (lo[i], hi[i], lo[i] - 1e-9, hi[i] + 1e-9, lo[i] - 2e-9, hi[i] + 2e-9,
                      lo[i] - 1e-3, hi[i] + 1e-3, math.nan, math.inf, -math.inf):
                q = m.random_configuration(rng)
                q[i] = v
                assert P.within_limits(q) == bool(m.within_limits(q, 1e-9)), (i, v)
                assert P.within_limits(q, 1e-3) == bool(m.within_limits(q, 1e-3)), (i, v)


def _wrap_by_the_formula(P, x):
    """Every periodic unknown at the whole turn nearest its reference when that one is within limits."""
    x = np.array(x, dtype=float)
    ref = iter(P.periodic_reference.tolist())
    for k in np.flatnonzero(P.periodic):
        r = next(ref)
        if not math.isfinite(x[k]):
            continue                                        # kept as it is
        w = x[k] - TURN * round((x[k] - r) / TURN)
        if w < P.lower[k]:
            w += TURN
        if w > P.upper[k]:
            w -= TURN
        if P.lower[k] <= w <= P.upper[k]:
            x[k] = w
    return x


def test_nearest_turn_wrap_equals_the_formula():
    m = ur5(limit=2 * math.pi)                              # full-turn ranges: every joint is periodic
    rng = np.random.default_rng(5)
    for _ in range(200):
        P = _problem(m, m.random_configuration(rng))
        assert P.any_periodic and P.periodic.all()
        x = rng.uniform(-TURN, TURN, m.nq)
        np.testing.assert_allclose(P.wrap_near_reference(x), _wrap_by_the_formula(P, x), rtol=0, atol=1e-12)


def test_row_weights_built_on_first_use_are_the_constraints():
    """The generic evaluation's weighted rows use each task's row weights (built at the first evaluate)."""
    m = ur5()
    q0 = m.home
    T = translation(0.3, 0.2, 0.4) @ rot_x(0.3) @ rot_z(0.2)
    a = PoseConstraint("tool", T, weight=4.0, mask=(1, 1, 1, 0.25, 0.25, 0))
    b = PoseConstraint("tool", T, weight=0.5, priority=1)
    P = IKProblem(m, [a, b], q0)
    _, raw, levels, _ = P.evaluate(P.x_of(P.template))
    assert P.level_priorities == [0.0, 1.0]
    for c, (r_w, J_w) in zip((a, b), levels):
        r, J = raw[id(c)]
        np.testing.assert_array_equal(r_w, c.row_weights() * r)
        np.testing.assert_array_equal(J_w, (c.row_weights()[:, None] * J)[:, P.free])


def test_closed_form_and_generic_results_report_the_residual_at_their_configuration():
    """The fields of a result (the closed form's, from its confirmation; the generic solver's, evaluated)
    equal the errors of the returned configuration by the core's forward kinematics of the whole tree."""
    m = ur5()
    rng = np.random.default_rng(11)
    for solver in ("auto", "dls"):
        for qt, q0 in zip(m.random_configuration(rng, size=10), m.random_configuration(rng, size=10)):
            T = forward_kinematics(m, qt).pose("tool")
            r = solve_ik(m, PoseConstraint("tool", T), q0, solver=solver, timeout=SAFETY)
            F = forward_kinematics(m, r.q).pose("tool")
            res = r.residuals[0]
            assert r.success and res.satisfied and m.within_limits(r.q)
            np.testing.assert_allclose(res.vector[:3], F[:3, 3] - T[:3, 3], rtol=0, atol=1e-13)
            assert abs(res.position - np.linalg.norm(F[:3, 3] - T[:3, 3])) <= 1e-13
            assert res.orientation <= 1e-5 and r.levels == r.levels_met == 1


@pytest.mark.parametrize("T, match", [
    (np.full((4, 4), np.nan), "finite 4x4"), (np.diag([1.0, 1.0, 1.0, np.inf]), "finite 4x4"),
    (np.eye(3), "finite 4x4"), (np.diag([1.0, 1.0, -1.0, 1.0]), "proper rotation"),
    (np.diag([1.0, 1.1, 1.0, 1.0]), "proper rotation"), (np.eye(4).astype(np.float32) * 2, "proper rotation")])
def test_pose_targets_are_checked_on_every_path(T, match):
    """Float64 4x4 targets take a shortcut past the array conversion; every target is still checked, and the
    error names the constraint's frame."""
    with pytest.raises(InvalidConfiguration, match=match) as e:
        PoseConstraint("tool", T)
    assert "PoseConstraint('tool')" in str(e.value)


def test_pose_target_is_a_read_only_copy():
    T = translation(0.1, 0.2, 0.3)
    c = PoseConstraint("tool", T)
    T[0, 3] = 5.0
    assert c.target[0, 3] == 0.1 and not c.target.flags.writeable
    assert PoseConstraint("tool", T.tolist()).target[0, 3] == 5.0          # lists and ints are taken too
    assert PoseConstraint("tool", np.eye(4, dtype=int)).target.dtype == np.float64


def test_seeds_and_locked_joints_in_any_form_are_checked_as_before():
    """A seed with NaN is refused; a finite seed too large for the shortcut's sum of squares takes the general
    path (clamped into the limits, as any seed); locked joints may come as any iterable."""
    m = ur5(limit=2.0)
    T = forward_kinematics(m, np.full(6, 0.3)).pose("tool")
    q = np.full(6, 0.1)
    q[2] = math.nan
    with pytest.raises(InvalidConfiguration):
        solve_ik(m, PoseConstraint("tool", T), q, timeout=SAFETY)
    for big in (np.full(6, 1e200), np.full(6, 1e308)):          # the second's sum overflows
        P = IKProblem(m, [PoseConstraint("tool", T)], np.clip(big, m.lower_limits, m.upper_limits))
        r = solve_ik(m, PoseConstraint("tool", T), big, timeout=SAFETY)
        assert r.success and m.within_limits(r.q)
        np.testing.assert_array_equal(P.template, m.upper_limits)
    names = m.coordinate_names[:1]
    a = solve_ik(m, PoseConstraint("tool", T), np.full(6, 0.3), locked=iter(names), timeout=SAFETY)
    b = solve_ik(m, PoseConstraint("tool", T), np.full(6, 0.3), locked=list(names), timeout=SAFETY)
    assert a.success and np.array_equal(a.q, b.q) and a.q[0] == 0.3


def test_wrap_of_a_non_finite_unknown_keeps_it():
    m = ur5(limit=2 * math.pi)
    P = _problem(m, m.home)
    x = np.full(6, 4.0)
    x[1] = math.nan
    w = P.wrap_near_reference(x)
    assert math.isnan(w[1])
    np.testing.assert_allclose(w, _wrap_by_the_formula(P, x), rtol=0, atol=1e-12)


def test_coupled_values_of_the_last_seed_are_the_couplings():
    """A structure reuses the coupled values of its last seed when the coupling sources hold the same values:
    every template equals Mechanism.apply_couplings, whether the sources repeat, change or come back."""
    m = nonlinear_coupled_arm()
    st = ProblemStructure(m, {})
    rng = np.random.default_rng(9)
    qs = m.random_configuration(rng, size=6)
    for k in [0, 0, 1, 1, 0, 2, 3, 3, 5, 4, 4, 0]:
        q = qs[k].copy()
        q[2:] = rng.uniform(-3.0, 3.0, 2)                  # coupled values of the caller's: replaced
        np.testing.assert_array_equal(st.apply_couplings(m, q.copy()), m.apply_couplings(q))
    T = forward_kinematics(m, qs[1]).pose("tip")
    for q0 in (qs[2], qs[3], qs[2]):
        P = IKProblem(m, [PoseConstraint("tip", T, mask=(1, 1, 1, 0, 0, 0))], q0)
        np.testing.assert_array_equal(P.template, m.apply_couplings(np.clip(q0, m.lower_limits, m.upper_limits)))


def test_shape_key_of_an_unmasked_unit_weight_task_is_the_general_forms():
    """The lane engines' key of a task without a mask and of weight 1 (looked up on every solve) equals the
    general form's: kept axes and row weights read from the constraint."""
    m = ur5()
    T = forward_kinematics(m, m.home).pose("tool")
    for c in (PoseConstraint("tool", T), PositionConstraint("tool", T[:3, 3]), OrientationConstraint("tool", T[:3, :3]),
              PoseConstraint("tool", T, weight=1), PoseConstraint("tool", T, weight=2.0),
              PoseConstraint("tool", T, mask=(1, 1, 1, 1, 1, 0))):
        P = IKProblem(m, [c], m.home)
        general = (type(c).__name__, c.frame, tuple(np.asarray(c.kept_axes).tolist()), c.row_weights().tobytes())
        assert _shape_key(P) == general


def test_unknowns_and_coordinates_convert_as_the_gathers_did():
    """x_of / expand without gathers (every coordinate an unknown) give the gathers' values, and a wrong length
    is still an error."""
    m = ur5()
    P = _problem(m, m.home)
    q = np.linspace(-1.0, 1.0, 6)
    x = P.x_of(q)
    assert np.array_equal(x, q[P.free]) and x is not q
    e = P.expand(x)
    assert np.array_equal(e, q) and e is not x
    with pytest.raises((ValueError, IndexError)):
        P.expand(np.zeros(5))
    with pytest.raises((ValueError, IndexError)):
        P.x_of(np.zeros(5))


def _kernel_fields(K):
    names = ("n", "nv", "all_vars", "any_wrap", "need_rot", "need_pos", "all_rows", "masked", "unit_weights", "m",
             "var_seg", "var_x", "lo", "hi", "wrap", "clo", "chi", "rows", "wrow", "pos_rows", "rot_rows", "theta",
             "x_full0", "x0", "pt", "RtT", "Rrow", "T_wr")
    return {k: getattr(K, k) for k in names}


def test_chain_kernel_constants_kept_per_task_shape_are_a_fresh_kernels():
    """The DLS kernel's constants come from the problem structure's memo, by task shape: a kernel for a second
    problem of the same shape (other target, other seed, locked joints) equals one built from nothing, and
    another shape (mask, weights, kind) gets its own."""
    m = ur5()
    rng = np.random.default_rng(2)
    q1, q2 = m.random_configuration(rng, size=2)
    T1, T2 = (forward_kinematics(m, q).pose("tool") for q in (q1, q2))
    names = m.coordinate_names
    shapes = [lambda T: PoseConstraint("tool", T), lambda T: PositionConstraint("tool", T[:3, 3]),
              lambda T: OrientationConstraint("tool", T[:3, :3], mask=(1, 1, 0)),
              lambda T: PoseConstraint("tool", T, weight=3.0, mask=(1, 1, 1, 0.5, 0.5, 0), mask_frame="target")]
    for locked in ((), (names[0],)):
        for make in shapes:
            first = IKProblem(m, [make(T1)], q1, locked)
            _ChainKernel.build(first)                        # fills the structure's memo for this shape
            P = IKProblem(m, [make(T2)], q2, locked)
            assert P.structure is first.structure
            cached = _kernel_fields(_ChainKernel.build(P))
            P.structure.solver_constants.clear()
            fresh = _kernel_fields(_ChainKernel.build(P))
            for k in fresh:
                a, b = cached[k], fresh[k]
                assert (a is None and b is None) or np.array_equal(a, b), (k, a, b)
        assert len(P.structure.solver_constants) == 1           # the last shape's, built again after clear()


def test_errors_of_unmasked_constraints_are_the_norms_of_their_rows():
    """A Cartesian constraint without a mask sizes its residual's position and orientation rows with slices:
    the values np.linalg.norm gives on those rows (bit for bit), NaN where a kind has none."""
    rng = np.random.default_rng(4)
    T = translation(0.1, 0.2, 0.3) @ rot_x(0.4)
    for c, n in ((PoseConstraint("tool", T), 6), (PositionConstraint("tool", T[:3, 3]), 3),
                 (OrientationConstraint("tool", T[:3, :3]), 3)):
        for _ in range(50):
            r = rng.normal(size=n) * 10.0 ** rng.integers(-12, 2)
            rows = c.kept_axes + (3 if isinstance(c, OrientationConstraint) else 0)
            pos = [r[i] for i, k in enumerate(rows) if k < 3]
            rot = [r[i] for i, k in enumerate(rows) if k >= 3]
            want = (float(np.linalg.norm(pos)) if pos else math.nan, float(np.linalg.norm(rot)) if rot else math.nan)
            got = c.errors(r)
            assert np.array_equal(got, want, equal_nan=True), (c, got, want)
        with pytest.raises(IndexError):
            c.errors(np.zeros(n - 1))                           # a residual of the wrong length, as before


def test_seeds_are_put_within_the_unknowns_bounds_and_no_other_coordinate_is_touched():
    """The seed's clip by full-length bounds (-inf, inf off the unknowns) gives the gather-and-scatter clip's
    values: the unknowns within their bounds, locked and coupled coordinates as before, NaN kept."""
    m = nonlinear_coupled_arm()
    rng = np.random.default_rng(9)
    for locked in ((), ("j1",)):
        for _ in range(50):
            q = rng.uniform(-4, 4, m.nq)
            q[rng.integers(m.nq)] = rng.choice([np.nan, np.inf, -np.inf, 0.0])
            P = IKProblem(m, [PoseConstraint("tip", np.eye(4))], q, locked)
            want = np.array(q, dtype=float)
            k = P.locked
            want[k] = np.clip(want[k], m.lower_limits[k], m.upper_limits[k])
            v = want[P.free]
            want[P.free] = np.minimum(np.maximum(v, P.lower), P.upper)
            want = m.apply_couplings(want)
            assert np.array_equal(P.template, want, equal_nan=True), (locked, q)


def test_the_kept_closed_form_choice_yields_to_a_registered_one_and_to_locked_values():
    """``auto`` keeps its closed-form choice of a plain pose per problem structure and frame; a specialized
    solver registered afterwards still takes precedence, and a chain with a locked joint after a free one gets
    the closed form of its locked value (not a kept one)."""
    from mechanism_model_core.ik import eaik_solver_for, register_specialized, unregister_specialized
    from mechanism_model_core.ik.solve import _get_solver
    pytest.importorskip("eaik")
    m = ur5()
    q = np.array([0.3, -0.8, 1.1, -0.4, 0.7, 0.2])
    T = forward_kinematics(m, q).pose("tool")
    assert solve_ik(m, PoseConstraint("tool", T), m.home, timeout=SAFETY).solver == "eaik"

    class Mine:
        name = "mine"

        def accepts(self, problem):
            return True

        def solve(self, problem, options):
            return problem.result(problem.x_of(problem.template), False, "unreachable", options, 0, 0, self.name)

    register_specialized(m.name, "tool", lambda mech: Mine())
    try:
        assert solve_ik(m, PoseConstraint("tool", T), m.home, timeout=SAFETY).solver == "mine"
    finally:
        unregister_specialized(m.name, "tool")
    assert solve_ik(m, PoseConstraint("tool", T), m.home, timeout=SAFETY).solver == "eaik"
    # the elbow locked at two values: two closed forms, each its value's
    names = list(m.coordinate_names)
    solvers = []
    for v in (0.5, 1.1):
        q0 = np.array(m.home, dtype=float)
        q0[2] = v
        P = IKProblem(m, [PoseConstraint("tool", T)], q0, [names[2]])
        s = _get_solver("auto", P, None)
        assert s is eaik_solver_for(m, "tool", P) and s.accepts(P)
        solvers.append(s)
    assert solvers[0] is not solvers[1]
    r = solve_ik(m, PoseConstraint("tool", T), np.r_[q[:2], 1.1, q[3:]] + 0.05 * (np.arange(6) != 2), locked=[names[2]],
                 timeout=SAFETY)
    assert r.success and r.solver == "eaik" and r.q[2] == 1.1


def test_the_engine_kept_per_structure_is_the_shape_keys_and_locked_values_get_their_own():
    """A plain unit-weight pose's lane engine kept in the problem structure is the one the shape key finds (one
    engine for every target and seed), each problem with its own target and seed in its lane data; a weighted
    pose gets the engine of its weights, and a chain joint locked at two values gets two engines."""
    from mechanism_model_core.ik.batch import chain_engine, lane_data
    m = ur5()
    rng = np.random.default_rng(17)
    engines = set()
    for _ in range(3):
        q0, qt = m.random_configuration(rng), m.random_configuration(rng)
        T = forward_kinematics(m, qt).pose("tool")
        P = IKProblem(m, [PoseConstraint("tool", T)], q0)
        E = chain_engine(P)
        engines.add(id(E))
        xf, x0, pt, RtT, T_wr = lane_data(P)
        assert np.array_equal(xf, P.template) and np.array_equal(pt, T[:3, 3]) and np.array_equal(RtT, T[:3, :3].T)
        assert T_wr is None
    assert len(engines) == 1
    P = IKProblem(m, [PoseConstraint("tool", T, weight=2.0)], q0)
    assert id(chain_engine(P)) not in engines
    held = []
    for v in (0.4, 1.2):
        q = np.array(q0)
        q[2] = v
        P = IKProblem(m, [PoseConstraint("tool", T)], q, [m.coordinate_names[2]])
        E = chain_engine(P)
        assert E is chain_engine(IKProblem(m, [PoseConstraint("tool", T)], q, [m.coordinate_names[2]]))
        held.append(E)
        assert E.theta[2] == v
    assert held[0] is not held[1]


def test_closed_form_answers_on_a_mechanism_coupled_off_the_chain_are_expands():
    """The Panda's second finger follows the first (a coupling off the arm's chain): the eaik closed form writes
    its answer's full coordinates as the seed's with the arm's replaced, which must be ``IKProblem.expand``'s
    (the coupled finger at its coupling's value), and the chain's columns it keeps per structure the
    searchsorted ones."""
    import os
    import warnings
    from mechanism_model_core.io.urdf import load_urdf
    pytest.importorskip("eaik")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_urdf(os.path.join(os.path.dirname(__file__), "..", "data", "robots", "panda", "panda.urdf"))
    assert m.couplings
    rng = np.random.default_rng(23)
    for _ in range(20):
        q0, qt = m.random_configuration(rng), m.random_configuration(rng)
        T = forward_kinematics(m, qt).pose("panda_link8")
        r = solve_ik(m, PoseConstraint("panda_link8", T), q0, timeout=SAFETY, tol_position=1e-9, tol_orientation=1e-9)
        assert r.success and r.solver == "eaik", r
        P = IKProblem(m, [PoseConstraint("panda_link8", T)], q0)
        assert np.array_equal(r.q, P.expand(P.x_of(r.q)))
        assert np.array_equal(r.q[7:], P.template[7:])                  # the fingers as at the seed
        s = P.structure.solver_constants[("eaik columns", "panda_link8")]
        assert np.array_equal(s, np.searchsorted(P.free, np.arange(7)))


def test_expand_chain_is_expand_and_evaluates_no_coupling_on_a_plain_chain(monkeypatch):
    """``IKProblem.expand_chain`` (the closed forms' full coordinates of an answer that moves the pose's chain
    alone) equals ``expand``: on the Panda's arm chain (its coupled fingers off the chain: a plain chain,
    ``ProblemStructure.plain_chain``; with a joint of the chain locked too) without evaluating a coupling, on a
    chain that carries couplings (not plain) with them evaluated, and on a chain that is the whole mechanism as
    the unknowns themselves."""
    import os
    import warnings
    from mechanism_model_core.io.urdf import load_urdf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        panda = load_urdf(os.path.join(os.path.dirname(__file__), "..", "data", "robots", "panda", "panda.urdf"))
    coupled = nonlinear_coupled_arm()
    rng = np.random.default_rng(31)
    cases = [(panda, "panda_link8", (), True), (panda, "panda_link8", ("panda_joint2",), True),
             (panda, "panda_leftfinger", (), False), (coupled, "tip", (), False), (coupled, "l2", (), False)]
    for m, frame, locked, plain in cases:
        chain = np.asarray(frame_chain(m, frame).coords)
        for _ in range(10):
            P = IKProblem(m, [PoseConstraint(frame, np.eye(4))], m.random_configuration(rng), locked)
            assert P.structure.plain_chain(m, frame) is plain
            moved = chain[P.free_mask[chain]]                   # the chain's unknowns
            values = P.template[moved] + rng.uniform(-0.3, 0.3, len(moved))
            x = P.x_of(P.template)
            x[np.searchsorted(P.free, moved)] = values
            want = P.expand(x)
            if plain:
                monkeypatch.setattr(IKProblem, "_apply", lambda self, q: pytest.fail("a coupling evaluated"))
            got = P.expand_chain(x, moved, values)
            monkeypatch.undo()
            assert np.array_equal(got, want), (frame, locked)
            assert np.array_equal(got, m.apply_couplings(got)) and np.array_equal(got[moved], values)
    m = ur5()
    P = IKProblem(m, [PoseConstraint("tool", np.eye(4))], m.random_configuration(rng))
    x = rng.uniform(-1.0, 1.0, m.nq)
    assert P.structure.plain_chain(m, "tool") and P.expand_chain(x, np.arange(m.nq), x) is x


def test_a_pose_constraint_passes_the_same_checks_on_the_short_path():
    """solve_ik takes a plain PoseConstraint without the generic checks' calls; every malformed one still fails as
    before (weights NaN, inf, negative or not a float, priorities not integers, unknown frames) and the others
    solve (an integer weight, the ground as the frame)."""
    from mechanism_model_core.errors import UnknownFrame
    m = ur5()
    T = forward_kinematics(m, m.home).pose("tool")
    for kw, err in (({"weight": math.nan}, InvalidConfiguration), ({"weight": math.inf}, InvalidConfiguration),
                    ({"weight": -1.0}, InvalidConfiguration), ({"weight": "1"}, InvalidConfiguration),
                    ({"priority": 0.5}, InvalidConfiguration), ({"priority": True}, InvalidConfiguration)):
        with pytest.raises(err):
            solve_ik(m, PoseConstraint("tool", T, **kw), m.home)
    with pytest.raises(UnknownFrame):
        solve_ik(m, PoseConstraint("no_such_frame", T), m.home)
    with pytest.raises(UnknownFrame):
        solve_ik(m, PoseConstraint("tool", T, relative_to="no_such_frame"), m.home)
    assert solve_ik(m, PoseConstraint("tool", T, weight=2), m.home, timeout=SAFETY).success
    assert solve_ik(m, PoseConstraint(m.ground, np.eye(4)), m.home, timeout=SAFETY).success
