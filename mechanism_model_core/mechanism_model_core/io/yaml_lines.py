"""YAML read with line numbers: every mapping and sequence of the document remembers the 1-based line it
starts on (``.line``), so that the readers of YAML model files (motor groups, collision environments) name
the line of a bad entry. PyYAML's SafeLoader (no tags that construct objects), the file read through
:func:`~.safe_xml.read_limited` (size cap)."""

from __future__ import annotations

from ..errors import ModelFileError
from .safe_xml import read_limited


class LineDict(dict):
    """A YAML mapping; ``line``: where it starts in its file (1-based)."""
    line: int | None = None


class LineList(list):
    """A YAML sequence; ``line``: where it starts in its file (1-based)."""
    line: int | None = None


def line_of(obj, default=None):
    """The line a mapping or sequence of :func:`read_yaml_with_lines` starts on, else ``default``."""
    return getattr(obj, "line", None) or default


def read_yaml_with_lines(path: str, what: str):
    """The YAML document in ``path`` with :class:`LineDict` / :class:`LineList` for its mappings and
    sequences. ``what`` names the file's kind in the error when PyYAML is missing; invalid YAML is a
    :class:`ModelFileError` naming the file and line."""
    try:
        import yaml
    except ImportError:
        raise ModelFileError(f"reading {what} needs PyYAML: pip install 'mechanism_model_core[yaml]'",
                             path) from None

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node):
        d = LineDict(loader.construct_mapping(node, deep=True))
        d.line = node.start_mark.line + 1
        return d

    def sequence(loader, node):
        s = LineList(loader.construct_sequence(node, deep=True))
        s.line = node.start_mark.line + 1
        return s

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, sequence)
    text = read_limited(path)
    try:
        return yaml.load(text, Loader=Loader)   # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ModelFileError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}", path,
                             mark.line + 1 if mark else None) from None
