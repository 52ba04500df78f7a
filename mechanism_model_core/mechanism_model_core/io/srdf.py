"""SRDF files (MoveIt's semantic robot description): the collision matrix they give. Only
``disable_collisions`` and ``enable_collisions`` are read (groups, end effectors and virtual joints are
MoveIt's planning concepts, not this package's). A format, so in ``io``, which imports ``collision`` one way
(until session 7 ``read_srdf`` was in ``collision.matrix``); :meth:`CollisionMatrix.to_srdf
<mechanism_model_core.collision.CollisionMatrix.to_srdf>` writes what this reads."""

from __future__ import annotations

import os

from ..collision.matrix import CollisionMatrix, _key, default_disabled
from ..errors import ModelFileError
from .safe_xml import parse_file


def read_srdf(path, mech, default: bool = True) -> CollisionMatrix:
    """The collision matrix of ``mech`` with the SRDF file's ``disable_collisions`` (and
    ``enable_collisions``) applied on top of the default rule (``default=False``: on top of nothing).
    Unknown link names are a :class:`ModelFileError` naming the file and line."""
    path = os.fspath(path)
    root = parse_file(path)
    if root.tag != "robot":
        raise ModelFileError(f"root element is <{root.tag}>, expected <robot> (SRDF)", path, root.sourceline)
    disabled = default_disabled(mech) if default else {}
    known = set(mech.body_names)
    for el in root:
        if el.tag not in ("disable_collisions", "enable_collisions"):
            continue
        a, b = el.get("link1"), el.get("link2")
        for n in (a, b):
            if not n:
                raise ModelFileError(f"<{el.tag}> needs link1 and link2", path, el.sourceline)
            if n not in known:
                raise ModelFileError(f"<{el.tag}>: {n!r} is not a body of {mech.name!r}", path, el.sourceline)
        if el.tag == "disable_collisions":
            disabled[_key(a, b)] = el.get("reason", "User")
        else:
            disabled.pop(_key(a, b), None)
    return CollisionMatrix(mech.body_names, disabled)
