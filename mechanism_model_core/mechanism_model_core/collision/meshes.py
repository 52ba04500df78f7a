"""Mesh files as the collision package (and what builds on it, e.g. the wheel fit of
:mod:`~mechanism_model_core.locomotion.wheel_fit`) reads them: the reader is
:mod:`mechanism_model_core.io.meshes` (file formats are ``io``'s, and ``io`` never imports ``collision``);
this module re-exports it, so that ``locomotion`` reaches it through ``collision``, which ``io`` does not
import (``io`` imports ``locomotion``'s data types)."""

from ..io.meshes import (DAE_METER_RANGE, MAX_FILE_BYTES, MAX_TRIANGLES, MESH_EXTENSIONS,  # noqa: F401
                         MeshError, load_mesh_geometry, read_mesh, resolve_mesh_uri)
