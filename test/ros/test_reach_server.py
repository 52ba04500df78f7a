"""The reach server: ``compute_base_placement`` and the reachability map's markers.

Over the in-memory transport (real message definitions, CDR on the bus): placements for a target on a slope
are checked independently (Pinocchio FK of the whole rover at the reply's robot state puts the tool on the
target with its approach axis along the direction; the reply's body pose is the chassis pose of that state;
the wheels rest on the plane), a target beyond reach says so, every bad request gets its code while the node
keeps serving, and the map's markers go out only while someone subscribes. Over real DDS on loopback, on both
transports (Cyclone, and rclpy from /opt/ros where installed): a placement, a bad request and the markers."""

import math
import os
import re
import shlex
import signal
import subprocess
import sys

import numpy as np
import pytest
import yaml

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.terrain import Plane

from docs_text import TOP, venv_argv
from ros import ros_env
from ros.dds_helpers import configure_this_process, dds_env, start_serve, stop, unique_domain_id, wait_for

pytestmark = pytest.mark.ros

SRV = "mechanism_model_msgs/srv/ComputeBasePlacement"
CHAIN = "chassis:arm_tool"
ROVER = load_model(model_path("rocky8/rocky8_rover.xml"))
SLOPE = Plane.from_slope(0.15, direction=0.3)


def _map(path=None):
    pytest.importorskip("h5py")
    from mechanism_model_core.reach import compute_map
    return compute_map(ROVER, CHAIN, 0.25, directions=[[0, 0, -1], [1, 0, 0], [0, 0, 1]], executor="serial",
                       max_iterations=100, n_seeds=2000, path=path)


@pytest.fixture(scope="module")
def rmap():
    return _map()


def _start(rmap=None, params=None):
    from mechanism_model_ros.reach_server import ReachServer
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    bus = MemoryBus()
    node = ReachServer(MemoryNode("reach_server", parameters=params, bus=bus), ROVER, reach_map=rmap)
    client = MemoryNode("client", bus=bus)
    return node, client, client.create_client("compute_base_placement", SRV)


def _plane_coef(plane):
    n = plane.unit_normal
    return [float(n[0]), float(n[1]), float(n[2]), float(-n @ plane.point)]


def _request(cli, target=(2.0, 0.5), terrain=SLOPE, **fields):
    req = cli.request()
    req.chain = CHAIN
    req.target.point.x, req.target.point.y = target[:2]
    if len(target) == 3:
        req.target.point.z = target[2]
    else:
        req.target_on_terrain = True
    req.terrain_plane.coef = _plane_coef(terrain)
    req.step, req.yaws, req.max_results = 0.25, 6, 3
    for k, v in fields.items():
        setattr(req, k, v)
    return req


def check_placements(rep, target, direction, plane):
    """Independent checks of a reply's placements (Pinocchio FK of the exported URDF)."""
    from core.optional_deps import require
    pin = require("pinocchio", "test")
    from mechanism_model_core.io.urdf import to_urdf
    from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel
    from core.test_pinocchio_oracle import pin_configuration

    pm = pin.buildModelFromXML(to_urdf(ROVER))
    data = pm.createData()
    fid = pm.getFrameId("arm_tool")
    names = list(ROVER.coordinate_names)
    assert len(rep.robot_states) == len(rep.body_poses) == len(rep.score) > 0
    for k, js in enumerate(rep.robot_states):
        assert list(js.name) == names
        q = np.array(js.position)
        pin.framesForwardKinematics(pm, data, pin_configuration(pm, ROVER, q))
        T = data.oMf[fid]
        np.testing.assert_allclose(T.translation, target, atol=1e-3)
        assert T.rotation[:, 2] @ direction > math.cos(1e-2)
        bp = rep.body_poses[k]
        assert bp.header.frame_id == "ground"
        chassis = data.oMf[pm.getFrameId("chassis")]
        np.testing.assert_allclose([bp.pose.position.x, bp.pose.position.y, bp.pose.position.z],
                                   chassis.translation, atol=1e-9)
        assert (rep.x[k], rep.y[k]) == pytest.approx(tuple(chassis.translation[:2]), abs=1e-9)
        fk = forward_kinematics(ROVER, q)
        for w in WheeledLocomotorModel(ROVER).wheels:
            c = fk.position(ROVER.child_body_of_joint(w.drive_joint))
            assert abs((c - plane.point) @ plane.unit_normal - w.radius) < 2e-3, w.name
    assert list(rep.score) == sorted(rep.score, reverse=True)
    arm = [n for n in names if n.startswith("arm_")]
    assert list(rep.arm_joint_names) == arm
    best = dict(zip(rep.robot_states[0].name, rep.robot_states[0].position))
    assert list(rep.arm_positions) == pytest.approx([best[n] for n in arm], abs=1e-12)


def test_placements_on_a_slope_reach_the_target(rmap):
    from mechanism_model_ros.error_codes import ErrorCodes
    node, _, cli = _start(rmap)
    req = _request(cli)
    rep = cli.call(req, 120)
    assert rep.error_code.val == ErrorCodes.SUCCESS, rep.message
    target = np.array([2.0, 0.5, float(SLOPE.height(2.0, 0.5))])
    check_placements(rep, target, -SLOPE.unit_normal, SLOPE)
    assert rep.candidates >= rep.settled >= rep.in_map >= rep.verified == len(rep.score) == 3
    assert all(0 < i <= 1 for i in rep.reachability_index)       # looked up in the map
    # without the map: the same search, every candidate verified by IK; index NaN
    _, _, cli2 = _start(None)
    rep2 = cli2.call(_request(cli2), 120)
    assert rep2.error_code.val == ErrorCodes.SUCCESS, rep2.message
    check_placements(rep2, target, -SLOPE.unit_normal, SLOPE)
    assert all(math.isnan(i) for i in rep2.reachability_index) and rep2.in_map == 0
    assert node.calls == 1 and node.failures == 0


def test_a_target_beyond_reach_says_so_and_bad_requests_get_codes(rmap):
    from mechanism_model_ros.error_codes import ErrorCodes
    node, client, cli = _start(rmap, params={"max_candidates": 5000})
    rep = cli.call(_request(cli, target=(2.0, 0.5, 3.0), terrain=Plane(), radius=1.0, step=0.5, yaws=2), 60)
    assert rep.error_code.val == ErrorCodes.NO_IK_SOLUTION
    assert "no placement reaches the target" in rep.message and "beyond the arm's reach" in rep.message
    assert rep.candidates > 0 and list(rep.score) == [] and list(rep.robot_states) == []
    Vec = client.message_class("geometry_msgs/msg/Vector3")
    nan = math.nan
    cases = [
        (dict(chain="chassis:no_tool"), ErrorCodes.INVALID_LINK_NAME),
        (dict(chain="no colon"), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(target_on_terrain=False), None),      # placeholder replaced below (NaN target)
        (dict(direction=Vec(x=nan, y=0.0, z=-1.0)), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(axis="w"), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(step=-0.1), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(step=0.001), ErrorCodes.INVALID_GOAL_CONSTRAINTS),        # beyond max_candidates
        (dict(yaws=-3), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(max_results=-1), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(radius=math.inf), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(min_stability=nan), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
    ]
    for fields, code in cases:
        req = _request(cli, **fields)
        if code is None:
            req.target.point.x, code = nan, ErrorCodes.INVALID_GOAL_CONSTRAINTS
        rep = cli.call(req, 60)
        assert rep.error_code.val == code, (fields, rep.message)
        assert rep.message and list(rep.score) == []
    rep = cli.call(_request(cli, step=0.001), 60)
    assert "candidates" in rep.message and "5000" in rep.message        # the refused size is named
    req = _request(cli)
    req.target.header.frame_id = "chassis"
    assert cli.call(req, 60).error_code.val == ErrorCodes.FRAME_TRANSFORM_FAILURE
    req = _request(cli)
    req.terrain_plane.coef = [1.0, 0.0, 0.0, 0.0]                  # a wall, not a terrain
    assert cli.call(req, 60).error_code.val == ErrorCodes.INVALID_GOAL_CONSTRAINTS
    req = _request(cli)
    req.chain = ""                                                   # the map's chain
    req.terrain_mesh.triangles = [client.message_class("shape_msgs/msg/MeshTriangle")(vertex_indices=[0, 1, 7])]
    req.terrain_mesh.vertices = [Vec(x=0.0, y=0.0, z=0.0)] * 3
    assert cli.call(req, 60).error_code.val == ErrorCodes.INVALID_GOAL_CONSTRAINTS
    assert node.failures == len(cases) + 5
    rep = cli.call(_request(cli, max_results=1, chain=""), 120)      # still serving
    assert rep.error_code.val == ErrorCodes.SUCCESS and len(rep.score) == 1, rep.message


def test_without_a_chain_the_request_is_refused():
    from mechanism_model_ros.error_codes import ErrorCodes
    _, _, cli = _start(None)
    rep = cli.call(_request(cli, chain=""), 30)
    assert rep.error_code.val == ErrorCodes.INVALID_GOAL_CONSTRAINTS and "chain" in rep.message


def test_map_markers_only_while_subscribed(rmap):
    from mechanism_model_ros import qos
    node, client, _ = _start(rmap, params={"markers_period": 0.0})
    assert not node.publish_markers()                # nobody listens: nothing is built or sent
    got = []
    client.create_subscription("/reach_server/markers", "visualization_msgs/msg/MarkerArray", qos.DEFAULT,
                               got.append)
    assert node.publish_markers()
    assert len(got) == 1
    cubes = [m for m in got[0].markers if m.type == 6]
    assert len(cubes) == 1 and cubes[0].header.frame_id == "chassis"
    reachable = np.argwhere(rmap.index > 0)
    centers = rmap.grid.centers(np.ravel_multi_index(tuple(reachable.T), rmap.grid.shape))
    pts = np.array([[p.x, p.y, p.z] for p in cubes[0].points])
    np.testing.assert_allclose(np.sort(pts, axis=0), np.sort(centers, axis=0), atol=1e-12)
    # without a map there is nothing to draw
    bare, _, _ = _start(None)
    assert bare.markers_timer is None and not bare.publish_markers()


def test_a_map_of_another_model_stops_the_node(tmp_path):
    pytest.importorskip("h5py")
    from mechanism_model_core.reach import MapFileError, compute_map
    from mechanism_model_ros.reach_server import ReachServer
    from mechanism_model_ros.transports.memory import MemoryNode
    from ros.test_reach_markers import planar_arm
    path = tmp_path / "map.h5"
    compute_map(planar_arm((0.8, 0.5)), "ground:tool", 0.4, directions=[[1, 0, 0]], executor="serial",
                max_iterations=20, n_seeds=200, path=path)
    with pytest.raises(MapFileError, match="another model"):
        ReachServer(MemoryNode("reach_server", parameters={"reach_map": str(path)}), planar_arm((0.8, 0.51)))
    with pytest.raises(Exception, match="no_tool"):
        ReachServer(MemoryNode("reach_server", parameters={"reach_chain": "ground:no_tool"}), planar_arm((0.8, 0.5)))


# ------------------------------------------------------------------------------------------ real DDS
@pytest.fixture(params=["cyclone", "rclpy"])
def served(request, tmp_path):
    path = tmp_path / "rocky8_arm.h5"
    _map(path)
    domain = unique_domain_id()
    args = ["--model", "rocky8/rocky8_rover.xml", "--nodes", "reach_server", "-p", f"reach_map:={path}",
            "-p", "markers_period:=0.2"]
    if request.param == "rclpy":
        ros_env.require("humble")
        proc = ros_env.start_serve(domain, *args)
    else:
        proc = start_serve(domain, *args)
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx = CycloneContext(domain)
    node = CycloneNode("placement_tester", context=ctx)
    try:
        yield request.param, proc, node
    finally:
        node.close()
        ctx.close()
        if request.param == "rclpy":
            proc.stop()
        else:
            out, err = stop(proc)
            assert "Traceback" not in err, err


@pytest.mark.slow
def test_placement_and_markers_over_dds(served):
    from mechanism_model_ros import qos
    from mechanism_model_ros.error_codes import ErrorCodes
    kind, proc, node = served
    cli = node.create_client("compute_base_placement", SRV)
    assert cli.wait_for_service(60), "the reach server did not come up"
    rep = cli.call(_request(cli), 120)
    assert rep.error_code.val == ErrorCodes.SUCCESS, rep.message
    target = np.array([2.0, 0.5, float(SLOPE.height(2.0, 0.5))])
    check_placements(rep, target, -SLOPE.unit_normal, SLOPE)
    bad = _request(cli)
    bad.target.point.x = math.nan
    rep = cli.call(bad, 60)
    assert rep.error_code.val == ErrorCodes.INVALID_GOAL_CONSTRAINTS and "target" in rep.message
    rep = cli.call(_request(cli, chain="chassis:nowhere"), 60)
    assert rep.error_code.val == ErrorCodes.INVALID_LINK_NAME
    rep = cli.call(_request(cli, max_results=1), 120)                # the node keeps serving
    assert rep.error_code.val == ErrorCodes.SUCCESS and len(rep.score) == 1, rep.message
    got = []
    node.create_subscription("/reach_server/markers", "visualization_msgs/msg/MarkerArray", qos.DEFAULT,
                             got.append)
    assert wait_for(lambda: got, 30), "no markers while subscribed"
    cubes = [m for m in got[-1].markers if m.type == 6]
    assert len(cubes) == 1 and len(cubes[0].points) > 0 and cubes[0].header.frame_id == "chassis"


@pytest.mark.slow
def test_the_docs_serve_and_call_lines(tmp_path):
    """docs/reach.md's "Over ROS" lines as written over Cyclone: the ``mechanism-model serve --model ...
    --nodes reach_server -p reach_map:=rocky8.h5`` of its text (the map this test's small one, written to that
    name in the working folder) and its ``mechanism-model call compute_base_placement`` block run by bash:
    the reply is SUCCESS with scored placements (their geometry is checked independently by
    test_placement_and_markers_over_dds)."""
    with open(os.path.join(TOP, "docs", "reach.md"), encoding="utf-8") as fh:
        section = fh.read().split("## Over ROS", 1)[1].split("\n## ", 1)[0]
    serve_line = " ".join(re.search(r"`(mechanism-model serve [^`]*--nodes reach_server[^`]*)`", section).group(1)
                          .split())
    call_block = section.split("```\n", 1)[1].split("```", 1)[0]
    assert call_block.startswith("mechanism-model call compute_base_placement"), call_block
    argv = shlex.split(serve_line)
    _map(tmp_path / argv[-1].split(":=", 1)[1])
    d = unique_domain_id()
    env = {**dds_env(d), "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.Popen(venv_argv(serve_line), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        call = subprocess.run(["bash", "-c", call_block], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = stop(proc)
    assert "Traceback" not in err, err[-3000:]
    assert call.returncode == 0, (call.stdout[-2000:], call.stderr[-3000:])
    reply = yaml.safe_load(call.stdout)
    assert reply["error_code"]["val"] == 1 and reply["score"], reply
