"""``mechanism-model call`` and ``mechanism-model echo``: call the services and watch the topics without ROS,
over the Cyclone transport (what ``ros2 service call`` and ``ros2 topic echo`` do on a ROS 2 machine).

    mechanism-model call compute_fk "{fk_link_names: [arm_turret]}"
    mechanism-model call compute_ik "{ik_link_names: [arm_turret], pose_stamped_vector: [{header: {frame_id: chassis},
        pose: {position: {x: 1.1, z: -0.1}}}], active_joints: [arm_yaw, arm_shoulder, arm_elbow, arm_wrist]}"
    mechanism-model echo tf --count 3
    mechanism-model echo robot_description

The request is YAML in ``ros2 service call``'s form (a mapping of field names; nested messages as mappings,
sequences as lists); unknown field names are an error naming the fields the message has. Replies and
messages print as YAML. ``call`` exits 0 when the reply's ``error_code`` is SUCCESS (or it has none), 1 with
the code's name otherwise, 2 for a bad command line or no answer. ``ROS_DOMAIN_ID`` and the other discovery
variables apply as for ``serve``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import yaml
from . import qos
from .description_topic import receive_robot_description
from .error_code_names import ErrorCodes
from .interfaces_store import typestore

#: service name -> type, for every service the suite's nodes offer (``--type`` names any other). Node-private
#: services (``~/stop``) are keyed by their name below the node, so ``locomotor/stop`` and ``rover1/locomotor/stop``
#: both resolve; :func:`service_type` looks the longest known tail up.
SERVICES = {
    "compute_fk": "mechanism_model_msgs/srv/ComputeFK",
    "compute_jacobian": "mechanism_model_msgs/srv/ComputeJacobian",
    "compute_ik": "mechanism_model_msgs/srv/ComputeIK",
    "compute_cartesian_path": "mechanism_model_msgs/srv/ComputeCartesianPath",
    "check_state_validity": "mechanism_model_msgs/srv/CheckStateValidity",
    "compute_statics": "mechanism_model_msgs/srv/ComputeStatics",
    "execute_trajectory": "mechanism_model_msgs/srv/ExecuteTrajectory",
    "point_at": "mechanism_model_msgs/srv/PointAt",
    "compute_base_placement": "mechanism_model_msgs/srv/ComputeBasePlacement",
    "cancel": "std_srvs/srv/Trigger",
    "stop": "std_srvs/srv/Trigger",
    "release": "std_srvs/srv/Trigger",
    "drive_mode/auto": "std_srvs/srv/Trigger",
    "drive_mode/ackermann": "std_srvs/srv/Trigger",
    "drive_mode/crab": "std_srvs/srv/Trigger",
    "drive_mode/turn_in_place": "std_srvs/srv/Trigger",
    "drive_mode/skid": "std_srvs/srv/Trigger",
}


def service_type(name: str) -> str | None:
    """The type of service ``name`` (``/compute_fk``, ``locomotor/drive_mode/crab``) from :data:`SERVICES`:
    the longest tail of its path that is a key; None when none is."""
    parts = [p for p in name.split("/") if p]
    for k in range(len(parts)):
        found = SERVICES.get("/".join(parts[k:]))
        if found:
            return found
    return None


#: topic -> (type, QoS profile name in mechanism_model_ros.qos)
TOPICS = {
    "/tf": ("tf2_msgs/msg/TFMessage", "TF"),
    "/tf_static": ("tf2_msgs/msg/TFMessage", "TF_STATIC"),
    "/robot_description": ("std_msgs/msg/String", "LATCHED"),
    "/joint_states": ("sensor_msgs/msg/JointState", "SENSOR_DATA"),
}


class FieldError(ValueError):
    """A request text that does not fit the message."""


def _fielddefs(ros_type: str):
    return typestore().fielddefs[ros_type][1]


def fill_message(msg, data, ros_type: str, where: str = "") -> None:
    """Set the fields of ``msg`` (of ROS type ``ros_type``) from the mapping ``data`` (parsed YAML)."""
    from rosbags.typesys.base import Nodetype

    if data is None:
        return
    if not isinstance(data, dict):
        raise FieldError(f"{where or 'request'}: expected a mapping of field names, got {data!r}")
    defs = dict(_fielddefs(ros_type))
    for key, value in data.items():
        path = f"{where}.{key}" if where else str(key)
        if key not in defs:
            raise FieldError(f"{path}: {ros_type} has no field {key!r} (fields: {', '.join(defs)})")
        kind, detail = defs[key]
        if kind == Nodetype.NAME:
            fill_message(getattr(msg, key), value, detail, path)
        elif kind in (Nodetype.SEQUENCE, Nodetype.ARRAY) and detail[0][0] == Nodetype.NAME:
            from .transports.typegen import message_class
            if not isinstance(value, list):
                raise FieldError(f"{path}: expected a list")
            cls = message_class(detail[0][1])
            items = []
            for i, v in enumerate(value):
                item = cls()
                fill_message(item, v, detail[0][1], f"{path}[{i}]")
                items.append(item)
            setattr(msg, key, items)
        else:
            try:
                setattr(msg, key, _scalar(value, kind, detail, path))
            except (TypeError, ValueError) as exc:
                raise FieldError(f"{path}: {exc}") from None


def _scalar(value, kind, detail, path):
    from rosbags.typesys.base import Nodetype

    def one(v, base):
        if base == "string":
            return str(v)
        if base == "bool":
            if not isinstance(v, bool):
                raise ValueError(f"expected true or false, got {v!r}")
            return v
        if base.startswith("float"):
            return float(v)
        if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
            raise ValueError(f"expected an integer, got {v!r}")
        return int(v)
    if kind == Nodetype.BASE:
        return one(value, detail[0])
    if not isinstance(value, list):
        raise ValueError("expected a list")
    return [one(v, detail[0][1][0]) for v in value]


def to_data(msg):
    """A message as plain data (dicts, lists, numbers, strings), wire-header fields left out."""
    import dataclasses
    if dataclasses.is_dataclass(msg):
        return {f.name: to_data(getattr(msg, f.name)) for f in dataclasses.fields(msg)
                if not f.name.startswith("rmw_")}
    if isinstance(msg, (list, tuple)):
        return [to_data(v) for v in msg]
    return msg


def _context():
    from .transports.cyclone import CycloneContext, CycloneNode
    ctx = CycloneContext()
    return ctx, CycloneNode("mechanism_model_cli", context=ctx)


def fetch_robot_description(topic: str = "/robot_description", timeout: float = 10.0) -> str:
    """The URDF text on ``topic`` (reliable, transient local) over the Cyclone transport, as ``mechanism-model
    info --from-topic`` reads it; :class:`TimeoutError` naming the topic when none arrives in ``timeout`` s."""
    ctx, node = _context()
    try:
        return receive_robot_description(node, topic, timeout)
    finally:
        node.close()
        ctx.close()


def call_main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="mechanism-model call", description=__doc__.split("\n\n")[0] + " Call a "
                                "service once and print the reply.")
    p.add_argument("service", help="service name (" + ", ".join(SERVICES) + ", or any with --type)")
    p.add_argument("request", nargs="?", default="{}", help="request as YAML, as ros2 service call takes it")
    p.add_argument("--type", help="service type, e.g. mechanism_model_msgs/srv/ComputeFK")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the service and its reply")
    args = p.parse_args(argv)
    name = args.service.lstrip("/")
    srv_type = args.type or service_type(name)
    if srv_type is None:
        p.error(f"unknown service {args.service!r}: give --type (known: {', '.join(SERVICES)})")
    try:
        # the user's own command line, as serve's -p name:=value (params.parse_override): PyYAML's safe loader
        # (files from elsewhere -- models, parameter files -- go through the core's bounded loader)
        data = yaml.safe_load(args.request)
    except yaml.YAMLError as exc:
        p.error(f"the request is not valid YAML: {str(exc).splitlines()[0]}")
    try:
        ctx, node = _context()
    except ImportError as exc:
        print(f"error: needs cyclonedds and rosbags (pip install cyclonedds rosbags): {exc}", file=sys.stderr)
        return 2
    try:
        client = node.create_client(args.service, srv_type)
        request = client.request()
        try:
            fill_message(request, data, srv_type + "_Request")
        except FieldError as exc:
            p.error(str(exc))
        if not client.wait_for_service(args.timeout):
            print(f"error: no service {args.service!r} answered within {args.timeout} s (is `mechanism-model "
                  f"serve` running in ROS domain {ctx.domain_id}?)", file=sys.stderr)
            return 2
        try:
            reply = client.call(request, args.timeout)
        except TimeoutError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(yaml.safe_dump(to_data(reply), sort_keys=False, width=120), end="")
        code = getattr(getattr(reply, "error_code", None), "val", None)
        if code is None or code == 1:
            return 0
        print(f"error code {code} ({ErrorCodes.name(code)}): {getattr(reply, 'message', '')}", file=sys.stderr)
        return 1
    finally:
        node.close()
        ctx.close()


def echo_main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="mechanism-model echo", description="Print the messages of a topic as YAML "
                                "(tf, tf_static, robot_description, joint_states, or any with --type).")
    p.add_argument("topic")
    p.add_argument("--type", help="message type, e.g. sensor_msgs/msg/JointState")
    p.add_argument("-n", "--count", type=int, default=0, help="stop after this many messages (default: latched "
                   "topics 1, others until interrupted)")
    p.add_argument("--timeout", type=float, default=0.0, help="give up after this many seconds (default: never)")
    args = p.parse_args(argv)
    topic = args.topic if args.topic.startswith("/") else "/" + args.topic
    known = TOPICS.get(topic)
    if args.type is None and known is None:
        p.error(f"unknown topic {args.topic!r}: give --type (known: {', '.join(t[1:] for t in TOPICS)})")
    ros_type = args.type or known[0]
    profile = getattr(qos, known[1]) if known else qos.DEFAULT
    count = args.count or (1 if profile.transient_local else 0)
    try:
        ctx, node = _context()
    except ImportError as exc:
        print(f"error: needs cyclonedds and rosbags (pip install cyclonedds rosbags): {exc}", file=sys.stderr)
        return 2
    seen = []
    done = threading.Event()
    lock = threading.Lock()

    def on_message(msg):
        with lock:
            if done.is_set():
                return
            seen.append(1)
            try:
                print(yaml.safe_dump(to_data(msg), sort_keys=False, width=120) + "---", flush=True)
            except (BrokenPipeError, ValueError):     # the reader went away (| head)
                done.set()
            if count and len(seen) >= count:
                done.set()
    try:
        node.create_subscription(topic, ros_type, profile, on_message)
        end = time.monotonic() + args.timeout if args.timeout > 0 else None
        try:
            while not done.wait(0.1):
                if end is not None and time.monotonic() > end:
                    break
        except KeyboardInterrupt:
            pass
        if count and len(seen) < count:
            print(f"error: {len(seen)} of {count} messages on {topic} within {args.timeout} s", file=sys.stderr)
            return 1
        return 0
    finally:
        node.close()
        ctx.close()
