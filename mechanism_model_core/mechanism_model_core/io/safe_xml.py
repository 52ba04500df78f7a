"""Parsing XML model files safely with lxml.

Model files come from users and from the network (``robot_description``). The parser here:

* refuses files larger than :data:`MAX_BYTES` before reading them;
* never fetches anything: no network, no external DTD, no external entities;
* refuses any document whose DOCTYPE declares entities (the "billion laughs" family and XXE) -- model files
  have no use for them;
* reports every problem as :class:`~mechanism_model_core.errors.ModelFileError` with the file and line.
"""

from __future__ import annotations

import os

from ..errors import ModelFileError, UnsafeModelFileError

MAX_BYTES = 16 * 1024 * 1024


def _parser():
    from lxml import etree

    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                           huge_tree=False, remove_comments=False, remove_pis=True)


def read_limited(path, limit: int | None = None) -> bytes:
    """The bytes of ``path``, refusing files over ``limit`` bytes (default :data:`MAX_BYTES`) before
    reading them. Every model-file reader goes through here."""
    path = os.fspath(path)
    limit = MAX_BYTES if limit is None else limit
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise ModelFileError(f"cannot read file: {exc.strerror}", path) from None
    if size > limit:
        raise UnsafeModelFileError(f"file is {size} bytes, more than the {limit}-byte limit", path)
    try:
        with open(path, "rb") as fh:
            return fh.read(limit + 1)
    except OSError as exc:      # a directory, no permission
        raise ModelFileError(f"cannot read file: {exc.strerror}", path) from None


def parse_file(path: str, limit: int | None = None):
    """Parse ``path`` and return the lxml root element; raises ModelFileError / UnsafeModelFileError."""
    return parse_bytes(read_limited(path, limit), os.fspath(path))


def parse_bytes(data: bytes | str, name: str = "<string>"):
    """Parse XML text (bytes or str) with the same protections; ``name`` is used in error messages."""
    from lxml import etree

    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > MAX_BYTES:
        raise UnsafeModelFileError(f"document is {len(data)} bytes, more than the {MAX_BYTES}-byte limit",
                                   name)
    _refuse_entity_declarations(data, name)
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        line = exc.position[0] if exc.position else exc.lineno
        col = exc.position[1] if exc.position else None
        raise ModelFileError(f"not well-formed XML: {exc.msg}", name, line, col) from None
    tree = root.getroottree()
    dtd = tree.docinfo.internalDTD
    if dtd is not None:
        if any(True for _ in dtd.iterentities()):
            raise UnsafeModelFileError("the DOCTYPE declares entities; model files may not", name, 1)
    for el in root.iter():
        if isinstance(el, etree._Entity):
            raise UnsafeModelFileError(f"entity reference {el.text} is not allowed", name, el.sourceline)
    return root


def _refuse_entity_declarations(data: bytes, name: str) -> None:
    head = data[:65536]
    idx = head.find(b"<!ENTITY")
    if idx >= 0 and b"<!DOCTYPE" in head[:idx]:
        line = head[:idx].count(b"\n") + 1
        raise UnsafeModelFileError("the DOCTYPE declares entities (entity expansion and external entities "
                                   "are refused)", name, line)


def root_tag(path: str) -> str:
    """The root element's tag of an XML file (parsed safely)."""
    return parse_file(path).tag


def dtd_errors(root, dtd_path: str) -> list:
    """Every violation of the DTD at ``dtd_path`` by the parsed document ``root``, as ``(line, message)``
    pairs (empty when it is valid)."""
    from lxml import etree

    dtd = etree.DTD(dtd_path)
    if dtd.validate(root):
        return []
    return [(e.line, e.message) for e in dtd.error_log.filter_from_errors()]


def validate_with_dtd(root, dtd_path: str, name: str) -> None:
    """Validate ``root`` against the DTD at ``dtd_path``; the first errors go into one ModelFileError."""
    errors = dtd_errors(root, dtd_path)
    if not errors:
        return
    (line, message), rest = errors[0], errors[1:]
    more = "" if not rest else f" (and {len(rest)} more: " + "; ".join(
        f"line {ln}: {msg}" for ln, msg in rest[:3]) + ")"
    raise ModelFileError(f"does not match the mechanism model DTD: {message}{more}", name, line)
