"""A fast reader of ``sensor_msgs/msg/JointState`` samples, shared by the Cyclone and rclpy transports (plain
Python: no cyclonedds, no rclpy).

The generic deserializer of the ``cyclonedds`` Python package walks the type description field by field: about
0.1-0.2 ms for a JointState of 28 joints, more than the state publisher's whole work on it, so at 1-2 kHz the
subscription thread spent most of its time decoding. This reads the same CDR (XCDR1, either byte order, as
any ROS 2 publisher writes it) with ``struct``: the header, the name strings (the decoded tuple is reused
while a publisher sends the same names, as controllers do) and the three float64 sequences. The result is an
instance of the transport's generated JointState class, equal to what the generic deserializer returns (a
test checks both on random messages); a sample this reader cannot parse raises ``ValueError`` and the caller
falls back to the generic deserializer.

The rclpy transport reads the joint-state subscription's serialized messages with it too (:func:`plain_reader`):
rclpy's ``deserialize_message`` builds a JointState through its checking setters, about 19 us for 28 joints
against 3 us here. Those messages are :class:`PlainJointState` objects: the same fields as attributes
(``header.stamp.sec``, ``name``, ``position`` ...; sequences as lists), read-only by convention.
"""

from __future__ import annotations

import struct

_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}
_TIME = {"<": struct.Struct("<iI"), ">": struct.Struct(">iI")}
#: encapsulation identifiers (the first two bytes): CDR big-endian / little-endian (XCDR1)
_BYTE_ORDER = {b"\x00\x00": ">", b"\x00\x01": "<"}
#: raw bytes of a name sequence -> its tuple of names (controllers send the same names every time)
_NAMES_CACHE: dict[bytes, list] = {}
_NAMES_CACHE_MAX = 64


def _string(data: bytes, off: int, end: int, u32) -> tuple[str, int]:
    (n,) = u32.unpack_from(data, off)
    off += 4
    if n == 0 or off + n > end or data[off + n - 1] != 0:
        raise ValueError("bad CDR string")
    return data[off:off + n - 1].decode("utf-8"), off + n


def _align(off: int, a: int) -> int:
    # alignment counts from the start of the payload, after the 4-byte encapsulation header
    return off + (-(off - 4) % a)


class PlainMessage:
    """A message's fields as plain attributes (what :func:`plain_reader` gives)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)


class PlainTime(PlainMessage):
    """``builtin_interfaces/msg/Time``: ``sec``, ``nanosec``."""


class PlainHeader(PlainMessage):
    """``std_msgs/msg/Header``: ``stamp``, ``frame_id``."""


class PlainJointState(PlainMessage):
    """``sensor_msgs/msg/JointState``: ``header``, ``name``, ``position``, ``velocity``, ``effort``."""


def plain_reader():
    """A reader of JointState samples (as :func:`reader`) giving :class:`PlainJointState` objects: for a transport
    whose own message classes are slow to fill (rclpy)."""
    return reader(PlainJointState, PlainHeader, PlainTime)


def reader(cls, header_cls, time_cls):
    """A function ``data -> JointState`` (an instance of ``cls``, with ``header_cls``/``time_cls`` inside)."""
    new = object.__new__
    last = [b"", None]          # the previous sample's name bytes and names: most samples repeat them

    def read(data: bytes):
        order = _BYTE_ORDER.get(bytes(data[:2]))
        if order is None:
            raise ValueError("not plain CDR")
        u32, end = _U32[order], len(data)
        sec, nsec = _TIME[order].unpack_from(data, 4)
        frame_id, off = _string(data, 12, end, u32)
        off = _align(off, 4)
        (count,) = u32.unpack_from(data, off)
        start = off
        off += 4
        if count > end:
            raise ValueError("bad name count")
        names = None
        if count and last[1] is not None and data.startswith(last[0], start):
            names, off = last[1], start + len(last[0])
        elif count:
            # the names' bytes end where the next sequence starts: find it by walking the lengths (cheap), then
            # reuse the decoded list when these bytes were seen before
            p = off
            for _ in range(count):
                p = _align(p, 4)
                (n,) = u32.unpack_from(data, p)
                p += 4 + n
                if p > end:
                    raise ValueError("bad CDR string")
            key = bytes(data[start:p])
            names = _NAMES_CACHE.get(key)
            if names is None:
                names, q = [], off
                for _ in range(count):
                    q = _align(q, 4)
                    s, q = _string(data, q, end, u32)
                    names.append(s)
                if len(_NAMES_CACHE) >= _NAMES_CACHE_MAX:
                    _NAMES_CACHE.clear()
                _NAMES_CACHE[key] = names
            last[0], last[1] = key, names
            off = p
        seqs = []
        for _ in range(3):
            off = _align(off, 4)
            (k,) = u32.unpack_from(data, off)
            off += 4
            if k:
                off = _align(off, 8)
                if off + 8 * k > end:
                    raise ValueError("bad float64 sequence")
                seqs.append(list(struct.unpack_from(f"{order}{k}d", data, off)))
                off += 8 * k
            else:
                seqs.append([])
        stamp = new(time_cls)
        stamp.__dict__.update(sec=sec, nanosec=nsec)
        header = new(header_cls)
        header.__dict__.update(stamp=stamp, frame_id=frame_id)
        msg = new(cls)
        msg.__dict__.update(header=header, name=list(names) if names else [], position=seqs[0], velocity=seqs[1],
                            effort=seqs[2])
        return msg
    return read


__all__ = ["PlainHeader", "PlainJointState", "PlainMessage", "PlainTime", "plain_reader", "reader"]
