"""Height fields checked part by part (issue 19 item 7): the same verdicts, contact counts and distances as
coal's height field and surface BVH built whole (the oracle, built here directly with coal), with distance
tiles of 4 cells so that shapes straddle many tile edges; and memory that grows with the tiles a query reaches, not
with the grid (a 2000 x 2000 grid took 7.6 GB on its first check before)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from .optional_deps import require

require("coal", "collision")

import coal  # noqa: E402

from mechanism_model_core.collision import height_field_tiles as tiles_module  # noqa: E402
from mechanism_model_core import shapes as S  # noqa: E402
from mechanism_model_core.collision.coal_backend import _bvh, heightfield_surface, to_coal  # noqa: E402
from mechanism_model_core.collision.height_field_tiles import TiledHeightField  # noqa: E402


def _field(rng, nx=31, ny=23):
    x = -1.0 + 0.1 * np.arange(nx)
    y = 0.5 + 0.08 * np.arange(ny)
    H = 0.15 * rng.standard_normal((ny, nx)).cumsum(axis=1) / np.sqrt(nx)
    return S.HeightField(x, y, H, bottom=float(H.min()) - 0.5)


def _pose(rng, field):
    from scipy.spatial.transform import Rotation
    T = np.eye(4)
    T[:3, :3] = Rotation.random(random_state=rng).as_matrix()
    T[:3, 3] = [rng.uniform(field.x[0] - 0.3, field.x[-1] + 0.3), rng.uniform(field.y[0] - 0.3, field.y[-1] + 0.3),
                rng.uniform(-0.6, 0.6)]
    return T


def _tf(T):
    return coal.Transform3s(T[:3, :3], T[:3, 3])


@pytest.mark.parametrize("seed", [0, 1])
def test_tiles_agree_with_the_whole_height_field(monkeypatch, seed):
    monkeypatch.setattr(tiles_module, "TILE_CELLS", 4)
    rng = np.random.default_rng(seed)
    field = _field(rng)
    T_field = np.eye(4)
    T_field[:3, 3] = [0.2, -0.1, 0.05]
    tiled = TiledHeightField(field, T_field, coal)
    assert len(tiled) == 8 * 6
    whole, off = to_coal(field)
    whole_tf = _tf(T_field @ off)
    V, F = heightfield_surface(field)
    surface = _bvh(V, F)
    req, res = coal.CollisionRequest(), coal.CollisionResult()
    req.num_max_contacts = 50
    dreq, dres = coal.DistanceRequest(), coal.DistanceResult()
    shapes = [coal.Sphere(0.07), coal.Box(0.3, 0.05, 0.12), coal.Cylinder(0.05, 0.4), coal.Capsule(0.03, 0.2)]
    hits = misses = 0
    for k in range(400):
        g = shapes[k % len(shapes)]
        T = _pose(rng, field)
        T[:3, 3] += T_field[:3, 3]
        req.security_margin = [0.0, 0.02][k % 2]
        res.clear()
        coal.collide(g, _tf(T), whole, whole_tf, req, res)
        expected = res.isCollision()
        depths = sorted(res.getContact(i).penetration_depth for i in range(res.numContacts()))
        found = tiled.collide(g, _tf(T), T, req, res)
        assert bool(found) == expected, (k, T)
        if expected:
            hits += 1
            # the same cells in contact; coal's height-field penetration depths are not local (a 0.1 m
            # sphere resting 5 cm deep reports -1.28 m on one grid and -1.13 m on a part of it), so only
            # their sign is compared
            assert len(found) == len(depths) and all(c[2] <= 1e-12 for c in found)
            continue
        misses += 1
        dres.clear()
        coal.distance(g, _tf(T), surface, _tf(T_field), dreq, dres)
        expected_distance = dres.min_distance
        d, p1, p2 = tiled.distance(g, _tf(T), T, dreq, dres)
        assert d == pytest.approx(expected_distance, abs=1e-9), k
        assert np.linalg.norm(p1 - p2) == pytest.approx(d, abs=1e-6)
    assert hits > 40 and misses > 40            # both branches exercised
    built_c, built_s = tiled.tiles_built()
    assert 0 < built_c <= tiles_module.CACHED_TILES and 0 < built_s <= tiles_module.CACHED_TILES


def test_memory_follows_the_tiles_reached_not_the_grid(tmp_path):
    """A 2000 x 2000 grid (the documented limit) in a separate process: the first collision check and
    minimum distance of the rover add a small fraction of a byte per grid point of coal objects (the
    whole-grid objects took about 1.9 KB per point)."""
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        from mechanism_model_core import load_model
        from mechanism_model_core.collision import in_collision, minimum_distance
        from mechanism_model_core.io import load_environment
        from mechanism_model_core.library import default_model_path

        def rss():
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * 4096

        n = 2000
        rng = np.random.default_rng(0)
        np.save(sys.argv[1] + "/dem.npy", 0.02 * rng.standard_normal((n, n)) + 0.05)
        with open(sys.argv[1] + "/env.yaml", "w") as fh:
            fh.write("terrain:\\n  height_field: {file: dem.npy, spacing: [0.05, 0.05], origin: [-50, -50]}\\n")
        rover = load_model(default_model_path())
        env = load_environment(sys.argv[1] + "/env.yaml")
        before = rss()
        hit = in_collision(rover, None, environment=env, self_collision=False)
        d = minimum_distance(rover, None, environment=env, self_collision=False)
        print(hit, d.distance, (rss() - before) / (n * n))
        """))
    env = dict(os.environ)
    r = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=600,
                       env=env)
    assert r.returncode == 0, r.stderr
    hit, dist, per_point = r.stdout.split()
    assert hit == "True"                      # the wheels sit 5 cm into the ground on average
    assert float(per_point) < 16.0, per_point   # bytes per grid point added by the first check
