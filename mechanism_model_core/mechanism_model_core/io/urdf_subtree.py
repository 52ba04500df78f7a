"""The part of a URDF document below one link: a mobile robot's ``robot_description`` rooted at its body.

A model of a rover or walker carries its pose as a floating joint from the ground (the URDF export writes it
as a chain of six single-axis joints through ``<coordinate>_link`` frames). On a robot that pose belongs to
odometry or localization (REP-105: ``odom -> base``), so the description given to ``robot_state_publisher``,
``ros2_control_node`` and RViz starts at the body: :func:`urdf_subtree` keeps ``root`` and every link and joint
below it, and drops everything else (the ground, the floating chain, world-fixed frames). Materials and
``<ros2_control>`` or other top-level elements that are not links or joints are kept.
"""

from __future__ import annotations

from ..errors import MechanismModelError
from .safe_xml import parse_bytes


def urdf_subtree(urdf: str, root: str) -> str:
    """``urdf`` (text) cut to the tree below link ``root`` (included), which becomes the URDF's root link.
    Raises :class:`~mechanism_model_core.errors.MechanismModelError` when there is no such link."""
    from lxml import etree

    doc = parse_bytes(urdf, "URDF")
    links = {el.get("name"): el for el in doc.findall("link")}
    if root not in links:
        raise MechanismModelError(f"URDF has no link {root!r} to root the description at")
    children: dict[str, list] = {}
    for j in doc.findall("joint"):
        parent, child = j.find("parent"), j.find("child")
        if parent is not None and child is not None:
            children.setdefault(parent.get("link"), []).append((j, child.get("link")))
    keep_links, keep_joints, todo = {root}, set(), [root]
    while todo:
        for j, child in children.get(todo.pop(), ()):
            keep_joints.add(id(j))
            if child not in keep_links:
                keep_links.add(child)
                todo.append(child)
    for el in list(doc):
        if (el.tag == "link" and el.get("name") not in keep_links) or \
                (el.tag == "joint" and id(el) not in keep_joints):
            doc.remove(el)
    return etree.tostring(doc, pretty_print=True, xml_declaration=True, encoding="utf-8").decode("utf-8")


__all__ = ["urdf_subtree"]
