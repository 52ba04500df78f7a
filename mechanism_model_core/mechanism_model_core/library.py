"""The robot library: model files shipped with the package (the repository's top-level ``models/``).

In a source checkout ``mechanism_model_core/models`` is a link to ``models/``; an installed package carries
a copy. ``model_path("claraty_samples/sample1.xml")`` finds a file in either.
"""

from __future__ import annotations

import os

from .errors import ModelFileError
from .io import model_extensions
from .io.safe_xml import parse_file

#: The model ``mechanism-model`` and the ROS nodes use when none is given.
DEFAULT_MODEL = "rocky8/rocky8_rover.xml"


def models_dir() -> str:
    """Directory of the shipped robot library."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


def model_path(name: str) -> str:
    """Path of a shipped model file, e.g. ``"claraty_samples/sample1.xml"``; existing paths pass through."""
    if os.path.exists(name):
        return name
    path = os.path.join(models_dir(), name)
    if not os.path.exists(path):
        close = closest_models(name)
        hint = f"; did you mean {', '.join(close)}?" if close else "; 'mechanism-model models' lists them"
        raise ModelFileError(f"no such file, and no such model in the library (looked in {models_dir()})"
                             f"{hint}", name)
    return path


def closest_models(name: str, n: int = 3) -> list[str]:
    """Library paths that look most like ``name`` (a mistyped file or library path), best first."""
    import difflib

    models = list_models()
    by_path = difflib.get_close_matches(name, models, n=n, cutoff=0.6)
    base = os.path.basename(name)
    by_base = [m for b in difflib.get_close_matches(base, [os.path.basename(m) for m in models], n=n, cutoff=0.6)
               for m in models if os.path.basename(m) == b]
    folder = name.split("/", 1)[0] if "/" in name else None
    in_folder = [m for m in models if folder and m.startswith(folder + "/")]
    out = []
    for m in by_path + by_base + (in_folder if not (by_path or by_base) else []):
        if m not in out:
            out.append(m)
    return out[:n]


def default_model_path() -> str:
    return model_path(DEFAULT_MODEL)


def model_summary(name: str, width: int = 100) -> str:
    """A library XML file's own one-line description: the first clause of its leading comment (up to the
    first ``". "`` or ``": "``), shortened to ``width`` characters; ``""`` for other files."""
    path = model_path(name)
    if not path.lower().endswith(".xml"):
        return ""

    root = parse_file(path)
    comments = [c.text for c in reversed(list(root.itersiblings(preceding=True))) if c.tag is not None
                and not isinstance(c.tag, str)]
    if not comments or not comments[0]:
        return ""
    text = " ".join(comments[0].split())
    if ": " in text.split(" ", 1)[0] + " ":  # "file.xml: what it is ..."
        text = text.split(": ", 1)[1]
    ends = [i for i in (text.find(". "), text.find(": ")) if i >= 0]
    if ends:
        text = text[:min(ends)]
    text = text.rstrip(".")
    if len(text) > width:
        text = text[:width - 3].rsplit(" ", 1)[0] + "..."
    return text


def list_models() -> list[str]:
    """Relative paths of every model file in the library."""
    extensions = model_extensions()
    out = []
    root = models_dir()
    for dirpath, _, files in os.walk(root, followlinks=True):
        for f in sorted(files):
            if f.lower().endswith(extensions):
                out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(out)
