"""Mesh files for bounding shapes (the collision model's, the environment files' and the model files'): a
foundation module below ``collision`` and ``io``, which both read meshes (``io`` imports ``collision``, so the
reader may live in neither; ``io.meshes`` and ``collision.meshes`` re-export it): resolving ``package://`` /
``file://`` / relative names, and reading STL, OBJ and DAE files (with ``trimesh``, an optional extra) within
size limits.

Resolution of a mesh name written in a model file:

* ``package://pkg/sub/file.stl``: the package's folder as :mod:`mechanism_model_core.package_paths` finds it
  (``--package-path``/``MM_PACKAGE_PATH``, ``ROS_PACKAGE_PATH``, the ament index of ``AMENT_PREFIX_PATH``,
  a folder named ``pkg`` beside the model file or its parents), so pip-only installs resolve them too;
* ``file:///abs/path`` and absolute paths as they are;
* anything else relative to the folder of the model file.

Every failure is a :class:`~mechanism_model_core.errors.ModelFileError` naming the model file and line that
wrote the name, and what is wrong (unknown package, missing file, unreadable mesh, too many triangles).
"""

from __future__ import annotations

import os
import struct

import numpy as np

from .errors import ModelFileError
from .shapes import ConvexHull, MeshFile, TriangleMesh
from .package_paths import package_dirs, where_looked
from .extras import install_hint

#: Meshes with more triangles than this are refused (a bounding shape should be coarse).
MAX_TRIANGLES = 200_000
#: Mesh files larger than this (bytes) are refused before they are read.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: range of a COLLADA ``<unit meter>`` (how many metres one unit of the file is): a micrometre to 1000 km
DAE_METER_RANGE = (1e-6, 1e6)
MESH_EXTENSIONS = (".stl", ".obj", ".dae")


class MeshError(ValueError):
    """What is wrong with a mesh reference (wrapped into a ModelFileError with the model file's line)."""


def _package_dirs(pkg: str, model_dir: str | None) -> list[str]:
    return package_dirs(pkg, os.path.join(model_dir, "model") if model_dir else None)


def resolve_mesh_uri(uri: str, model_file: str | None) -> str:
    """The path of the mesh file that ``uri`` names, written in ``model_file``; raises :class:`MeshError`."""
    if not uri:
        raise MeshError("the mesh has no file name")
    model_dir = os.path.dirname(os.path.abspath(model_file)) if model_file else None
    if uri.startswith("package://"):
        rest = uri[len("package://"):]
        pkg, _, sub = rest.partition("/")
        if not pkg or not sub:
            raise MeshError(f"mesh {uri!r}: package:// needs a package name and a path")
        dirs = _package_dirs(pkg, model_dir)
        if not dirs:
            raise MeshError(f"mesh {uri!r}: package {pkg!r} is unknown (looked in {where_looked()}; give "
                            f"its folder with --package-path {pkg}=DIR or MM_PACKAGE_PATH)")
        for d in dirs:
            path = os.path.join(d, sub)
            if os.path.isfile(path):
                return os.path.abspath(path)
        raise MeshError(f"mesh {uri!r}: no file {sub!r} in package {pkg!r} (looked in {', '.join(dirs)})")
    if uri.startswith("file://"):
        path = uri[len("file://"):]
    elif os.path.isabs(uri):
        path = uri
    else:
        if "://" in uri:
            raise MeshError(f"mesh {uri!r}: only package:// and file:// URIs are supported")
        path = os.path.join(model_dir or os.getcwd(), uri)
    if not os.path.isfile(path):
        raise MeshError(f"mesh file {uri!r} does not exist ({path})")
    return os.path.abspath(path)


def resolved_mesh_path(uri: str | None, model_file: str | None) -> str | None:
    """The path of the mesh ``uri`` names in ``model_file`` (resolved against the file's folder only when
    ``model_file`` is a file, not a name for text), or None where it cannot be resolved: the readers keep the
    reference, and the collision model reports why, with the model file's line, when it needs the mesh."""
    if not uri:
        return None
    try:
        return resolve_mesh_uri(uri, model_file if model_file and os.path.isfile(model_file) else None)
    except MeshError:
        return None


def _trimesh():
    try:
        import trimesh
    except ImportError:
        raise ImportError(f"reading mesh files needs trimesh: {install_hint('mesh')}") from None
    return trimesh


def _dae_meter(path: str) -> float:
    """The ``<asset><unit meter>`` of a COLLADA file (1 when absent), after checking what trimesh and
    pycollada pass over silently: the unit must be a number in :data:`DAE_METER_RANGE` (``0``, ``-1``,
    ``1e300``, ``abc`` are refused), and every ``<float_array>`` must hold ``count`` finite numbers (``nan``
    was read as 0)."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True,
                             remove_comments=True, remove_pis=True)
    try:
        with open(path, "rb") as fh:
            root = etree.fromstring(fh.read(), parser)
    except (OSError, etree.XMLSyntaxError) as exc:
        raise MeshError(f"mesh {path!r} cannot be read: {exc}") from None
    meter = 1.0
    for el in root.iter("{*}unit"):
        if etree.QName(el.getparent()).localname != "asset" or \
                etree.QName(el.getparent().getparent()).localname != "COLLADA":
            continue
        text = el.get("meter")
        if text is None:
            continue
        try:
            meter = float(text)
        except ValueError:
            meter = float("nan")
        lo, hi = DAE_METER_RANGE
        if not (lo <= meter <= hi):
            raise MeshError(f"mesh {path!r} line {el.sourceline}: <unit meter={text!r}> must be a number of "
                            f"metres in [{lo:g}, {hi:g}]")
    for el in root.iter("{*}float_array"):
        words = (el.text or "").split()
        try:
            values = np.array([float(w) for w in words], dtype=float)
        except ValueError as exc:
            raise MeshError(f"mesh {path!r} line {el.sourceline}: float_array {el.get('id')!r}: "
                            f"{str(exc).split(': ', 1)[-1]} is not a number") from None
        if not np.all(np.isfinite(values)):
            bad = words[int(np.flatnonzero(~np.isfinite(values))[0])]
            raise MeshError(f"mesh {path!r} line {el.sourceline}: float_array {el.get('id')!r} holds "
                            f"{bad!r}; every value must be finite")
        count = el.get("count")
        if count is not None and count.strip().isdigit() and int(count) != len(words):
            raise MeshError(f"mesh {path!r} line {el.sourceline}: float_array {el.get('id')!r} says "
                            f"count={count} but holds {len(words)} numbers")
    return meter


def read_mesh(path: str) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices (N, 3) m, faces (M, 3))`` of an STL, OBJ or DAE file (DAE needs ``pycollada``; its
    ``<unit meter>`` is applied, as the ROS mesh loaders do); raises :class:`MeshError`."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in MESH_EXTENSIONS:
        raise MeshError(f"mesh {path!r}: unsupported format {ext!r} (STL, OBJ and DAE are read)")
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise MeshError(f"mesh {path!r} cannot be read: {exc.strerror}") from None
    if size > MAX_FILE_BYTES:
        raise MeshError(f"mesh {path!r} has {size} bytes, more than the limit of {MAX_FILE_BYTES}")
    if ext == ".stl":
        with open(path, "rb") as fh:
            head = fh.read(84)
        if len(head) == 84 and not head[:5].lower() == b"solid":
            (n,) = struct.unpack("<I", head[80:84])
            if n > MAX_TRIANGLES:
                raise MeshError(f"mesh {path!r} has {n} triangles, more than the limit of {MAX_TRIANGLES} "
                                f"(simplify it or use a convex hull or primitives)")
            if size != 84 + 50 * n:
                raise MeshError(f"mesh {path!r}: a binary STL whose header says {n} triangles must have "
                                f"{84 + 50 * n} bytes (84 + 50 per triangle); the file has {size} (truncated "
                                f"or a wrong triangle count)")
    meter = _dae_meter(path) if ext == ".dae" else 1.0
    trimesh = _trimesh()
    try:
        loaded = trimesh.load(path, force="mesh", process=False)
        vertices = np.asarray(loaded.vertices, dtype=float)
        faces = np.asarray(loaded.faces, dtype=np.int64)
        # a COLLADA file's <unit meter="..."/>, read and checked by _dae_meter (the ROS mesh loaders apply it)
        vertices = vertices * meter
    except Exception as exc:  # trimesh raises many kinds for a broken file
        raise MeshError(f"mesh {path!r} cannot be read: {type(exc).__name__}: {exc}") from None
    if faces.ndim != 2 or len(faces) == 0 or vertices.ndim != 2 or len(vertices) < 3:
        raise MeshError(f"mesh {path!r} has no triangles")
    if len(faces) > MAX_TRIANGLES:
        raise MeshError(f"mesh {path!r} has {len(faces)} triangles, more than the limit of {MAX_TRIANGLES} "
                        f"(simplify it or use a convex hull or primitives)")
    if not np.all(np.isfinite(vertices)):
        raise MeshError(f"mesh {path!r} has non-finite vertices")
    return vertices, faces


def load_mesh_geometry(mesh: MeshFile, model_file: str | None = None, line: int | None = None):
    """The :class:`TriangleMesh` (or :class:`ConvexHull` when ``mesh.convex``) of a mesh reference, scaled;
    raises :class:`ModelFileError` naming ``model_file`` and ``line``."""
    try:
        path = mesh.path or resolve_mesh_uri(mesh.uri, model_file)
        vertices, faces = read_mesh(path)
        vertices = vertices * np.asarray(mesh.scale)
        if np.prod(np.sign(mesh.scale)) < 0:    # a mirror: keep the faces' outward orientation
            faces = faces[:, ::-1]
        if mesh.convex:
            return ConvexHull(vertices)
        return TriangleMesh(vertices, faces)
    except (MeshError, ValueError) as exc:
        raise ModelFileError(str(exc), model_file, line) from None
