"""Pictures: the wireframe geometry (checked by hand) and real PNG files written through matplotlib's Agg
backend (signature, IHDR size, non-trivial content)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import DEFAULT_MODEL, model_path
from mechanism_model_core.render import box_edges, cylinder_lines, scene, shape_lines

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_info(path):
    """(width, height, colour type, number of distinct bytes in the first rows) read from the PNG itself."""
    data = open(path, "rb").read()
    assert data[:8] == PNG_SIGNATURE
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    # collect IDAT chunks and check the image is not blank
    pos, idat = 8, b""
    while pos < len(data):
        n, k = struct.unpack(">I4s", data[pos:pos + 8])
        if k == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    return width, height, colour, len(set(raw))


def test_box_edges_are_the_twelve_edges():
    edges = box_edges((0.8, 0.5, 0.2))
    assert len(edges) == 12
    lengths = sorted(round(float(np.linalg.norm(e[1] - e[0])), 9) for e in edges)
    assert lengths == [0.2] * 4 + [0.5] * 4 + [0.8] * 4
    corners = {tuple(np.round(p, 9)) for e in edges for p in e}
    assert corners == {(sx * 0.4, sy * 0.25, sz * 0.1) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)}


def test_cylinder_wireframe():
    lines = cylinder_lines(0.1, 0.08, n=12)
    circles, generators = lines[:2], lines[2:]
    for c, z in zip(circles, (-0.04, 0.04)):
        np.testing.assert_allclose(np.hypot(c[:, 0], c[:, 1]), 0.1)
        np.testing.assert_allclose(c[:, 2], z)
    assert len(generators) == 4
    for g in generators:
        assert np.linalg.norm(g[1] - g[0]) == pytest.approx(0.08)


def test_scene_places_shapes_links_and_frames():
    rover = load_model(model_path(DEFAULT_MODEL))
    sc = scene(rover)
    # the chassis box (0.80 x 0.50 x 0.20) is centred on the body origin, 0.40 m above the ground
    endpoints = {tuple(np.round(p, 9)) for ln in sc["shapes"] if len(ln) == 2 for p in ln}
    corners = {(sx * 0.40, sy * 0.25, round(0.40 + sz * 0.10, 9)) for sx in (-1, 1) for sy in (-1, 1)
               for sz in (-1, 1)}
    assert corners <= endpoints
    # left front wheel: a cylinder of radius 0.10 about the y axis through (0.40, 0.35, 0.10)
    spec = rover.body("left_front_wheel").spec
    wheel_lines = shape_lines(spec.shapes[0])
    assert len(wheel_lines) == 6
    world = [ln for ln in sc["shapes"] if len(ln) > 2 and np.allclose(
        (0.5 * (ln.min(axis=0) + ln.max(axis=0)))[[0, 2]], (0.40, 0.10), atol=1e-9)
             and np.ptp(ln[:, 0]) > 0.19]
    assert len(world) == 4, "the two circles of each front wheel"
    for ln in world:
        np.testing.assert_allclose(np.hypot(ln[:, 0] - 0.40, ln[:, 2] - 0.10), 0.10, atol=1e-12)
    # frames: named frames without the reference frames; links: none to the ground from the floating body
    assert "mast_camera" in sc["frames"] and "chassis" not in sc["frames"]
    np.testing.assert_allclose(sc["frames"]["mast_camera"][:3, 3], (0.30, 0, 1.55), atol=1e-12)
    assert not any(np.allclose(ln[0], 0) and np.allclose(ln[1], (0, 0, 0.40)) for ln in sc["links"])
    assert len(sc["links"]) == len(rover.bodies) - 2


def test_render_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from mechanism_model_core.render import render_png

    rover = load_model(model_path(DEFAULT_MODEL))
    out = tmp_path / "rover.png"
    q = rover.configuration({"mast_pan": 0.5, "arm_elbow": 1.0, "left_front_steer": 0.4})
    assert render_png(rover, q, str(out), dpi=80, size=(10, 5)) == str(out)
    width, height, colour, distinct = png_info(out)
    assert (width, height) == (800, 400)
    assert distinct > 50  # lines and text, not an empty canvas
    assert out.stat().st_size > 20_000


@pytest.mark.parametrize("name", ["four_bar/four_bar.xml", "lemur/lemur_hexapod.xml", "mer/mer_idd.xml"])
def test_render_other_models(tmp_path, name):
    pytest.importorskip("matplotlib")
    from mechanism_model_core.render import render_png

    out = tmp_path / "m.png"
    render_png(load_model(model_path(name)), None, str(out), dpi=50, labels=False)
    assert png_info(out)[:2] == (600, 300)


def test_render_command(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from mechanism_model_core.cli import main

    out = tmp_path / "cli.png"
    code = main(["render", "rocky8/rocky8_rover.xml", "--q", "mast_tilt=0.3", "arm_shoulder=-0.5",
                 "-o", str(out), "--dpi", "60"])
    assert code == 0 and f"wrote {out}" in capsys.readouterr().out
    assert png_info(out)[:2] == (720, 360)
    assert main(["demo", "--render", str(tmp_path / "demo.png")]) == 0
    assert png_info(tmp_path / "demo.png")[0] == 1200


def test_planar_mechanisms_get_a_top_view():
    from mechanism_model_core.render import is_planar_xy

    assert is_planar_xy(scene(load_model(model_path("four_bar/four_bar.xml"))))
    assert not is_planar_xy(scene(load_model(model_path(DEFAULT_MODEL))))
    sc = scene(load_model(model_path("four_bar/four_bar.xml")))
    # each drawn frame is tethered to its body's origin: closure_a hangs from the coupler at B = (0, 0.10)
    tether = next(t for t in sc["tethers"] if np.allclose(t[1], (0.40, 0.40, 0)) and np.allclose(t[0], (0, 0.1, 0)))
    assert tether is not None
