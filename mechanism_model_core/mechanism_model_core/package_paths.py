"""Finding ROS packages without ROS: ``$(find pkg)`` in xacro files and ``package://pkg/...`` mesh URIs (a
foundation module: the model readers of ``io`` and the mesh reader :mod:`.mesh_files` use it; ``io.packages``
re-exports it).

A package's folder is looked up, in this order:

1. the package paths given by the user: :func:`add_package_path` (the command line's ``--package-path
   NAME=DIR``) and the environment variable ``MM_PACKAGE_PATH`` -- entries separated by ``os.pathsep``, each
   ``NAME=DIR`` (that folder is package NAME) or ``DIR`` (a package folder named NAME or whose package.xml
   names it, or a folder holding such package folders);
2. ``ROS_PACKAGE_PATH`` entries, the same way as plain ``DIR`` entries;
3. the ament index of ``AMENT_PREFIX_PATH`` (``<prefix>/share/ament_index/resource_index/packages/NAME``
   marks ``<prefix>/share/NAME``), as ``ros2 pkg prefix`` finds it;
4. a folder named NAME beside the model file or beside one of its parent folders (a source checkout).

Nothing is fetched; a package that is not found is an error naming it and where it was looked for.
"""

from __future__ import annotations

import os
import re

from .errors import ModelFileError

_user_paths: list = []


class PackageNotFound(ModelFileError):
    """A ROS package named by ``$(find ...)`` or ``package://`` that none of the search paths holds."""


def add_package_path(entry: str) -> None:
    """Add one search entry (``NAME=DIR`` or ``DIR``) before every other (command line ``--package-path``)."""
    name, sep, d = entry.partition("=")
    if sep and (not name or not d):
        raise ValueError(f"package path {entry!r} is not NAME=DIR or DIR")
    _user_paths.append(entry)


def clear_package_paths() -> None:
    """Forget the entries added with :func:`add_package_path`."""
    _user_paths.clear()


def _entries():
    env = [e for e in os.environ.get("MM_PACKAGE_PATH", "").split(os.pathsep) if e]
    ros = [e for e in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if e]
    return [("user", e) for e in list(_user_paths) + env] + [("ros", e) for e in ros]


_NAME_TAG = re.compile(rb"<name>\s*([^<\s]+)\s*</name>")


def _declares(d: str, pkg: str) -> bool:
    try:
        with open(os.path.join(d, "package.xml"), "rb") as fh:
            hit = _NAME_TAG.search(fh.read(65536))
    except OSError:
        return False
    return bool(hit) and hit.group(1).decode("utf-8", "replace") == pkg


def package_dirs(pkg: str, model_file: str | None = None) -> list:
    """Every folder that is package ``pkg``, in the order of the module docstring (may be empty)."""
    out = []
    for kind, entry in _entries():
        name, sep, d = entry.partition("=")
        if kind == "user" and sep:
            if name == pkg and os.path.isdir(d):
                out.append(d)
            continue
        root = entry
        if os.path.basename(os.path.normpath(root)) == pkg or _declares(root, pkg):
            out.append(root)
        cand = os.path.join(root, pkg)
        if os.path.isdir(cand):
            out.append(cand)
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        marker = os.path.join(prefix, "share", "ament_index", "resource_index", "packages", pkg)
        if os.path.exists(marker):
            out.append(os.path.join(prefix, "share", pkg))
    d = os.path.dirname(os.path.abspath(model_file)) if model_file else None
    for _ in range(6):          # a source checkout: pkg/ beside the model file or above it
        if not d:
            break
        cand = os.path.join(d, pkg)
        if os.path.isdir(cand):
            out.append(cand)
        if os.path.basename(os.path.normpath(d)) == pkg:
            out.append(d)
        parent = os.path.dirname(os.path.normpath(d))
        if parent == d:
            break
        d = parent
    seen, unique = set(), []
    for d in out:
        a = os.path.abspath(d)
        if a not in seen:
            seen.add(a)
            unique.append(a)
    return unique


def where_looked() -> str:
    """The search paths, for an error message."""
    given = _user_paths + [e for e in os.environ.get("MM_PACKAGE_PATH", "").split(os.pathsep) if e]
    parts = [f"--package-path/MM_PACKAGE_PATH ({', '.join(given) or 'none'})",
             f"ROS_PACKAGE_PATH ({os.environ.get('ROS_PACKAGE_PATH') or 'unset'})",
             f"the ament index of AMENT_PREFIX_PATH ({os.environ.get('AMENT_PREFIX_PATH') or 'unset'})",
             "folders beside the model file"]
    return "; ".join(parts)


def find_package(pkg: str, model_file: str | None = None, line: int | None = None) -> str:
    """The folder of package ``pkg`` (first of :func:`package_dirs`); raises :class:`PackageNotFound`
    naming ``model_file`` (and ``line``), the package and where it was looked for."""
    dirs = package_dirs(pkg, model_file)
    if not dirs:
        raise PackageNotFound(f"package {pkg!r} not found (looked in {where_looked()}); give its folder with "
                              f"--package-path {pkg}=DIR or MM_PACKAGE_PATH", model_file, line)
    return dirs[0]
