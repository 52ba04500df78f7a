"""Cyclone DDS message classes generated at run time from ROS message definitions.

:func:`message_class` turns a definition held by a ``rosbags`` type store (see
:mod:`mechanism_model_ros.interfaces_store`) into a ``cyclonedds.idl.IdlStruct`` dataclass whose DDS
type name is the one rosidl gives it (``geometry_msgs::msg::dds_::Pose_``), so its samples are plain
CDR (XCDR1) byte-for-byte what a ROS 2 node puts on the wire. Nothing here is written per message type.

Every field has a default (zeros, empty strings, empty sequences, default nested messages), so
``Cls()`` and ``Cls(name=[...])`` work as ROS message constructors do. Constants of the definition
become class attributes (``ErrorCodes.SUCCESS``).

For services, :func:`service_wire_class` builds the request or reply type rmw_cyclonedds puts on the
wire: the rosidl type with the 16-byte request header (client id, sequence number) in front of the
message fields.
"""

from __future__ import annotations

import dataclasses
import functools
import threading

from cyclonedds.idl import IdlMeta, IdlStruct
from cyclonedds.idl import types as t

from ..interfaces_store import typestore

#: Names of the two header fields of a service request/reply (rmw_cyclonedds' cdds_request_header_t).
HEADER_GUID = "rmw_client_guid"
HEADER_SEQ = "rmw_sequence_number"

_BASE = {
    "bool": (bool, False),
    "byte": (t.uint8, 0),
    "char": (t.uint8, 0),
    "int8": (t.int8, 0),
    "uint8": (t.uint8, 0),
    "int16": (t.int16, 0),
    "uint16": (t.uint16, 0),
    "int32": (t.int32, 0),
    "uint32": (t.uint32, 0),
    "int64": (t.int64, 0),
    "uint64": (t.uint64, 0),
    "float32": (t.float32, 0.0),
    "float64": (t.float64, 0.0),
    "string": (str, ""),
}

#: Default values declared in ROS 2 message definitions that rosbags' type store does not carry
#: (``geometry_msgs/msg/Quaternion`` declares ``float64 w 1``: a default quaternion is the identity).
FIELD_DEFAULTS = {("geometry_msgs/msg/Quaternion", "w"): 1.0}

_lock = threading.RLock()


def dds_type_name(ros_name: str) -> str:
    """``geometry_msgs/msg/Pose`` -> ``geometry_msgs::msg::dds_::Pose_`` (rosidl's DDS type name);
    ``pkg/srv/Name_Request`` -> ``pkg::srv::dds_::Name_Request_``."""
    pkg, kind, base = ros_name.split("/")
    return f"{pkg}::{kind}::dds_::{base}_"


def _field_type(spec, store):
    """(annotation, default factory) for one rosbags field type."""
    from rosbags.typesys.base import Nodetype

    kind, detail = spec
    if kind == Nodetype.BASE:
        name, bound = detail
        if name not in _BASE:
            raise TypeError(f"unsupported ROS base type {name!r}")
        ann, default = _BASE[name]
        if name == "string" and bound:
            ann = t.bounded_str[bound]
        return ann, (lambda d=default: d)
    if kind == Nodetype.NAME:
        cls = message_class(detail, store)
        return cls, cls
    if kind == Nodetype.ARRAY:
        (sub, n) = detail
        ann, factory = _field_type(sub, store)
        return t.array[ann, n], (lambda f=factory, n=n: [f() for _ in range(n)])
    if kind == Nodetype.SEQUENCE:
        (sub, bound) = detail
        ann, _ = _field_type(sub, store)
        return (t.sequence[ann, bound] if bound else t.sequence[ann]), list
    raise TypeError(f"unsupported field kind {kind!r}")


def _build(class_name: str, typename: str, fields, consts):
    namespace = IdlMeta.__prepare__(class_name, (IdlStruct,), typename=typename)
    annotations = namespace["__annotations__"]
    for fname, ann, factory in fields:
        annotations[fname] = ann
        namespace[fname] = dataclasses.field(default_factory=factory)
    cls = IdlMeta(class_name, (IdlStruct,), namespace)
    cls = dataclasses.dataclass(cls)
    for cname, _ctype, value in consts:
        setattr(cls, cname, value)
    return cls


def _cache_key(store):
    return id(store)


_classes: dict = {}


def message_class(ros_name: str, store=None):
    """The IdlStruct class of ROS message ``ros_name`` (``sensor_msgs/msg/JointState``), cached."""
    store = store or typestore()
    key = (_cache_key(store), ros_name, False)
    with _lock:
        cls = _classes.get(key)
        if cls is not None:
            return cls
        try:
            consts, fielddefs = store.fielddefs[ros_name]
        except KeyError:
            raise KeyError(f"no ROS message definition for {ros_name!r}") from None
        fields = []
        for fname, ftype in fielddefs:
            ann, factory = _field_type(ftype, store)
            if (ros_name, fname) in FIELD_DEFAULTS:
                factory = (lambda v=FIELD_DEFAULTS[(ros_name, fname)]: v)
            fields.append((fname, ann, factory))
        cls = _build(ros_name.split("/")[-1], dds_type_name(ros_name), fields, consts)
        cls.__ros_type__ = ros_name
        _classes[key] = cls
        return cls


def service_wire_class(ros_name: str, store=None):
    """Request or reply class of a service as rmw_cyclonedds sends it (``pkg/srv/Name_Request``): the
    header ``rmw_client_guid`` (uint64) and ``rmw_sequence_number`` (int64) and then the message fields,
    under the rosidl DDS type name. 16 header bytes keep the body's CDR alignment unchanged."""
    store = store or typestore()
    key = (_cache_key(store), ros_name, True)
    with _lock:
        cls = _classes.get(key)
        if cls is not None:
            return cls
        consts, fielddefs = store.fielddefs[ros_name]
        fields = [(HEADER_GUID, t.uint64, int), (HEADER_SEQ, t.int64, int)]
        fields += [(fname, *_field_type(ftype, store)) for fname, ftype in fielddefs]
        cls = _build(ros_name.split("/")[-1], dds_type_name(ros_name), fields, consts)
        cls.__ros_type__ = ros_name
        cls.__service_wire__ = True
        _classes[key] = cls
        return cls


@functools.lru_cache(maxsize=None)
def ros_fields(ros_name: str, store=None) -> tuple[str, ...]:
    """Field names of a ROS message, in definition order."""
    store = store or typestore()
    return tuple(f for f, _ in store.fielddefs[ros_name][1])
