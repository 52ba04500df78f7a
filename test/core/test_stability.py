"""Support-polygon margin and force-angle measure against closed forms and an independent hull (scipy)."""

import math

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from scipy.spatial import ConvexHull

from mechanism_model_core.errors import MechanismModelError
from mechanism_model_core.spatial import rot_x, rot_z
from mechanism_model_core.statics import force_angle_margin, support_polygon, support_polygon_margin

G = np.array([0.0, 0.0, -9.81])
SQUARE = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 0.0]], float)  # one inside


def test_support_polygon_margin_square():
    r = support_polygon_margin(SQUARE, (0.5, 0.3, 0.8), G)
    assert r.margin == pytest.approx(0.3)
    assert set(r.edge) == {0, 1}
    np.testing.assert_allclose(r.tipover_direction, (0, -1, 0), atol=1e-12)
    assert abs(r.tipover_axis @ (1, 0, 0)) == pytest.approx(1)
    assert sorted(r.hull) == [0, 1, 2, 3] and r.stable
    sorted_m = np.sort(r.edge_margins)
    np.testing.assert_allclose(sorted_m, [0.3, 0.5, 0.5, 0.7])
    out = support_polygon_margin(SQUARE, (1.2, 0.5, 0.2), G)
    assert out.margin == pytest.approx(-0.2) and not out.stable
    np.testing.assert_allclose(out.tipover_direction, (1, 0, 0), atol=1e-12)


def test_line_and_point_supports():
    two = np.array([[0, 0, 0], [1, 0, 0.0]])
    assert support_polygon_margin(two, (0.5, 0.25, 1), G).margin == pytest.approx(-0.25)
    assert support_polygon_margin(two, (0.5, 0.0, 1), G).margin == pytest.approx(0.0, abs=1e-12)
    one = np.array([[0.0, 0, 0]])
    r = support_polygon_margin(one, (0.3, 0.4, 1), G)
    assert r.margin == pytest.approx(-0.5)
    np.testing.assert_allclose(r.tipover_direction, (0.6, 0.8, 0))


def test_force_angle_flat_closed_form():
    h, m = 0.8, 20.0
    r = force_angle_margin(SQUARE, (0.5, 0.5, h), m * G)
    theta = math.atan2(0.5, h)       # every edge alike
    np.testing.assert_allclose(r.angles, theta)
    assert r.margin == pytest.approx(theta * m * 9.81) and r.stable


@pytest.mark.parametrize("slope", [0.1, 0.4, 0.7])
def test_force_angle_on_slope_tips_at_the_closed_form_angle(slope):
    """A 1 m square base with the centre of mass h above its middle, tilted by ``slope`` about x: the downhill
    edge's angle is atan(0.5 / h) - slope, so it tips at slope = atan(0.5 / h)."""
    h, m = 0.8, 20.0
    R = rot_x(slope)[:3, :3]
    base = SQUARE[:4] - (0.5, 0.5, 0)
    pts = base @ R.T
    com = R @ (0, 0, h)
    r = force_angle_margin(pts, com, m * G)
    assert r.angle == pytest.approx(math.atan2(0.5, h) - slope, abs=1e-12)
    # the downhill edge is at -y after tilting about +x by a positive angle (y side goes up)
    np.testing.assert_allclose(r.tipover_direction, (0, -1, 0), atol=1e-12)
    sp = support_polygon_margin(pts, com, G)
    # horizontal distance from the projected CoM to the downhill edge
    expected = 0.5 * math.cos(slope) - h * math.sin(slope)
    assert sp.margin == pytest.approx(expected, abs=1e-12)
    assert (sp.margin > 0) == (r.margin > 0)


def test_force_angle_moment_equals_shifted_force_sign():
    """A moment about the critical axis shifts the sign of its angle exactly where the total moment of the
    loads about that axis changes sign (checked by an independent moment sum)."""
    h = 0.5
    pts = SQUARE[:4]
    com = np.array([0.5, 0.5, h])
    f = 10 * G
    a = np.array([1.0, 0, 0])                 # edge 0 -> 1 along +x at y = 0
    for n_x in np.linspace(-60, 60, 13):
        moment = np.array([n_x, 0, 0])
        r = force_angle_margin(pts, com, f, moment)
        k = [i for i, (u, v) in enumerate(zip(r.hull, r.hull[1:] + r.hull[:1])) if {u, v} == {0, 1}][0]
        edge_dir = pts[r.hull[(k + 1) % 4]] - pts[r.hull[k]]
        sign_a = 1 if edge_dir @ a > 0 else -1
        # restoring moment about the edge line (pointing along +x): gravity at com plus the couple
        m_about = a @ (np.cross(com - pts[0], f) + moment)
        # stable when the loads turn the body back onto the polygon: about +x that is a negative moment?
        # the interior lies at +y; a force at the com pushing down gives a moment (-) about +x at y > 0
        if abs(m_about) > 1e-9:
            assert (r.angles[k] > 0) == (m_about < 0), (n_x, sign_a)


def _distance_to_polygon(q, v):
    """Distance (m) from the point ``v`` (2,) to the convex polygon ``q`` (k, 2) (counter-clockwise; a
    segment or a point when k < 3): 0 inside, else the distance to the nearest edge."""
    if len(q) >= 3:
        edges = np.roll(q, -1, axis=0) - q
        if np.all(edges[:, 0] * (v[1] - q[:, 1]) - edges[:, 1] * (v[0] - q[:, 0]) >= 0):
            return 0.0
    best = math.inf
    for a, b in zip(q, np.roll(q, -1, axis=0)):
        ab = b - a
        t = 0.0 if not ab.any() else min(1.0, max(0.0, float((v - a) @ ab / (ab @ ab))))
        best = min(best, float(np.hypot(*(a + t * ab - v))))
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-2, 2), st.floats(-2, 2), st.floats(-0.3, 0.3)), min_size=4, max_size=9),
       st.floats(0, 2 * math.pi))
# two points 1e-9 apart (the merge distance) at a hull corner: support_polygon keeps the first, (0, 1e-9),
# scipy the extreme one, (0, 0); both hulls are right to within the merge distance
@example(pts=[(0.0, 1.0, 0.0), (0.0, 1e-9, 0.0), (0.0, 0.0, 0.0), (1.0, 0.0, 0.0)], yaw=0.0)
# (0, 1e-12) merged into (0, 0), which lies on the edge from (1, 0) to (-1, 0): scipy keeps (0, 1e-12) as a
# corner, ours has no vertex there (found by the random profile)
@example(pts=[(0.0, 0.0, 0.0), (0.0, 1e-12, 0.0), (0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (-1.0, 0.0, 0.0)], yaw=0.0)
# (0, 1.9e-9) and (0, 0): merged or not depending on the extent measure; it must not change with the basis of
# the plane (it was the flattened spread of the projected coordinates: 1 here, 2 in support_polygon's basis)
@example(pts=[(0.0, 1.0, 0.0), (0.0, 1.874232423158714e-09, 0.0), (0.0, 0.0, 0.0), (1.0, 0.0, 0.0)], yaw=0.0)
def test_hull_matches_scipy(pts, yaw):
    p = np.array(pts)
    xy = p[:, :2]
    try:
        ref = ConvexHull(xy)
    except Exception:        # degenerate (collinear) input: scipy refuses, nothing to compare
        return
    if ref.volume < 1e-3:
        return
    R = rot_z(yaw)[:3, :3]
    hull = support_polygon(p @ R.T)          # rotating about up changes nothing
    # support_polygon counts points closer than this once (any of them may stand for the others), so its
    # vertices match scipy's to within it, not exactly
    merge = 1e-9 * max(1.0, 2.0 * float(np.max(np.hypot(*(xy - xy.mean(axis=0)).T))))
    tol = merge + 1e-12
    q = xy[list(hull)]
    # every corner of scipy's hull lies on or within ours, to the merge distance: a corner merged into a
    # point that then lies on an edge (dropped as collinear) is not one of our vertices
    for v in xy[ref.vertices]:
        assert _distance_to_polygon(q, v) <= tol, (v, q)
    for i in hull:     # each of our vertices lies on scipy's boundary (extras: nearly collinear points)
        dist = ref.equations[:, :2] @ xy[i] + ref.equations[:, 2]
        assert np.all(dist <= tol) and np.abs(dist).min() <= tol
    # counter-clockwise about +z: positive signed area, scipy's up to vertices moved by the merge distance
    area = 0.5 * np.sum(q[:, 0] * np.roll(q[:, 1], -1) - np.roll(q[:, 0], -1) * q[:, 1])
    assert area == pytest.approx(ref.volume, rel=1e-9, abs=ref.area * tol)
    # the margin of the centroid equals the min distance to the hull's facets (scipy's equations)
    c = np.append(q.mean(axis=0), 0.4)
    d = -(ref.equations[:, :2] @ c[:2] + ref.equations[:, 2])
    assert support_polygon_margin(p, c, G).margin == pytest.approx(d.min(), abs=1e-9 + tol)


def test_bad_input():
    with pytest.raises(MechanismModelError):
        support_polygon_margin(SQUARE, (0, 0, 0), (0, 0, math.nan))
    with pytest.raises(MechanismModelError):
        support_polygon_margin(np.zeros((0, 3)), (0, 0, 0), G)
    with pytest.raises(MechanismModelError):
        force_angle_margin(SQUARE, (0, 0, 0), (0, 0, 0))
    with pytest.raises(MechanismModelError):
        force_angle_margin(SQUARE, (0, 0, 0), G, moment=(1, 2))
