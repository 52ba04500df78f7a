"""Model file formats. Every reader builds through :class:`~mechanism_model_core.builder.MechanismBuilder`
and every writer reads a :class:`~mechanism_model_core.model.Mechanism`, so nothing downstream knows which
format a model came from.

:func:`load_model` picks the reader from the file's extension (or its root element for ``.xml``);
:func:`save_model` picks the writer from the extension: ``.xml`` (CLARAty XML) or ``.urdf``. Loading a saved
file gives the same forward kinematics for every frame.
"""

from __future__ import annotations

import os

from ..errors import ModelFileError
from .environment_file import load_environment, load_terrain  # noqa: F401 (public: the environment file)
from .mobility_yaml import with_mobility_file
from .limits import using
from .safe_xml import root_tag
from .srdf import read_srdf  # noqa: F401 (public: SRDF collision matrices)

#: extension -> (module, function); modules are imported on first use.
_READERS = {
    ".xml": ("claraty_xml", "load_claraty_xml"),
    ".mm": ("claraty_xml", "load_claraty_xml"),
    ".urdf": ("urdf", "load_urdf"),
    ".kindsl": ("kindsl", "load_kindsl"),
    ".dh": ("dh", "load_dh_table"),
    ".xacro": ("xacro_file", "load_xacro"),
}


def model_extensions() -> tuple:
    """Every model-file extension the core reads (``".xml"``, ``".urdf"``, ...): the one list, used by
    :func:`load_model`, the library listing and the command line."""
    return tuple(_READERS)


def claraty_extensions() -> tuple:
    """The extensions read as CLARAty XML (validated against the DTD)."""
    return tuple(ext for ext, (module, _) in _READERS.items() if module == "claraty_xml")


def register_reader(extension: str, module: str, function: str) -> None:
    """Map a file extension to ``mechanism_model_core.io.<module>.<function>(path, **options)``."""
    _READERS[extension.lower()] = (module, function)


def load_model(path, limits=None, **options):
    """Load a model file into a :class:`~mechanism_model_core.model.Mechanism`.

    The format follows the extension: ``.xml`` CLARAty XML (or URDF when the root element is ``robot``),
    ``.urdf``, ``.kindsl``, ``.dh``, ``.xacro`` (expanded by the ``xacro`` package, ``xacro_args={name:
    value}``, then read as URDF: :mod:`.xacro_file`). A mobility YAML ``<stem>_mobility.yaml`` beside the file
    becomes the mechanism's mobility description (:mod:`.mobility_yaml`). Errors name the file and line
    (:class:`ModelFileError`). ``limits``
    (a :class:`~mechanism_model_core.io.limits.ReadLimits`) overrides the caps on bodies, attachments and
    include depth for this read.
    """
    import importlib

    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError("no such file", path)
    if os.path.isdir(path):
        raise ModelFileError("is a directory, not a model file", path)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".xml":
        if root_tag(path) == "robot":
            ext = ".urdf"
    if ext not in _READERS:
        raise ModelFileError(f"unknown model format {ext!r} (known: {', '.join(sorted(_READERS))})", path)
    module, function = _READERS[ext]
    try:
        mod = importlib.import_module(f"{__name__}.{module}")
    except ModuleNotFoundError as exc:
        raise ModelFileError(f"no reader for {ext!r} files in this version ({exc.name})", path) from None
    if limits is None:
        return with_mobility_file(getattr(mod, function)(path, **options))

    with using(limits):
        return with_mobility_file(getattr(mod, function)(path, **options))


#: extension -> (module, function) of the writers; ``function(mechanism, path)``.
_WRITERS = {
    ".xml": ("claraty_xml", "save_claraty_xml"),
    ".mm": ("claraty_xml", "save_claraty_xml"),
    ".urdf": ("urdf", "save_urdf"),
    ".kindsl": ("kindsl_writer", "save_kindsl"),
}


def save_model(mechanism, path, format: str | None = None, **options) -> None:
    """Save a whole (assembled) mechanism to one file (CLARAty 6.13).

    The format follows ``format`` (``"xml"``/``"claraty"`` or ``"urdf"``) or the extension of ``path``:
    ``.xml`` writes CLARAty Mechanism Model XML (everything the model holds), ``.urdf`` writes URDF for
    ``robot_description``, ``.kindsl`` writes RobCoGen KinDSL (what it can hold: :mod:`.kindsl_writer`).
    ``options`` go to the writer (URDF: ``floating_base="chain"|"floating"|"root"``, :func:`.urdf.to_urdf`).
    """
    import importlib

    path = os.fspath(path)
    if format is not None:
        key = {"xml": ".xml", "claraty": ".xml", "claraty_xml": ".xml", "urdf": ".urdf",
               "kindsl": ".kindsl"}.get(format.lower())
        if key is None:
            raise ModelFileError(f"unknown output format {format!r} (known: xml, urdf, kindsl)", path)
    else:
        key = os.path.splitext(path)[1].lower()
        if key not in _WRITERS:
            raise ModelFileError(f"cannot save as {key or 'a file without extension'!r} (known: "
                                 f"{', '.join(sorted(_WRITERS))})", path)
    module, function = _WRITERS[key]
    getattr(importlib.import_module(f"{__name__}.{module}"), function)(mechanism, path, **options)

