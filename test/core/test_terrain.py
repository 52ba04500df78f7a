"""Terrain geometry and wheel/foot contacts against closed forms and brute-force minimisation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism_model_core import InvalidConfiguration
from mechanism_model_core.terrain import HeightField, Plane, Terrain, TriangleMesh


class Parabola(Terrain):
    """An analytic terrain h = k (x^2 + y^2) / 2 (independent of the library's interpolants)."""

    def __init__(self, k):
        self.k = k

    def height(self, x, y):
        x, y = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float))
        return 0.5 * self.k * (x * x + y * y)

    def normal(self, x, y):
        x, y = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float))
        m = np.stack([-self.k * x, -self.k * y, np.ones_like(x)], -1)
        return m / np.linalg.norm(m, axis=-1, keepdims=True)


def brute_rim_min(terrain, c, a, r, n=400001):
    """Least vertical clearance over a dense sampling of the rim (independent of the golden search)."""
    a = np.asarray(a, float) / np.linalg.norm(a)
    e = np.array([1.0, 0, 0]) if abs(a[0]) < 0.9 else np.array([0, 1.0, 0])
    u = np.cross(a, e)
    u /= np.linalg.norm(u)
    v = np.cross(a, u)
    t = np.linspace(-math.pi, math.pi, n)
    P = np.asarray(c) + r * (np.cos(t)[:, None] * u + np.sin(t)[:, None] * v)
    g = P[:, 2] - terrain.height(P[:, 0], P[:, 1])
    k = int(np.argmin(g))
    return P[k], g[k]


# ------------------------------------------------------------------------------------------ plane
def test_plane_from_slope_closed_form():
    s, d = 0.3, 0.7
    P = Plane.from_slope(s, direction=d, height=0.25)
    x, y = np.array([0.0, 1.0, -2.0]), np.array([0.5, -1.0, 3.0])
    np.testing.assert_allclose(P.height(x, y), 0.25 + math.tan(s) * (x * math.cos(d) + y * math.sin(d)), atol=1e-14)
    n = P.normal(x, y)
    assert n.shape == (3, 3)
    np.testing.assert_allclose(n[0], [-math.sin(s) * math.cos(d), -math.sin(s) * math.sin(d), math.cos(s)], atol=1e-14)


def test_wheel_on_slope_touches_along_normal():
    s = 0.4
    P = Plane.from_slope(s)                    # rises towards +x
    r = 0.1
    n = np.array([-math.sin(s), 0, math.cos(s)])
    c = np.array([1.0, 2.0, math.tan(s) * 1.0]) + 0.13 * n     # 3 cm above the touch
    ct = P.wheel_contact(c, (0, 1, 0), r)
    np.testing.assert_allclose(ct.point, c - r * n, atol=1e-14)
    assert ct.distance == pytest.approx(0.03, abs=1e-14)
    np.testing.assert_allclose(ct.normal, n, atol=1e-14)


def test_cambered_wheel_on_flat_plane():
    phi, r = 0.2, 0.3
    c = np.array([0.0, 0.0, 1.0])
    ct = Plane().wheel_contact(c, (0, math.cos(phi), math.sin(phi)), r)
    np.testing.assert_allclose(ct.point, c - r * np.array([0, -math.sin(phi), math.cos(phi)]), atol=1e-14)
    assert ct.distance == pytest.approx(1.0 - r * math.cos(phi), abs=1e-14)


def test_batched_wheels_and_feet_on_plane():
    P = Plane((0, 0, 0.5), (0.1, -0.2, 1.0))
    rng = np.random.default_rng(0)
    c = rng.normal(size=(4, 5, 3))
    a = np.cross(P.unit_normal, rng.normal(size=(4, 5, 3)))       # axes parallel to the plane
    ct = P.wheel_contact(c, a, 0.2)
    assert ct.point.shape == (4, 5, 3) and ct.distance.shape == (4, 5)
    np.testing.assert_allclose(ct.distance, P.signed_distance(c) - 0.2, atol=1e-12)
    f = P.foot_contact(c, 0.05)
    np.testing.assert_allclose(f.distance, P.signed_distance(c) - 0.05, atol=1e-12)
    np.testing.assert_allclose(f.point, c - 0.05 * P.unit_normal, atol=1e-14)


def test_generic_rim_search_matches_plane_closed_form():
    """The sampled + golden-section search (Terrain base) reproduces the plane's closed form."""
    P = Plane.from_slope(0.35, direction=0.4, height=0.1)
    hf = HeightField.from_function(P.height, (-3, 3), (-3, 3), 0.5, interpolation="triangles")
    rng = np.random.default_rng(1)
    for _ in range(20):
        c = rng.uniform(-1.5, 1.5, 3)
        yaw, camber = rng.uniform(-math.pi, math.pi), rng.uniform(-0.3, 0.3)
        a = np.array([-math.sin(yaw) * math.cos(camber), math.cos(yaw) * math.cos(camber), math.sin(camber)])
        exact = P.wheel_contact(c, a, 0.25)
        got = hf.wheel_contact(c, a, 0.25)
        np.testing.assert_allclose(got.point, exact.point, atol=1e-7)
        assert got.distance == pytest.approx(float(exact.distance), abs=1e-9)


def test_wheel_on_curved_terrain_against_brute_force():
    T = Parabola(1.5)
    for c, a in [((0.3, 0.1, 0.4), (0, 1, 0)), ((-0.5, 0.4, 0.6), (0.3, 1, 0.1)), ((0.2, -0.7, 0.9), (1, 0.2, 0))]:
        ct = T.wheel_contact(c, a, 0.2)
        p, g = brute_rim_min(T, c, a, 0.2)
        np.testing.assert_allclose(ct.point, p, atol=2e-5)          # brute force resolution 0.2*2pi/4e5
        assert T.clearance(ct.point) == pytest.approx(g, abs=1e-9)
        assert T.clearance(ct.point) <= g + 1e-12                  # never worse than the dense sampling


# ------------------------------------------------------------------------------------- height field
def test_bilinear_reproduces_bilinear_function_and_gradient():
    f = lambda x, y: 0.3 + 0.2 * x - 0.1 * y + 0.05 * x * y
    hf = HeightField.from_function(f, (-2, 2), (-1, 3), (0.5, 0.25))
    rng = np.random.default_rng(2)
    x, y = rng.uniform(-2, 2, 200), rng.uniform(-1, 3, 200)
    # the bilinear interpolant of a bilinear function is exact
    np.testing.assert_allclose(hf.height(x, y), f(x, y), atol=1e-13)
    m = np.stack([-(0.2 + 0.05 * y), -(-0.1 + 0.05 * x), np.ones_like(x)], -1)
    np.testing.assert_allclose(hf.normal(x, y), m / np.linalg.norm(m, axis=-1, keepdims=True), atol=1e-12)


def test_grid_indexing_first_index_along_x():
    H = np.zeros((3, 2))
    H[2, 0] = 1.0
    hf = HeightField(H, (1.0, 2.0), origin=(10.0, 20.0))
    assert hf.height(12.0, 20.0) == pytest.approx(1.0)
    assert hf.height(11.5, 20.0) == pytest.approx(0.5)
    assert hf.height(12.0, 21.0) == pytest.approx(0.5)
    assert hf.extent == ((10.0, 12.0), (20.0, 22.0))


def test_triangles_match_a_mesh_of_the_same_triangulation():
    rng = np.random.default_rng(3)
    H = rng.uniform(-0.2, 0.2, (6, 5))
    hf = HeightField(H, (0.4, 0.3), origin=(-1, -0.5), interpolation="triangles")
    X, Y = np.meshgrid(-1 + 0.4 * np.arange(6), -0.5 + 0.3 * np.arange(5), indexing="ij")
    V = np.stack([X.ravel(), Y.ravel(), H.ravel()], -1)
    idx = np.arange(30).reshape(6, 5)
    F = []
    for i in range(5):
        for j in range(4):
            F += [[idx[i, j], idx[i + 1, j], idx[i + 1, j + 1]], [idx[i, j], idx[i + 1, j + 1], idx[i, j + 1]]]
    mesh = TriangleMesh(V, F)
    x, y = rng.uniform(-1, 1, 500), rng.uniform(-0.5, 0.7, 500)
    h1, n1 = hf.height_and_normal(x, y)
    h2, n2 = mesh.height_and_normal(x, y)
    np.testing.assert_allclose(h1, h2, atol=1e-12)
    np.testing.assert_allclose(n1, n2, atol=1e-12)


def test_outside_policies():
    H = np.zeros((3, 3))
    H[-1, :] = 1.0
    with pytest.raises(InvalidConfiguration, match="outside the grid"):
        HeightField(H, 1.0, outside="error").height(5.0, 0.0)
    assert np.isnan(HeightField(H, 1.0, outside="nan").height(5.0, 0.0))
    c = HeightField(H, 1.0, outside="clamp")
    assert c.height(5.0, 1.0) == pytest.approx(1.0)
    np.testing.assert_allclose(c.normal(5.0, 1.0), [0, 0, 1])


# ---------------------------------------------------------------------------------- mesh with a step
def step_mesh(x_edge=1.0, h=0.1):
    """Ground z=0 over [-5, 5]^2 and a box top z=h over [x_edge, 3] x [-2, 2] with vertical walls."""
    V = [(-5, -5, 0), (5, -5, 0), (5, 5, 0), (-5, 5, 0),
         (x_edge, -2, h), (3, -2, h), (3, 2, h), (x_edge, 2, h),
         (x_edge, -2, 0), (x_edge, 2, 0)]
    F = [(0, 1, 2), (0, 2, 3), (4, 5, 6), (4, 6, 7), (8, 4, 7), (8, 7, 9)]   # last two: the vertical wall
    return TriangleMesh(V, F)


def test_mesh_step_heights_and_edge_contact():
    m = step_mesh()
    np.testing.assert_allclose(m.height([0.0, 0.99, 1.01, 2.5, 4.0], 0.0), [0, 0, 0.1, 0.1, 0])
    r = 0.1
    c = np.array([1.0 - 0.6 * r, 0.0, 0.1 + 0.8 * r])       # the step's corner lies on the rim
    ct = m.wheel_contact(c, (0, 1, 0), r)
    np.testing.assert_allclose(ct.point, [1.0, 0.0, 0.1], atol=1e-6)
    assert m.clearance(ct.point) == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(InvalidConfiguration, match="no face under"):
        m.height(6.0, 0.0)


def test_mesh_without_visible_faces_is_refused():
    with pytest.raises(InvalidConfiguration, match="visible from above"):
        TriangleMesh([(0, 0, 0), (1, 0, 0), (0, 0, 1)], [(0, 1, 2)])


def test_trimesh_file_round_trip(tmp_path):
    import trimesh            # a test requirement: missing it fails the run rather than skipping
    box = trimesh.creation.box(extents=(2.0, 1.0, 0.4))
    path = tmp_path / "box.stl"
    box.export(path)
    m = TriangleMesh.from_file(path)
    assert m.height(0.3, 0.1) == pytest.approx(0.2)
    np.testing.assert_allclose(m.normal(0.3, 0.1), [0, 0, 1], atol=1e-12)


# ------------------------------------------------------------------------------------------ feet
def test_sphere_foot_on_curved_terrain_is_along_the_normal():
    T = Parabola(0.8)
    c = np.array([0.4, -0.3, 0.5])
    f = T.foot_contact(c, 0.05)
    n = T.normal(f.point[0], f.point[1])
    np.testing.assert_allclose(f.point, c - 0.05 * n, atol=1e-9)


# ------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("make, msg", [
    (lambda: Plane((0, 0, 0), (1, 0, 0)), "point up"),
    (lambda: Plane().wheel_contact((0, 0, 1), (0, 0, 1), 0.1), "vertical"),
    (lambda: Plane().wheel_contact((0, 0, 1), (0, 1, 0), 0.0), "radius"),
    (lambda: HeightField([[0, 1]], 1.0), "2x2"),
    (lambda: HeightField(np.zeros((2, 2)), 0.0), "spacing"),
    (lambda: HeightField(np.zeros((2, 2)), 1.0, interpolation="cubic"), "interpolation"),
    (lambda: TriangleMesh([(0, 0, 0)], [(0, 1, 2)]), "out of range"),
])
def test_bad_input_is_a_clear_error(make, msg):
    with pytest.raises(InvalidConfiguration, match=msg):
        make()


@settings(max_examples=40, deadline=None)
@given(st.floats(-0.6, 0.6), st.floats(-3, 3), st.floats(0.05, 0.5), st.floats(-1, 1), st.floats(-1, 1))
def test_wheel_placed_to_touch_a_slope_touches(slope, yaw, r, x, y):
    """A wheel of any heading placed (by hand: centre = touch point + r * in-plane normal) on a slope."""
    P = Plane.from_slope(slope, direction=0.3)
    a = np.array([-math.sin(yaw), math.cos(yaw), 0.0])
    n = P.unit_normal
    w = n - (n @ a) * a
    touch = np.array([x, y, P.height(x, y)])
    c = touch + r * w / np.linalg.norm(w)
    ct = P.wheel_contact(c, a, r)
    np.testing.assert_allclose(ct.point, touch, atol=1e-12)
    assert float(ct.distance) == pytest.approx(0.0, abs=1e-12)
    hf = HeightField.from_function(P.height, (-2, 2), (-2, 2), 0.25, interpolation="triangles")
    assert float(hf.wheel_contact(c, a, r).distance) == pytest.approx(0.0, abs=1e-9)
