"""Reachability maps (mechanism_model_core.reach): against closed forms (planar 2R/3R annulus), Pinocchio FK,
across executors (serial, process pool, Dask LocalCluster), interrupted and resumed, stored and refused."""

from __future__ import annotations

import json
import math
import os
import warnings

import numpy as np
import pytest

from mechanism_model_core import save_model
from mechanism_model_core.errors import InvalidConfiguration, MechanismModelError, UnknownFrame
from mechanism_model_core.reach import MapFileError, ReachMap, compute_map, sphere_directions
from mechanism_model_core.reach.execute import slow_malloc
from mechanism_model_core.reach.sampling import orientation_for

from .optional_deps import require
from .robots import planar_arm

h5py = require("h5py", "reach")

L2R = (1.0, 0.55)                        # annulus 0.45..1.55 m: no voxel centre at 0.1 m lies within 2 mm of it
PLANE = ((-1.6, -1.6, 0.0), (1.6, 1.6, 0.0))


def _annulus_expected(rmap, r_in, r_out):
    c = rmap.grid.centers().reshape(rmap.grid.shape + (3,))
    r = np.linalg.norm(c, axis=-1)
    return (r >= r_in) & (r <= r_out), r


def test_planar_2r_position_map_is_the_annulus_cell_by_cell():
    m = planar_arm(L2R)
    rmap = compute_map(m, "ground:tool", 0.1, mode="position", bound=PLANE, executor="serial")
    expected, r = _annulus_expected(rmap, abs(L2R[0] - L2R[1]), sum(L2R))
    assert np.min(np.abs(r - sum(L2R))) > 1e-3 and np.min(np.abs(r - 0.45)) > 1e-3
    assert rmap.index.shape == (33, 33, 1)
    np.testing.assert_array_equal(rmap.index > 0, expected)
    assert set(np.unique(rmap.index)) <= {0.0, 1.0}
    # the reached configurations put the tool on the voxel centre (closed-form FK of the 2R arm)
    q = rmap.q[expected]
    c = rmap.grid.centers().reshape(rmap.grid.shape + (3,))[expected]
    x = L2R[0] * np.cos(q[:, 0]) + L2R[1] * np.cos(q[:, 0] + q[:, 1])
    y = L2R[0] * np.sin(q[:, 0]) + L2R[1] * np.sin(q[:, 0] + q[:, 1])
    np.testing.assert_allclose(np.stack([x, y], 1), c[:, :2], atol=2e-4)
    assert np.all(np.isnan(rmap.q[~expected]))


def test_planar_3r_pose_map_matches_the_wrist_annulus_per_direction():
    """Tool x axis along the approach direction (roll free): reachable iff the wrist point p - L3 d lies in
    the 2R annulus; directions out of the plane never are."""
    L = (0.8, 0.45, 0.3)                 # wrist annulus 0.35..1.25 m; no sample within 1.5 mm of its edges
    m = planar_arm(L)
    ang = np.arange(8) * math.pi / 4 + 0.2
    d = np.concatenate([np.stack([np.cos(ang), np.sin(ang), 0 * ang], 1), [[0.6, 0, 0.8]]])
    bound = ((-1.5, -1.5, 0.0), (1.5, 1.5, 0.0))
    rmap = compute_map(m, "ground:tool", 0.3, mode="pose", directions=d, axis="x", bound=bound,
                       executor="serial", max_iterations=80)
    c = rmap.grid.centers()
    wrist = c[:, None, :] - L[2] * d[None, :, :]
    rw = np.linalg.norm(wrist, axis=-1)
    expected = (rw >= L[0] - L[1]) & (rw <= L[0] + L[1]) & (np.abs(d[None, :, 2]) < 1e-12)
    near = (np.abs(rw - (L[0] - L[1])) < 1.5e-3) | (np.abs(rw - (L[0] + L[1])) < 1.5e-3)
    assert not np.any(near & (np.abs(d[None, :, 2]) < 1e-12))   # the parameters avoid the edges
    got = rmap.reached.reshape(-1, len(d))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(rmap.index.reshape(-1), expected.mean(axis=1), atol=1e-6)


@pytest.mark.slow
def test_flood_search_equals_the_closed_form_with_a_fraction_of_the_exhaustive_work():
    """Planar 3R, 16 in-plane approach directions and 4 out of the plane, 0.15 m: the flood search (probe,
    then grow from reached samples) and the exhaustive search (every sample the full budget) both give the
    closed form sample by sample, for any chunking; the flood spends far fewer iterations (most samples are
    unreachable: a probe each instead of the whole budget)."""
    L = (0.8, 0.47, 0.3)                 # no in-plane sample within 2 mm of the wrist annulus's edges
    m = planar_arm(L)
    ang = np.arange(16) * math.pi / 8
    d = np.concatenate([np.stack([np.cos(ang), np.sin(ang), 0 * ang], 1),
                        [[0.6, 0, 0.8], [0, 0.6, -0.8], [-0.6, 0, 0.8], [0, 0, 1]]])
    bound = ((-1.5, -1.5, 0.0), (1.5, 1.5, 0.0))
    kw = dict(mode="pose", directions=d, axis="x", bound=bound, executor="serial", max_iterations=100,
              flood_iterations=40)
    c = None
    maps = {}
    for name, extra in (("flood", dict(chunk_size=64)), ("flood27", dict(chunk_size=27)),
                        ("exhaustive", dict(search="exhaustive", chunk_size=64))):
        rmap = compute_map(m, "ground:tool", 0.15, **kw, **extra)
        maps[name] = rmap
        if c is None:
            c = rmap.grid.centers()
            rw = np.linalg.norm(c[:, None, :] - L[2] * d[None, :, :], axis=-1)
            inplane = np.abs(d[None, :, 2]) < 1e-12
            expected = (rw >= L[0] - L[1]) & (rw <= L[0] + L[1]) & inplane
            edge = (np.abs(rw - (L[0] - L[1])) < 2e-3) | (np.abs(rw - (L[0] + L[1])) < 2e-3)
            assert not np.any(edge & inplane)
        got = rmap.reached.reshape(-1, len(d))
        np.testing.assert_array_equal(got, expected, err_msg=name)
        # every reached voxel's stored configuration puts the tool on the centre (closed-form FK)
        q = rmap.q.reshape(-1, 3)[got.any(axis=1)]
        x = sum(L[i] * np.cos(q[:, :i + 1].sum(axis=1)) for i in range(3))
        y = sum(L[i] * np.sin(q[:, :i + 1].sum(axis=1)) for i in range(3))
        np.testing.assert_allclose(np.stack([x, y], 1), c[got.any(axis=1), :2], atol=2e-4)
    assert 0.1 < expected.mean() < 0.5
    assert maps["flood"].attrs["iterations"] * 3 < maps["exhaustive"].attrs["iterations"]
    assert maps["flood"].request["search"] == "flood" and maps["exhaustive"].request["search"] == "exhaustive"


def test_align_axis_and_sample_neighbours():
    from mechanism_model_core.reach.sampling import align_axis, sample_neighbours
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(4)
    R = Rotation.random(200, random_state=5).as_matrix()
    d = rng.normal(size=(200, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    d[0] = -R[0] @ [0, 0, 1.0]                                   # opposite: half a turn
    A = align_axis(R, [0, 0, 1.0], d)
    np.testing.assert_allclose(A @ [0, 0, 1.0], d, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(A), 1.0, atol=1e-12)
    # the nearest such rotation: it turns R by exactly the angle between R's axis and d
    turn = np.arccos(np.clip((np.einsum("bij,bij->b", A, R) - 1) / 2, -1, 1))
    want = np.arccos(np.clip(np.einsum("bi,bi->b", R[:, :, 2], d), -1, 1))
    np.testing.assert_allclose(turn, want, atol=1e-6)
    dirs = sphere_directions(50)
    nb = sample_neighbours(orientation_for(dirs, "z").reshape(-1, 3, 3), [0, 0, 1.0], True, k=6)
    assert nb.shape == (50, 6) and not np.any(nb == np.arange(50)[:, None])
    ang = np.arccos(np.clip(np.einsum("sj,skj->sk", dirs, dirs[nb]), -1, 1))
    assert np.all(np.diff(ang, axis=1) >= -1e-12) and ang.max() < 0.9     # nearest first, all close


def test_sphere_directions_are_unit_and_spread_and_orientations_put_the_axis_on_them():
    d = sphere_directions(50)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-12)
    assert abs(d.mean(axis=0)).max() < 0.02                       # balanced
    dots = d @ d.T - 2 * np.eye(50)
    assert np.arccos(dots.max()) > 0.4                            # no two closer than ~23 deg (ideal ~29)
    for axis, v in (("z", [0, 0, 1]), ("-x", [-1, 0, 0]), ("y", [0, 1, 0])):
        R = orientation_for(d, axis, rolls=3)
        assert R.shape == (50, 3, 3, 3)
        np.testing.assert_allclose(R @ np.array(v, float), np.repeat(d[:, None], 3, 1), atol=1e-12)
        np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)


def test_chunks_cover_the_map_once_with_a_split_tail_and_an_automatic_size_of_the_map_alone():
    from mechanism_model_core.reach.map import auto_chunk_size, chunk_bounds

    for n, size in ((0, 5), (1, 1), (10, 4), (1021, 64), (2000, 1000), (2001, 1000), (56000, 1000), (700, 300)):
        b = chunk_bounds(n, size)
        flat = [i for lo, hi in b for i in range(lo, hi)]
        assert flat == list(range(n)), (n, size)                 # every voxel once, in order
        sizes = [hi - lo for lo, hi in b]
        assert max(sizes, default=0) <= size
        if size > 64 and n > 2 * size:                           # the last size..2 size voxels in quarters
            tail = [s for s in sizes if s < size]
            assert size <= sum(tail) <= 2 * size and max(tail) - min(tail) <= 1 and max(tail) <= size // 4 + 1
        if size <= 64:                                           # small chunks are never split further
            assert sizes[:-1] == [size] * (len(sizes) - 1)
    assert [auto_chunk_size(n) for n in (10, 1021, 8000, 27825, 10 ** 6)] == [64, 64, 500, 1000, 1000]
    m = planar_arm((0.8, 0.5, 0.3))
    a = compute_map(m, "ground:tool", 0.3, executor="serial", **_small_request(chunk_size=None))
    assert a.request["chunk_size"] == 64 and a.stats["chunks"] == 2       # 81 voxels: 64 + 17


SMALL_DIRECTIONS = [[1, 0, 0], [0, 1, 0], [-0.6, 0.8, 0], [0, 0, 1]]


def _small_request(**kw):
    base = dict(mode="pose", directions=SMALL_DIRECTIONS, axis="x", bound=((-1.2, -1.2, 0.0), (1.2, 1.2, 0.0)),
                chunk_size=7, max_iterations=60)
    base.update(kw)
    return base


def _same(a: ReachMap, b: ReachMap):
    for k in ("index", "reached", "manipulability", "margin", "best_sample", "computed"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    np.testing.assert_array_equal(a.q, b.q)


def test_pool_with_two_workers_equals_serial_and_a_second_serial_run():
    m = planar_arm((0.8, 0.5, 0.3))
    a = compute_map(m, "ground:tool", 0.3, executor="serial", **_small_request())
    b = compute_map(m, "ground:tool", 0.3, executor="serial", **_small_request())
    c = compute_map(m, "ground:tool", 0.3, executor="pool", workers=2, **_small_request(chunk_size=3))
    assert a.reached.any() and not a.reached.all()
    _same(a, b)
    _same(a, c)
    # the worker processes' whole CPU (start-up included) is at least what their chunks took; none in serial
    assert c.stats["worker_process_cpu"] >= c.stats["worker_cpu"] > 0
    assert a.stats["worker_process_cpu"] == 0 and "nanny_cpu" not in a.stats


def test_dask_local_cluster_equals_process_pool(tmp_path):
    require("distributed", "dask")
    m = planar_arm((0.8, 0.5, 0.3))
    a = compute_map(m, "ground:tool", 0.3, executor="pool", workers=2, **_small_request())
    b = compute_map(m, "ground:tool", 0.3, executor="dask", workers=2, processes=False,
                    path=tmp_path / "dask.h5", **_small_request(chunk_size=4))
    _same(a, b)
    _same(a, ReachMap.load(tmp_path / "dask.h5", m))
    assert b.stats["worker_process_cpu"] == 0 and "nanny_cpu" not in b.stats     # workers are threads here


@pytest.fixture
def restored_environ():
    """``os.environ`` as it was: a LocalCluster's nannies run in this process and write their workers'
    variables into it."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_dask_worker_processes_run_without_a_fixed_malloc_threshold(restored_environ):
    """The map's LocalCluster starts its worker processes without distributed's MALLOC_TRIM_THRESHOLD_ (with it,
    glibc mmaps every array above 128 KiB afresh: 1.1-1.6x the CPU, BENCHMARKS.md); a cluster whose workers
    have it (an operator's, at distributed's default) gives the same map and a warning that says what to set."""
    distributed = require("distributed", "dask")
    import dask

    os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    m = planar_arm((0.8, 0.5, 0.3))
    a = compute_map(m, "ground:tool", 0.3, executor="serial", **_small_request())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        b = compute_map(m, "ground:tool", 0.3, executor="dask", workers=1, **_small_request())
    _same(a, b)
    assert b.stats["worker_malloc_env"] == {} and b.stats["worker_process_cpu"] > 0
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": 65536}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                     silence_logs=40) as cluster:
        with pytest.warns(RuntimeWarning, match="PRE_SPAWN_ENVIRON.*MALLOC_TRIM_THRESHOLD_.*None"):
            c = compute_map(m, "ground:tool", 0.3, executor="dask", scheduler=cluster.scheduler_address,
                            **_small_request())
    _same(a, c)
    assert list(c.stats["worker_malloc_env"].values()) == [{"MALLOC_TRIM_THRESHOLD_": "65536"}]


@pytest.mark.parametrize("env, slow", [({}, False), ({"MALLOC_TRIM_THRESHOLD_": "65536"}, True),
                                       ({"MALLOC_TOP_PAD_": "0"}, True), ({"MALLOC_MMAP_THRESHOLD_": "131072"}, True),
                                       ({"MALLOC_TRIM_THRESHOLD_": "65536", "MALLOC_MMAP_THRESHOLD_": "33554432"}, False),
                                       ({"MALLOC_MMAP_THRESHOLD_": "lots"}, True)])
def test_slow_malloc_settings(env, slow):
    assert slow_malloc(env) is slow


class _Stop(Exception):
    pass


def test_interrupted_and_resumed_run_equals_an_uninterrupted_one(tmp_path):
    m = planar_arm((0.8, 0.5, 0.3))
    full = compute_map(m, "ground:tool", 0.3, executor="serial", **_small_request())
    out = tmp_path / "map.h5"
    calls = []

    def stop_after_two(done, total):
        calls.append(done)
        if len(calls) == 3:                      # the initial report and two finished chunks
            raise _Stop

    with pytest.raises(_Stop):
        compute_map(m, "ground:tool", 0.3, executor="serial", path=out, progress=stop_after_two, **_small_request())
    assert not out.exists()
    journal = tmp_path / "map.h5.partial"
    assert len(list(journal.glob("chunk_*.npz"))) == 2
    seen = []
    resumed = compute_map(m, "ground:tool", 0.3, executor="pool", workers=2, path=out,
                          progress=lambda d, t: seen.append(d), **_small_request())
    assert seen[0] > 0                           # started from the journal's two chunks
    assert not journal.exists() and out.exists()
    _same(full, resumed)
    _same(full, ReachMap.load(out, m))


def test_map_file_round_trips_and_is_refused_for_another_model(tmp_path):
    m = planar_arm((0.8, 0.5, 0.3))
    out = tmp_path / "map.h5"
    a = compute_map(m, "ground:tool", 0.3, executor="serial", path=out, **_small_request())
    b = ReachMap.load(out, m)
    _same(a, b)
    assert b.attrs["model_hash"] == a.attrs["model_hash"] and b.tool == "tool" and b.base == "ground"
    assert json.loads(b.attrs["request"])["resolution"] == 0.3
    other = planar_arm((0.8, 0.5, 0.31))
    with pytest.raises(MapFileError, match="another model"):
        ReachMap.load(out, other)
    with pytest.raises(MapFileError, match="not a reachability map|not a readable"):
        (tmp_path / "junk.h5").write_bytes(b"not hdf5")
        ReachMap.load(tmp_path / "junk.h5")
    # an unfinished journal of another model is in the way of a new run, with a clear message
    (tmp_path / "j.h5.partial").mkdir()
    (tmp_path / "j.h5.partial" / "request.json").write_text(json.dumps({"model_hash": "x", "request": {}}))
    with pytest.raises(MapFileError, match="unfinished map of another model"):
        compute_map(m, "ground:tool", 0.3, executor="serial", path=tmp_path / "j.h5", **_small_request())


def _never(done, total):
    raise AssertionError("work was scheduled")


@pytest.mark.parametrize("kwargs, match", [
    (dict(resolution=0), "resolution must be a finite number > 0"),
    (dict(resolution=-0.1), "resolution must be a finite number > 0"),
    (dict(resolution=float("nan")), "resolution must be a finite number > 0"),
    (dict(resolution=1e-9), "voxels"),
    (dict(resolution=1e-9, bound=((-100, -100, -100), (100, 100, 100))), "voxels"),
    (dict(resolution=0.1, bound=((0, 0, float("nan")), (1, 1, 1))), "bound must be two finite corners"),
    (dict(resolution=0.1, directions=[[0, 0, float("nan")]]), "finite non-zero"),
    (dict(resolution=0.1, directions=0), "directions must be an integer"),
    (dict(resolution=0.1, mode="orientation"), "mode must be one of"),
    (dict(resolution=0.1, axis="w"), "axis must be one of"),
    (dict(resolution=0.1, executor="ray"), "executor must be one of"),
    (dict(resolution=0.1, workers=0), "workers must be an integer"),
    (dict(resolution=0.1, scheduler="tcp://127.0.0.1:1"), "needs executor='dask'"),
    (dict(resolution=0.1, tol_position=float("nan")), "tol_position"),
    (dict(resolution=0.01, directions=200), r"map too large: .*IK samples.*cap"),
])
def test_hostile_requests_are_refused_before_any_work(tmp_path, kwargs, match):
    m = planar_arm((0.8, 0.5, 0.3))
    kw = dict(chain="ground:tool", executor="serial", path=tmp_path / "m.h5", progress=_never,
              max_samples=1_000_000)
    kw.update(kwargs)
    with pytest.raises(InvalidConfiguration, match=match):
        compute_map(m, **kw)
    assert list(tmp_path.iterdir()) == []


def test_size_cap_error_states_the_estimate():
    m = planar_arm((0.8, 0.5, 0.3))
    with pytest.raises(InvalidConfiguration) as e:
        compute_map(m, "ground:tool", 0.02, directions=50, executor="serial", progress=_never)
    msg = str(e.value)
    assert "IK samples" in msg and "MB" in msg and "cap 5e+07" in msg


@pytest.mark.parametrize("chain, error", [("ground:nowhere", UnknownFrame), ("nowhere:tool", UnknownFrame),
                                          ("tool", InvalidConfiguration), ("a:b:c", InvalidConfiguration),
                                          ("link2:link1", MechanismModelError)])
def test_a_chain_that_does_not_exist_is_refused(chain, error):
    m = planar_arm((0.8, 0.5, 0.3))
    with pytest.raises(error):
        compute_map(m, chain, 0.1, executor="serial", progress=_never)


# ------------------------------------------------------------------------------------------ base placement
def _rover():
    from mechanism_model_core import load_model
    from mechanism_model_core.library import model_path

    return load_model(model_path("rocky8/rocky8_rover.xml"))


def test_base_placements_on_a_slope_are_settled_reach_the_target_and_are_stable():
    """Every placement is re-checked here independently: the wheels rest on the plane (wheel-centre distance
    to the plane = radius), Pinocchio FK of the whole rover (exported URDF) puts the tool on the target with
    its z axis along the approach direction, and the support polygon holds the centre of mass."""
    pin = require("pinocchio", "test")
    from mechanism_model_core.io.urdf import to_urdf
    from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel
    from mechanism_model_core.reach.placement import place_base
    from mechanism_model_core.statics.mass import center_of_mass
    from mechanism_model_core.statics.stability import support_polygon_margin
    from mechanism_model_core.terrain import Plane
    from mechanism_model_core import forward_kinematics
    from .test_pinocchio_oracle import pin_configuration

    rover = _rover()
    terrain = Plane.from_slope(0.15, direction=0.3)
    target = np.array([2.0, 0.5, float(terrain.height(2.0, 0.5))])
    d = -terrain.unit_normal
    res = place_base(rover, "chassis:arm_tool", target, d, terrain, step=0.25, yaws=6, max_results=3)
    assert res.success and len(res.placements) == 3, res.message
    pm = pin.buildModelFromXML(to_urdf(rover))
    data = pm.createData()
    fid = pm.getFrameId("arm_tool")
    W = WheeledLocomotorModel(rover)
    for p in res.placements:
        pin.framesForwardKinematics(pm, data, pin_configuration(pm, rover, p.q))
        T = data.oMf[fid]
        np.testing.assert_allclose(T.translation, target, atol=1e-3)
        assert T.rotation[:, 2] @ d > math.cos(1e-2)
        fk = forward_kinematics(rover, p.q)
        for w in W.wheels:
            c = fk.position(rover.child_body_of_joint(w.drive_joint))      # the wheel centre
            dist = (c - terrain.point) @ terrain.unit_normal
            assert abs(dist - w.radius) < 2e-3, (w.name, dist)
        pts = np.array([fk.position(w.contact_frame) for w in W.wheels])
        assert support_polygon_margin(pts, center_of_mass(rover, p.q)).margin > 0
        assert abs(fk.pose("chassis")[0, 3] - p.x) < 1e-9 and abs(fk.pose("chassis")[1, 3] - p.y) < 1e-9
    scores = [p.score for p in res.placements]
    assert scores == sorted(scores, reverse=True)


def test_a_target_no_placement_reaches_says_so():
    from mechanism_model_core.reach.placement import place_base
    from mechanism_model_core.terrain import Plane

    res = place_base(_rover(), "chassis:arm_tool", (2.0, 0.5, 3.0), (0, 0, -1), Plane(), step=0.5, yaws=2,
                     radius=1.0)
    assert not res.success and res.placements == []
    assert "no placement reaches the target" in res.message and "beyond the arm's reach" in res.message


@pytest.mark.parametrize("kw, match", [(dict(target=(1, float("nan"), 0)), "target must be 3 finite"),
                                       (dict(direction=(0, 0, 0)), "non-zero"),
                                       (dict(step=0.001, radius=1000.0), "placement search too large"),
                                       (dict(chain="chassis:nope"), "nope")])
def test_hostile_placement_requests_are_refused(kw, match):
    from mechanism_model_core.reach.placement import place_base
    from mechanism_model_core.terrain import Plane

    args = dict(chain="chassis:arm_tool", target=(2.0, 0.5, 0.0), direction=(0, 0, -1), terrain=Plane())
    args.update(kw)
    with pytest.raises(MechanismModelError, match=match):
        place_base(_rover(), **args)


# ------------------------------------------------------------------------------------------ command line
def test_cli_map_show_and_refusal(tmp_path, capsys):
    from mechanism_model_core.cli import main

    out = tmp_path / "m.h5"
    model = tmp_path / "planar.xml"
    save_model(planar_arm((0.8, 0.5, 0.3)), str(model))
    assert main(["reach", "map", str(model), "--chain", "ground:tool", "--resolution", "0.4", "--mode", "position",
                 "--bound", "-1.2", "-1.2", "0", "1.2", "1.2", "0", "-o", str(out), "--executor", "serial",
                 "--quiet"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert main(["reach", "show", str(out), "--model", str(model), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["request"]["mode"] == "position" and info["reachable_voxels"] > 0
    other = tmp_path / "other.xml"
    save_model(planar_arm((0.8, 0.5, 0.35)), str(other))
    assert main(["reach", "show", str(out), "--model", str(other)]) == 1
    assert "another model" in capsys.readouterr().err
    assert main(["reach", "map", str(model), "--chain", "ground:tool", "--resolution", "1e-9", "-o",
                 str(tmp_path / "x.h5"), "--quiet"]) == 1
    assert "voxels" in capsys.readouterr().err and not (tmp_path / "x.h5.partial").exists()


def test_a_run_killed_with_sigkill_resumes_to_the_uninterrupted_map(tmp_path):
    """The CLI in a child process is killed (SIGKILL) once its journal holds two chunks; the same request
    started again finishes from the journal and equals an uninterrupted run."""
    import signal
    import subprocess
    import sys
    import time

    model = tmp_path / "planar.xml"
    arm = planar_arm((0.8, 0.5, 0.3))
    save_model(arm, str(model))
    out = tmp_path / "killed.h5"
    args = ["--chain", "ground:tool", "--resolution", "0.3", "--mode", "position", "--bound", "-1.2", "-1.2", "-0.6",
            "1.2", "1.2", "0.6", "--chunk-size", "4", "--max-iterations", "300", "--executor", "serial", "--quiet"]
    p = subprocess.Popen([sys.executable, "-m", "mechanism_model_core", "reach", "map", str(model), *args, "-o",
                          str(out)], cwd=str(tmp_path))
    journal = tmp_path / "killed.h5.partial"
    deadline = time.monotonic() + 300
    while len(list(journal.glob("chunk_*.npz"))) < 2 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    if out.exists():
        pytest.skip("the child finished before it could be killed")
    n_before = len(list(journal.glob("chunk_*.npz")))
    assert n_before >= 2
    kw = dict(mode="position", bound=((-1.2, -1.2, -0.6), (1.2, 1.2, 0.6)), chunk_size=4, max_iterations=300,
              executor="serial")
    seen = []
    resumed = compute_map(arm, "ground:tool", 0.3, path=out, progress=lambda d, t: seen.append(d), **kw)
    full = compute_map(arm, "ground:tool", 0.3, **kw)
    assert seen[0] == n_before * 4                       # the journal's chunks were not computed again
    _same(full, resumed)


def test_fk_mode_marks_only_voxels_the_arm_can_touch():
    """The FK estimate bins real configurations: every voxel it marks holds a point of the annulus (its centre
    within half a voxel diagonal of it), and most of the annulus's voxels are found with 20000 samples."""
    m = planar_arm(L2R)
    rmap = compute_map(m, "ground:tool", 0.1, mode="fk", bound=PLANE, progress=_never)
    _, r = _annulus_expected(rmap, 0.45, 1.55)
    half = 0.1 * math.sqrt(2) / 2
    marked = rmap.index > 0
    assert np.all((r[marked] >= 0.45 - half) & (r[marked] <= 1.55 + half))
    inside = (r >= 0.45 + half) & (r <= 1.55 - half)
    assert marked[inside].mean() > 0.95
    assert rmap.attrs["samples"] == 0
