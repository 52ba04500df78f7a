"""Parsing XML model files safely with lxml.

Model files come from users and from the network (``robot_description``). The parser here:

* refuses files larger than :data:`MAX_BYTES` before reading them;
* never fetches anything: no network, no external DTD, no external entities;
* refuses any document whose DOCTYPE declares entities (the "billion laughs" family and XXE) -- model files
  have no use for them;
* reports every problem as :class:`~mechanism_model_core.errors.ModelFileError` with the file and line.

``tolerant=True`` (the URDF reader) reads what urdfdom's TinyXML2 reads, and says so through ``warn(line,
message)``: a comment that contains ``--`` (not allowed in XML comments; common in the commented-out
copies of a robot at the end of published files) is read as a comment; an element or attribute whose
namespace prefix is not declared (``<sensor:camera>`` in an old ``<gazebo>`` block: TinyXML2 knows no
namespaces) is read under a placeholder namespace, so a URDF reader ignores it as urdfdom ignores unknown
elements; content after the root element (a second root element, a commented copy that is not
well-formed) is ignored, as urdfdom reads the first ``<robot>`` only. The size limit, the refusal of
entities and DTDs that declare them, and every other well-formedness error stay.
"""

from __future__ import annotations

import os
import re

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


def parse_file(path: str, limit: int | None = None, tolerant: bool = False, warn=None):
    """Parse ``path`` and return the lxml root element; raises ModelFileError / UnsafeModelFileError.
    ``tolerant`` and ``warn`` as in the module docstring."""
    return parse_bytes(read_limited(path, limit), os.fspath(path), tolerant=tolerant, warn=warn)


#: placeholder namespace of undeclared prefixes read in tolerant mode (``<prefix>`` appended)
UNDECLARED_NAMESPACE = "urn:mechanism-model:undeclared-prefix:"
_MAX_UNDECLARED = 64
_UNDECLARED = re.compile(r"Namespace prefix (\S+) (?:on|for) (\S+)")


def parse_bytes(data: bytes | str, name: str = "<string>", tolerant: bool = False, warn=None):
    """Parse XML text (bytes or str) with the same protections; ``name`` is used in error messages.
    ``tolerant`` and ``warn`` as in the module docstring."""
    from lxml import etree

    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > MAX_BYTES:
        raise UnsafeModelFileError(f"document is {len(data)} bytes, more than the {MAX_BYTES}-byte limit",
                                   name)
    _refuse_entity_declarations(data, name)
    warn = warn or (lambda line, message: None)
    if tolerant and not data.startswith((b"\xff\xfe", b"\xfe\xff")):     # ASCII-compatible encodings
        data = _comments_as_tinyxml_reads_them(data, warn)
    declared: list = []
    while True:
        try:
            root = etree.fromstring(data, _parser())
            break
        except etree.XMLSyntaxError as exc:
            line = exc.position[0] if exc.position else exc.lineno
            col = exc.position[1] if exc.position else None
            fixed = None
            if tolerant:
                fixed = _tolerate(data, exc.msg, line, col, declared, warn)
            if fixed is None:
                raise ModelFileError(f"not well-formed XML: {exc.msg}", name, line, col) from None
            data = fixed
    tree = root.getroottree()
    dtd = tree.docinfo.internalDTD
    if dtd is not None:
        if any(True for _ in dtd.iterentities()):
            raise UnsafeModelFileError("the DOCTYPE declares entities; model files may not", name, 1)
    for el in root.iter():
        if isinstance(el, etree._Entity):
            raise UnsafeModelFileError(f"entity reference {el.text} is not allowed", name, el.sourceline)
    return root


def _line_offset(data: bytes, line: int) -> int:
    """The byte offset of the start of 1-based ``line``."""
    off = 0
    for _ in range(line - 1):
        off = data.index(b"\n", off) + 1
    return off


def _tolerate(data: bytes, msg: str, line, col, declared: list, warn):
    """The document with what urdfdom would have read past (see the module docstring), or None."""
    hit = _UNDECLARED.match(msg or "")
    if hit and len(declared) < _MAX_UNDECLARED and hit.group(1) not in declared:
        root = _root_start(data)
        if root is None or not _PREFIX.fullmatch(hit.group(1)):
            return None
        # every undeclared prefix of the document at once (one more parse, not one per prefix)
        found = {hit.group(1): (line, f"{hit.group(1)}:{hit.group(2)}")}
        for prefix, where in _prefixes_in_markup(data).items():
            found.setdefault(prefix, where)
        decls = b""
        for prefix, (at, example) in sorted(found.items(), key=lambda kv: kv[1][0] or 0):
            if prefix in declared or prefix == "xml" or len(declared) >= _MAX_UNDECLARED:
                continue
            if re.search(rb"xmlns:" + re.escape(prefix.encode()) + rb"\s*=", data):
                continue
            declared.append(prefix)
            warn(at, f"namespace prefix {prefix!r} (of {example}) is not declared; read as urdfdom reads it: "
                     f"an element it does not know, ignored")
            decls += f' xmlns:{prefix}="{UNDECLARED_NAMESPACE}{prefix}"'.encode()
        if not decls:
            return None
        return data[:root] + decls + data[root:]
    if (msg or "").startswith("Extra content at the end of the document") and line and col:
        try:
            cut = _line_offset(data, line) + max(col - 1, 0)
        except ValueError:
            return None
        if data[cut:cut + 1] != b"<" or cut <= 0:
            cut = data.rfind(b">", 0, cut) + 1
            if cut <= 0:
                return None
        warn(line, "content after the root element is ignored (urdfdom reads the first <robot> element "
                   "only)")
        return data[:cut]
    return None


_PREFIX = re.compile(r"[A-Za-z_][\w.-]*")
_PREFIXED_NAME = re.compile(rb"<([A-Za-z_][\w.-]*):([\w.-]+)|\s([A-Za-z_][\w.-]*):([\w.-]+)\s*=")


def _prefixes_in_markup(data: bytes) -> dict:
    """``{prefix: (line, "prefix:name")}`` of the first use of each prefix on an element or attribute name,
    outside comments, CDATA sections and processing instructions."""
    out: dict = {}
    i, n = 0, len(data)
    while i < n:
        j = data.find(b"<", i)
        if j < 0:
            break
        for opener, closer in ((b"<!--", b"-->"), (b"<![CDATA[", b"]]>"), (b"<?", b"?>")):
            if data.startswith(opener, j):
                e = data.find(closer, j + len(opener))
                i = n if e < 0 else e + len(closer)
                break
        else:
            e = data.find(b">", j)
            tag = data[j:n if e < 0 else e + 1]
            for m in _PREFIXED_NAME.finditer(tag):
                prefix = (m.group(1) or m.group(3)).decode("ascii", "replace")
                if prefix not in out and prefix != "xmlns":
                    name = (m.group(2) or m.group(4)).decode("ascii", "replace")
                    out[prefix] = (data.count(b"\n", 0, j + m.start()) + 1, f"{prefix}:{name}")
            i = n if e < 0 else e + 1
    return out


def _root_start(data: bytes):
    """The offset just after the root element's tag name in its start tag, or None."""
    i = 0
    while True:
        i = data.find(b"<", i)
        if i < 0:
            return None
        if data.startswith(b"<!--", i):
            j = data.find(b"-->", i + 4)
            if j < 0:
                return None
            i = j + 3
        elif data.startswith(b"<?", i) or data.startswith(b"<!", i):
            j = data.find(b">", i)
            if j < 0:
                return None
            i = j + 1
        else:
            m = re.compile(rb"<[^\s/>]+").match(data, i)
            return m.end() if m else None


def _comments_as_tinyxml_reads_them(data: bytes, warn) -> bytes:
    """Every comment whose text contains ``--`` (or ends with ``-``) with those hyphens spaced apart, so
    that it stays a comment; line numbers are unchanged. CDATA sections are left alone."""
    out, i, first, count = [], 0, None, 0
    while True:
        j = data.find(b"<!--", i)
        k = data.find(b"<![CDATA[", i)
        if k >= 0 and (j < 0 or k < j):
            e = data.find(b"]]>", k)
            if e < 0:
                break
            out.append(data[i:e + 3])
            i = e + 3
            continue
        if j < 0:
            break
        e = data.find(b"-->", j + 4)
        if e < 0:
            break
        text = data[j + 4:e]
        if b"--" in text or text.endswith(b"-"):
            while b"--" in text:
                text = text.replace(b"--", b"- -")
            if text.endswith(b"-"):
                text += b" "
            count += 1
            if first is None:
                first = data.count(b"\n", 0, j) + 1
        out.append(data[i:j + 4] + text + b"-->")
        i = e + 3
    if not count:
        return data
    out.append(data[i:])
    what = "a comment contains" if count == 1 else f"{count} comments (the first here) contain"
    warn(first, f"{what} '--', which XML does not allow in comments; read as comments, as urdfdom reads them")
    return b"".join(out)


def _refuse_entity_declarations(data: bytes, name: str) -> None:
    head = data[:65536]
    idx = head.find(b"<!ENTITY")
    if idx >= 0 and b"<!DOCTYPE" in head[:idx]:
        line = head[:idx].count(b"\n") + 1
        raise UnsafeModelFileError("the DOCTYPE declares entities (entity expansion and external entities "
                                   "are refused)", name, line)


def root_tag(path: str) -> str:
    """The root element's tag of an XML file (parsed safely, tolerantly: a URDF that urdfdom reads is
    recognised as one)."""
    return parse_file(path, tolerant=True).tag


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
