"""Loading the model a node serves: a ``robot_description`` URDF string (as robot_state_publisher takes it,
e.g. from xacro in a launch file), the live ``robot_description`` topic of a running bringup (reliable,
transient local: what MoveIt and RViz read), else a file path or a name in the robot library (default: the
library's default model)."""

from __future__ import annotations

from mechanism_model_core import load_model
from mechanism_model_core.library import default_model_path, model_path
from mechanism_model_core.io.safe_xml import parse_bytes
from mechanism_model_core.io.urdf import loads_urdf


def resolve_model_path(model: str | None) -> str:
    if not model:
        return default_model_path()
    return model_path(model)


def load_served_model(model: str | None):
    """``(mechanism, path)``; raises the core's ModelFileError with file and line on a bad file."""
    path = resolve_model_path(model)
    return load_model(path), path


def urdf_text_for(mechanism, text: str) -> str | None:
    """``text`` (a URDF document) if it can be republished verbatim on ``robot_description`` for
    ``mechanism``: every URDF link is a frame the state publisher puts on TF, so RViz finds each link
    (and keeps the file's meshes and materials, which the model's own URDF export does not carry).
    ``None`` otherwise."""
    try:
        root = parse_bytes(text, "robot_description")
    except Exception:
        return None
    if root.tag != "robot":
        return None
    links = [el.get("name") for el in root.findall("link")]
    # the URDF export's intermediate links of a multi-DOF joint (<coordinate>_link) are on TF too
    steps = {f"{c}_link" for j in mechanism.joints if j.dof > 1 for c in j.coordinate_names}
    if not links or not all(name and (mechanism.has_frame(name) or name in steps) for name in links):
        return None
    return text if isinstance(text, str) else text.decode("utf-8")


def load_robot_description(text: str):
    """``(mechanism, URDF text)`` of a ``robot_description`` parameter."""
    return loads_urdf(text, name="robot_description parameter"), text


def load_robot_description_topic(text: str, topic: str):
    """``(mechanism, URDF text)`` of a description received on ``topic`` (errors name the topic and line)."""
    return loads_urdf(text, name=f"robot_description topic {topic}"), text
