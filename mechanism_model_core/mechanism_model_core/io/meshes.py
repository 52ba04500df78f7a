"""Old module path of :mod:`mechanism_model_core.mesh_files` (mesh files for bounding shapes), a foundation
module below both ``collision`` and ``io``, which read meshes. Re-exports its public names (its limits,
``MAX_TRIANGLES`` and ``MAX_FILE_BYTES``, are read from :mod:`~mechanism_model_core.mesh_files`)."""

from ..mesh_files import (DAE_METER_RANGE, MAX_FILE_BYTES, MAX_TRIANGLES, MESH_EXTENSIONS,
                          MeshError, load_mesh_geometry, read_mesh, resolve_mesh_uri, resolved_mesh_path)

__all__ = ["DAE_METER_RANGE", "MAX_FILE_BYTES", "MAX_TRIANGLES", "MESH_EXTENSIONS", "MeshError", "load_mesh_geometry",
           "read_mesh", "resolve_mesh_uri", "resolved_mesh_path"]
