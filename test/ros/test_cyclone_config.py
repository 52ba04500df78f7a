"""Discovery configuration, QoS mapping and endpoint user data of the Cyclone transport, against
rmw_cyclonedds' behaviour (rmw_node.cpp)."""

import pytest

from mechanism_model_ros.qos import QoS, TF, TF_STATIC
from mechanism_model_ros.transports.base import TransportError, resolve_name
from mechanism_model_ros.transports.cyclone import (csid_to_string, dds_qos, discovery_config,
                                                    parse_user_data, ros_domain_id)

pytestmark = pytest.mark.ros


def test_domain_id():
    assert ros_domain_id({}) == 0
    assert ros_domain_id({"ROS_DOMAIN_ID": " 42 "}) == 42
    for bad in ("x", "-1", "233"):
        with pytest.raises(TransportError):
            ros_domain_id({"ROS_DOMAIN_ID": bad})


def test_default_range_is_subnet():
    cfg = discovery_config({})
    assert "<ParticipantIndex>auto</ParticipantIndex>" in cfg
    assert "AllowMulticast" not in cfg and "<Peers>" not in cfg
    assert cfg.endswith(",")


def test_localhost_only_and_range():
    for env in ({"ROS_LOCALHOST_ONLY": "1"}, {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}):
        cfg = discovery_config(env)
        assert "<AllowMulticast>false</AllowMulticast>" in cfg
        assert '<Peer address="localhost"/>' in cfg
    # rcl (Jazzy, rcl/src/rcl/init.c): the deprecated ROS_LOCALHOST_ONLY=1 prevails over the range and
    # drops the static peers
    both = discovery_config({"ROS_LOCALHOST_ONLY": "1", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET",
                             "ROS_STATIC_PEERS": "10.0.0.2"})
    assert '<Peer address="localhost"/>' in both and "10.0.0.2" not in both
    assert "localhost" not in discovery_config({"ROS_LOCALHOST_ONLY": "0",
                                                "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"})


def test_off_and_system_default_and_peers():
    off = discovery_config({"ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF", "ROS_STATIC_PEERS": "10.0.0.2"})
    assert "<ParticipantIndex>none</ParticipantIndex>" in off and "ros_discovery_off_" in off
    assert "10.0.0.2" not in off
    assert discovery_config({"ROS_AUTOMATIC_DISCOVERY_RANGE": "SYSTEM_DEFAULT"}) == ""
    sub = discovery_config({"ROS_STATIC_PEERS": "10.0.0.2; host.local"})
    assert '<Peer address="10.0.0.2"/>' in sub and '<Peer address="host.local"/>' in sub
    # rcl: an unknown range is a warning and localhost only
    assert '<Peer address="localhost"/>' in discovery_config({"ROS_AUTOMATIC_DISCOVERY_RANGE": "EVERYWHERE"})
    with pytest.raises(TransportError):
        discovery_config({"ROS_STATIC_PEERS": 'a"/><x'})


def test_cyclonedds_uri_comes_last():
    cfg = discovery_config({"CYCLONEDDS_URI": "file:///etc/cyclone.xml"})
    assert cfg.endswith(",file:///etc/cyclone.xml")


def test_qos_mapping():
    from cyclonedds.core import Policy
    q = dds_qos(TF_STATIC)
    assert q[Policy.History] == Policy.History.KeepLast(1)
    assert q[Policy.Durability] == Policy.Durability.TransientLocal
    assert isinstance(q[Policy.Reliability], Policy.Reliability.Reliable)
    assert q[Policy.DataRepresentation] == Policy.DataRepresentation(use_cdrv0_representation=True)
    assert q[Policy.WriterDataLifecycle] == Policy.WriterDataLifecycle(autodispose=False)
    assert q[Policy.DurabilityService].history == Policy.History.KeepLast(1)
    t = dds_qos(TF)
    assert t[Policy.History] == Policy.History.KeepLast(100)
    assert t[Policy.Durability] == Policy.Durability.Volatile
    be = dds_qos(QoS(depth=5, reliable=False), b"clientid=1.2;")
    assert be[Policy.Reliability] == Policy.Reliability.BestEffort
    assert be[Policy.Userdata].data == b"clientid=1.2;"


def test_client_service_ids():
    assert csid_to_string(bytes([1, 15, 255, 0])) == " 1.f.ff.0"
    assert csid_to_string(bytes([0xab, 1])) == "ab.1"
    assert parse_user_data(b"enclave=/;clientid= 1.2.3;typehash=RIHS01_x;") == {
        "enclave": "/", "clientid": " 1.2.3", "typehash": "RIHS01_x"}
    assert parse_user_data(None) == {}


def test_names():
    assert resolve_name("joint_states") == "/joint_states"
    assert resolve_name("joint_states", "/rover") == "/rover/joint_states"
    assert resolve_name("/tf", "/rover") == "/tf"
    assert resolve_name("~/status", "/rover", "kin") == "/rover/kin/status"
    for bad in ("", "a//b", "1x", "a b"):
        with pytest.raises(TransportError):
            resolve_name(bad)


def test_qos_of_real_entities_is_rmw_cyclonedds():
    """What a Cyclone writer and reader created with the mapping actually carry, against
    rmw_cyclonedds' create_readwrite_qos: reliable with an infinite max_blocking_time, automatic liveliness
    with an infinite lease, no deadline or lifespan (infinite), no autodispose."""
    from cyclonedds.core import Policy
    from cyclonedds.util import duration
    from mechanism_model_ros.transports.cyclone import CycloneContext
    from mechanism_model_ros.transports.typegen import message_class
    from ros.dds_helpers import configure_this_process, unique_domain_id

    domain = unique_domain_id()
    configure_this_process(domain)
    ctx = CycloneContext(domain)
    try:
        from cyclonedds.pub import DataWriter
        from cyclonedds.sub import DataReader
        topic = ctx.topic("rt/qos_check", message_class("std_msgs/msg/String"))
        inf = duration(infinite=True)
        for entity in (DataWriter(ctx.participant, topic, qos=dds_qos(TF)),
                       DataReader(ctx.participant, topic, qos=dds_qos(TF))):
            q = entity.get_qos()
            assert q[Policy.Reliability] == Policy.Reliability.Reliable(inf)
            assert q[Policy.Liveliness] == Policy.Liveliness.Automatic(inf)
            assert q[Policy.Deadline] == Policy.Deadline(inf)
            assert q[Policy.History] == Policy.History.KeepLast(100)
            if isinstance(entity, DataWriter):
                assert q[Policy.Lifespan] == Policy.Lifespan(inf)
                assert q[Policy.WriterDataLifecycle] == Policy.WriterDataLifecycle(autodispose=False)
    finally:
        ctx.close()
