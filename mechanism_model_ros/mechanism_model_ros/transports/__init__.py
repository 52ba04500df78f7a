"""Transports: the small interface nodes are written against (:mod:`.base`) and its implementations,
:mod:`.cyclone` (plain Cyclone DDS, ROS 2 wire protocol) and :mod:`.rclpy_transport` (rclpy)."""

from .base import Client, Transport, TransportError


def create_transport(kind: str, node_name: str, **kw) -> Transport:
    """``kind``: ``"cyclone"``, ``"rclpy"``, ``"memory"`` (in-process, for unit tests) or ``"auto"`` (rclpy
    where it imports, else cyclone)."""
    if kind == "auto":
        try:
            import rclpy  # noqa: F401
            kind = "rclpy"
        except ImportError:
            kind = "cyclone"
    if kind == "cyclone":
        from .cyclone import CycloneNode
        return CycloneNode(node_name, **kw)
    if kind == "rclpy":
        from .rclpy_transport import RclpyNode
        return RclpyNode(node_name, **kw)
    if kind == "memory":
        from .memory import MemoryNode
        return MemoryNode(node_name, **kw)
    raise TransportError(f"unknown transport {kind!r} (use cyclone, rclpy, memory or auto)")


__all__ = ["Client", "Transport", "TransportError", "create_transport"]
