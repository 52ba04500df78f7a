"""Parameter values as the nodes use them, on every transport: :func:`coerce_parameter` (a value in its
default's type), :func:`float_from_text` (YAML 1.2 floats that PyYAML leaves text) and :func:`parse_override`
(``name:=value`` from the command line). Plain Python and PyYAML: the transports import it, so starting a
client (``mechanism-model-call``, ``-echo``) loads no model code. Parameter *files* are :mod:`.params`'s."""

from __future__ import annotations

import math
import re

import yaml


#: a float written as YAML text that PyYAML (YAML 1.1) leaves a string but the YAML 1.2 core schema and rcl's
#: parameter parser read as a float: an exponent without a dot or without a sign (``1e9``, ``1E-3``,
#: ``2.5e3``); and ``.inf`` / ``.nan`` spelled as 1.1 and 1.2 allow. Plain digits (``"1"``) stay text: only a
#: quoted number reaches here as a string, and a quoted number is a string in ROS too.
_FLOAT_TEXT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")
_SPECIAL_FLOATS = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}


def float_from_text(text: str) -> float | None:
    """``text`` read as a YAML float (see :data:`_FLOAT_TEXT`; rcl's parameter parser reads ``1e9`` as a
    double too), or None when it is not one."""
    t = text.strip()
    if _FLOAT_TEXT.fullmatch(t):
        return float(t)
    return _SPECIAL_FLOATS.get(t.lower())


def coerce_parameter(name: str, value, default):
    """``value`` of parameter ``name`` (from a parameter file, ``-p``, or rclpy) in the type of its
    ``default``, as the nodes use it: an integer where a float is expected (``ik_timeout: 1``) becomes a float,
    a number where a string is expected (``frame_prefix: 1``) its text, any sequence a list; ``None`` gives
    the default. Raises :class:`ValueError` naming the parameter when the types cannot agree."""
    if value is None:
        return default

    def bad():
        return ValueError(f"parameter {name!r} must be {type(default).__name__}, got {value!r}")
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise bad()
    if isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and float_from_text(value) is not None:
            return float_from_text(value)
        raise bad()
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise bad()
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise bad()
    if isinstance(default, (list, tuple)):
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise bad()
        return list(value)      # rclpy gives array.array for numeric arrays
    return value


def parse_override(text: str) -> tuple[str, object]:
    """``name:=value`` (as ``--ros-args -p``), the value read as YAML (``1.5``, ``true``, ``[a, b]``)."""
    if ":=" not in text:
        raise ValueError(f"parameter override {text!r} must look like name:=value")
    name, value = text.split(":=", 1)
    try:
        return name.strip(), yaml.safe_load(value)
    except yaml.YAMLError:
        raise ValueError(f"parameter override {text!r}: the value is not valid YAML") from None
