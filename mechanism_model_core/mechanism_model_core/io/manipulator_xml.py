"""``<Manipulator_Model>`` files (CLARAty 11.5): one chain of a mechanism as an arm or a mast
(:class:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel` or a library adaptation of
:mod:`~mechanism_model_core.locomotion.presets`, named by ``kind``) -- the model file, base, tools, joints and
acceleration limits::

    <Manipulator_Model name="arm" kind="R8ArmModel" mechanism="rocky8" base="arm_mount" tool="arm_tool"
                       model="/path/rocky8_rover.xml">
      <Tool frame="arm_tool"/>
      <Joint name="arm_yaw" amax="1.0"/> ...
    </Manipulator_Model>

Read through :mod:`.safe_xml`; errors are :class:`~mechanism_model_core.errors.ModelFileError` with file and
line.
"""

from __future__ import annotations

import math
import os

from lxml import etree

from ..errors import MechanismModelError, ModelFileError
from ..locomotion.manipulator import ManipulatorModel
from ..locomotion.presets import MANIPULATOR_KINDS
from ..model import Mechanism
from . import load_model
from .safe_xml import parse_bytes, parse_file

__all__ = ["load_manipulator", "manipulator_to_xml", "model_attribute_path", "save_manipulator"]


def manipulator_to_xml(arm: ManipulatorModel) -> str:
    """A ``<Manipulator_Model>`` document for ``arm`` (its :meth:`~ManipulatorModel.description`)."""
    d = arm.description()
    root = etree.Element("Manipulator_Model", name=d["name"], kind=d["kind"], mechanism=d["mechanism"],
                         base=d["base"], tool=d["tool"])
    if d["model"]:
        root.set("model", str(d["model"]))
    for t in d["tools"]:
        etree.SubElement(root, "Tool", frame=t)
    for k, jn in enumerate(d["joints"]):
        el = etree.SubElement(root, "Joint", name=jn)
        if d["acceleration_limits"] is not None:
            el.set("amax", repr(float(d["acceleration_limits"][k])))
    return etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="US-ASCII").decode()


def save_manipulator(arm: ManipulatorModel, path) -> None:
    """Write :func:`manipulator_to_xml` of ``arm`` to ``path``."""
    with open(path, "w", encoding="ascii") as f:
        f.write(manipulator_to_xml(arm))


def model_attribute_path(src: str, description_file=None) -> str:
    """The model file a description's ``model`` attribute names: relative paths are relative to the
    description file (when read from one) if that file exists there, else to the working directory. (A
    library model is named by its path: ``mechanism_model_core.library.model_path``.)"""
    if description_file is not None and not os.path.isabs(src):
        cand = os.path.join(os.path.dirname(os.path.abspath(os.fspath(description_file))), src)
        if os.path.exists(cand):
            return cand
    return src


def load_manipulator(path_or_xml, mechanism: Mechanism | None = None) -> ManipulatorModel:
    """A manipulator from a ``<Manipulator_Model>`` file written by :func:`save_manipulator` (or its text).
    The mechanism is ``mechanism`` when given (its name must match), else loaded from the ``model`` attribute
    (:func:`model_attribute_path`). Malformed files raise :class:`ModelFileError` naming the file and line."""
    is_path = isinstance(path_or_xml, (str, os.PathLike)) and not str(path_or_xml).lstrip().startswith("<")
    name = str(path_or_xml) if is_path else "<string>"
    root = parse_file(str(path_or_xml)) if is_path else parse_bytes(path_or_xml)
    if root.tag != "Manipulator_Model":
        raise ModelFileError(f"expected <Manipulator_Model>, found <{root.tag}>", name, root.sourceline)
    for attr in ("name", "base", "tool", "mechanism"):
        if not root.get(attr):
            raise ModelFileError(f"<Manipulator_Model> needs a {attr!r} attribute", name, root.sourceline)
    kind = root.get("kind", "ManipulatorModel")
    cls = MANIPULATOR_KINDS.get(kind)
    if cls is None:
        raise ModelFileError(f"unknown manipulator kind {kind!r}; known: {sorted(MANIPULATOR_KINDS)}", name, root.sourceline)
    if mechanism is None:
        src = root.get("model")
        if not src:
            raise ModelFileError("no mechanism given and no 'model' attribute to load it from", name,
                                 root.sourceline)
        mechanism = load_model(model_attribute_path(src, path_or_xml if is_path else None))
    if mechanism.name != root.get("mechanism"):
        raise ModelFileError(f"the file describes a manipulator of {root.get('mechanism')!r}, not of "
                             f"{mechanism.name!r}", name, root.sourceline)
    tools = [el.get("frame") for el in root.findall("Tool")]
    joints = root.findall("Joint")
    amax = None
    if joints and all(el.get("amax") is not None for el in joints):
        try:
            amax = [float(el.get("amax")) for el in joints]
        except ValueError:
            bad = next(el for el in joints if not _is_float(el.get("amax")))
            raise ModelFileError(f"amax={bad.get('amax')!r} is not a number", name, bad.sourceline) from None
        if not all(math.isfinite(a) and a > 0 for a in amax):
            raise ModelFileError("acceleration limits must be finite and positive", name, joints[0].sourceline)
    try:
        kw = dict(tool=root.get("tool"), base=root.get("base"), name=root.get("name"), acceleration_limits=amax)
        if cls is ManipulatorModel:
            kw["tools"] = tools or None
        arm = cls(mechanism, **kw)
    except MechanismModelError as e:
        raise ModelFileError(str(e), name, root.sourceline) from None
    listed = [el.get("name") for el in joints]
    if listed and listed != list(arm.joint_names):
        raise ModelFileError(f"the chain's joints are {list(arm.joint_names)}, the file lists {listed}", name,
                             joints[0].sourceline)
    return arm


def _is_float(s) -> bool:
    try:
        float(s)
        return True
    except (TypeError, ValueError):
        return False
