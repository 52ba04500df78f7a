"""Every generated Cyclone message class serializes byte-identically to rosbags' ``serialize_cdr`` (an
independent CDR implementation), for random contents, and reads rosbags' bytes back."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism_model_ros.interfaces_store import own_types, typestore
from mechanism_model_ros.transports.typegen import (HEADER_GUID, HEADER_SEQ, dds_type_name, message_class,
                                         service_wire_class)

pytestmark = pytest.mark.ros

STORE = typestore()
USED = ["sensor_msgs/msg/JointState", "tf2_msgs/msg/TFMessage", "geometry_msgs/msg/TransformStamped",
        "geometry_msgs/msg/PoseStamped", "std_msgs/msg/String", "std_msgs/msg/Header",
        "builtin_interfaces/msg/Duration", "rmw_dds_common/msg/ParticipantEntitiesInfo"]
TYPES = USED + sorted(own_types())

_INT = {"int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-2**15, 2**15 - 1),
        "uint16": (0, 2**16 - 1), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
        "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1), "char": (0, 255),
        # ROS 2 byte is an octet; rosbags' Python side takes it as a signed int8: same bits for 0..127
        "byte": (0, 127)}
_NP = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
       "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "float32": np.float32,
       "float64": np.float64, "byte": np.uint8, "char": np.uint8, "bool": np.bool_}


def _base_value(draw, name, bound):
    if name == "bool":
        return draw(st.booleans())
    if name in _INT:
        return draw(st.integers(*_INT[name]))
    if name == "float32":
        return float(np.float32(draw(st.floats(width=32, allow_nan=False))))
    if name == "float64":
        return draw(st.floats(allow_nan=False))
    if name == "string":
        return draw(st.text(st.characters(codec="utf-8", exclude_characters="\x00"),
                            max_size=bound or 12))
    raise AssertionError(name)


def _value(draw, ftype):
    """(plain python value for our class, value for the rosbags class)."""
    from rosbags.typesys.base import Nodetype

    kind, detail = ftype
    if kind == Nodetype.BASE:
        v = _base_value(draw, *detail)
        return v, v
    if kind == Nodetype.NAME:
        return _message(draw, detail)
    sub, n = detail
    count = n if kind == Nodetype.ARRAY else draw(st.integers(0, min(n, 3) if n else 3))
    pairs = [_value(draw, sub) for _ in range(count)]
    ours = [a for a, _ in pairs]
    theirs = [b for _, b in pairs]
    if sub[0] == Nodetype.BASE and sub[1][0] != "string":
        theirs = np.array(theirs, dtype=_NP[sub[1][0]])
    return ours, theirs


def _message(draw, name):
    _, fields = STORE.fielddefs[name]
    ours, theirs = {}, {}
    for fname, ftype in fields:
        ours[fname], theirs[fname] = _value(draw, ftype)
    return message_class(name)(**ours), STORE.types[name](**theirs)


@st.composite
def messages(draw, name):
    return _message(draw, name)


@pytest.mark.parametrize("name", TYPES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_serializes_like_rosbags(name, data):
    ours, theirs = data.draw(messages(name))
    wire = ours.serialize(use_version_2=False)
    reference = bytes(STORE.serialize_cdr(theirs, name))
    assert wire[:4] == b"\x00\x01\x00\x00"          # XCDR1 little endian, as rmw_cyclonedds writes
    assert wire == reference
    back = message_class(name).deserialize(reference)
    assert back.serialize(use_version_2=False) == reference


@pytest.mark.parametrize("name", sorted(set(STORE.fielddefs) - set(TYPES)))
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_humble_message_serializes_like_rosbags(name, data):
    """The generator is not limited to the types the nodes use: every ROS 2 Humble message rosbags knows."""
    ours, theirs = data.draw(messages(name))
    assert ours.serialize(use_version_2=False) == bytes(STORE.serialize_cdr(theirs, name))


@pytest.mark.parametrize("name", [n for n in own_types() if "/srv/" in n])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), guid=st.integers(0, 2**64 - 1), seq=st.integers(-2**63, 2**63 - 1))
def test_service_wire_layout(name, data, guid, seq):
    """Request/reply on the wire: encapsulation, then rmw_cyclonedds' 16-byte header (client id, sequence
    number), then exactly the message's CDR body."""
    ours, theirs = data.draw(messages(name))
    wire_cls = service_wire_class(name)
    w = wire_cls(**{HEADER_GUID: guid, HEADER_SEQ: seq, **{f: getattr(ours, f) for f in
                                                              STORE.fielddefs[name][1] and
                                                              [f for f, _ in STORE.fielddefs[name][1]]}})
    raw = w.serialize(use_version_2=False)
    reference = bytes(STORE.serialize_cdr(theirs, name))
    assert raw[:4] == reference[:4]
    assert int.from_bytes(raw[4:12], "little") == guid
    assert int.from_bytes(raw[12:20], "little", signed=True) == seq
    assert raw[20:] == reference[4:]


def test_type_names_are_rosidl_names():
    assert dds_type_name("sensor_msgs/msg/JointState") == "sensor_msgs::msg::dds_::JointState_"
    assert message_class("tf2_msgs/msg/TFMessage").__idl__.idl_transformed_typename == \
        "tf2_msgs::msg::dds_::TFMessage_"
    assert service_wire_class("mechanism_model_msgs/srv/ComputeIK_Request").__idl__ \
        .idl_transformed_typename == "mechanism_model_msgs::srv::dds_::ComputeIK_Request_"


def test_constants_and_defaults():
    EC = message_class("mechanism_model_msgs/msg/ErrorCodes")
    # MoveIt's values (moveit_msgs/msg/MoveItErrorCodes)
    assert (EC.SUCCESS, EC.FAILURE, EC.TIMED_OUT, EC.INVALID_LINK_NAME, EC.FRAME_TRANSFORM_FAILURE,
            EC.NO_IK_SOLUTION, EC.INVALID_ROBOT_STATE, EC.INVALID_GOAL_CONSTRAINTS) == \
        (1, 99999, -6, -18, -21, -31, -17, -16)
    KC = message_class("mechanism_model_msgs/msg/KinematicConstraint")
    k = KC()
    assert k.weights == [0.0] * 6 and k.kind == KC.POSE == 0
    assert k.target.orientation.w == 1.0   # ROS 2: a default quaternion is the identity
    assert not math.isnan(k.position_tolerance)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_numeric_template_bytes_equal_full_serialization(data):
    """The state publisher's fast path (numbers written into a pre-serialized TF message) gives exactly
    the bytes rosbags serializes for the same message."""
    from mechanism_model_ros.transports.numeric_template import NumericTemplate

    TFM = message_class("tf2_msgs/msg/TFMessage")
    TS = message_class("geometry_msgs/msg/TransformStamped")
    frames = data.draw(st.lists(st.text("abc_/.", min_size=1, max_size=7), min_size=1, max_size=6))
    msg = TFM(transforms=[TS() for _ in frames])
    for i, (t, f) in enumerate(zip(msg.transforms, frames)):
        t.header.frame_id, t.child_frame_id = f, f + str(i)
    tss = msg.transforms
    tpl = NumericTemplate(msg, {
        "sec": ("i4", [(t.header.stamp, "sec") for t in tss]),
        "nanosec": ("u4", [(t.header.stamp, "nanosec") for t in tss]),
        "translation": ("f8", [(t.transform.translation, a) for t in tss for a in "xyz"]),
        "rotation": ("f8", [(t.transform.rotation, a) for t in tss for a in "xyzw"])},
        serialize=lambda m: m.serialize(use_version_2=False), write=None, pad4=True)
    E = len(frames)
    sec = data.draw(st.integers(-2**31, 2**31 - 1))
    nsec = data.draw(st.integers(0, 2**32 - 1))
    tr = data.draw(st.lists(st.floats(allow_nan=False), min_size=3 * E, max_size=3 * E))
    rot = data.draw(st.lists(st.floats(-1, 1), min_size=4 * E, max_size=4 * E))
    scalar_stamps = data.draw(st.booleans())       # one stamp for every transform, as the state publisher gives
    raw = tpl.bytes_for({"sec": sec if scalar_stamps else np.full(E, sec),
                         "nanosec": nsec if scalar_stamps else np.full(E, nsec), "translation": np.array(tr),
                         "rotation": np.array(rot)})
    R = STORE.types
    ref = R["tf2_msgs/msg/TFMessage"](transforms=[
        R["geometry_msgs/msg/TransformStamped"](
            header=R["std_msgs/msg/Header"](stamp=R["builtin_interfaces/msg/Time"](sec=sec, nanosec=nsec),
                                            frame_id=f),
            child_frame_id=f + str(i),
            transform=R["geometry_msgs/msg/Transform"](
                translation=R["geometry_msgs/msg/Vector3"](*tr[3 * i:3 * i + 3]),
                rotation=R["geometry_msgs/msg/Quaternion"](*rot[4 * i:4 * i + 4])))
        for i, f in enumerate(frames)])
    expected = bytes(STORE.serialize_cdr(ref, "tf2_msgs/msg/TFMessage"))
    assert raw[:len(expected)] == expected and set(raw[len(expected):]) <= {0} and len(raw) % 4 == 0


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_numeric_template_patches_fields_cdr_does_not_align(data):
    """XCDR2 aligns float64 to 4 bytes only, so a field's offset need not be a multiple of 8: the template then
    patches bytes one by one, and still gives what serializing the updated message gives."""
    from mechanism_model_ros.transports.numeric_template import NumericTemplate

    TFM = message_class("tf2_msgs/msg/TFMessage")
    TS = message_class("geometry_msgs/msg/TransformStamped")
    frames = data.draw(st.lists(st.text("abc_/.", min_size=1, max_size=7), min_size=1, max_size=6))
    msg = TFM(transforms=[TS() for _ in frames])
    for i, (t, f) in enumerate(zip(msg.transforms, frames)):
        t.header.frame_id, t.child_frame_id = f, f + str(i)
    tss = msg.transforms
    refs = [(t.transform.translation, a) for t in tss for a in "xyz"]
    tpl = NumericTemplate(msg, {"sec": ("i4", [(t.header.stamp, "sec") for t in tss]), "translation": ("f8", refs)},
                          serialize=lambda m: m.serialize(use_version_2=True), write=None, pad4=True)
    sec = data.draw(st.integers(-2**31, 2**31 - 1))
    tr = data.draw(st.lists(st.floats(allow_nan=False), min_size=len(refs), max_size=len(refs)))
    raw = tpl.bytes_for({"sec": sec, "translation": np.array(tr)})
    for t in tss:
        t.header.stamp.sec = sec
    for (obj, a), v in zip(refs, tr):
        setattr(obj, a, v)
    expected = msg.serialize(use_version_2=True)
    assert raw[:len(expected)] == expected and set(raw[len(expected):]) <= {0}
