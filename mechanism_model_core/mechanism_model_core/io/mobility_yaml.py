"""Mobility YAML files: the mobility description of a wheeled mechanism
(:class:`~mechanism_model_core.locomotion.mobility.MobilitySpec`) in a file of its own (``models/README.md``,
"Mobility of the wheeled rovers"), read with PyYAML's safe loader through :mod:`.yaml_lines` (size, depth and
alias bounds; nothing is evaluated). A file ``<model file stem>_mobility.yaml`` beside a model file overrides
the model file's ``<Mobility>`` element: :func:`~mechanism_model_core.io.load_model` reads it into the
mechanism's metadata (:func:`with_mobility_file`), so that
:func:`~mechanism_model_core.locomotion.mobility.mobility_for` finds it. Errors are
:class:`~mechanism_model_core.locomotion.mobility.MobilityError` (a ``ModelFileError``) naming the file and,
for YAML syntax, the line.
"""

from __future__ import annotations

import os
from typing import Mapping

from ..errors import ModelFileError
from ..locomotion.mobility import MobilityError, MobilitySpec
from ..builder import build_mechanism
from ..model import Mechanism
from .yaml_lines import read_yaml_with_lines

__all__ = ["load_mobility", "mobility_file_for", "with_mobility_file"]


def load_mobility(path) -> MobilitySpec:
    """Read a mobility YAML file: its mapping, or ``{"mobility": mapping}``."""
    path = os.fspath(path)
    try:
        data = read_yaml_with_lines(path, "mobility files", limit=1 << 20)
    except ModelFileError as exc:
        raise MobilityError(exc.message, exc.file, exc.line) from None
    if isinstance(data, Mapping) and "mobility" in data and len(data) == 1:
        data = data["mobility"]
    return MobilitySpec.from_dict(data, source=path)


def mobility_file_for(model_file) -> str | None:
    """``<model file stem>_mobility.yaml`` beside ``model_file`` when it exists, else None."""
    if not model_file:
        return None
    cand = os.path.splitext(os.fspath(model_file))[0] + "_mobility.yaml"
    return cand if os.path.isfile(cand) else None


def with_mobility_file(mechanism: Mechanism) -> Mechanism:
    """``mechanism`` with the mobility YAML beside its model file (if any) as its ``metadata["mobility"]``
    (``metadata["mobility_source"]``: the YAML file, which later errors name), replacing a ``<Mobility>``
    element of the model file; the mechanism itself when there is no such file."""
    f = mobility_file_for(mechanism.source)
    if f is None:
        return mechanism
    meta = dict(mechanism.metadata)
    meta["mobility"] = load_mobility(f).to_dict()
    meta["mobility_source"] = f
    meta.pop("mobility_lines", None)
    return build_mechanism(mechanism.name, list(mechanism.bodies), mechanism.ground, mechanism.source, meta)
