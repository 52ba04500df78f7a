"""Re-publishing a message whose strings and sequence lengths never change (a TF message for a fixed set of
frames) by patching numbers into its serialized bytes: shared by the Cyclone and rclpy transports
(``Publisher.numeric_template``). Pure numpy; the transport supplies how to serialize and how to write."""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np


class NumericTemplate:
    """The message is serialized once (CDR with its 4-byte encapsulation header, by ``serialize``) with a
    unique sentinel in every listed numeric field; the sentinels' byte offsets are found, and each
    publication only writes the new numbers into a copy of those bytes and hands them to ``write``. The
    bytes are exactly what serializing the updated message would give (checked at construction).

    ``groups``: ``{name: (dtype, [(object, attribute), ...])}`` with dtype ``"f8"``, ``"i4"`` or ``"u4"``;
    :meth:`publish` takes ``{name: array}`` in the same order. ``pad4``: pad the bytes to a multiple of 4
    (what Cyclone DDS's Python writer expects). Raises ValueError when a sentinel is not unique or the
    template does not reproduce the serialization (the caller then uses the ordinary path).
    """

    _SIZES = {"f8": 8, "i4": 4, "u4": 4}

    def __init__(self, msg, groups: dict, serialize: Callable[[object], bytes], write: Callable[[bytes], None],
                 pad4: bool = False):
        self.write = write
        self.groups = {}
        counter = itertools.count(1)
        saved = []
        for name, (dtype, refs) in groups.items():
            sentinels = []
            for obj, attr in refs:
                k = next(counter)
                saved.append((obj, attr, getattr(obj, attr)))
                if dtype == "f8":
                    v = float(np.frombuffer(np.uint64(0x7FD0_0000_0000_0000 + 7919 * k).tobytes(), "<f8")[0])
                else:
                    v = 0x5A00_0000 + 13 * k
                setattr(obj, attr, v)
                sentinels.append(v)
            self.groups[name] = (dtype, refs, sentinels)
        try:
            blob = serialize(msg)
        finally:
            for obj, attr, v in saved:
                setattr(obj, attr, v)
        self.little = blob[1] & 1 == 1
        end = "<" if self.little else ">"
        size = (len(blob) + 3) & ~3 if pad4 else len(blob)
        self.template = np.frombuffer(blob.ljust(size, b"\0"), np.uint8).copy()
        self.index = {}
        for name, (dtype, refs, sentinels) in self.groups.items():
            n = self._SIZES[dtype]
            offsets = []
            for v in sentinels:
                pattern = np.array([v], dtype=end + dtype).tobytes()
                at = blob.find(pattern)
                if at < 0 or blob.find(pattern, at + 1) >= 0:
                    raise ValueError(f"field group {name!r}: sentinel not unique in the serialized message")
                offsets.append(at)
            self.index[name] = (np.dtype(end + dtype), np.asarray(offsets)[:, None] + np.arange(n)[None, :])
        # the template with the message's current numbers must equal the ordinary serialization
        current = {name: np.array([getattr(o, a) for o, a in refs]) for name, (_, refs, _) in
                   self.groups.items()}
        if self.bytes_for(current) != serialize(msg).ljust(len(self.template), b"\0"):
            raise ValueError("template does not reproduce the message's serialization")

    def bytes_for(self, values: dict) -> bytes:
        buf = self.template.copy()
        for name, (dt, idx) in self.index.items():
            buf[idx] = np.ascontiguousarray(values[name], dtype=dt).view(np.uint8).reshape(idx.shape)
        return buf.tobytes()

    def publish(self, values: dict) -> None:
        self.write(self.bytes_for(values))


__all__ = ["NumericTemplate"]
