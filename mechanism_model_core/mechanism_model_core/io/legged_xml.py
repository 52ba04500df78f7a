"""``<Legged_Locomotor_Model>`` files (CLARAty 11.5): a walker's model file, body, legs and standing joint
values (:meth:`~mechanism_model_core.locomotion.legged.LeggedLocomotorModel.description`)::

    <Legged_Locomotor_Model mechanism="lemur" body="body" model="/path/lemur_hexapod.xml">
      <Leg name="leg1" foot="leg1_foot"/> ...
      <Stand joint="leg1_hip" value="0.0"/> ...
    </Legged_Locomotor_Model>

Read through :mod:`.safe_xml`; errors are :class:`~mechanism_model_core.errors.ModelFileError` with file and
line.
"""

from __future__ import annotations

import math
import os

from lxml import etree

from ..errors import MechanismModelError, ModelFileError
from ..locomotion.legged import LeggedLocomotorModel
from ..model import Mechanism
from . import load_model
from .manipulator_xml import model_attribute_path
from .safe_xml import parse_bytes, parse_file

__all__ = ["legged_to_xml", "load_legged", "save_legged"]


def legged_to_xml(walker: LeggedLocomotorModel) -> str:
    """A ``<Legged_Locomotor_Model>`` document for ``walker``; :func:`load_legged` reads it back."""
    d = walker.description()
    root = etree.Element("Legged_Locomotor_Model", mechanism=walker.mechanism.name, body=d["body"])
    if walker.mechanism.source:
        root.set("model", str(walker.mechanism.source))
    for name, foot in d["feet"].items():
        etree.SubElement(root, "Leg", name=name, foot=foot)
    for joint, value in d["stand"].items():
        etree.SubElement(root, "Stand", joint=joint, value=repr(value))
    return etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="US-ASCII").decode()


def save_legged(walker: LeggedLocomotorModel, path) -> None:
    """Write :func:`legged_to_xml` of ``walker`` to ``path``."""
    with open(path, "w", encoding="ascii") as f:
        f.write(legged_to_xml(walker))


def load_legged(path_or_xml, mechanism: Mechanism | None = None) -> "LeggedLocomotorModel":
    """A walker from a ``<Legged_Locomotor_Model>`` file written by :func:`save_legged` (or its text); the
    mechanism is ``mechanism`` when given (its name must match), else loaded from the ``model`` attribute (a
    path, :func:`~.manipulator_xml.model_attribute_path`). Malformed files raise
    :class:`~mechanism_model_core.errors.ModelFileError` naming the file and line."""
    is_path = isinstance(path_or_xml, (str, os.PathLike)) and not str(path_or_xml).lstrip().startswith("<")
    name = str(path_or_xml) if is_path else "<string>"
    root = parse_file(str(path_or_xml)) if is_path else parse_bytes(path_or_xml)
    if root.tag != "Legged_Locomotor_Model":
        raise ModelFileError(f"expected <Legged_Locomotor_Model>, found <{root.tag}>", name, root.sourceline)
    if mechanism is None:
        src = root.get("model")
        if not src:
            raise ModelFileError("no mechanism given and no 'model' attribute to load it from", name, root.sourceline)
        mechanism = load_model(model_attribute_path(src, path_or_xml if is_path else None))
    if root.get("mechanism") and mechanism.name != root.get("mechanism"):
        raise ModelFileError(f"the file describes a walker of {root.get('mechanism')!r}, not of {mechanism.name!r}",
                             name, root.sourceline)
    feet, stand = {}, {}
    for el in root.findall("Leg"):
        if not el.get("name") or not el.get("foot"):
            raise ModelFileError("<Leg> needs 'name' and 'foot'", name, el.sourceline)
        feet[el.get("name")] = el.get("foot")
    for el in root.findall("Stand"):
        try:
            v = float(el.get("value"))
        except (TypeError, ValueError):
            raise ModelFileError(f"<Stand joint={el.get('joint')!r}>: value {el.get('value')!r} is not a number",
                                 name, el.sourceline) from None
        if not math.isfinite(v) or not el.get("joint"):
            raise ModelFileError("<Stand> needs a joint and a finite value", name, el.sourceline)
        stand[el.get("joint")] = v
    try:
        return LeggedLocomotorModel.from_description(
            mechanism, {"body": root.get("body"), "feet": feet or None, "stand": stand or None})
    except MechanismModelError as e:
        raise ModelFileError(str(e), name, root.sourceline) from None
