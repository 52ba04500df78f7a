"""ROS 2 parameter files (``ros__parameters`` YAML) for the Cyclone transport, read as rclpy reads them:
the section of the node's fully qualified name, its bare name, or the ``/**`` wildcard, in that order of
precedence (node-specific values override wildcard ones)."""

from __future__ import annotations

import yaml


def load_parameter_file(path: str, node_name: str, namespace: str = "/") -> dict:
    """``{parameter: value}`` for ``node_name`` from a ROS 2 parameter file; nested keys are joined with
    dots as in ROS (``ik.timeout``)."""
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a ROS parameter file is a mapping of node names")
    ns = namespace.rstrip("/")
    fq = f"{ns}/{node_name}" if ns else f"/{node_name}"
    out: dict = {}
    for key in ("/**", "**", node_name, fq.lstrip("/"), fq):
        section = data.get(key)
        if isinstance(section, dict) and isinstance(section.get("ros__parameters"), dict):
            out.update(_flatten(section["ros__parameters"]))
    return out


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def parse_override(text: str) -> tuple[str, object]:
    """``name:=value`` (as ``--ros-args -p``), the value read as YAML (``1.5``, ``true``, ``[a, b]``)."""
    if ":=" not in text:
        raise ValueError(f"parameter override {text!r} must look like name:=value")
    name, value = text.split(":=", 1)
    return name.strip(), yaml.safe_load(value)
