"""REP-2011 type hashes (``RIHS01_<sha256>``) of the interfaces the Cyclone transport puts on the wire.

From Iron on, rmw_cyclonedds_cpp writes ``typehash=RIHS01_<hex>;`` into the USER_DATA of every reader and
writer, and the ROS graph reports it (``topic_type_hash`` of rclpy's endpoint info, ``ros2 topic info -v``).
The hash of an endpoint is the one of the message type it carries:

* a topic: its message type (``sensor_msgs/msg/JointState``);
* a service: ``pkg/srv/Name_Request`` on the request reader and writer, ``pkg/srv/Name_Response`` on the reply
  ones (rmw_cyclonedds takes them from the request and response type supports, not the service's own hash);
* an action (three services and two topics): ``pkg/action/Name_SendGoal_Request`` / ``_Response``,
  ``..._GetResult_Request`` / ``_Response``, ``action_msgs/srv/CancelGoal_Request`` / ``_Response``,
  ``pkg/action/Name_FeedbackMessage`` and ``action_msgs/msg/GoalStatusArray``.

The hashes come from ``rosbags``' ``Typestore.hash_rihs01`` over a type store holding the ROS 2 Jazzy
definitions rosbags ships, this suite's interfaces and the action and extra types of
:mod:`mechanism_model_ros.action_types`, with one correction: a ``char`` field of a ``.msg`` file is an
``uint8`` for rosidl (rosidl_adapter translates it so), while rosbags hashes it as ``FIELD_TYPE_CHAR``
(that made ``rmw_dds_common/msg/Gid`` and ``service_msgs/msg/ServiceEventInfo`` differ from Jazzy's). The
composite types rosidl also describes (``pkg/srv/Name_Event``, the service type ``pkg/srv/Name`` with its
``request_message``, ``response_message`` and ``event_message`` fields, and an action ``pkg/action/Name``) are
added as definitions when asked for, so their hashes follow the same rules; an interface the store lacks is
read from its file in an installed ROS 2 when there is one. The tests compare these hashes
with the ``hash_string`` values in Jazzy's ``share/<pkg>/<kind>/<Name>.json`` files.

Hashes are cached per type; an endpoint pays nothing per message.
"""

from __future__ import annotations

import functools
import threading

from ...action_types import action_types, all_types, extra_types
from ...interfaces_store import own_types

_lock = threading.RLock()

#: USER_DATA key rmw_dds_common uses
USER_DATA_KEY = "typehash"


def _as_rosidl(desc):
    """One rosbags field description with ``char`` replaced by rosidl's ``uint8``."""
    from rosbags.typesys.base import Nodetype

    kind, detail = desc
    if kind == Nodetype.BASE:
        name, bound = detail
        return (kind, ("uint8", bound)) if name == "char" else desc
    if kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
        sub, count = detail
        return (kind, (_as_rosidl(sub), count))
    return desc


def _rosidl_types(types: dict) -> dict:
    return {name: (consts, [(fname, _as_rosidl(desc)) for fname, desc in fields])
            for name, (consts, fields) in types.items()}


@functools.lru_cache(maxsize=None)
def hash_store():
    """The rosbags type store the hashes are computed from (built once, on first use)."""
    from rosbags.typesys import Stores, get_typestore

    jazzy = get_typestore(Stores.ROS2_JAZZY)
    types = dict(jazzy.fielddefs)
    for extra in (own_types(), all_types()):
        for name, value in extra.items():
            types.setdefault(name, value)
    store = get_typestore(Stores.EMPTY)
    store.register(_rosidl_types(types))
    return store


def _nested(name: str):
    from rosbags.typesys.base import Nodetype
    return (Nodetype.NAME, name)


def _service_types(service: str, store) -> dict:
    """Definitions of ``<service>_Event`` and ``<service>`` (rosidl's service description)."""
    from rosbags.typesys.base import Nodetype

    for part in ("_Request", "_Response"):
        if service + part not in store.fielddefs:
            raise KeyError(f"no definition of {service + part}")
    return {
        service + "_Event": ([], [
            ("info", _nested("service_msgs/msg/ServiceEventInfo")),
            ("request", (Nodetype.SEQUENCE, (_nested(service + "_Request"), 1))),
            ("response", (Nodetype.SEQUENCE, (_nested(service + "_Response"), 1))),
        ]),
        service: ([], [
            ("request_message", _nested(service + "_Request")),
            ("response_message", _nested(service + "_Response")),
            ("event_message", _nested(service + "_Event")),
        ]),
    }


def _installed_types(ros_type: str, store) -> dict:
    """Definitions of the interface ``ros_type`` belongs to, read from its ``.msg``/``.srv``/``.action`` file
    in an installed ROS 2 (see :func:`~mechanism_model_ros.action_types.interface_source`), when the store
    lacks them; empty when it has them."""
    pkg, kind, base = ros_type.split("/")
    root = base.split("_")[0] if kind in ("srv", "action") else base
    interface = f"{pkg}/{kind}/{root}"
    have = (f"{interface}_Goal" if kind == "action" else f"{interface}_Request" if kind == "srv" else interface)
    if have in store.fielddefs:
        return {}
    try:
        return action_types(interface) if kind == "action" else extra_types(interface)
    except (FileNotFoundError, ValueError) as exc:
        raise KeyError(f"no definition of {ros_type}: {exc}") from None


def _composite_types(ros_type: str, store) -> dict:
    """Definitions a composite ``ros_type`` (a service, a service event, an action or one of its services)
    needs that the store lacks."""
    pkg, kind, base = ros_type.split("/")
    if kind == "action" and f"{ros_type}_Goal" in store.fielddefs:      # the action type itself
        types = {}
        for svc in ("_SendGoal", "_GetResult"):
            types.update(_service_types(ros_type + svc, store))
        types[ros_type] = ([], [
            ("goal", _nested(ros_type + "_Goal")),
            ("result", _nested(ros_type + "_Result")),
            ("feedback", _nested(ros_type + "_Feedback")),
            ("send_goal_service", _nested(ros_type + "_SendGoal")),
            ("get_result_service", _nested(ros_type + "_GetResult")),
            ("feedback_message", _nested(ros_type + "_FeedbackMessage")),
        ])
        return types
    service = ros_type[:-len("_Event")] if ros_type.endswith("_Event") else ros_type
    return _service_types(service, store)


@functools.lru_cache(maxsize=None)
def type_hash(ros_type: str) -> str:
    """``RIHS01_<64 hex digits>`` of ``ros_type`` (``sensor_msgs/msg/JointState``,
    ``pkg/srv/Name_Request``, ``pkg/srv/Name``, ``pkg/action/Name_SendGoal_Request`` ...), as rosidl
    computes it. Raises ``KeyError`` for a type without a definition."""
    with _lock:
        store = hash_store()
        if ros_type not in store.fielddefs:
            loaded = _installed_types(ros_type, store)
            if loaded:
                store.register(_rosidl_types(loaded))
        if ros_type not in store.fielddefs:
            store.register(_rosidl_types(_composite_types(ros_type, store)))
        return store.hash_rihs01(ros_type)


def user_data(ros_type: str) -> str:
    """``typehash=RIHS01_...;``: the USER_DATA entry rmw_dds_common encodes for an endpoint of ``ros_type``."""
    return f"{USER_DATA_KEY}={type_hash(ros_type)};"


__all__ = ["type_hash", "user_data", "hash_store"]
