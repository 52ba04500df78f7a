"""Every problem of a model file at once (``mechanism-model check``), not only the first.

CLARAty XML: every DTD violation; when the file matches the DTD, every element that fails to read (reading
goes on past each) and what building the whole finds. URDF: every bad joint and inertial, then structure
errors. D-H tables: every bad row. KinDSL: the first error (its reader stops there).
"""

from __future__ import annotations

import os

from ..errors import MechanismModelError, ModelFileError
from . import claraty_extensions, load_model
from .claraty_xml import DTD_PATH, claraty_xml_problems
from .dh import dh_table_problems
from .safe_xml import dtd_errors, parse_file, root_tag
from .urdf import urdf_problems


def check_model(path, xacro_args: dict | None = None):
    """``(problems, mechanism or None)`` for the model file ``path``; each problem a
    :class:`~mechanism_model_core.errors.ModelFileError` naming the file and line (``xacro_args``: for a
    ``.xacro`` file)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return [ModelFileError("no such file", path)], None
    try:
        if path.lower().endswith(claraty_extensions()) and not os.path.isdir(path):
            if root_tag(path) == "robot":       # read as urdfdom reads it (a URDF named .xml)

                return urdf_problems(path)
            root = parse_file(path)
            if root.tag == "Mechanism_Model":
                errors = dtd_errors(root, DTD_PATH)
                if errors:
                    return [ModelFileError(message, path, line) for line, message in errors], None
                return claraty_xml_problems(path)
            if root.tag == "robot":
                return urdf_problems(path)
        if path.lower().endswith(".urdf") and not os.path.isdir(path):
            return urdf_problems(path)
        if path.lower().endswith(".dh"):
            return dh_table_problems(path)
        if path.lower().endswith(".xacro"):
            return [], load_model(path, xacro_args=xacro_args)
        return [], load_model(path)
    except ModelFileError as exc:
        return [exc], None
    except MechanismModelError as exc:
        return [ModelFileError(str(exc), path)], None
