"""ROS 2 QoS profiles the nodes use, as plain data both transports map onto their own QoS types.

The values are those of rclcpp/rclpy (``rmw_qos_profile_*``) and of robot_state_publisher:

========================  =========  =====  ===========  ===============
profile                   history    depth  reliability  durability
========================  =========  =====  ===========  ===============
``DEFAULT``               keep last  10     reliable     volatile
``SENSOR_DATA``           keep last  5      best effort  volatile
``SERVICES``              keep last  10     reliable     volatile
``TF``                    keep last  100    reliable     volatile
``TF_STATIC``             keep last  1      reliable     transient local
``TF_STATIC_LISTENER``    keep last  100    reliable     transient local
``LATCHED``               keep last  1      reliable     transient local
========================  =========  =====  ===========  ===============

``TF_STATIC`` is for writing /tf_static (tf2's ``StaticBroadcasterQoS``). A reader of /tf_static uses
``TF_STATIC_LISTENER`` (tf2's ``StaticListenerQoS``): the topic is keyless, so a depth-1 reader keeps one
sample for ALL its writers, and when two static broadcasters' stored messages reach a late joiner together
the second replaces the first before it is taken.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class QoS:
    depth: int = 10
    reliable: bool = True
    transient_local: bool = False
    keep_all: bool = False

    def with_depth(self, depth: int) -> "QoS":
        return replace(self, depth=int(depth))


DEFAULT = QoS()
SENSOR_DATA = QoS(depth=5, reliable=False)
SERVICES = QoS()
TF = QoS(depth=100)
TF_STATIC = QoS(depth=1, transient_local=True)
TF_STATIC_LISTENER = QoS(depth=100, transient_local=True)
LATCHED = QoS(depth=1, transient_local=True)
