"""The banded one-configuration pass (kinematics_banded, used for large models) against the plain definition
(``Joint.transform`` composed along the tree, see test_kinematics_passes.reference_poses), central
differences, and the block pass on the same trees. No timing here: speed is in benchmarks/bench_scale.py.
"""

import gc
import math
import threading
import tracemalloc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics, jacobian
from mechanism_model_core import kinematics as kin
from mechanism_model_core.kinematics_banded import BandedPlan, banded_pass, plan_banded
from mechanism_model_core.spatial import make_transform

from .test_kinematics_passes import random_mechanism, reference_lwa_jacobian, reference_poses


def block_plan(mech):
    t = kin.kinematics_plan(mech).tree
    return kin._plan_single(t, mech.nq, kin._layout(t, 3))


def chain(n, prismatic_every=0, frames_every=0):
    """A serial chain of n links, axes cycling x, y, z (every k-th joint prismatic), frames on some links."""
    rng = np.random.default_rng(n)
    b = MechanismBuilder(f"chain{n}")
    parent = None
    for i in range(n):
        P = make_transform(None, rng.uniform(-0.1, 0.1, 3))
        axis = np.eye(3)[i % 3]
        j = (Joint.prismatic(f"j{i}", P, axis=axis) if prismatic_every and i % prismatic_every == 0
             else Joint.revolute(f"j{i}", P, axis=axis))
        b.add_body(f"l{i}", parent, j)
        if frames_every and i % frames_every == 0:
            b.add_frame(f"l{i}", f"marker{i}", make_transform(None, (0.0, 0.0, 0.1)))
        parent = f"l{i}"
    b.add_frame(parent, "tip", make_transform(None, (0.1, 0.0, 0.0)))
    return b.build()


def check_against_reference(mech, q, plan, atol=1e-11):
    out = banded_pass(plan, q)
    F = out.take(plan.frame_flat)
    ref = reference_poses(mech, q)
    for i, name in enumerate(mech.frame_names):
        np.testing.assert_allclose(F[i], ref[name], atol=atol, err_msg=name)
    np.testing.assert_allclose(out.take(plan.seg_flat), kin._single_pass(block_plan(mech), q).take(
        block_plan(mech).seg_flat), atol=atol)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), qseed=st.integers(0, 2**31 - 1), n=st.integers(1, 24))
def test_banded_pass_equals_reference_composition(seed, qseed, n):
    """Every joint type (multi-DOF joints are several segments), frames on bodies and on the ground."""
    mech = random_mechanism(seed, n_bodies=n)
    plan = plan_banded(kin.kinematics_plan(mech).tree)
    q = mech.random_configuration(np.random.default_rng(qseed))
    check_against_reference(mech, q, plan)
    # the Jacobian gathers from the banded output exactly as from the blocks'
    f = int(qseed) % len(mech.frame_names)
    J = kin._single_columns(banded_pass(plan, q), kin._frame_jacobian(kin.kinematics_plan(mech).tree, plan, f),
                            mech.nq, False)
    bp = block_plan(mech)
    Jb = kin._single_columns(kin._single_pass(bp, q), kin._frame_jacobian(kin.kinematics_plan(mech).tree, bp, f),
                             mech.nq, False)
    np.testing.assert_allclose(J, Jb, atol=1e-12)


def test_the_banded_pass_uses_the_kernels_constants():
    from mechanism_model_core import kinematics_banded as kb
    for name in ("_C0", "_CC", "_CS", "_EZ", "_GROUND_EXT"):
        np.testing.assert_array_equal(getattr(kb, name), getattr(kin, name), err_msg=name)
    idx = np.arange(5)[:, None, None], np.arange(4)[:, None], np.arange(4)
    np.testing.assert_array_equal(kb._flat(idx[0], *idx[1:]), kin._flat(1, idx[0], 0, *idx[1:]))


def test_large_models_take_the_banded_pass_and_small_robots_the_blocks():
    assert type(kin.kinematics_plan(random_mechanism(1, n_bodies=8)).single) is kin._SinglePlan
    assert type(kin.kinematics_plan(chain(30)).single) is kin._SinglePlan        # <= 32 segments: blocks
    long_chain = chain(400, prismatic_every=7, frames_every=5)
    assert type(kin.kinematics_plan(long_chain).single) is BandedPlan
    tree = random_mechanism(7, n_bodies=90)
    assert type(kin.kinematics_plan(tree).single) is BandedPlan


def test_numpy_calls_grow_with_the_square_root_of_the_depth():
    """The pass's Python loop runs over levels and bands, not over segments (structure, not time)."""
    for n in (300, 1600):
        plan = kin.kinematics_plan(chain(n)).single
        depth = n - 1
        steps = len(plan.level_steps) + len(plan.anchor_steps)
        assert steps <= 2 * math.ceil(math.sqrt(depth + 1)) + 1, (n, steps)
        # in a chain every level step composes contiguous runs: views, no gathers
        assert all(type(src) is slice for _, src in plan.level_steps)


def test_long_chain_through_the_public_api():
    mech = chain(160, prismatic_every=5, frames_every=3)
    rng = np.random.default_rng(1)
    q = mech.random_configuration(rng)
    plan = kin.kinematics_plan(mech).single
    assert type(plan) is BandedPlan
    fk = forward_kinematics(mech, q)
    ref = reference_poses(mech, q)
    F = fk.frame_array()
    for i, name in enumerate(mech.frame_names):
        np.testing.assert_allclose(F[i], ref[name], atol=1e-11, err_msg=name)
    np.testing.assert_allclose(fk.pose("tip", "marker60"), np.linalg.inv(ref["marker60"]) @ ref["tip"],
                               atol=1e-10)
    # Jacobians by central differences of the plain definition, and one batch against the single pass
    np.testing.assert_allclose(jacobian(mech, q, "marker30"), reference_lwa_jacobian(mech, q, "marker30"),
                               atol=1e-6)
    Q = mech.random_configuration(rng, size=3)
    Jb = jacobian(mech, Q, "tip", "marker9", "WORLD")
    for k in range(3):
        np.testing.assert_allclose(Jb[k], jacobian(mech, Q[k], "tip", "marker9", "WORLD"), atol=1e-11)
        np.testing.assert_allclose(forward_kinematics(mech, Q).frame_array()[k],
                                   forward_kinematics(mech, Q[k]).frame_array(), atol=1e-11)


def test_wide_tree_with_every_joint_type():
    mech = random_mechanism(3, n_bodies=70)
    assert type(kin.kinematics_plan(mech).single) is BandedPlan
    q = mech.random_configuration(np.random.default_rng(2))
    F = forward_kinematics(mech, q).frame_array()
    ref = reference_poses(mech, q)
    for i, name in enumerate(mech.frame_names):
        np.testing.assert_allclose(F[i], ref[name], atol=1e-11, err_msg=name)


def test_huge_angles_are_exact():
    """Sine and cosine of each angle (issue 10.5): a long chain at |q| = 1e12 rad matches the definition."""
    mech = chain(150, prismatic_every=9)
    assert type(kin.kinematics_plan(mech).single) is BandedPlan
    q = np.random.default_rng(4).uniform(-1, 1, mech.nq) * 1e12
    pri = [i for i, n in enumerate(mech.coordinate_names) if int(n[1:]) % 9 == 0]
    q[pri] = 0.01
    F = forward_kinematics(mech, q).frame_array()
    ref = reference_poses(mech, q)
    for i, name in enumerate(mech.frame_names):
        np.testing.assert_allclose(F[i], ref[name], atol=1e-9, err_msg=name)


def test_threads_share_a_large_model():
    """The banded pass keeps per-thread scratch arrays: many threads at once get the single-thread answer."""
    mech = random_mechanism(21, n_bodies=80)
    assert type(kin.kinematics_plan(mech).single) is BandedPlan
    rng = np.random.default_rng(3)
    qs = [mech.random_configuration(rng) for _ in range(20)]
    frame = mech.frame_names[-1]
    expected = [(forward_kinematics(mech, q).frame_array(), jacobian(mech, q, frame)) for q in qs]
    errors = []
    barrier = threading.Barrier(8)

    def work(tid):
        try:
            barrier.wait()
            for _ in range(10):
                for i in range(tid % 3, len(qs), 3):
                    F = forward_kinematics(mech, qs[i]).frame_array()
                    J = jacobian(mech, qs[i], frame)
                    if not (np.array_equal(F, expected[i][0]) and np.array_equal(J, expected[i][1])):
                        errors.append((tid, i))
        except Exception as exc:                     # pragma: no cover - reported below
            errors.append((tid, repr(exc)))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_results_do_not_share_memory_between_calls():
    mech = chain(200)
    q1, q2 = (mech.random_configuration(np.random.default_rng(k)) for k in (1, 2))
    fk1 = forward_kinematics(mech, q1)
    T1 = fk1.pose("tip").copy()
    forward_kinematics(mech, q2)                      # reuses the thread's scratch, not fk1's output
    np.testing.assert_array_equal(fk1.pose("tip"), T1)


def test_memory_grows_linearly_with_the_model():
    """Issue 10.11: building, compiling and evaluating (poses, a Jacobian, a small batch) of a model four
    times as long takes about four times the memory (a (terms x coordinates) plan took sixteen)."""
    peaks = {}
    for n in (400, 1600):
        gc.collect()
        tracemalloc.start()
        try:
            mech = chain(n, prismatic_every=11, frames_every=4)
            q = mech.random_configuration(np.random.default_rng(0))
            forward_kinematics(mech, q).frame_array()
            jacobian(mech, q, "tip")
            jacobian(mech, mech.random_configuration(np.random.default_rng(1), size=2), "marker100")
            peaks[n] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        del mech
    assert peaks[1600] < 5.5 * peaks[400], peaks
