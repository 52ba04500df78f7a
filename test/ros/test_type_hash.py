"""REP-2011 type hashes (mechanism_model_ros.transports.cyclone.type_hash) against rosidl's own, and the USER_DATA the Cyclone
transport gives its endpoints per distribution.

Oracles: the ``hash_string`` values rosidl_generator_type_description wrote into Jazzy's
``/opt/ros/jazzy/share/<pkg>/<kind>/<Name>.json`` (every message, service and action Jazzy ships, and the
service event, service and action types derived from them), and for this suite's own interfaces the json
files rosidl generates when the test workspace builds ``mechanism_model_msgs`` against Jazzy.
"""

import glob
import json
import os
import re

import pytest

from ros import ros_env

JAZZY_SHARE = "/opt/ros/jazzy/share"


def _jazzy_share() -> str:
    if not os.path.isdir(os.path.join(JAZZY_SHARE, "sensor_msgs", "msg")):
        reason = f"ROS 2 Jazzy is not installed ({JAZZY_SHARE} missing)"
        if ros_env.required():
            pytest.fail(f"ROS 2 is required here but {reason}", pytrace=False)
        pytest.skip(reason)
    return JAZZY_SHARE


def _rosidl_hashes(paths) -> dict:
    """``{type name: hash_string}`` of every entry of rosidl's json files ``paths``."""
    out = {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        for entry in data.get("type_hashes", []):
            out.setdefault(entry["type_name"], entry["hash_string"])
    return out


# message, service (request, response, event, the service itself) and action types (each part rosidl
# describes), including the two whose char fields rosbags alone hashes differently (Gid, ServiceEventInfo)
NAMED = {
    "sensor_msgs/msg/JointState": "sensor_msgs/msg/JointState.json",
    "tf2_msgs/msg/TFMessage": "tf2_msgs/msg/TFMessage.json",
    "geometry_msgs/msg/PoseStamped": "geometry_msgs/msg/PoseStamped.json",
    "std_msgs/msg/String": "std_msgs/msg/String.json",
    "rmw_dds_common/msg/ParticipantEntitiesInfo": "rmw_dds_common/msg/ParticipantEntitiesInfo.json",
    "action_msgs/msg/GoalStatusArray": "action_msgs/msg/GoalStatusArray.json",
    "service_msgs/msg/ServiceEventInfo": "service_msgs/msg/ServiceEventInfo.json",
    "std_srvs/srv/Trigger_Request": "std_srvs/srv/Trigger.json",
    "std_srvs/srv/Trigger_Response": "std_srvs/srv/Trigger.json",
    "std_srvs/srv/Trigger_Event": "std_srvs/srv/Trigger.json",
    "std_srvs/srv/Trigger": "std_srvs/srv/Trigger.json",
    "action_msgs/srv/CancelGoal_Request": "action_msgs/srv/CancelGoal.json",
    "action_msgs/srv/CancelGoal_Response": "action_msgs/srv/CancelGoal.json",
    "action_msgs/srv/CancelGoal": "action_msgs/srv/CancelGoal.json",
    "rcl_interfaces/srv/GetParameters_Request": "rcl_interfaces/srv/GetParameters.json",
    "tf2_msgs/action/LookupTransform_SendGoal_Request": "tf2_msgs/action/LookupTransform.json",
    "tf2_msgs/action/LookupTransform_SendGoal_Response": "tf2_msgs/action/LookupTransform.json",
    "tf2_msgs/action/LookupTransform_GetResult_Request": "tf2_msgs/action/LookupTransform.json",
    "tf2_msgs/action/LookupTransform_GetResult_Response": "tf2_msgs/action/LookupTransform.json",
    "tf2_msgs/action/LookupTransform_FeedbackMessage": "tf2_msgs/action/LookupTransform.json",
    "tf2_msgs/action/LookupTransform_SendGoal_Event": "tf2_msgs/action/LookupTransform.json",
    "tf2_msgs/action/LookupTransform": "tf2_msgs/action/LookupTransform.json",
}


@pytest.mark.parametrize("ros_type", sorted(NAMED))
def test_hash_equals_rosidl_for_named_types(ros_type):
    from mechanism_model_ros.transports.cyclone.type_hash import type_hash

    share = _jazzy_share()
    expected = _rosidl_hashes([os.path.join(share, NAMED[ros_type])])[ros_type]
    assert type_hash(ros_type) == expected


def test_hash_equals_rosidl_for_every_type_jazzy_ships():
    """Every type of every json file in Jazzy's share/ (messages, services and actions with all their parts)."""
    from mechanism_model_ros.transports.cyclone.type_hash import type_hash

    expected = _rosidl_hashes(sorted(glob.glob(os.path.join(_jazzy_share(), "*", "*", "*.json"))))
    assert len(expected) > 200      # 226 types in Jazzy 2024-2025
    wrong = {name: (type_hash(name), h) for name, h in expected.items() if type_hash(name) != h}
    assert not wrong, f"{len(wrong)} of {len(expected)} differ: {sorted(wrong)[:10]}"


@pytest.mark.ros
def test_hash_equals_rosidl_for_our_interfaces():
    """mechanism_model_msgs (every message and service, with request, response and event) and the standard
    interfaces the workspace builds for a core-only Jazzy, against the json rosidl generated for them."""
    from mechanism_model_ros.interfaces_store import interface_files
    from mechanism_model_ros.transports.cyclone.type_hash import type_hash

    ros_env.require("jazzy")
    ws = ros_env.workspace("jazzy")
    files = sorted(glob.glob(os.path.join(ws, "install", "share", "*", "*", "*.json")))
    expected = _rosidl_hashes(files)
    ours = {n for n in expected if n.startswith("mechanism_model_msgs/")}
    assert {n for n in interface_files()} <= ours, sorted(ours)
    wrong = {name: (type_hash(name), h) for name, h in expected.items() if type_hash(name) != h}
    assert not wrong, f"{len(wrong)} of {len(expected)} differ: {sorted(wrong)}"


#: Run with Jazzy's Python environment: rosidl_adapter turns each definition file (argv: pkg/kind/Name=path)
#: into IDL, rosidl_generator_type_description computes the hashes as at build time (dependencies from the
#: installed packages' json files), and the ``type_hashes`` of every generated json are printed.
ROSIDL_HASHES = r"""
import json, sys, tempfile
from pathlib import Path
from ament_index_python.packages import get_package_share_directory
from rosidl_adapter.action import convert_action_to_idl
from rosidl_adapter.msg import convert_msg_to_idl
from rosidl_adapter.srv import convert_srv_to_idl
from rosidl_generator_type_description import generate_type_hash

CONVERT = {"msg": convert_msg_to_idl, "srv": convert_srv_to_idl, "action": convert_action_to_idl}
out = Path(tempfile.mkdtemp())
tuples, pkg = [], None
for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    pkg, kind, base = name.split("/")
    path = Path(path)
    (out / "idl" / kind).mkdir(parents=True, exist_ok=True)
    CONVERT[kind](path.parent.parent, pkg, Path(kind) / path.name, out / "idl" / kind)
    tuples.append(f"{out / 'idl'}:{kind}/{base}.idl")
deps = ["builtin_interfaces", "std_msgs", "trajectory_msgs", "geometry_msgs", "action_msgs",
        "unique_identifier_msgs", "service_msgs"]
args = {"package_name": pkg, "output_dir": str(out / "json"), "idl_tuples": tuples,
        "include_paths": [f"{d}:{get_package_share_directory(d)}" for d in deps]}
(out / "args.json").write_text(json.dumps(args))
hashes = {}
for f in generate_type_hash(str(out / "args.json")):
    for h in json.loads(Path(f).read_text())["type_hashes"]:
        hashes[h["type_name"]] = h["hash_string"]
print("HASHES " + json.dumps(hashes))
"""


@pytest.mark.ros
def test_hash_equals_rosidl_for_the_action_we_serve():
    """control_msgs/action/FollowJointTrajectory (which the core-only Jazzy lacks): Jazzy's rosidl run on the
    very definition files the transport reads, against our hash of each of its types (goal, result,
    feedback, the send-goal and get-result services with request, response and event, the feedback message,
    the action type) and of its tolerance messages."""
    from mechanism_model_ros.action_types import ACTIONS, EXTRA, interface_source
    from mechanism_model_ros.transports.cyclone.type_hash import type_hash

    ros_env.require("jazzy")
    ros_env.workspace("jazzy")         # trajectory_msgs for a core-only Jazzy
    names = [n for n in ACTIONS + EXTRA if n.startswith("control_msgs/")]
    p = ros_env.run_python(ROSIDL_HASHES, ros_env.domain(), "jazzy", timeout=120,
                           args=[f"{n}={interface_source(n)}" for n in names])
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("HASHES ")]
    assert p.returncode == 0 and lines, (p.stdout[-2000:], p.stderr[-3000:])
    expected = json.loads(lines[-1][len("HASHES "):])
    action = ACTIONS[0]
    for part in ("", "_Goal", "_Result", "_Feedback", "_FeedbackMessage", "_SendGoal_Request",
                 "_SendGoal_Response", "_SendGoal_Event", "_GetResult_Request", "_GetResult_Response"):
        assert action + part in expected, sorted(expected)
    wrong = {name: (type_hash(name), h) for name, h in expected.items() if type_hash(name) != h}
    assert not wrong, f"{len(wrong)} of {len(expected)} differ: {sorted(wrong)}"


def test_unknown_type_is_a_key_error():
    from mechanism_model_ros.transports.cyclone.type_hash import type_hash

    with pytest.raises(KeyError):
        type_hash("no_such_msgs/msg/Nothing")


def _peer_endpoints(participant):
    """``{(kind of ours, DDS topic): the peer endpoint matching it}``: plain Cyclone endpoints of the opposite
    kind in ``participant``, whose matched-endpoint data show the USER_DATA other participants discover."""
    from cyclonedds.pub import DataWriter
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic

    from mechanism_model_ros.qos import DEFAULT, SERVICES
    from mechanism_model_ros.transports.cyclone import dds_qos
    from mechanism_model_ros.transports.typegen import message_class, service_wire_class

    def topic(name, cls):
        return Topic(participant, name, cls)
    return {
        ("writer", "rt/mm_th_js"): DataReader(
            participant, topic("rt/mm_th_js", message_class("sensor_msgs/msg/JointState")), qos=dds_qos(DEFAULT)),
        ("reader", "rt/mm_th_tf"): DataWriter(
            participant, topic("rt/mm_th_tf", message_class("tf2_msgs/msg/TFMessage")), qos=dds_qos(DEFAULT)),
        ("reader", "rq/mm_th_triggerRequest"): DataWriter(
            participant, topic("rq/mm_th_triggerRequest", service_wire_class("std_srvs/srv/Trigger_Request")),
            qos=dds_qos(SERVICES)),
        ("writer", "rr/mm_th_triggerReply"): DataReader(
            participant, topic("rr/mm_th_triggerReply", service_wire_class("std_srvs/srv/Trigger_Response")),
            qos=dds_qos(SERVICES)),
    }


def _discovered_user_data(peers) -> dict:
    """``{(kind, DDS topic): USER_DATA bytes}`` of the endpoints each peer endpoint has matched."""
    from cyclonedds.core import Policy
    from cyclonedds.pub import DataWriter

    out = {}
    for key, ep in peers.items():
        if isinstance(ep, DataWriter):
            data = [ep.get_matched_subscription_data(h) for h in ep.get_matched_subscriptions()]
        else:
            data = [ep.get_matched_publication_data(h) for h in ep.get_matched_publications()]
        for d in data:
            if d is not None and d.qos is not None:
                ud = d.qos[Policy.Userdata] if Policy.Userdata in d.qos else None
                out[key] = bytes(ud.data) if ud is not None else b""
    return out


@pytest.mark.parametrize("distro", ["humble", "jazzy"])
def test_endpoint_user_data_per_distribution(distro):
    """What another participant discovers: on Jazzy ``typehash=RIHS01_...;`` on every endpoint (after the
    service id on service endpoints; the request type's hash on the request topic, the response type's on the
    reply topic), on Humble the bytes without it (none on topics, ``serviceid=<id>;`` on services)."""
    from cyclonedds.domain import DomainParticipant

    from mechanism_model_ros.qos import DEFAULT
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    from mechanism_model_ros.transports.cyclone.type_hash import type_hash
    from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for

    domain = unique_domain_id()
    configure_this_process(domain)
    ctx = CycloneContext(domain, env=dict(os.environ, ROS_DISTRO=distro))
    node = CycloneNode("mm_typehash", context=ctx)
    observer = DomainParticipant(domain)
    peers = _peer_endpoints(observer)
    try:
        node.create_publisher("/mm_th_js", "sensor_msgs/msg/JointState", DEFAULT)
        node.create_subscription("/mm_th_tf", "tf2_msgs/msg/TFMessage", DEFAULT, lambda m: None)
        node.create_service("/mm_th_trigger", "std_srvs/srv/Trigger", lambda req, rep: rep)
        wanted = {("writer", "rt/mm_th_js"), ("reader", "rt/mm_th_tf"), ("reader", "rq/mm_th_triggerRequest"),
                  ("writer", "rr/mm_th_triggerReply")}
        seen = {}

        def discovered():
            seen.update(_discovered_user_data(peers))
            return wanted <= set(seen)
        assert wait_for(discovered, 20.0, 0.05), seen
    finally:
        node.close()
        ctx.close()
    csid = re.compile(rb"^serviceid=[ 0-9a-f]{2}(\.[0-9a-f]{1,2}){15};")
    request_id = csid.match(seen[("reader", "rq/mm_th_triggerRequest")])
    reply_id = csid.match(seen[("writer", "rr/mm_th_triggerReply")])
    assert request_id and reply_id and request_id.group(0) == reply_id.group(0), seen
    sid = request_id.group(0)
    if distro == "humble":
        assert seen[("writer", "rt/mm_th_js")] == b""
        assert seen[("reader", "rt/mm_th_tf")] == b""
        assert seen[("reader", "rq/mm_th_triggerRequest")] == sid
        assert seen[("writer", "rr/mm_th_triggerReply")] == sid
        assert not any(b"typehash" in v for v in seen.values())
    else:
        def entry(ros_type):
            return f"typehash={type_hash(ros_type)};".encode()
        assert seen[("writer", "rt/mm_th_js")] == entry("sensor_msgs/msg/JointState")
        assert seen[("reader", "rt/mm_th_tf")] == entry("tf2_msgs/msg/TFMessage")
        assert seen[("reader", "rq/mm_th_triggerRequest")] == sid + entry("std_srvs/srv/Trigger_Request")
        assert seen[("writer", "rr/mm_th_triggerReply")] == sid + entry("std_srvs/srv/Trigger_Response")
