"""The registry of nodes ``serve`` can run: a node is one module plus one line in :data:`NODES`.

A node class takes ``(transport, served)`` through its factory (:func:`create`): the transport is the
node's view of the middleware, :class:`Served` what the process shares -- the mechanism, where it came
from, the URDF text to publish, and the one joint-state cache (:mod:`.joint_state_cache`). A node class may
define ``status() -> str`` (its part of ``serve``'s status line) and ``close()``.

Registering a node: add ``"name": "module:attribute"`` to :data:`NODES`, where ``attribute`` is a class or
function called as ``attribute(transport, served)`` (a class's ``from_served`` classmethod when it has
one); ``default=True`` entries of :data:`DEFAULT_NODES` run when ``serve`` is given no ``--nodes``.
Packages outside this one register through the ``mechanism_model_ros.nodes`` entry-point group
(``name = module:attribute``). Modules are imported only when their node is started.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any
from .joint_state_cache import JointStateCache

#: node name -> "module:attribute" (module relative to this package when it starts with a dot)
NODES: dict[str, str] = {
    "state_publisher": ".state_publisher:StatePublisher",
    "kinematics_server": ".kinematics_server:KinematicsServer",
    "manipulator": ".manipulator:Manipulator",
    "statics_server": ".statics_server:StaticsServer",
    "locomotor": ".locomotor:Locomotor",
    "legged": ".legged:LeggedNode",
    "reach_server": ".reach_server:ReachServer",
}
#: what ``serve`` runs when not told otherwise
DEFAULT_NODES: tuple[str, ...] = ("state_publisher", "kinematics_server", "statics_server")


@dataclass
class Served:
    """What the nodes of one process share."""
    mechanism: Any
    model_path: str | None = None
    #: URDF text to publish verbatim on robot_description (None: the model's own export)
    description: str | None = None
    #: the description came from the robot_description topic of another node: do not publish one
    description_owned_elsewhere: bool = False
    #: the process's joint-state cache, created on first use by :meth:`joint_states`
    joint_state_cache: Any = field(default=None, repr=False)

    def joint_states(self, transport):
        """The one :class:`~.joint_state_cache.JointStateCache` of the process (subscribed on the
        ``transport`` of the first node that asks; its ``joint_states_reliable`` parameter chooses the QoS)."""
        if self.joint_state_cache is None:
            self.joint_state_cache = JointStateCache(
                transport, self.mechanism, reliable=bool(transport.get_parameter("joint_states_reliable", False)))
        return self.joint_state_cache


def _entry_points() -> dict[str, str]:
    try:
        from importlib.metadata import entry_points
        eps = entry_points()
        group = eps.select(group="mechanism_model_ros.nodes") if hasattr(eps, "select") else \
            eps.get("mechanism_model_ros.nodes", [])
        return {ep.name: ep.value for ep in group}
    except Exception:       # a broken distribution's metadata must not stop serve
        return {}


def available() -> dict[str, str]:
    """Every registered node: this package's and those of installed packages' entry points."""
    out = dict(_entry_points())
    out.update(NODES)
    return out


def factory(name: str):
    """The callable registered for node ``name``; KeyError naming the known nodes."""
    table = available()
    if name not in table:
        raise KeyError(f"unknown node {name!r}; known nodes: {', '.join(sorted(table))}")
    module, _, attr = table[name].partition(":")
    mod = importlib.import_module(module, package=__package__) if module.startswith(".") else \
        importlib.import_module(module)
    return getattr(mod, attr)


def create(name: str, transport, served: Served):
    """Start node ``name`` on ``transport``."""
    target = factory(name)
    from_served = getattr(target, "from_served", None)
    return from_served(transport, served) if from_served is not None else target(transport, served)


__all__ = ["NODES", "DEFAULT_NODES", "Served", "available", "create", "factory"]
