"""Collision verdicts and distances against Pinocchio's GeometryModel and its own collision calls.

For URDF robots whose collision geometry is primitives (boxes, cylinders, spheres), Pinocchio builds its
model and GeometryModel from the same file; we give it exactly the body pairs our collision matrix checks
(every geometry pair of two allowed links) and compare, at many random configurations, the colliding
body pairs (``pin.computeCollisions``) and each pair's minimum distance (``pin.computeDistances``). Pairs
within 1e-6 m of touching are not compared (their verdict is numerically arbitrary).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from .optional_deps import require  # noqa: E402

require("coal", "collision")
pin = pytest.importorskip("pinocchio")

from mechanism_model_core.collision import collision_model, distance  # noqa: E402
from mechanism_model_core.collision.queries import _pair_hits  # noqa: E402
from mechanism_model_core.io.urdf import load_urdf  # noqa: E402

from .test_pinocchio_oracle import pin_configuration  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")
ROBOTS = [("arm7", "arm7/arm7_primitives.urdf", 150), ("hyq", "hyq/hyq.urdf", 100),
          ("anymal_b", "anymal_b_kindsl/anymal_b_urdf2kindsl.urdf", 100), ("panda", "panda/panda.urdf", 60)]
TOUCH = 1e-6


def _pin_models(path, ours):
    with open(path) as fh:
        xml = fh.read()
    pmodel = pin.buildModelFromXML(xml)
    gmodel = pin.buildGeomFromUrdfString(pmodel, xml, pin.GeometryType.COLLISION)
    link_of = [pmodel.frames[g.parentFrame].name for g in gmodel.geometryObjects]
    by_link: dict[str, list[int]] = {}
    for k, link in enumerate(link_of):
        by_link.setdefault(link, []).append(k)
    cm = collision_model(ours)
    pair_index = {}
    for a, b in cm.pairs_checked:
        for i in by_link.get(a, ()):
            for j in by_link.get(b, ()):
                pair_index[len(gmodel.collisionPairs)] = (a, b)
                gmodel.addCollisionPair(pin.CollisionPair(i, j))
    return pmodel, gmodel, pair_index


@pytest.mark.parametrize("name, rel, n", ROBOTS, ids=[r[0] for r in ROBOTS])
def test_verdicts_and_distances_match_pinocchio(name, rel, n):
    path = os.path.join(DATA, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = load_urdf(path)
    cm = collision_model(ours)
    pmodel, gmodel, pair_index = _pin_models(path, ours)
    # our shapes, one for one with Pinocchio's
    assert len(gmodel.geometryObjects) == sum(len(v) for v in cm.leaves.values())
    pdata, gdata = pmodel.createData(), gmodel.createData()
    for req in gdata.distanceRequests:      # Pinocchio's default GJK tolerance is 1e-6 (relative)
        req.gjk_tolerance = 1e-9
    rng = np.random.default_rng(zlib_seed(name))
    Q = ours.random_configuration(rng, size=n)
    ours_hits = _pair_hits(cm, Q)
    compared = colliding = 0
    for q, hits in zip(Q, ours_hits):
        qp = pin_configuration(pmodel, ours, q)
        pin.computeDistances(pmodel, pdata, gmodel, gdata, qp)
        pin.computeCollisions(pmodel, pdata, gmodel, gdata, qp, False)
        dmin: dict[tuple, float] = {}
        for k, res in enumerate(gdata.distanceResults):
            pair = pair_index[k]
            dmin[pair] = min(dmin.get(pair, np.inf), res.min_distance)
        pin_hits = {pair_index[k] for k, r in enumerate(gdata.collisionResults) if r.isCollision()}
        for pair, d in dmin.items():
            if abs(d) < TOUCH:
                continue
            mine = distance(ours, q, *pair)
            assert (pair in hits) == (pair in pin_hits) == (d < 0), (name, pair, d)
            if d >= 0:     # separation distances agree; penetration depths are not compared (EPA tolerance)
                assert mine.distance == pytest.approx(d, abs=1e-6), (name, pair)
            compared += 1
            colliding += d < 0
    assert compared >= n
    if name in ("arm7", "anymal_b"):
        assert colliding > 0         # the sample exercises both verdicts


def zlib_seed(name: str) -> int:
    import zlib

    return zlib.crc32(name.encode())


@pytest.mark.parametrize("name, rel, n", ROBOTS[:2], ids=[r[0] for r in ROBOTS[:2]])
def test_minimum_distance_is_the_smallest_pair_distance_also_in_collision(name, rel, n):
    """The pruned minimum over all pairs equals the smallest per-pair distance, the deepest penetration
    when the robot is in collision (box gaps are clamped at 0, so they bound separations only)."""
    from mechanism_model_core.collision import minimum_distance
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = load_urdf(os.path.join(DATA, rel))
    cm = collision_model(ours)
    Q = ours.random_configuration(np.random.default_rng(zlib_seed(name) + 1), size=40)
    penetrating = 0
    for q in Q:
        per_pair = min(distance(ours, q, a, b).distance for a, b in cm.pairs_checked)
        got = minimum_distance(ours, q).distance
        assert got == pytest.approx(per_pair, abs=1e-9), name
        penetrating += per_pair < 0
    assert penetrating > 0 or name not in ("arm7", "anymal_b")
