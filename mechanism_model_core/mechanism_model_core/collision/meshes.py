"""Mesh files as the collision package reads them: the reader is the foundation module
:mod:`mechanism_model_core.mesh_files` (``io`` imports ``collision``, so the reader lives below both); this
module re-exports it (its old path, and the wheel fit of :mod:`~mechanism_model_core.locomotion.wheel_fit`
reads meshes through it)."""

from ..mesh_files import (DAE_METER_RANGE, MAX_FILE_BYTES, MAX_TRIANGLES, MESH_EXTENSIONS,
                          MeshError, load_mesh_geometry, read_mesh, resolve_mesh_uri)

__all__ = ["DAE_METER_RANGE", "MAX_FILE_BYTES", "MAX_TRIANGLES", "MESH_EXTENSIONS", "MeshError", "load_mesh_geometry",
           "read_mesh", "resolve_mesh_uri"]
