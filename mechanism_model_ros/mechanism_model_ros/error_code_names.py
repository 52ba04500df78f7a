"""The values of ``mechanism_model_msgs/msg/ErrorCodes`` (MoveIt's), read from the ``.msg`` file shipped with
this package (the same file rosidl generates the ROS type from), so nothing is copied by hand:
``ErrorCodes.NO_IK_SOLUTION`` is whatever the definition says. Plain Python: the clients (``mechanism-model-call``)
name a reply's code without loading the model code that :mod:`.error_codes` maps exceptions from."""

from __future__ import annotations

import os
import re

from .interfaces_store import INTERFACES_DIR

_CONSTANT = re.compile(r"^\s*int32\s+([A-Z][A-Z0-9_]*)\s*=\s*(-?\d+)\s*(#.*)?$")


def read_constants(path: str) -> dict[str, int]:
    """``{NAME: value}`` of the ``int32 NAME=value`` constants of a ``.msg`` file."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            m = _CONSTANT.match(line)
            if m:
                out[m.group(1)] = int(m.group(2))
    return out


class _Codes:
    """The constants of ``ErrorCodes.msg`` as attributes (``ErrorCodes.SUCCESS``) and :meth:`name`."""

    def __init__(self, constants: dict[str, int]):
        self._by_name = dict(constants)
        self._by_value = {v: k for k, v in constants.items()}
        for k, v in constants.items():
            setattr(self, k, v)

    def name(self, value: int) -> str:
        """``-31`` -> ``"NO_IK_SOLUTION"`` (``"UNKNOWN(<value>)"`` for a value the definition lacks)."""
        return self._by_value.get(int(value), f"UNKNOWN({int(value)})")

    def items(self):
        return self._by_name.items()

    def __contains__(self, name) -> bool:
        return name in self._by_name


ErrorCodes = _Codes(read_constants(os.path.join(INTERFACES_DIR, "msg", "ErrorCodes.msg")))


__all__ = ["ErrorCodes", "read_constants"]
