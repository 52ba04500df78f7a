"""Sequence limits checked in a serialized request, before it is decoded (the Cyclone transport).

A service handler can refuse a request with 100,000 shapes in microseconds, but only once the request is a
Python object: the ``cyclonedds`` package decodes it field by field, one object per element, about 4 s of the
dispatcher thread for 100,000 boxes with their poses (every subscription and service of the process waits
meanwhile). :class:`CdrLimits` reads the same plain CDR (XCDR1, either byte order, as every ROS 2 node writes
it) without building anything: it follows the message definition (the rosbags type store the generated
classes come from), reads each sequence's length, skips sequences of fixed-size elements (poses, points,
triangles, numbers) in one step and walks the others element by element, and stops at the first sequence
that takes a :class:`~mechanism_model_ros.transports.base.SequenceLimit` over its bound -- so a refusal costs at most the elements counted
up to the limit, and an accepted request one walk (tens of microseconds for ordinary ones).

A sequence longer than the bytes that are left, or a length that runs past the end, is refused as malformed
(the decoder would refuse it too, but only after its own walk). An encoding other than plain CDR (XCDR2) is
left to the decoder (:meth:`CdrLimits.check` returns None).
"""

from __future__ import annotations

import struct

from rosbags.typesys.base import Nodetype

from ...interfaces_store import typestore
from ..base import SequenceLimit

#: size (= CDR alignment) of each primitive type
_PRIMITIVE = {"bool": 1, "byte": 1, "char": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4,
              "uint32": 4, "int64": 8, "uint64": 8, "float32": 4, "float64": 8}
#: encapsulation identifiers (the first two bytes) of plain CDR: big-endian, little-endian
_BYTE_ORDER = {b"\x00\x00": ">", b"\x00\x01": "<"}
_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}


class _Over(Exception):
    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


def _fixed_layout(spec, store) -> tuple[int, int] | None:
    """``(size, alignment)`` of a field type whose serialized size never varies, when its elements in a
    sequence all have one layout (size a multiple of the alignment); None otherwise."""
    kind, detail = spec
    if kind == Nodetype.BASE:
        name, _ = detail
        size = _PRIMITIVE.get(name)
        return None if size is None else (size, size)
    if kind == Nodetype.ARRAY:
        sub, n = detail
        inner = _fixed_layout(sub, store)
        return None if inner is None else (inner[0] * n, inner[1])
    if kind == Nodetype.NAME:
        off, align = 0, 1
        for _, fspec in store.fielddefs[detail][1]:
            inner = _fixed_layout(fspec, store)
            if inner is None:
                return None
            size, a = inner
            off += -off % a
            off += size
            align = max(align, a)
        if off % align:
            return None
        return off, align
    return None


class CdrLimits:
    """``check(data)`` for serialized ``ros_type`` messages (after ``header`` bytes of other fields, as the
    16-byte request header of rmw_cyclonedds' service requests): the text of the first :class:`SequenceLimit`
    exceeded, or of the malformation found, else None. A limit's ``{where}`` names the element of the
    top-level sequence being read (``world_objects[3] ('rock')``, its ``id`` or ``name`` string field when it
    has one), or the field itself for a limit on a top-level sequence."""

    def __init__(self, ros_type: str, limits, header: int = 0, store=None):
        self.store = store or typestore()
        self.limits = tuple(limits)
        for lim in self.limits:
            if not isinstance(lim, SequenceLimit):
                raise TypeError(f"not a SequenceLimit: {lim!r}")
        self.header = int(header)
        self.ros_type = ros_type
        self._plan = self._compile(ros_type, ())

    # ------------------------------------------------------------------ compiling the definition
    def _tracked(self, path: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(i for i, lim in enumerate(self.limits) if path in lim.paths)

    def _compile(self, ros_type: str, path: tuple[str, ...]) -> list:
        """One op per field: ``(op, name, ...)`` (see :meth:`_walk`)."""
        ops = []
        for name, spec in self.store.fielddefs[ros_type][1]:
            ops.append(self._op(name, spec, path + (name,)))
        return ops

    def _op(self, name: str, spec, path: tuple[str, ...]):
        kind, detail = spec
        fixed = _fixed_layout(spec, self.store)
        if kind != Nodetype.SEQUENCE:
            if fixed is not None:
                return ("skip", name, fixed[0], fixed[1])
            if kind == Nodetype.BASE:                       # string, wstring
                return ("string", name)
            if kind == Nodetype.NAME:
                return ("msg", name, self._compile(detail, path))
            sub, n = detail                                 # array of variable elements
            return ("array", name, n, self._op(name, sub, path))
        sub, _bound = detail
        tracked = self._tracked(path)
        inner = _fixed_layout(sub, self.store)
        if inner is not None:
            return ("seq_fixed", name, inner[0], inner[1], tracked, path)
        element = self._op(name, sub, path)
        return ("seq", name, element, tracked, path, sub[0] == Nodetype.NAME and self._has_label(sub[1]))

    def _has_label(self, ros_type: str) -> str | None:
        for label in ("id", "name"):
            for fname, (kind, detail) in self.store.fielddefs[ros_type][1]:
                if fname == label and kind == Nodetype.BASE and detail[0] == "string":
                    return label
        return None

    # ------------------------------------------------------------------ walking the bytes
    def check(self, data) -> str | None:
        """See the class doc. ``data``: the sample as it came (encapsulation header first)."""
        return self.scan(data)[0]

    def scan(self, data) -> tuple[str | None, int | None]:
        """``(check's text, offset where the walk ended)``: the offset is where the message's last field
        ends when no limit stopped the walk (the serialized length, up to CDR's final padding), else None;
        ``(None, None)`` for an encoding other than plain CDR."""
        order = _BYTE_ORDER.get(bytes(data[:2]))
        if order is None:
            return None, None
        state = _State(data, order, len(self.limits))
        state.off = 4 + self.header
        try:
            self._walk(self._plan, state, 0)
        except _Over as over:
            return over.text, None
        except (struct.error, IndexError):
            return f"the serialized {self.ros_type} is malformed (it ends inside a field)", None
        return None, state.off

    def _walk(self, ops, st, depth: int) -> None:
        for op in ops:
            self._field(op, st, depth)

    def _field(self, op, st, depth: int) -> None:
        kind = op[0]
        if kind == "skip":
            st.align(op[3])
            st.advance(op[2])
        elif kind == "string":
            st.align(4)
            n = st.u32()
            if depth == 1 and op[1] == st.label_field:
                st.label = bytes(st.data[st.off:st.off + max(0, n - 1)]).decode("utf-8", "replace")[:64]
            st.advance(n)
        elif kind == "msg":
            self._walk(op[2], st, depth + 1 if depth else 0)
        elif kind == "array":
            for _ in range(op[2]):
                self._field(op[3], st, depth)
        elif kind == "seq_fixed":
            _, name, size, align, tracked, path = op
            st.align(4)
            n = st.u32()
            self._count(tracked, n, path, st, depth)
            if n:
                st.align(align)
                st.advance(n * size)
        else:
            _, name, element, tracked, path, label = op
            st.align(4)
            n = st.u32()
            self._count(tracked, n, path, st, depth)
            top = len(path) == 1 and element[0] == "msg"      # an element of a field of the request itself
            for k in range(n):
                if top:
                    st.top, st.label, st.label_field = (path[0], k), None, label
                if element[0] == "msg":
                    self._walk(element[2], st, 1 if top else depth + 1)
                else:
                    self._field(element, st, depth)
            if top:
                st.top = st.label = st.label_field = None

    def _count(self, tracked, n: int, path, st, depth: int) -> None:
        if n > st.end - st.off:             # every element takes at least one byte
            raise _Over(f"{self._where(path, st, depth)}: {n} elements in a sequence longer than the message "
                        f"(malformed)")
        for i in tracked:
            st.counts[i] += n
            lim = self.limits[i]
            if st.counts[i] > lim.most:
                raise _Over(lim.message.format(where=self._where(path, st, depth), count=st.counts[i],
                                               most=lim.most))

    @staticmethod
    def _where(path, st, depth: int) -> str:
        if depth == 0 or st.top is None:
            return ".".join(path)
        field, k = st.top
        return f"{field}[{k}]" + (f" ({st.label!r})" if st.label is not None else "")


class _State:
    __slots__ = ("data", "off", "end", "u32s", "counts", "top", "label", "label_field")

    def __init__(self, data, order: str, n_limits: int):
        self.data = data
        self.off = 4
        self.end = len(data)
        self.u32s = _U32[order]
        self.counts = [0] * n_limits
        self.top = self.label = self.label_field = None

    def align(self, a: int) -> None:
        self.off += -(self.off - 4) % a

    def advance(self, n: int) -> None:
        self.off += n
        if self.off > self.end:
            raise IndexError("past the end")

    def u32(self) -> int:
        (n,) = self.u32s.unpack_from(self.data, self.off)
        self.off += 4
        return n
