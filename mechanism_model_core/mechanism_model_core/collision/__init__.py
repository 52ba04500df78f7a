"""Collision detection on a mechanism's bounding-shape trees (CLARAty 2.2.4, 4.12, 4.15.1, section 10).

* :mod:`mechanism_model_core.shapes` (re-exported here) -- typed shapes (sphere, box, cylinder, capsule, cone, convex hull, triangle mesh, height
  field, half-space, mesh-file reference), numpy only;
* :mod:`.model` -- :class:`CollisionModel`, the shapes of a mechanism beside it (Pinocchio's
  GeometryModel), and the per-thread coal objects (:class:`CollisionData`) kept outside it;
* :mod:`.matrix` -- the collision matrix (default rule, CLARAty ``Collision_Matrix``, generator; SRDF files
  are read by :func:`mechanism_model_core.io.read_srdf`);
* :mod:`.environment` -- obstacles and terrain in the ground frame (YAML environment files are read by
  :func:`mechanism_model_core.io.load_environment`);
* :mod:`.queries` -- ``in_collision``, ``collisions``, ``distance``, ``minimum_distance`` (one
  configuration or a batch);
* :mod:`.constraint` -- a minimum-distance constraint for IK and ``solve_ik(avoid_collisions=True)``.

File formats are ``io``'s, which imports this package one way (never the reverse): the environment file and
SRDF readers moved there in session 7 (``collision.load_environment`` and ``collision.read_srdf`` are now
``io.load_environment`` and ``io.read_srdf``; ``CollisionModel(m, srdf=path)`` is ``CollisionModel(m,
io.read_srdf(path, m))``), and mesh files are read by the foundation module
:mod:`mechanism_model_core.mesh_files`.

Everything that touches geometry uses ``coal`` (optional extra ``collision``: ``pip install coal``), imported on the first query; importing this package needs only numpy.
"""

from .environment import Environment, Obstacle, terrain_obstacle
from .generate import generate_collision_matrix
from .matrix import CollisionMatrix, with_collision_matrix
from .model import CollisionData, CollisionModel, GeometryObject, collision_data, collision_model
from .queries import Contact, DistanceResult, collisions, distance, in_collision, minimum_distance
from ..shapes import (Box, Capsule, Cone, ConvexHull, Cylinder, Geometry, HalfSpace, HeightField, MeshFile,
                     Sphere, TriangleMesh)

__all__ = [
    "Box", "Capsule", "CollisionData", "CollisionMatrix", "CollisionModel", "Cone", "Contact", "ConvexHull",
    "Cylinder", "DistanceResult", "Environment", "Geometry", "GeometryObject", "HalfSpace", "HeightField",
    "MeshFile", "Obstacle", "Sphere", "TriangleMesh", "collision_data", "collision_model", "collisions",
    "distance", "generate_collision_matrix", "in_collision", "minimum_distance",
    "terrain_obstacle", "with_collision_matrix",
]
