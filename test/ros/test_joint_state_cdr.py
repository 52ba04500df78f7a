"""The Cyclone transport's fast JointState reader (transports/joint_state_cdr.py) against the generic
deserializer of the cyclonedds package, on random messages (names of any length and alphabet, empty and
mismatched sequences, both byte orders), and its refusal of truncated samples."""

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.ros

floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)


def _classes():
    from mechanism_model_ros.transports.typegen import message_class
    return (message_class("sensor_msgs/msg/JointState"), message_class("std_msgs/msg/Header"),
            message_class("builtin_interfaces/msg/Time"))


def _fields(m):
    return (m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id, list(m.name),
            [repr(x) for x in m.position], [repr(x) for x in m.velocity], [repr(x) for x in m.effort])


def _to_big_endian(data: bytes, m) -> bytes:
    """The same message as big-endian CDR, written by hand (the cyclonedds package writes little-endian)."""
    out = bytearray(b"\x00\x00\x00\x00")

    def align(a):
        out.extend(b"\x00" * (-(len(out) - 4) % a))

    def string(s):
        align(4)
        b = s.encode() + b"\x00"
        out.extend(struct.pack(">I", len(b)) + b)
    out.extend(struct.pack(">iI", m.header.stamp.sec, m.header.stamp.nanosec))
    string(m.header.frame_id)
    align(4)
    out.extend(struct.pack(">I", len(m.name)))
    for n in m.name:
        string(n)
    for seq in (m.position, m.velocity, m.effort):
        align(4)
        out.extend(struct.pack(">I", len(seq)))
        if seq:
            align(8)
            out.extend(struct.pack(f">{len(seq)}d", *seq))
    return bytes(out)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(0, 2**32 - 1), names, st.lists(names, max_size=30),
       st.lists(floats, max_size=30), st.lists(floats, max_size=5), st.lists(floats, max_size=30))
def test_fast_reader_equals_the_generic_deserializer(sec, nsec, frame, joint_names, pos, vel, eff):
    from mechanism_model_ros.transports.joint_state_cdr import reader
    JS, H, T = _classes()
    m = JS(name=joint_names, position=pos, velocity=vel, effort=eff)
    m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id = sec, nsec, frame
    data = m.serialize(use_version_2=False)
    read = reader(JS, H, T)
    got = read(data)
    assert type(got) is JS
    assert _fields(got) == _fields(JS.deserialize(data))
    assert _fields(read(data)) == _fields(got)                     # the names cache gives the same
    assert _fields(read(_to_big_endian(data, m))) == _fields(got)
    assert got.serialize(use_version_2=False) == data               # a real message: it serializes back


def test_truncated_or_foreign_samples_are_refused():
    from mechanism_model_ros.transports.joint_state_cdr import reader
    JS, H, T = _classes()
    m = JS(name=["a", "b"], position=[1.0, 2.0])
    data = m.serialize(use_version_2=False)
    read = reader(JS, H, T)
    for bad in (data[:-3], data[:20], b"\x00\x07" + data[2:]):
        with pytest.raises((ValueError, struct.error)):
            read(bad)
    assert math.isclose(read(data).position[1], 2.0)


RCLPY_COMPARE = r"""
import math, random, sys
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from mechanism_model_ros.transports.joint_state_cdr import PlainJointState, plain_reader

rng = random.Random(5)
read = plain_reader()
alphabet = "abc_/.xyz" + "\u00e9\u4e2d\U0001f600"
special = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-310, 1.7e308]
def number():
    return rng.choice(special) if rng.random() < 0.2 else rng.uniform(-1e3, 1e3)
def fields(m):
    return (m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id, list(m.name),
            [repr(float(x)) for x in m.position], [repr(float(x)) for x in m.velocity],
            [repr(float(x)) for x in m.effort])
for k in range(300):
    m = JointState()
    m.header.stamp.sec, m.header.stamp.nanosec = rng.randrange(2**31), rng.randrange(10**9)
    m.header.frame_id = "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    n = rng.randrange(31)
    m.name = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12))) for _ in range(n)]
    m.position = [number() for _ in range(rng.choice([n, n, 0, rng.randrange(31)]))]
    m.velocity = [number() for _ in range(rng.choice([n, 0]))]
    m.effort = [number() for _ in range(rng.choice([n, 0]))]
    data = serialize_message(m)
    for _ in range(2):              # the second read takes the names from the reader's cache
        got = read(data)
        assert type(got) is PlainJointState
        assert fields(got) == fields(deserialize_message(data, JointState)), k
print("ok")
"""


@pytest.mark.rclpy
@pytest.mark.parametrize("distro", ["humble", "jazzy"])
def test_plain_reader_equals_rclpy_s_deserializer(distro):
    """What the rclpy transport's joint-state subscription delivers (the struct reader's plain objects) holds
    what rclpy's own deserializer gives, on messages rclpy serialized (unicode names, NaN and infinities,
    empty and mismatched sequences)."""
    from ros import ros_env
    ros_env.require(distro)
    from ros.dds_helpers import unique_domain_id
    p = ros_env.run_python(RCLPY_COMPARE, unique_domain_id(), distro, timeout=120, with_workspace=False)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr
