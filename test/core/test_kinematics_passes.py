"""Invariants of the fast kinematic passes (no timing here; speed is measured in benchmarks/).

The compiled passes (one configuration: trigonometric blocks; batch: chunked pose components) must give what
the plain definition gives: each body's pose is the parent's pose times ``Joint.transform(q)`` (the
reference code in joints.py, which the passes never call), each named frame a constant offset on its body.
Checked on random trees with every joint type, for single configurations, batches (across the chunk size and
its padding), every block length the planner can choose, odd inputs, and many threads at once.
"""

import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism_model_core import (InvalidConfiguration, Joint, MechanismBuilder, forward_kinematics,
                                  jacobian)
from mechanism_model_core import kinematics as kin
from mechanism_model_core.jacobians import jacobian_from_segments
from mechanism_model_core.spatial import make_transform, rpy_to_matrix

TYPES = ["fixed", "revolute", "continuous", "prismatic", "ball", "planar", "floating"]


def random_placement(rng):
    return make_transform(rpy_to_matrix(rng.uniform(-math.pi, math.pi, 3)), rng.uniform(-0.5, 0.5, 3))


def random_mechanism(seed: int, n_bodies: int = 8, types=TYPES):
    """A random tree: each body hangs on a random earlier body (or the ground), random joint type,
    placement, axis and offset, and a few named frames."""
    rng = np.random.default_rng(seed)
    b = MechanismBuilder(f"random{seed}")
    names = []
    for i in range(n_bodies):
        parent = None if not names or rng.random() < 0.2 else names[rng.integers(len(names))]
        t = types[rng.integers(len(types))]
        P = random_placement(rng)
        axis = rng.normal(size=3) if rng.random() < 0.5 else np.eye(3)[rng.integers(3)] * rng.choice([-1, 1])
        kw = {"offset": float(rng.uniform(-1, 1))} if t in ("revolute", "continuous", "prismatic") else {}
        if t in ("revolute", "continuous", "prismatic"):
            joint = Joint(f"j{i}", t, P, axis, **kw)
        else:
            joint = Joint(f"j{i}", t, P)
        name = f"b{i}"
        b.add_body(name, parent=parent, joint=joint)
        for k in range(rng.integers(0, 3)):
            b.add_frame(name, f"{name}_f{k}", random_placement(rng))
        names.append(name)
    if rng.random() < 0.5:
        b.add_body("fixed_on_ground", joint=Joint.fixed("g", random_placement(rng)))
        b.add_frame("fixed_on_ground", "ground_marker", random_placement(rng))
    return b.build()


def reference_poses(mech, q) -> dict:
    """``{frame: T_ground_frame}`` by composing ``Joint.transform`` from the ground outwards."""
    q = mech.configuration(q)
    world = {mech.ground: np.eye(4)}
    for spec in mech.bodies[1:]:
        sl = mech.joint_slice(spec.joint.name)
        world[spec.name] = world[spec.parent] @ spec.joint.transform(q[sl])
    out = {}
    for spec in mech.bodies:
        out[spec.name] = world[spec.name]
        for f, T in spec.frames.items():
            out[f] = world[spec.name] @ T
    return out


def reference_lwa_jacobian(mech, q, frame) -> np.ndarray:
    """LOCAL_WORLD_ALIGNED Jacobian by central differences of the reference poses."""
    h = 1e-6
    J = np.zeros((6, mech.nq))
    T0 = reference_poses(mech, q)[frame]
    for i in range(mech.nq):
        dq = np.zeros(mech.nq)
        dq[i] = h
        Tp = reference_poses(mech, q + dq)[frame]
        Tm = reference_poses(mech, q - dq)[frame]
        J[:3, i] = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
        W = (Tp[:3, :3] - Tm[:3, :3]) / (2 * h) @ T0[:3, :3].T
        J[3:, i] = [W[2, 1], W[0, 2], W[1, 0]]
    return J


@settings(max_examples=40)
@given(seed=st.integers(0, 2**31 - 1), qseed=st.integers(0, 2**31 - 1))
def test_fast_pass_equals_reference_composition(seed, qseed):
    mech = random_mechanism(seed)
    q = mech.random_configuration(np.random.default_rng(qseed))
    ref = reference_poses(mech, q)
    fk = forward_kinematics(mech, q)
    F = fk.frame_array()
    assert F.shape == (len(mech.frame_names), 4, 4)
    for i, name in enumerate(mech.frame_names):
        np.testing.assert_allclose(F[i], ref[name], atol=1e-12, err_msg=name)
        np.testing.assert_allclose(fk.pose(name), ref[name], atol=1e-12, err_msg=name)
    poses = fk.all_poses()
    assert list(poses) == mech.frame_names
    # relative poses: T_a_b = inverse(T_a) @ T_b
    a, b = mech.frame_names[-1], mech.frame_names[1]
    np.testing.assert_allclose(fk.pose(b, a), np.linalg.inv(ref[a]) @ ref[b], atol=1e-11)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), qseed=st.integers(0, 2**31 - 1), n=st.integers(1, 9))
def test_batch_equals_single(seed, qseed, n):
    mech = random_mechanism(seed)
    Q = mech.random_configuration(np.random.default_rng(qseed), size=n)
    fkb = forward_kinematics(mech, Q)
    F = fkb.frame_array()
    S = fkb.segments
    frame = mech.frame_names[int(qseed) % len(mech.frame_names)]
    rel = mech.frame_names[int(seed) % len(mech.frame_names)]
    for k in range(n):
        fk1 = forward_kinematics(mech, Q[k])
        np.testing.assert_allclose(F[k], fk1.frame_array(), atol=1e-12)
        np.testing.assert_allclose(S[k], fk1.segments, atol=1e-12)
        np.testing.assert_allclose(fkb.pose(frame, rel)[k], fk1.pose(frame, rel), atol=1e-12)
    for conv in ("LOCAL_WORLD_ALIGNED", "WORLD", "LOCAL"):
        for r in (None, rel):
            Jb = jacobian(mech, Q, frame, r, conv)
            assert Jb.shape == (n, 6, mech.nq)
            for k in range(n):
                np.testing.assert_allclose(Jb[k], jacobian(mech, Q[k], frame, r, conv), atol=1e-12)


@pytest.mark.parametrize("n", [1023, 1024, 1025, 2100])
def test_batch_across_chunk_boundaries(n):
    mech = random_mechanism(5, n_bodies=6, types=["revolute", "prismatic", "ball", "floating"])
    Q = mech.random_configuration(np.random.default_rng(n), size=n)
    fkb = forward_kinematics(mech, Q)
    F = fkb.frame_array()
    J = jacobian(mech, Q, mech.frame_names[-1])
    assert F.shape == (n, len(mech.frame_names), 4, 4) and J.shape == (n, 6, mech.nq)
    for k in sorted({0, n // 2, 1023 % n, min(1024, n - 1), n - 1}):
        np.testing.assert_allclose(F[k], forward_kinematics(mech, Q[k]).frame_array(), atol=1e-12)
        np.testing.assert_allclose(J[k], jacobian(mech, Q[k], mech.frame_names[-1]), atol=1e-12)


def reference_jacobian(mech, q, frame, rel, conv, h=1e-6) -> np.ndarray:
    """Jacobian of ``T_rel_frame`` by central differences of the reference poses, in a convention:
    LOCAL_WORLD_ALIGNED (origin velocity, rel's axes), WORLD (velocity of the point at rel's origin),
    LOCAL (origin velocity, frame's axes)."""
    q = mech.configuration(q)

    def T_rel(x):
        P = reference_poses(mech, x)
        return np.linalg.inv(P[rel]) @ P[frame] if rel else P[frame]

    T = T_rel(q)
    J = np.zeros((6, mech.nq))
    for k in range(mech.nq):
        dq = np.zeros(mech.nq)
        dq[k] = h
        Tp, Tm = T_rel(q + dq), T_rel(q - dq)
        v = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
        W = (Tp[:3, :3] - Tm[:3, :3]) / (2 * h) @ T[:3, :3].T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        if conv == "WORLD":
            v = v - np.cross(w, T[:3, 3])
        elif conv == "LOCAL":
            v, w = T[:3, :3].T @ v, T[:3, :3].T @ w
        J[:3, k], J[3:, k] = v, w
    return J


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_jacobian_in_every_convention_and_reference_by_finite_differences(seed):
    mech = random_mechanism(seed, n_bodies=6)
    q = mech.random_configuration(np.random.default_rng(seed))
    frame = mech.frame_names[seed % len(mech.frame_names)]
    fk = forward_kinematics(mech, q)
    for conv in ("LOCAL_WORLD_ALIGNED", "WORLD", "LOCAL"):
        for rel in (None, mech.frame_names[(seed // 7) % len(mech.frame_names)]):
            J = jacobian(mech, q, frame, rel, conv)
            np.testing.assert_allclose(J, reference_jacobian(mech, q, frame, rel, conv), atol=1e-6)
            np.testing.assert_allclose(jacobian_from_segments(mech, fk, frame, rel, conv), J, atol=1e-13)


def test_every_block_length_gives_the_same_poses():
    """The planner picks runs of 1, 2 or 3 segments per block; every choice must agree."""
    mech = random_mechanism(11, n_bodies=9, types=["revolute", "continuous", "prismatic", "ball"])
    q = mech.random_configuration(np.random.default_rng(0))
    ref = reference_poses(mech, q)
    plan = kin.kinematics_plan(mech)
    for r in (1, 2, 3):
        sp = kin._plan_single(plan.tree, mech.nq, kin._layout(plan.tree, r))
        out = kin._single_pass(sp, q)
        F = out.take(sp.frame_flat)
        for i, name in enumerate(mech.frame_names):
            np.testing.assert_allclose(F[i], ref[name], atol=1e-12, err_msg=f"r={r} {name}")


def test_odd_inputs():
    mech = random_mechanism(3, n_bodies=5, types=["revolute", "prismatic"])
    q = mech.random_configuration(np.random.default_rng(1))
    expected = forward_kinematics(mech, q).frame_array()
    # lists, float32, a strided view, a mapping: same result (the fast path only takes float64 arrays)
    np.testing.assert_allclose(forward_kinematics(mech, list(q)).frame_array(), expected, atol=1e-12)
    np.testing.assert_allclose(forward_kinematics(mech, q.astype(np.float32)).frame_array(), expected,
                               atol=1e-5)
    wide = np.zeros((mech.nq, 3))
    wide[:, 1] = q
    np.testing.assert_allclose(forward_kinematics(mech, wide[:, 1]).frame_array(), expected, atol=1e-12)
    by_name = dict(zip(mech.coordinate_names, q))
    np.testing.assert_allclose(forward_kinematics(mech, by_name).frame_array(), expected, atol=1e-12)
    # huge but finite values pass (q . q overflows in the quick check: the full check decides), non-finite
    # ones are refused
    with np.errstate(over="ignore"):
        forward_kinematics(mech, np.full(mech.nq, 1e200))
    for bad in (np.nan, np.inf, -np.inf):
        qb = q.copy()
        qb[-1] = bad
        with pytest.raises(InvalidConfiguration):
            forward_kinematics(mech, qb)
        with pytest.raises(InvalidConfiguration):
            jacobian(mech, qb, mech.frame_names[-1])
    # an empty batch
    fk0 = forward_kinematics(mech, np.zeros((0, mech.nq)))
    assert fk0.frame_array().shape == (0, len(mech.frame_names), 4, 4)
    assert jacobian(mech, np.zeros((0, mech.nq)), mech.frame_names[-1]).shape == (0, 6, mech.nq)


def test_mechanism_without_joints():
    b = MechanismBuilder("statue")
    b.add_body("plinth", joint=Joint.fixed("p", make_transform(None, (0, 0, 1))))
    b.add_frame("plinth", "top", make_transform(rpy_to_matrix((0.1, 0.2, 0.3)), (0, 0, 0.5)))
    mech = b.build()
    assert mech.nq == 0
    fk = forward_kinematics(mech, np.zeros(0))
    np.testing.assert_allclose(fk.pose("top"), reference_poses(mech, np.zeros(0))["top"], atol=1e-15)
    assert jacobian(mech, np.zeros(0), "top").shape == (6, 0)
    assert forward_kinematics(mech, np.zeros((3, 0))).pose("top").shape == (3, 4, 4)


def test_results_are_independent_arrays_and_the_model_is_read_only():
    mech = random_mechanism(8)
    q = mech.random_configuration(np.random.default_rng(2))
    fk = forward_kinematics(mech, q)
    name = mech.frame_names[-1]
    T = fk.pose(name)
    T0 = T.copy()
    T[:] = 0.0
    np.testing.assert_array_equal(fk.pose(name), T0)
    F = fk.frame_array()
    F[:] = 0.0
    np.testing.assert_array_equal(fk.pose(name), T0)
    c = mech.segment_tree
    plan = kin.kinematics_plan(mech)
    for arr in (c.seg_P, c.seg_L, c.seg_R, c.frame_T, plan.single.coef, plan.single.A, plan.single.frame_flat,
                plan.batch.frame_M):
        assert not arr.flags.writeable
    for step in plan.batch.steps:
        assert all(not a.flags.writeable for a in step[2:] if a is not None)


def test_many_threads_share_one_mechanism():
    mech = random_mechanism(21, n_bodies=10)
    rng = np.random.default_rng(3)
    qs = [mech.random_configuration(rng) for _ in range(40)]
    Qb = mech.random_configuration(rng, size=300)
    frame = mech.frame_names[-1]
    expected = [(forward_kinematics(mech, q).frame_array(), jacobian(mech, q, frame, None, "WORLD"))
                for q in qs]
    expected_b = forward_kinematics(mech, Qb).frame_array()
    errors = []
    barrier = threading.Barrier(8)

    def work(tid):
        try:
            barrier.wait()
            for rep in range(15):
                for i in range(tid % 3, len(qs), 3):
                    F = forward_kinematics(mech, qs[i]).frame_array()
                    J = jacobian(mech, qs[i], frame, None, "WORLD")
                    if not (np.array_equal(F, expected[i][0]) and np.array_equal(J, expected[i][1])):
                        errors.append((tid, i))
                if rep % 5 == tid % 5 and not np.array_equal(forward_kinematics(mech, Qb).frame_array(),
                                                             expected_b):
                    errors.append((tid, "batch"))
        except Exception as exc:                     # pragma: no cover - reported below
            errors.append((tid, repr(exc)))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_many_frames_on_one_body_and_branches():
    """A body with more frames than fit one block (the pass spills them into extra blocks) on a branched
    tree with a floating base, a slider and a ball joint."""
    rng = np.random.default_rng(4)
    b = MechanismBuilder("busy")
    b.add_body("base", joint=Joint.floating("float", random_placement(rng)))
    b.add_body("arm1", parent="base", joint=Joint.revolute("arm1", random_placement(rng), axis=(0, 1, 0)))
    b.add_body("arm2", parent="arm1", joint=Joint.prismatic("arm2", random_placement(rng), axis=(1, 1, 0)))
    b.add_body("arm3", parent="arm2", joint=Joint.revolute("arm3", random_placement(rng), offset=0.3))
    b.add_body("leg1", parent="base", joint=Joint.ball("leg1", random_placement(rng)))
    b.add_body("leg2", parent="leg1", joint=Joint.revolute("leg2", random_placement(rng), axis=(1, 0, 0)))
    for i in range(20):
        b.add_frame("arm3" if i % 2 else "leg2", f"marker{i}", random_placement(rng))
    mech = b.build()
    assert kin.kinematics_plan(mech).single.nb > len(mech.joints)      # some frames spilled into extra blocks
    Q = mech.random_configuration(rng, size=3)
    F = forward_kinematics(mech, Q).frame_array()
    for k in range(3):
        ref = reference_poses(mech, Q[k])
        single = forward_kinematics(mech, Q[k]).frame_array()
        for i, name in enumerate(mech.frame_names):
            np.testing.assert_allclose(single[i], ref[name], atol=1e-12, err_msg=name)
            np.testing.assert_allclose(F[k, i], ref[name], atol=1e-12, err_msg=name)
    for frame in ("marker0", "marker7", "arm2"):
        np.testing.assert_allclose(jacobian(mech, Q[0], frame), reference_lwa_jacobian(mech, Q[0], frame),
                                   atol=1e-6)


def test_one_pass_serves_poses_and_jacobians():
    """``fk.jacobian`` and ``jacobian_from_segments(mech, fk, ...)`` reuse the pass of ``fk`` and agree with
    ``jacobian``; so does a ForwardKinematics constructed directly."""
    mech = random_mechanism(17, n_bodies=7)
    rng = np.random.default_rng(5)
    for q in (mech.random_configuration(rng), mech.random_configuration(rng, size=4)):
        fk = forward_kinematics(mech, q)
        plain = kin.ForwardKinematics(mech, q)
        for frame in mech.frame_names[::3]:
            for conv in ("LOCAL_WORLD_ALIGNED", "WORLD", "LOCAL"):
                J = jacobian(mech, q, frame, mech.frame_names[2], conv)
                np.testing.assert_allclose(fk.jacobian(frame, mech.frame_names[2], conv), J, atol=1e-12)
                np.testing.assert_allclose(jacobian_from_segments(mech, fk, frame, mech.frame_names[2], conv),
                                           J, atol=1e-12)
                np.testing.assert_allclose(plain.jacobian(frame, mech.frame_names[2], conv), J, atol=1e-12)
            np.testing.assert_allclose(plain.pose(frame), fk.pose(frame), atol=1e-12)
        np.testing.assert_allclose(plain.frame_array(), fk.frame_array(), atol=1e-12)


def test_batch_jacobians_are_new_arrays_though_the_pass_reuses_work_space():
    """jacobian() of a batch runs the pass in per-thread work arrays: every result must stay its own (one
    configuration, a padded chunk, several chunks), agree with the one-configuration columns, and threads
    must not see each other's work."""
    mech = random_mechanism(5, n_bodies=7)
    rng = np.random.default_rng(6)
    frame = mech.frame_names[-1]
    for B in (1, 3, 1100):
        Q1 = mech.random_configuration(rng, size=B)
        Q2 = mech.random_configuration(rng, size=B)
        for conv in ("LOCAL_WORLD_ALIGNED", "WORLD"):
            J1 = jacobian(mech, Q1, frame, convention=conv)
            kept = J1.copy()
            J2 = jacobian(mech, Q2, frame, convention=conv)
            np.testing.assert_array_equal(J1, kept)
            for i in {0, B // 2, B - 1}:
                np.testing.assert_allclose(J1[i], jacobian(mech, Q1[i], frame, convention=conv), atol=1e-12)
                np.testing.assert_allclose(J2[i], jacobian(mech, Q2[i], frame, convention=conv), atol=1e-12)
    Qs = [mech.random_configuration(rng, size=1100) for _ in range(4)]
    expected = [jacobian(mech, Q, frame) for Q in Qs]
    errors = []

    def work(k):
        for _ in range(5):
            if not np.array_equal(jacobian(mech, Qs[k], frame), expected[k]):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
