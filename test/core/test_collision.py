"""Collision queries against closed forms: primitive pairs at known poses, shapes on moving bodies placed by
hand, the shape tree (coarse-to-fine gives the leaves' verdicts), the environment, the collision matrix, and
hostile shape input (ModelFileError naming file and line)."""

from __future__ import annotations

import concurrent.futures
import gc
import math
import os
import struct
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mechanism_model_core import (BoundingShape, Joint, MechanismBuilder, ModelFileError, load_model,
                                  forward_kinematics)
from mechanism_model_core.io.claraty_xml import load_claraty_xml, save_claraty_xml
from mechanism_model_core.io.urdf import loads_urdf, load_urdf
from mechanism_model_core.library import model_path
from mechanism_model_core.spatial import make_transform, rot_x, rot_z, translation, euler_to_matrix

from .optional_deps import require  # noqa: E402

coal = require("coal", "collision")

from mechanism_model_core.collision import (Box, CollisionMatrix, CollisionModel, Environment, HeightField,  # noqa: E402
                                            Obstacle, collision_model, collisions, distance,
                                            generate_collision_matrix, in_collision, minimum_distance)
from mechanism_model_core.io import read_srdf  # noqa: E402
from mechanism_model_core.collision import scene  # noqa: E402
from mechanism_model_core.collision.queries import _pair_hits  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")


def two_bodies(shape_a, shape_b, T_a=None):
    """Body ``a`` fixed on the ground at ``T_a``; body ``b`` on a floating joint (x, y, z, roll, pitch, yaw)."""
    b = MechanismBuilder("pair")
    b.add_body("a", None, Joint.fixed("fix", np.eye(4) if T_a is None else T_a), shapes=(shape_a,))
    b.add_body("b", None, Joint.floating("free"), shapes=(shape_b,))
    return b.build()


def q_of(xyz, rpy=(0, 0, 0)):
    return np.array(list(xyz) + list(rpy), dtype=float)


def shape(name, kind, dims, T=None, **kw):
    return BoundingShape(name, kind, np.eye(4) if T is None else T, dims, **kw)


# ---------------------------------------------------------------------------------------------- closed forms
coords = st.floats(-1.5, 1.5)


@settings(max_examples=60, deadline=None)
@given(coords, coords, coords, st.floats(0.05, 0.5), st.floats(0.05, 0.5))
def test_sphere_sphere(x, y, z, r1, r2):
    m = two_bodies(shape("s1", "sphere", (r1,)), shape("s2", "sphere", (r2,)))
    q = q_of((x, y, z))
    gap = math.sqrt(x * x + y * y + z * z) - r1 - r2
    if abs(gap) < 1e-6:
        return
    assert in_collision(m, q) == (gap < 0)
    d = distance(m, q, "a", "b")
    assert d.distance == pytest.approx(gap, abs=1e-6)
    if gap > 0:     # witness points on each sphere, along the centre line
        u = np.array([x, y, z]) / math.sqrt(x * x + y * y + z * z)
        np.testing.assert_allclose(d.point_a, r1 * u, atol=1e-6)
        np.testing.assert_allclose(d.point_b, np.array([x, y, z]) - r2 * u, atol=1e-6)


def _sphere_box_distance(c, h):
    """Signed distance from point c to an axis-aligned box of half extents h (closed form)."""
    q = np.abs(c) - h
    outside = np.linalg.norm(np.maximum(q, 0))
    inside = min(max(q[0], q[1], q[2]), 0.0)
    return outside + inside


@settings(max_examples=60, deadline=None)
@given(coords, coords, coords, st.floats(0.02, 0.4))
def test_sphere_box(x, y, z, r):
    h = np.array([0.4, 0.25, 0.15])
    m = two_bodies(shape("box", "box", 2 * h), shape("ball", "sphere", (r,)))
    gap = _sphere_box_distance(np.array([x, y, z]), h) - r
    if abs(gap) < 1e-6:
        return
    q = q_of((x, y, z))
    assert in_collision(m, q) == (gap < 0)
    if gap > 0:
        assert distance(m, q, "a", "b").distance == pytest.approx(gap, abs=1e-6)


def _sat_overlap(Ra, pa, ha, Rb, pb, hb) -> bool:
    """Separating-axis test for two oriented boxes (Gottschalk's 15 axes), independent of coal."""
    axes = [Ra[:, i] for i in range(3)] + [Rb[:, i] for i in range(3)]
    axes += [np.cross(Ra[:, i], Rb[:, j]) for i in range(3) for j in range(3)]
    d = pb - pa
    for a in axes:
        n = np.linalg.norm(a)
        if n < 1e-9:
            continue
        a = a / n
        ra = sum(ha[i] * abs(a @ Ra[:, i]) for i in range(3))
        rb = sum(hb[i] * abs(a @ Rb[:, i]) for i in range(3))
        if abs(a @ d) > ra + rb + 1e-9:
            return False
    return True


@settings(max_examples=80, deadline=None)
@given(coords, coords, coords, st.floats(-3, 3), st.floats(-1.5, 1.5), st.floats(-3, 3))
def test_box_box_separating_axes(x, y, z, r, p, w):
    ha, hb = np.array([0.5, 0.3, 0.2]), np.array([0.35, 0.1, 0.25])
    Ta = make_transform(euler_to_matrix("xyz", [0.3, -0.2, 0.5]), [0.1, -0.05, 0.02])
    m = two_bodies(shape("A", "box", 2 * ha), shape("B", "box", 2 * hb), Ta)
    q = q_of((x, y, z), (r, p, w))
    Tb = forward_kinematics(m, q).pose("b")
    expect = _sat_overlap(Ta[:3, :3], Ta[:3, 3], ha, Tb[:3, :3], Tb[:3, 3], hb)
    # skip configurations within 1e-6 m of touching: the verdict there is numerically arbitrary
    d = distance(m, q, "a", "b").distance
    if abs(d) < 1e-6:
        return
    assert in_collision(m, q) == expect
    assert (d < 0) == expect


def _segment_distance(p1, q1, p2, q2):
    """Closest distance between segments p1q1 and p2q2 (Ericson, Real-Time Collision Detection 5.1.9)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = d1 @ d1, d2 @ d2, d2 @ r
    c, b = d1 @ r, d1 @ d2
    den = a * e - b * b
    s = np.clip((b * f - c * e) / den, 0, 1) if den > 1e-12 else 0.0
    t = (b * s + f) / e
    if t < 0:
        t, s = 0.0, np.clip(-c / a, 0, 1)
    elif t > 1:
        t, s = 1.0, np.clip((b - c) / a, 0, 1)
    return float(np.linalg.norm((p1 + d1 * s) - (p2 + d2 * t)))


@settings(max_examples=60, deadline=None)
@given(coords, coords, coords, st.floats(-3, 3), st.floats(-1.5, 1.5), st.floats(-3, 3))
def test_capsule_capsule(x, y, z, r, p, w):
    m = two_bodies(shape("c1", "capsule", (0.1, 0.6)), shape("c2", "capsule", (0.15, 0.4)))
    q = q_of((x, y, z), (r, p, w))
    Tb = forward_kinematics(m, q).pose("b")
    p2, q2 = Tb[:3, 3] - 0.2 * Tb[:3, 2], Tb[:3, 3] + 0.2 * Tb[:3, 2]
    gap = _segment_distance(np.array([0, 0, -0.3]), np.array([0, 0, 0.3]), p2, q2) - 0.25
    if abs(gap) < 1e-6:
        return
    assert in_collision(m, q) == (gap < 0)
    if gap > 0:
        assert distance(m, q, "a", "b").distance == pytest.approx(gap, abs=1e-6)


@pytest.mark.parametrize("dx, expect", [(0.5, 0.5 - 0.1 - 0.15), (0.3, 0.05), (0.2, -0.05)])
def test_parallel_cylinders_side_by_side(dx, expect):
    m = two_bodies(shape("c1", "cylinder", (0.1, 1.0)), shape("c2", "cylinder", (0.15, 0.5)))
    d = distance(m, q_of((dx, 0, 0.1)), "a", "b")
    assert d.distance == pytest.approx(expect, abs=1e-6)
    assert in_collision(m, q_of((dx, 0, 0.1))) == (expect < 0)
    if expect > 0:
        assert d.point_a[0] == pytest.approx(0.1, abs=1e-6)
        assert d.point_b[0] == pytest.approx(dx - 0.15, abs=1e-6)


def test_cylinder_end_cap_above_another():
    # coaxial cylinders: gap between the end caps
    m = two_bodies(shape("c1", "cylinder", (0.1, 1.0)), shape("c2", "cylinder", (0.3, 0.2)))
    assert distance(m, q_of((0.05, 0, 0.5 + 0.1 + 0.25)), "a", "b").distance == pytest.approx(0.25, abs=1e-6)


def test_contacts_have_point_normal_and_depth():
    m = two_bodies(shape("s1", "sphere", (0.5,)), shape("s2", "sphere", (0.5,)))
    cs = collisions(m, q_of((0.8, 0, 0)))
    assert len(cs) >= 1
    c = cs[0]
    assert (c.body_a, c.body_b, c.shape_a, c.shape_b) == ("a", "b", "s1", "s2")
    assert c.depth == pytest.approx(0.2, abs=1e-6)
    np.testing.assert_allclose(c.normal, [1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(c.point, [0.4, 0, 0], atol=1e-6)
    assert collisions(m, q_of((1.2, 0, 0))) == []


def test_shapes_on_moving_bodies_against_poses_by_hand():
    """Planar 2R arm, a sphere at each link's end; ground carries a sphere obstacle at (1.2, 0.9, 0)."""
    b = MechanismBuilder("arm2")
    b.add_body("l1", None, Joint.revolute("j1", np.eye(4)), shapes=(shape("s1", "sphere", (0.1,),
                                                                          translation(1.0, 0, 0)),))
    b.add_body("l2", "l1", Joint.revolute("j2", translation(1.0, 0, 0)),
               shapes=(shape("s2", "sphere", (0.1,), translation(0.8, 0, 0)),))
    b.add_shape("ground", shape("post", "sphere", (0.2,), translation(1.2, 0.9, 0)))
    m = b.build()
    rng = np.random.default_rng(3)
    for q in rng.uniform(-math.pi, math.pi, size=(40, 2)):
        t1, t12 = q[0], q[0] + q[1]
        c1 = np.array([math.cos(t1), math.sin(t1), 0])
        c2 = c1 + 0.8 * np.array([math.cos(t12), math.sin(t12), 0])
        post = np.array([1.2, 0.9, 0])
        d_l2_post = np.linalg.norm(c2 - post) - 0.3
        d_l1_post = np.linalg.norm(c1 - post) - 0.3
        assert distance(m, q, "l2", "ground").distance == pytest.approx(d_l2_post, abs=1e-6)
        assert distance(m, q, "l1", "ground").distance == pytest.approx(d_l1_post, abs=1e-6)
        # l1 is adjacent to the ground (default rule): only l2 / ground counts for self-collision
        if abs(d_l2_post) > 1e-6:
            assert in_collision(m, q) == (d_l2_post < 0)
        assert minimum_distance(m, q).distance == pytest.approx(d_l2_post, abs=1e-6)


def test_batch_equals_single_calls():
    m = load_urdf(os.path.join(DATA, "arm7", "arm7_primitives.urdf"))
    Q = m.random_configuration(11, size=40)
    batch = in_collision(m, Q)
    assert batch.shape == (40,) and batch.dtype == bool
    assert list(batch) == [in_collision(m, q) for q in Q]
    dists = minimum_distance(m, Q)
    np.testing.assert_allclose([d.distance for d in dists], [minimum_distance(m, q).distance for q in Q],
                               atol=1e-12)
    assert 0 < batch.sum() < 40          # the sample exercises both verdicts


def test_fast_verdicts_equal_the_contact_search():
    """``in_collision`` (one box broad phase, cached per-pair functors; batches pair by pair) gives, for one
    configuration and for a batch, the verdict of ``collisions`` (the general tree search) -- with a
    terrain plane, a rock and margins, on Rocky 8 and on a model of shape trees."""
    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    env = Environment([Obstacle.ground_plane(height=-0.02), Obstacle.box("rock", (0.3, 0.3, 0.3),
                                                                         translation(1.0, 0.0, 0.2))])
    for m, Q in ((rover, rover.random_configuration(3, size=60)),
                 (tree_mechanism(), np.hstack([np.random.default_rng(2).uniform(-0.9, 0.9, size=(60, 3)),
                                               np.random.default_rng(3).uniform(-3, 3, size=(60, 3))]))):
        for kw in ({}, {"margin": 0.03}, {"environment": env}, {"environment": env, "margin": 0.03},
                   {"environment": env, "self_collision": False}):
            expect = [bool(collisions(m, q, **kw)) for q in Q]
            assert list(in_collision(m, Q, **kw)) == expect, kw
            assert [in_collision(m, q, **kw) for q in Q] == expect, kw
            if (kw.get("self_collision") is False) if m is rover else ("environment" not in kw):
                assert 0 < sum(expect) < len(Q), kw          # both verdicts exercised


def test_threads_each_get_their_own_environment_data_and_the_same_verdicts():
    """The coal data of an environment is per thread (coal objects are not shared): four threads querying
    one environment at once give the verdicts of one thread, each thread's data is its own, and a thread's
    data goes with it (no map keyed by thread id keeps it)."""
    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    env = Environment([Obstacle.ground_plane(height=-0.02), Obstacle.box("rock", (0.3, 0.3, 0.3),
                                                                         translation(1.0, 0.0, 0.2))])
    Q = rover.random_configuration(5, size=24)
    expect = [in_collision(rover, q, environment=env, self_collision=False) for q in Q]
    assert 0 < sum(expect) < len(Q)
    seen, start = [], threading.Barrier(4)

    def run(_):
        start.wait(timeout=60)
        got = [in_collision(rover, q, environment=env, self_collision=False) for q in Q]
        seen.append(id(scene._environment_data(env)))
        return got

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert all(got == expect for got in pool.map(run, range(4)))
    assert len(set(seen)) == 4
    refs = []
    worker = threading.Thread(target=lambda: refs.append(weakref.ref(scene._environment_data(env))))
    worker.start()
    worker.join()
    gc.collect()
    assert refs and refs[0]() is None, "a finished thread's environment data is still alive"


# ---------------------------------------------------------------------------------------------- shape trees
def tree_mechanism():
    """Two bodies, each a coarse box containing finer leaves (a level-2 box holding level-3 spheres)."""
    def tree(prefix):
        return (shape(f"{prefix}_hull", "box", (1.0, 0.5, 0.5), level=1, is_container=True),
                shape(f"{prefix}_front", "box", (0.45, 0.45, 0.45), translation(0.25, 0, 0), parent=f"{prefix}_hull",
                      level=2, is_container=True),
                shape(f"{prefix}_ball1", "sphere", (0.12,), translation(0.35, 0.1, 0), parent=f"{prefix}_front",
                      level=3),
                shape(f"{prefix}_ball2", "sphere", (0.1,), translation(0.15, -0.1, 0.1), parent=f"{prefix}_front",
                      level=3),
                shape(f"{prefix}_tail", "cylinder", (0.1, 0.4), translation(-0.25, 0, 0), parent=f"{prefix}_hull",
                      level=2))
    b = MechanismBuilder("trees")
    b.add_body("a", None, Joint.fixed("fix", np.eye(4)), shapes=tree("a"))
    b.add_body("b", None, Joint.floating("free"), shapes=tree("b"))
    return b.build()


def test_coarse_to_fine_gives_the_leaves_verdicts():
    m = tree_mechanism()
    rng = np.random.default_rng(5)
    Q = np.hstack([rng.uniform(-0.9, 0.9, size=(400, 3)), rng.uniform(-math.pi, math.pi, size=(400, 3))])
    fine = in_collision(m, Q, resolution="fine")
    leaves = in_collision(m, Q, resolution="leaves")
    coarse = in_collision(m, Q, resolution="coarse")
    assert list(fine) == list(leaves)
    assert np.all(coarse >= fine)                        # the coarse hull contains the leaves
    assert 20 < fine.sum() < coarse.sum()                # and is strictly more conservative here
    d_fine = [d.distance for d in minimum_distance(m, Q[:60], resolution="fine")]
    d_leaves = [d.distance for d in minimum_distance(m, Q[:60], resolution="leaves")]
    np.testing.assert_allclose(d_fine, d_leaves, atol=1e-9)
    contacts = collisions(m, Q[np.argmax(fine)])
    assert contacts and all(c.shape_a in ("a_ball1", "a_ball2", "a_tail") for c in contacts)


# ---------------------------------------------------------------------------------------------- environment
def test_height_field_terrain_and_boxes():
    m = two_bodies(shape("s", "sphere", (0.01,)), shape("ball", "sphere", (0.2,)), translation(0, 0, 10))
    x = np.linspace(-2, 2, 41)
    y = np.linspace(-1, 1, 21)
    X, Y = np.meshgrid(x, y)
    H = 0.1 * X + 0.05 * Y                  # a tilted plane sampled on the grid
    env = Environment([Obstacle("terrain", HeightField(x, y, H)),
                       Obstacle.box("rock", (0.2, 0.2, 0.2), translation(1.5, 0.5, 0.3))])
    n = np.array([-0.1, -0.05, 1.0])
    n /= np.linalg.norm(n)
    for (px, py, pz) in [(0.3, 0.2, 0.6), (-1.0, 0.4, 0.1), (0.0, -0.5, 0.15), (1.2, -0.3, 0.5)]:
        h = 0.1 * px + 0.05 * py
        signed = (pz - h) * n[2] - 0.2          # distance of the sphere to the plane
        q = q_of((px, py, pz))
        if abs(signed) > 1e-6:
            assert in_collision(m, q, environment=env, self_collision=False) == (signed < 0)
        d = distance(m, q, "b", "terrain", environment=env)
        if signed > 0:
            assert d.distance == pytest.approx(signed, abs=1e-6)
        else:
            assert d.distance < 0
    # the box
    assert in_collision(m, q_of((1.5, 0.5, 0.55)), environment=env, self_collision=False)
    assert not in_collision(m, q_of((1.5, 0.5, 0.65)), environment=env, self_collision=False)
    d = minimum_distance(m, q_of((1.5, 0.5, 0.65)), environment=env, self_collision=False)
    assert d.body_b == "rock" and d.environment and d.distance == pytest.approx(0.05, abs=1e-6)


def test_wall_and_ground_plane():
    m = two_bodies(shape("s", "sphere", (0.01,)), shape("ball", "sphere", (0.2,)), translation(0, 0, 10))
    env = Environment([Obstacle.wall("wall", [(1, -1, 0), (1, 1, 0), (1, 1, 2), (1, -1, 2)]),
                       Obstacle.ground_plane()])
    assert distance(m, q_of((0.5, 0, 1)), "b", "wall", environment=env).distance == pytest.approx(0.3, abs=1e-6)
    assert in_collision(m, q_of((0.9, 0, 1)), environment=env, self_collision=False)
    assert in_collision(m, q_of((0, 0, 0.1)), environment=env, self_collision=False)
    assert not in_collision(m, q_of((0, 0, 0.3)), environment=env, self_collision=False)
    cs = collisions(m, q_of((0.9, 0, 1)), environment=env, self_collision=False)
    assert {c.body_b for c in cs} == {"wall"} and all(c.environment for c in cs)


def test_rocky8_home_is_free_and_the_arm_can_hit_the_chassis():
    m = load_model(model_path("rocky8/rocky8_rover.xml"))
    assert not in_collision(m, None)
    d = minimum_distance(m, None)
    assert d.distance > 0
    # a rover on flat ground: its wheels touch the terrain at home
    env = Environment([Obstacle.ground_plane(height=0.0)])
    hits = {c.body_a for c in collisions(m, None, environment=env, self_collision=False, margin=1e-3)}
    assert {"left_front_wheel", "right_rear_wheel"} <= hits


# ---------------------------------------------------------------------------------------------- collision matrix
def test_default_matrix_skips_adjacent_and_rigid_pairs():
    b = MechanismBuilder("chain")
    s = (shape("s", "sphere", (0.1,)),)
    b.add_body("a", None, Joint.revolute("ja", np.eye(4)), shapes=s)
    b.add_body("a_cover", "a", Joint.fixed("fa", translation(0, 0, 0.1)), shapes=s)
    b.add_body("b", "a_cover", Joint.revolute("jb", translation(1, 0, 0)), shapes=s)
    b.add_body("c", "b", Joint.revolute("jc", translation(1, 0, 0)), shapes=s)
    m = b.build()
    M = CollisionMatrix.default(m)
    assert M.disabled[("a", "a_cover")] == "Rigid"
    assert M.disabled[("a_cover", "b")] == "Adjacent" and M.disabled[("a", "b")] == "Adjacent"
    assert M.allowed("a", "c") and M.allowed("a_cover", "c")
    assert not M.allowed("b", "c")


def test_srdf_and_claraty_collision_matrix(tmp_path):
    m = load_urdf(os.path.join(DATA, "arm7", "arm7_primitives.urdf"))
    srdf = tmp_path / "arm7.srdf"
    srdf.write_text('<?xml version="1.0"?>\n<robot name="arm7">\n'
                    '  <disable_collisions link1="link3" link2="link5" reason="Never"/>\n'
                    '  <disable_collisions link1="base" link2="link4" reason="User"/>\n</robot>\n')
    M = read_srdf(srdf, m)
    assert not M.allowed("link3", "link5") and not M.allowed("base", "link4") and M.allowed("base", "link5")
    model = CollisionModel(m, read_srdf(srdf, m))
    assert ("link3", "link5") not in model.pairs_checked
    bad = tmp_path / "bad.srdf"
    bad.write_text('<robot name="x">\n\n  <disable_collisions link1="link3" link2="nope"/>\n</robot>\n')
    with pytest.raises(ModelFileError) as ei:
        read_srdf(bad, m)
    assert ei.value.line == 3 and "nope" in str(ei.value) and "bad.srdf" in str(ei.value)
    # the CLARAty element survives saving and loading
    from mechanism_model_core.collision import with_collision_matrix

    m2 = with_collision_matrix(m, M)
    path = tmp_path / "arm7.xml"
    save_claraty_xml(m2, path)
    assert "<Collision_Matrix" in path.read_text()
    back = load_claraty_xml(path)
    assert CollisionMatrix.of(back).disabled == M.disabled


def test_collision_matrix_element_errors_name_the_line(tmp_path):
    text = open(model_path("four_bar/four_bar.xml")).read()
    assert "<Collision_Matrix" in text         # the four-bar's closure pair is disabled in its file
    m = load_model(model_path("four_bar/four_bar.xml"))
    assert not CollisionMatrix.of(m).allowed("coupler", "rocker")
    assert not in_collision(m, None)
    bad = text.replace('body2="rocker"', 'body2="rockr"')
    p = tmp_path / "fb.xml"
    p.write_text(bad)
    with pytest.raises(ModelFileError) as ei:
        load_claraty_xml(p)
    assert "rockr" in str(ei.value) and ei.value.line == bad[:bad.index("rockr")].count("\n") + 1


def test_generated_matrix_like_moveit_setup_assistant():
    m = load_urdf(os.path.join(DATA, "arm7", "arm7_primitives.urdf"))
    M, report = generate_collision_matrix(m, samples=300, rng=1)
    assert report["samples"] == 300 and report["Adjacent"] >= 7
    # every pair left enabled collided in some sample and not in (nearly) all
    model = CollisionModel(m, matrix=CollisionMatrix.default(m))
    Q = m.random_configuration(np.random.default_rng(1), size=300)
    counts = {}
    for hits in _pair_hits(model, Q):
        for p in hits:
            counts[tuple(sorted(p))] = counts.get(tuple(sorted(p)), 0) + 1
    for a, b in M.pairs(model.bodies):
        assert 0 < counts.get(tuple(sorted((a, b))), 0) < 0.95 * 300
    for (a, b), why in M.disabled.items():
        if why == "Never":
            assert counts.get((a, b), 0) == 0


# ---------------------------------------------------------------------------------------------- hostile input
URDF_MESH = """<?xml version="1.0"?>
<robot name="r">
  <link name="base"/>
  <link name="l1">
    <collision>
      <geometry><mesh filename="{mesh}"/></geometry>
    </collision>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def _mesh_robot(tmp_path, mesh):
    p = tmp_path / "robot.urdf"
    p.write_text(URDF_MESH.format(mesh=mesh))
    return p, load_urdf(p)


def test_missing_mesh_file_names_file_and_line(tmp_path):
    p, m = _mesh_robot(tmp_path, "meshes/missing.stl")
    with pytest.raises(ModelFileError) as ei:
        CollisionModel(m)
    assert ei.value.file == str(p) and ei.value.line == 5 and "missing.stl" in str(ei.value)


def test_unknown_package_names_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path))
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    p, m = _mesh_robot(tmp_path, "package://no_such_pkg/meshes/a.stl")
    with pytest.raises(ModelFileError) as ei:
        CollisionModel(m)
    assert "no_such_pkg" in str(ei.value) and "unknown" in str(ei.value) and ei.value.line == 5


def test_unreadable_mesh(tmp_path):
    (tmp_path / "junk.stl").write_bytes(b"solid x\n this is not an stl \x00\x01\x02")
    p, m = _mesh_robot(tmp_path, "junk.stl")
    with pytest.raises(ModelFileError) as ei:
        CollisionModel(m)
    assert "junk.stl" in str(ei.value) and ei.value.line == 5


def test_mesh_of_a_million_triangles_is_refused(tmp_path):
    n = 1_000_000
    with open(tmp_path / "huge.stl", "wb") as fh:
        fh.write(b"\0" * 80 + struct.pack("<I", n))
        fh.write(np.zeros(n * 50, dtype=np.uint8).tobytes())
    p, m = _mesh_robot(tmp_path, "huge.stl")
    with pytest.raises(ModelFileError) as ei:
        CollisionModel(m)
    assert "1000000 triangles" in str(ei.value) and ei.value.line == 5


def test_package_mesh_found_through_ros_package_path(tmp_path, monkeypatch):
    trimesh = require("trimesh", "mesh")
    pkg = tmp_path / "share" / "my_robot_description" / "meshes"
    pkg.mkdir(parents=True)
    trimesh.creation.box((0.2, 0.2, 0.2)).export(pkg / "cube.stl")
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "share"))
    urdf = tmp_path / "urdf"
    urdf.mkdir()
    p = urdf / "r.urdf"
    p.write_text(URDF_MESH.format(mesh="package://my_robot_description/meshes/cube.stl"))
    m = load_urdf(p)
    assert m.body("l1").shapes[0].mesh_path == str(pkg / "cube.stl")
    model = CollisionModel(m)
    assert model.objects[0].geometry.faces.shape == (12, 3)
    # a cube of side 0.2 at the origin against a sphere obstacle 0.5 m away along x
    env = Environment([Obstacle("ball", __import__("mechanism_model_core").collision.Sphere(0.1),
                                translation(0.5, 0, 0))])
    assert distance(m, None, "l1", "ball", environment=env).distance == pytest.approx(0.3, abs=1e-6)


@pytest.mark.parametrize("dims, what, line", [('dim-x="-0.1" dim-z="0.2"', "non-negative", 6),
                                              ('dim-x="0.1" dim-z="1e400"', "finite", 8)])
def test_bad_dimensions_in_claraty_xml(tmp_path, dims, what, line):
    p = tmp_path / "bad.xml"
    p.write_text(f"""<?xml version="1.0"?>
<Mechanism_Model name="m">
  <ME_Body name="b">
    <ME_Joint name="j" type="revolute"/>
    <Bounding_Shape>
      <Obj_Params name="c" type="cylinder">
        <Transform/>
        <Dimension {dims}/>
      </Obj_Params>
    </Bounding_Shape>
  </ME_Body>
</Mechanism_Model>
""")
    with pytest.raises(ModelFileError) as ei:
        load_claraty_xml(p)
    assert ei.value.line == line and "bad.xml" in str(ei.value) and what in str(ei.value)


def test_nan_size_from_code_is_refused():
    from mechanism_model_core import ModelStructureError

    with pytest.raises(ModelStructureError, match="finite"):
        shape("b", "box", (0.1, float("nan"), 0.2))
    text = URDF_MESH.replace('<mesh filename="{mesh}"/>', '<box size="0.1 nan 0.2"/>')
    with pytest.raises(ModelFileError) as ei:
        loads_urdf(text)
    assert ei.value.line in (5, 6)


def test_negative_radius_in_urdf():
    text = URDF_MESH.replace('<mesh filename="{mesh}"/>', '<sphere radius="-1"/>')
    with pytest.raises(ModelFileError) as ei:
        loads_urdf(text)
    assert ei.value.line == 5 and "radius" in str(ei.value)


def test_new_shape_kinds_round_trip_through_claraty_xml(tmp_path):
    b = MechanismBuilder("kinds")
    b.add_body("a", None, Joint.revolute("j", np.eye(4)),
               shapes=(shape("cap", "capsule", (0.1, 0.5), translation(0, 0, 0.3)),
                       shape("tip", "cone", (0.05, 0.1), translation(0, 0, 0.7))))
    m = b.build()
    save_claraty_xml(m, tmp_path / "k.xml")
    back = load_claraty_xml(tmp_path / "k.xml")
    assert [(s.name, s.type, s.dimensions) for s in back.body("a").shapes] == \
        [("cap", "capsule", (0.1, 0.5)), ("tip", "cone", (0.05, 0.1))]


def test_missing_coal_says_what_to_install(monkeypatch):
    import sys

    from mechanism_model_core.collision import coal_backend

    m = two_bodies(shape("s1", "sphere", (0.5,)), shape("s2", "sphere", (0.5,)))     # new: no collision data yet
    monkeypatch.setitem(sys.modules, "coal", None)
    monkeypatch.setattr(coal_backend, "_coal", None)
    with pytest.raises(ImportError, match=r"needs coal: pip install coal \(the 'collision' extra; from a source checkout: "
                                          r"pip install '\./mechanism_model_core\[collision\]'\)"):
        in_collision(m, q_of((3, 0, 0)))


def test_terrain_objects_become_obstacles():
    from mechanism_model_core import terrain as T

    m = two_bodies(shape("s", "sphere", (0.01,)), shape("ball", "sphere", (0.2,)), translation(0, 0, 10))
    # a height field h = 0.2 x on a grid with x and y spacings that differ, indexed heights[ix, iy]
    xs, ys = np.arange(0, 21) * 0.1 - 1.0, np.arange(0, 11) * 0.2 - 1.0
    H = 0.2 * xs[:, None] + 0 * ys[None, :]
    hf = T.HeightField(H, (0.1, 0.2), origin=(-1.0, -1.0))
    n = np.array([-0.2, 0, 1.0]) / math.hypot(0.2, 1.0)
    for env in (Environment().with_terrain(hf), Environment().with_terrain(T.Plane.from_slope(math.atan(0.2))),
                Environment().with_terrain(T.TriangleMesh([(-1, -1, -0.2), (1, -1, 0.2), (1, 1, 0.2),
                                                           (-1, 1, -0.2)], [(0, 1, 2), (0, 2, 3)]))):
        for px, py, pz in [(0.3, 0.1, 0.5), (-0.5, 0.4, 0.25), (0.6, -0.5, 0.2)]:
            signed = (pz - 0.2 * px) * n[2] - 0.2
            q = q_of((px, py, pz))
            assert in_collision(m, q, environment=env, self_collision=False) == (signed < 0)
            if signed > 0:
                assert distance(m, q, "b", "terrain", environment=env).distance == pytest.approx(signed, abs=1e-6)


def test_urdf_export_writes_capsules_as_enclosing_cylinders():
    from mechanism_model_core.io.urdf import to_urdf

    b = MechanismBuilder("kinds")
    b.add_body("a", None, Joint.revolute("j", np.eye(4)),
               shapes=(shape("cap", "capsule", (0.1, 0.5), translation(0, 0, 0.3)),))
    back = loads_urdf(to_urdf(b.build()))
    s = back.body("a").shapes[0]
    assert (s.type, s.dimensions) == ("cylinder", (0.1, 0.7))


@pytest.mark.parametrize("path", [p for p in __import__("mechanism_model_core.library", fromlist=["x"]).list_models()
                                  if not p.startswith("claraty_samples/")])
def test_library_models_are_collision_free_at_home(path):
    """Real bounding shapes on the library models: nothing the collision matrix checks overlaps at home."""
    m = load_model(model_path(path))
    assert not collisions(m, None), path
    if len(collision_model(m).pairs_checked):
        assert minimum_distance(m, None).distance > 0
