"""compute_statics and the gravity-compensation topic over the in-memory transport (real message
definitions, CDR on the bus): answers equal the core's, every bad request gets its error code and the
node keeps serving. One call also goes over real Cyclone DDS on loopback (test/system)."""

import math

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import default_model_path
from mechanism_model_core.spatial import rot_y
from mechanism_model_core.statics import (Payload, contact_loads, gravity_torques,
                                          mechanism_stability, static_torques, wheel_contacts)

pytestmark = pytest.mark.ros

MODEL = load_model(default_model_path())


@pytest.fixture
def bus():
    from mechanism_model_ros.transports.memory import MemoryBus
    return MemoryBus()


def _start(bus, names=("statics_server",), params=None):
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryNode
    served = Served(MODEL, "test")
    return served, {n: create(n, MemoryNode(n, parameters=params, bus=bus), served) for n in names}


def _client(bus):
    from mechanism_model_ros.transports.memory import MemoryNode
    return MemoryNode("client", bus=bus).create_client("compute_statics", "mechanism_model_msgs/srv/ComputeStatics")


def _state(req, values):
    req.robot_state.name = list(values)
    req.robot_state.position = [float(v) for v in values.values()]


def test_statics_server_is_a_default_node():
    from mechanism_model_ros import nodes
    assert "statics_server" in nodes.DEFAULT_NODES and "statics_server" in nodes.available()


def test_joint_torques_with_wrench_and_payload_equal_the_core(bus):
    _start(bus)
    cli = _client(bus)
    req = cli.request()
    values = {"arm_shoulder": 0.4, "arm_elbow": -0.7, "mast_tilt": 0.2}
    _state(req, values)
    req.wrench_links = ["arm_tool"]
    from mechanism_model_ros.transports.memory import MemoryNode
    WS = MemoryNode("tmp", bus=bus).message_class("geometry_msgs/msg/WrenchStamped")
    w = WS()
    w.header.frame_id = "arm_tool"
    w.wrench.force.x, w.wrench.force.z = 3.0, -12.0
    w.wrench.torque.y = 0.5
    req.wrenches = [w]
    req.payload_links = ["arm_turret"]
    req.payload_masses = [1.5]
    rep = cli.call(req)
    assert rep.error_code.val == 1, rep.message
    from mechanism_model_core.statics import Wrench
    q = MODEL.configuration(values)
    expect = static_torques(MODEL, q, (0, 0, -9.81), [Wrench("arm_tool", (3, 0, -12), (0, 0.5, 0), "arm_tool")],
                            [Payload("arm_turret", 1.5)])
    assert list(rep.joint_names) == list(MODEL.independent_coordinates)
    np.testing.assert_allclose(rep.effort, expect, atol=1e-9)


def test_wheel_loads_slip_lift_and_margin_on_a_slope(bus):
    _start(bus)
    cli = _client(bus)
    slope = math.radians(12)
    n = rot_y(-slope)[:3, 2]
    contacts = wheel_contacts(MODEL, n, 0.7)
    req = cli.request()
    _state(req, {"chassis.pitch": -slope})
    req.contact_links = [c.frame for c in contacts]
    from mechanism_model_ros.transports.memory import MemoryNode
    V3 = MemoryNode("tmp", bus=bus).message_class("geometry_msgs/msg/Vector3")
    req.contact_normals = [V3(x=float(n[0]), y=float(n[1]), z=float(n[2]))] * len(contacts)
    req.friction_coefficients = [0.7] * len(contacts)
    rep = cli.call(req)
    assert rep.error_code.val == 1, rep.message
    q = MODEL.configuration({"chassis.pitch": -slope})
    loads = contact_loads(MODEL, q, contacts)
    np.testing.assert_allclose(rep.normal_forces, loads.normal_forces, atol=1e-9)
    np.testing.assert_allclose([[f.x, f.y, f.z] for f in rep.contact_forces], loads.forces, atol=1e-9)
    np.testing.assert_allclose(rep.effort, loads.torques, atol=1e-9)
    assert rep.equilibrium and not any(rep.slip) and not any(rep.lift)
    stab = mechanism_stability(MODEL, q, contacts)
    assert rep.stability_measure == "force_angle" and rep.stability_margin == pytest.approx(stab.margin)
    assert set(rep.tipover_edge) <= set(req.contact_links) and len(rep.tipover_edge) == 2
    # too little friction for the slope: the least-traction answer slips
    req.friction_coefficients = [0.05] * len(contacts)
    rep2 = cli.call(req)
    assert rep2.error_code.val == 1 and any(rep2.slip)


def test_bad_requests_get_their_codes_and_the_node_keeps_serving(bus):
    from mechanism_model_ros.error_codes import ErrorCodes
    _, nodes = _start(bus)
    cli = _client(bus)

    def call(**fields):
        req = cli.request()
        for k, v in fields.items():
            setattr(req, k, v)
        return cli.call(req)

    cases = [
        (dict(gravity=[0.0, math.nan, -9.8]), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(gravity=[0.0, -9.8]), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(contact_links=["nowhere"]), ErrorCodes.INVALID_LINK_NAME),
        (dict(contact_links=["left_front_contact"], friction_coefficients=[-0.2]),
         ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(contact_links=["left_front_contact"], friction_coefficients=[0.5, 0.5]),
         ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(contact_links=["left_front_contact"], contact_wheels=["no_wheel"]), ErrorCodes.INVALID_LINK_NAME),
        (dict(payload_links=["arm_tool"], payload_masses=[-1.0]), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(payload_links=["ghost"], payload_masses=[1.0]), ErrorCodes.INVALID_LINK_NAME),
        (dict(contact_links=["left_front_contact"], contact_method="magic"), ErrorCodes.INVALID_GOAL_CONSTRAINTS),
        (dict(contact_links=["left_front_contact"], stability_measure="vibes"),
         ErrorCodes.INVALID_GOAL_CONSTRAINTS),
    ]
    for fields, code in cases:
        rep = call(**fields)
        assert rep.error_code.val == code, (fields, rep.message)
        assert rep.message and list(rep.effort) == []
    req = cli.request()
    _state(req, {"arm_elbow": math.inf})
    assert cli.call(req).error_code.val == ErrorCodes.INVALID_ROBOT_STATE
    _state(req, {"no_joint": 0.0})
    assert cli.call(req).error_code.val == ErrorCodes.INVALID_ROBOT_STATE
    assert call().error_code.val == 1               # still serving
    assert nodes["statics_server"].failures == len(cases) + 2


def test_gravity_compensation_topic_off_by_default_and_on_when_asked(bus):
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.memory import MemoryNode
    _, off = _start(bus, ("state_publisher",))
    JS0 = MemoryNode("driver", bus=bus).message_class("sensor_msgs/msg/JointState")
    off["state_publisher"].on_joint_state(JS0(name=["arm_shoulder"], position=[0.3]))
    assert off["state_publisher"].gravity_compensation is None
    assert not any("gravity" in t for t, n in bus.published.items() if n)
    bus2 = type(bus)()
    served, nodes = _start(bus2, ("state_publisher",), {"gravity_compensation": True, "floating_joints": "always"})
    listener = MemoryNode("controller", bus=bus2)
    got = []
    listener.create_subscription("gravity_compensation", "sensor_msgs/msg/JointState", qos.DEFAULT, got.append)
    JS = listener.message_class("sensor_msgs/msg/JointState")
    m = JS(name=["arm_shoulder", "arm_elbow"], position=[0.3, -0.5])
    m.header.stamp.sec = 42
    nodes["state_publisher"].on_joint_state(m)
    assert got, "no gravity compensation message"
    msg = got[-1]
    assert msg.header.stamp.sec == 42
    assert "chassis.x" not in msg.name and "left_rocker" not in msg.name     # passive ones left out
    q = MODEL.configuration({"arm_shoulder": 0.3, "arm_elbow": -0.5})
    tau = dict(zip(MODEL.independent_coordinates, gravity_torques(MODEL, q)))
    for name, e, p in zip(msg.name, msg.effort, msg.position):
        assert e == pytest.approx(tau[name], abs=1e-9)
    assert dict(zip(msg.name, msg.position))["arm_shoulder"] == pytest.approx(0.3)
    assert abs(dict(zip(msg.name, msg.effort))["arm_shoulder"]) > 0.5
