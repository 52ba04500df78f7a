"""Re-publishing a message whose strings and sequence lengths never change (a TF message for a fixed set of
frames) by patching numbers into its serialized bytes: shared by the Cyclone and rclpy transports
(``Publisher.numeric_template``). Pure numpy; the transport supplies how to serialize and how to write."""

from __future__ import annotations

import itertools
import threading
from typing import Callable

import numpy as np


class NumericTemplate:
    """The message is serialized once (CDR with its 4-byte encapsulation header, by ``serialize``) with a
    unique sentinel in every listed numeric field; the sentinels' byte offsets are found, and each
    publication only writes the new numbers into a copy of those bytes and hands them to ``write``. The
    bytes are exactly what serializing the updated message would give (checked at construction).

    ``groups``: ``{name: (dtype, [(object, attribute), ...])}`` with dtype ``"f8"``, ``"i4"`` or ``"u4"``;
    :meth:`publish` takes ``{name: array}`` in the same order (or a scalar for a group whose fields all take one
    value, such as the stamps of a TF message). ``pad4``: pad the bytes to a multiple of 4
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
        # one buffer, patched in place under a lock and copied out as bytes: padded to a multiple of 8 so that
        # every dtype can view it whole
        self.size = size
        self.buffer = np.frombuffer(blob.ljust((size + 7) & ~7, b"\0"), np.uint8).copy()
        self._out = self.buffer[:size]
        self._lock = threading.Lock()
        #: name -> (view, indices): when every field of the group is aligned to its size (CDR aligns them,
        #: counting from the payload after the 4-byte encapsulation header), the buffer viewed as the group's
        #: dtype and the fields' element indices in it; else the bytes and an (n, size) array of byte indices
        self.index = {}
        for name, (dtype, refs, sentinels) in self.groups.items():
            n = self._SIZES[dtype]
            dt = np.dtype(end + dtype)
            offsets = []
            for v in sentinels:
                pattern = np.array([v], dtype=dt).tobytes()
                at = blob.find(pattern)
                if at < 0 or blob.find(pattern, at + 1) >= 0:
                    raise ValueError(f"field group {name!r}: sentinel not unique in the serialized message")
                offsets.append(at)
            offsets = np.asarray(offsets)
            base = 4 % n
            if np.all((offsets - base) % n == 0):
                view = self.buffer[base:len(self.buffer) - (len(self.buffer) - base) % n].view(dt)
                self.index[name] = (view, (offsets - base) // n)
            else:
                self.index[name] = (None, offsets[:, None] + np.arange(n)[None, :])
        self.dtypes = {name: np.dtype(end + dtype) for name, (dtype, _, _) in self.groups.items()}
        # the template with the message's current numbers must equal the ordinary serialization
        current = {name: np.array([getattr(o, a) for o, a in refs]) for name, (_, refs, _) in
                   self.groups.items()}
        if self.bytes_for(current) != serialize(msg).ljust(size, b"\0"):
            raise ValueError("template does not reproduce the message's serialization")

    def bytes_for(self, values: dict) -> bytes:
        """The message's bytes with ``values`` (``{name: array}``, any shape with the group's number of
        elements, or a scalar for a whole group) patched in."""
        with self._lock:
            for name, (view, idx) in self.index.items():
                if view is not None:
                    view[idx] = np.ravel(values[name])
                else:
                    v = np.broadcast_to(np.ravel(np.asarray(values[name], dtype=self.dtypes[name])), idx.shape[:1])
                    self.buffer[idx] = np.ascontiguousarray(v).view(np.uint8).reshape(idx.shape)
            return self._out.tobytes()

    def publish(self, values: dict) -> None:
        self.write(self.bytes_for(values))


__all__ = ["NumericTemplate"]
