"""Caps on what one model file may make the readers build (hostile or runaway input).

A few kilobytes of CLARAty XML whose files each ``<Attach>`` the next one eight times describe millions of
bodies; a generated URDF may hold a hundred thousand links. The readers count as they go and stop at the
first element that crosses a cap, with a :class:`~mechanism_model_core.errors.ModelFileError` naming that
element's file and line, before the work grows.

The caps are generous for real robots and multi-robot worlds, and adjustable:

* per call: ``load_model(path, limits=ReadLimits(max_bodies=50_000))``;
* for a block of code: ``with limits.using(ReadLimits(max_bodies=50_000)): ...``;
* for the process: ``mechanism_model_core.io.limits.DEFAULT = ReadLimits(...)``.

File size is capped separately (:data:`mechanism_model_core.io.safe_xml.MAX_BYTES`).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

from ..errors import UnsafeModelFileError


@dataclass(frozen=True)
class ReadLimits:
    """What one top-level read may build.

    ``max_bodies``: bodies the read may create: every body a file defines, and every body an attached
    file brings in where it is attached (so a file attached inside another counts once for itself and
    again where it is attached; the ground is not counted). It bounds the work, not only the result:
    fan-out through nested attachments is stopped at the attachment that crosses it.
    ``max_attachments``: ``<Attach>`` elements followed in total, at every depth;
    ``max_include_depth``: how deep attached files may attach further files (a cycle stops here).
    """

    max_bodies: int = 5_000
    max_attachments: int = 1_000
    max_include_depth: int = 16


class ReadLimitExceeded(UnsafeModelFileError):
    """A read crossed one of the caps (the error names the file and line of the element that did)."""


#: The caps used when a read is given none.
DEFAULT = ReadLimits()

_local = threading.local()


def current() -> ReadLimits:
    """The caps in force: the innermost :func:`using` block of this thread, else :data:`DEFAULT`."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else DEFAULT


@contextlib.contextmanager
def using(limits: ReadLimits):
    """Use ``limits`` for every read in this thread inside the ``with`` block."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(limits)
    try:
        yield limits
    finally:
        stack.pop()


class Budget:
    """The counts of one top-level read, shared by the files it attaches."""

    def __init__(self, limits: ReadLimits | None = None):
        self.limits = limits or current()
        self.bodies = 0
        self.attachments = 0

    def add_bodies(self, n: int = 1) -> str | None:
        """Count ``n`` more bodies; the problem text when that crosses the cap, else None."""
        self.bodies += n
        if self.bodies > self.limits.max_bodies:
            return (f"the model has more than {self.limits.max_bodies} bodies (cap: "
                    f"ReadLimits.max_bodies, see mechanism_model_core.io.limits)")
        return None

    def add_attachment(self) -> str | None:
        self.attachments += 1
        if self.attachments > self.limits.max_attachments:
            return (f"the model follows more than {self.limits.max_attachments} attachments (cap: "
                    f"ReadLimits.max_attachments, see mechanism_model_core.io.limits)")
        return None

    def depth_problem(self, depth: int) -> str | None:
        if depth >= self.limits.max_include_depth:
            return (f"attachments nested more than {self.limits.max_include_depth} deep (a cycle?) (cap: "
                    f"ReadLimits.max_include_depth)")
        return None
