"""Sequence limits read from a serialized request before it is decoded (transports/cyclone/cdr_limits.py, issue 19
item 10): on random CheckStateValidity requests serialized by the cyclonedds package in both byte orders, the
walk ends exactly where the serializer's message ends, and it refuses exactly the requests the handler's rule
(counted on the Python objects) refuses, naming the same object; truncated and lying samples are refused as
malformed. Timing is in BENCHMARKS.md, never asserted here."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ros.big_requests import boxes_request

pytestmark = pytest.mark.ros

REQUEST = "mechanism_model_msgs/srv/CheckStateValidity_Request"
MOST_OBJECTS, MOST_SHAPES, MOST_TRIANGLES = 3, 7, 6
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=10)
small = st.floats(-1e3, 1e3, allow_nan=False)


def _classes():
    from mechanism_model_ros.transports.typegen import message_class, service_wire_class
    names = ("mechanism_model_msgs/msg/CollisionObject", "shape_msgs/msg/SolidPrimitive", "geometry_msgs/msg/Pose",
             "shape_msgs/msg/Mesh", "shape_msgs/msg/MeshTriangle", "geometry_msgs/msg/Point", "shape_msgs/msg/Plane",
             "geometry_msgs/msg/Point32")
    return (service_wire_class(REQUEST), *(message_class(n) for n in names))


def _limits():
    from mechanism_model_ros.state_validity import OBJECTS_LIMIT, SHAPES_LIMIT, TRIANGLES_LIMIT
    from mechanism_model_ros.transports.base import SequenceLimit
    return [SequenceLimit(lim.paths, most, lim.message) for lim, most in
            ((OBJECTS_LIMIT, MOST_OBJECTS), (SHAPES_LIMIT, MOST_SHAPES), (TRIANGLES_LIMIT, MOST_TRIANGLES))]


def _checker():
    from mechanism_model_ros.transports.cyclone.cdr_limits import CdrLimits
    return CdrLimits(REQUEST, _limits(), header=16)


obj = st.fixed_dictionaries({
    "id": text,
    "primitives": st.lists(st.tuples(st.integers(0, 5), st.lists(small, max_size=3),
                                     st.lists(st.tuples(small, small, small), max_size=2)), max_size=4),
    "poses": st.integers(0, 3),
    "meshes": st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), max_size=2),
    "planes": st.integers(0, 2),
    "operation": st.integers(0, 1),
})


def _build(names, group, objects):
    Req, CO, SP, Pose, Mesh, Tri, Point, Plane, P32 = _classes()
    r = Req()
    r.rmw_client_guid, r.rmw_sequence_number = 0x1122334455667788, 42
    r.robot_state.name = list(names)
    r.robot_state.position = [0.5] * len(names)
    r.group_name = group
    r.margin = 0.01
    r.world_objects = []
    for o in objects:
        c = CO()
        c.id = o["id"]
        c.header.frame_id = o["id"][::-1]
        c.primitives = []
        for kind, dims, poly in o["primitives"]:
            p = SP(type=kind, dimensions=dims)
            p.polygon.points = [P32(x=x, y=y, z=z) for x, y, z in poly]
            c.primitives.append(p)
        c.primitive_poses = [Pose() for _ in range(o["poses"])]
        c.meshes = [Mesh(triangles=[Tri(vertex_indices=[0, 1, 2]) for _ in range(t)],
                         vertices=[Point(x=1.0) for _ in range(v)]) for t, v in o["meshes"]]
        c.planes = [Plane(coef=[0.0, 0.0, 1.0, 0.0]) for _ in range(o["planes"])]
        c.operation = o["operation"]
        r.world_objects.append(c)
    return r


def _handlers_verdict(r):
    """None, or the index of the object the handler's rule names (-1: too many objects)."""
    if len(r.world_objects) > MOST_OBJECTS:
        return -1
    shapes = triangles = 0
    for k, o in enumerate(r.world_objects):
        shapes += len(o.primitives) + len(o.meshes) + len(o.planes)
        triangles += sum(len(m.triangles) for m in o.meshes)
        if shapes > MOST_SHAPES or triangles > MOST_TRIANGLES:
            return k
    return None


@settings(max_examples=120, deadline=None)
@given(st.lists(text, max_size=4), text, st.lists(obj, max_size=5), st.booleans())
def test_the_walk_ends_with_the_message_and_refuses_what_the_handler_refuses(names, group, objects, big_endian):
    from cyclonedds.idl._support import Endianness
    r = _build(names, group, objects)
    data = r.serialize(use_version_2=False, endianness=Endianness.Big if big_endian else Endianness.Little)
    assert data[:2] == (b"\x00\x00" if big_endian else b"\x00\x01")
    got, end = _checker().scan(data)
    want = _handlers_verdict(r)
    if want is None:
        assert got is None, got
        assert end is not None and 0 <= len(data) - end < 8, (end, len(data))      # CDR pads the end
        back = _classes()[0].deserialize(data)          # the bytes are one whole, valid message
        assert [o.id for o in back.world_objects] == [o["id"] for o in objects]
    elif want == -1:
        assert got == f"world_objects: {len(objects)} objects, more than the limit of {MOST_OBJECTS}"
    else:
        assert got is not None and got.startswith(f"world_objects[{want}] ({objects[want]['id'][:64]!r}): more than ")


def test_a_truncated_or_lying_request_is_malformed():
    r = _build(["a"], "arm", [{"id": "rock", "primitives": [(1, [0.1, 0.1, 0.1], [])], "poses": 1, "meshes": [],
                                "planes": 0, "operation": 0}])
    data = r.serialize(use_version_2=False)
    check = _checker().check
    assert check(data) is None
    for cut in (len(data) // 3, len(data) // 2, len(data) - 9):
        assert "malformed" in check(data[:cut]), cut
    # the robot_state name count claims 2**31 names: longer than the message
    lying = bytearray(data)
    lying[36:40] = (2**31).to_bytes(4, "little")     # after the header, the stamp and frame_id "" (4 + 1 + pad)
    text_ = check(bytes(lying))
    assert text_ is not None and "malformed" in text_, text_


def test_a_hundred_thousand_boxes_are_refused_at_the_first_sequence_length():
    from mechanism_model_ros.state_validity import REQUEST_LIMITS
    from mechanism_model_ros.transports.cyclone.cdr_limits import CdrLimits
    data = boxes_request(guid=7, seq=3)
    assert CdrLimits(REQUEST, (), header=16).scan(data)[1] in range(len(data) - 7, len(data) + 1)   # well-formed
    assert len(data) > 9_000_000
    got = CdrLimits(REQUEST, REQUEST_LIMITS, header=16).check(data)
    assert got == ("world_objects[0] ('sand'): more than 1000 shapes (primitives, meshes and planes) in the "
                   "request's objects, the limit of one request")
