"""YAML read with line numbers: every mapping and sequence of the document remembers the 1-based line it
starts on (``.line``), so that the readers of YAML model files (motor groups, collision environments,
mobility descriptions) name the line of a bad entry. PyYAML's SafeLoader (no tags that construct objects),
the file read through :func:`~.safe_xml.read_limited` (size cap), and two bounds against hostile documents:

* nesting deeper than :data:`MAX_DEPTH` mappings/sequences is refused (PyYAML composes and constructs
  recursively; ~10 KB of ``[[[...`` would otherwise end in ``RecursionError``);
* a document whose aliases would expand to more than :data:`MAX_EXPANDED_NODES` nodes is refused (the
  "billion laughs" of YAML: 521 bytes of nested anchors give 1e9 heights once a reader walks them), as is
  an alias that refers to a node containing itself (a cycle no model file needs).
"""

from __future__ import annotations

import re

from ..data import SHARED
from ..errors import ModelFileError, UnsafeModelFileError
from .safe_xml import read_limited
from ..extras import install_hint

#: Deepest nesting of mappings and sequences a YAML model file may have (a height field needs 4).
MAX_DEPTH = 64
#: Most nodes a YAML document may have with every alias expanded (a 2000 x 2000 height field has ~4e6).
MAX_EXPANDED_NODES = 5_000_000


class LineDict(dict):
    """A YAML mapping; ``line``: where it starts in its file (1-based)."""
    line: int | None = None


class LineList(list):
    """A YAML sequence; ``line``: where it starts in its file (1-based)."""
    line: int | None = None


def line_of(obj, default=None):
    """The line a mapping or sequence of :func:`read_yaml_with_lines` starts on, else ``default``."""
    return getattr(obj, "line", None) or default


def _yaml(what: str, path: str):
    try:
        import yaml
    except ImportError:
        raise ModelFileError(f"reading {what} needs PyYAML: {install_hint('yaml')}", path) from None
    return yaml


def read_yaml_with_lines(path: str, what: str, limit: int | None = None):
    """The YAML document in ``path`` with :class:`LineDict` / :class:`LineList` for its mappings and
    sequences. ``what`` names the file's kind in the error when PyYAML is missing; invalid YAML is a
    :class:`ModelFileError` naming the file and line, a hostile one (too deep, alias expansion) an
    :class:`UnsafeModelFileError`. ``limit``: the file's size cap in bytes (default
    :data:`~.safe_xml.MAX_BYTES`)."""
    _yaml(what, path)
    return parse_yaml_with_lines(read_limited(path, limit), path, what)


def parse_yaml_with_lines(text, path: str = "<string>", what: str = "YAML"):
    """:func:`read_yaml_with_lines` for text already read (``path`` names it in errors)."""
    yaml = _yaml(what, path)
    try:
        return yaml.load(text, Loader=bounded_loader(yaml, lines=True))  # noqa: S506 -- a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        if getattr(exc, "hostile", False):
            raise UnsafeModelFileError(exc.problem, path, line) from None
        raise ModelFileError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}", path, line) from None


_EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


def bounded_loader(yaml, lines: bool = False):
    """A ``yaml.SafeLoader`` subclass with the depth and expansion bounds (for ``yaml.load(text, Loader=)``);
    with ``lines``, mappings and sequences are :class:`LineDict` / :class:`LineList`. A document over a
    bound raises a ``yaml.YAMLError`` (a ComposerError with ``hostile = True`` and the line's mark), so
    existing ``except yaml.YAMLError`` handlers report it."""
    loaders = SHARED.memo("io.yaml_loaders", 16)
    Loader = loaders.peek((id(yaml), lines))
    if Loader is not None:
        return Loader
    from yaml.composer import ComposerError
    from yaml.nodes import CollectionNode, MappingNode

    class HostileYAML(ComposerError):
        hostile = True

    def refuse(message, mark):
        raise HostileYAML(None, None, message, mark)

    class Loader(yaml.SafeLoader):
        _depth = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.events.SequenceStartEvent, yaml.events.MappingStartEvent):
                if self._depth >= MAX_DEPTH:
                    refuse(f"YAML nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark)
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def compose_document(self):
            node = super().compose_document()
            _check_expansion(node, CollectionNode, MappingNode, refuse)
            return node

    if lines:
        # YAML 1.2 floats without a dot (1e-3, 1E9): YAML 1.1 (PyYAML) reads them as strings, so a motor group
        # accepted 1e-3 (converted later) while an environment refused it; model files read them as numbers
        Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))

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
    return loaders.put((id(yaml), lines), Loader)


def _children(node, MappingNode):
    if isinstance(node, MappingNode):
        for k, v in node.value:
            yield k
            yield v
    else:
        yield from node.value


def _check_expansion(root, CollectionNode, MappingNode, refuse):
    """Refuse a composed document whose alias-expanded size exceeds :data:`MAX_EXPANDED_NODES`, or that
    has a cycle. Aliases are shared node objects, so each node's expanded size is counted once (memo by
    identity), iteratively (no recursion on hostile depth)."""
    if root is None:
        return
    size = {}                       # id(node) -> expanded size; absent = not finished
    on_path = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if not isinstance(node, CollectionNode):
            size[key] = 1
            continue
        if done:
            on_path.discard(key)
            total = 1 + sum(size[id(c)] for c in _children(node, MappingNode))
            if total > MAX_EXPANDED_NODES:
                refuse(f"YAML document has more than {MAX_EXPANDED_NODES} nodes with its aliases expanded",
                       node.start_mark)
            size[key] = total
            continue
        if key in size:
            continue
        if key in on_path:
            refuse("YAML alias refers to a node that contains it (a cycle)", node.start_mark)
        on_path.add(key)
        stack.append((node, True))
        for c in _children(node, MappingNode):
            if id(c) in on_path:
                refuse("YAML alias refers to a node that contains it (a cycle)", node.start_mark)
            if id(c) not in size:
                stack.append((c, False))
