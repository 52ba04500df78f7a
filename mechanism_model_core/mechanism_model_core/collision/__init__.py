"""Collision detection on a mechanism's bounding-shape trees (CLARAty 2.2.4, 4.12, 4.15.1, section 10).

* :mod:`mechanism_model_core.shapes` (re-exported here) -- typed shapes (sphere, box, cylinder, capsule, cone, convex hull, triangle mesh, height
  field, half-space, mesh-file reference), numpy only;
* :mod:`.model` -- :class:`CollisionModel`, the shapes of a mechanism beside it (Pinocchio's
  GeometryModel), and the per-thread coal objects (:class:`CollisionData`) kept outside it;
* :mod:`.matrix` -- the collision matrix (default rule, SRDF, CLARAty ``Collision_Matrix``, generator);
* :mod:`.environment` -- obstacles and terrain in the ground frame (:mod:`.environment_file`: from YAML);
* :mod:`.queries` -- ``in_collision``, ``collisions``, ``distance``, ``minimum_distance`` (one
  configuration or a batch);
* :mod:`.constraint` -- a minimum-distance constraint for IK and ``solve_ik(avoid_collisions=True)``.

Everything that touches geometry uses ``coal`` (optional extra ``collision``: ``pip install coal``), imported on the first query; importing this package needs only numpy.
"""

from .environment import Environment, Obstacle, terrain_obstacle
from .environment_file import load_environment
from .generate import generate_collision_matrix
from .matrix import CollisionMatrix, read_srdf, with_collision_matrix
from .model import CollisionData, CollisionModel, GeometryObject, collision_data, collision_model
from .queries import Contact, DistanceResult, collisions, distance, in_collision, minimum_distance
from ..shapes import (Box, Capsule, Cone, ConvexHull, Cylinder, Geometry, HalfSpace, HeightField, MeshFile,
                     Sphere, TriangleMesh)

__all__ = [
    "Box", "Capsule", "CollisionData", "CollisionMatrix", "CollisionModel", "Cone", "Contact", "ConvexHull",
    "Cylinder", "DistanceResult", "Environment", "Geometry", "GeometryObject", "HalfSpace", "HeightField",
    "MeshFile", "Obstacle", "Sphere", "TriangleMesh", "collision_data", "collision_model", "collisions",
    "distance", "generate_collision_matrix", "in_collision", "load_environment", "minimum_distance", "read_srdf",
    "terrain_obstacle", "with_collision_matrix",
]
