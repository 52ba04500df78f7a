"""A serialized ``check_state_validity`` request of one world object with 100,000 boxes (issue 19, item 10),
written by rosbags' CDR serializer (about 0.2 s CPU; the cyclonedds package's takes seconds for as many
elements, and its deserializer about as long again)."""

from __future__ import annotations

import struct

import numpy as np

REQUEST = "mechanism_model_msgs/srv/CheckStateValidity_Request"


def boxes_request(n: int = 100_000, oid: str = "sand", guid: int | None = None, seq: int = 1) -> bytes:
    """Plain little-endian CDR of a CheckStateValidity request whose one world object ``oid`` carries ``n``
    1 cm boxes 5 m above the ground. With ``guid``: as a Cyclone service request (rmw_cyclonedds' 16-byte
    header of client guid and sequence number ``seq`` in front of the fields); without: as rclpy's
    ``serialize_message`` writes the request."""
    from mechanism_model_ros.interfaces_store import typestore
    store = typestore()
    T = store.types
    header = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=0, nanosec=0), frame_id="")
    pose = T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](x=0.0, y=0.0, z=5.0),
                                       orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0))
    box = T["shape_msgs/msg/SolidPrimitive"](type=1, dimensions=np.full(3, 0.01),
                                             polygon=T["geometry_msgs/msg/Polygon"](points=[]))
    obj = T["mechanism_model_msgs/msg/CollisionObject"](
        header=header, pose=pose, id=oid, primitives=[box] * n, primitive_poses=[pose] * n, meshes=[],
        mesh_poses=[], planes=[], plane_poses=[], operation=0)
    empty = np.zeros(0)
    state = T["sensor_msgs/msg/JointState"](header=header, name=[], position=empty, velocity=empty, effort=empty)
    req = T[REQUEST](robot_state=state, group_name="", margin=0.0, compute_distance=False, highlight_contacts=False,
                     world_objects=[obj], ignore_environment=False)
    data = bytes(store.serialize_cdr(req, REQUEST))
    if guid is None:
        return data
    return data[:4] + struct.pack("<Qq", guid, seq) + data[4:]      # 16 bytes: the fields' alignment holds
