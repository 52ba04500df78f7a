"""ROS message definitions as data: the standard ones ``rosbags`` carries plus this suite's own.

The cyclone transport builds its message classes from these definitions (never from hand-written
classes): :func:`typestore` returns a ``rosbags`` type store holding the ROS 2 Humble definitions
(``std_msgs``, ``geometry_msgs``, ``sensor_msgs``, ``tf2_msgs``, ``builtin_interfaces``,
``rmw_dds_common`` ...) and every ``.msg``/``.srv`` file of ``mechanism_model_msgs``. A service ``Name``
becomes two message types, ``pkg/srv/Name_Request`` and ``pkg/srv/Name_Response``, as in rosidl.
"""

from __future__ import annotations

import functools
import os
import re
from .action_types import all_types

#: Where the interface files live: a link to the ``mechanism_model_msgs`` package in a source checkout,
#: a copy in an installed wheel.
INTERFACES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interfaces")
PACKAGE = "mechanism_model_msgs"

_SEPARATOR = re.compile(r"^---\s*$", re.MULTILINE)


def interface_files(root: str = INTERFACES_DIR) -> dict[str, str]:
    """``{"mechanism_model_msgs/msg/ErrorCodes": path, "mechanism_model_msgs/srv/ComputeFK": path, ...}``."""
    out = {}
    for kind, ext in (("msg", ".msg"), ("srv", ".srv")):
        d = os.path.join(root, kind)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(ext):
                out[f"{PACKAGE}/{kind}/{f[:-len(ext)]}"] = os.path.join(d, f)
    if not out:
        raise FileNotFoundError(f"no mechanism_model_msgs interface files under {root}")
    return out


def split_service(text: str) -> tuple[str, str]:
    """Request and response parts of a ``.srv`` file."""
    parts = _SEPARATOR.split(text)
    if len(parts) != 2:
        raise ValueError("a .srv file needs exactly one '---' separator line")
    return parts[0], parts[1]


def own_types(root: str = INTERFACES_DIR) -> dict:
    """rosbags type definitions of this suite's messages and service parts."""
    from rosbags.typesys import get_types_from_msg

    types: dict = {}
    for name, path in interface_files(root).items():
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        pkg, kind, base = name.split("/")
        if kind == "msg":
            types.update(get_types_from_msg(text, name))
        else:
            req, rep = split_service(text)
            # parse as pkg/msg/... so bare names resolve to pkg/msg, then file under pkg/srv
            for part, suffix in ((req, "_Request"), (rep, "_Response")):
                parsed = get_types_from_msg(part, f"{pkg}/msg/{base}{suffix}")
                for key, value in parsed.items():
                    if key == f"{pkg}/msg/{base}{suffix}":
                        key = f"{pkg}/srv/{base}{suffix}"
                    types[key] = value
    return types


@functools.lru_cache(maxsize=None)
def typestore():
    """A rosbags ``Typestore`` with ROS 2 Humble's definitions and this suite's interfaces."""
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    store.register(own_types())
    store.register(all_types())
    return store


def service_names(root: str = INTERFACES_DIR) -> list[str]:
    return [n for n in interface_files(root) if "/srv/" in n]
