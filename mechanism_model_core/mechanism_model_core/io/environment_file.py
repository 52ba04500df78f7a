"""A :class:`~mechanism_model_core.collision.Environment` from a YAML file (a format, so in ``io``, which
imports ``collision`` one way; until session 7 it was ``collision.environment_file``): the terrain and the
obstacles around a robot, in the ground frame (a node's ``environment_file`` parameter, or a script's)::

    terrain:                              # optional; exactly one of:
      plane: {point: [0, 0, 0], normal: [0, 0, 1]}          # everything below the plane is solid
      height_field:                                         # terrain.HeightField: heights[i][j] at
        heights: [[0.0, 0.1], [0.0, 0.2]]                   #   x = origin[0] + i * spacing[0],
        # or file: dem.csv (comma-separated rows) / dem.npy  #   y = origin[1] + j * spacing[1]
        spacing: [0.5, 0.5]
        origin: [-1.0, -1.0]
        depth: 1.0                        # solid down to this far below the lowest point (m)
      mesh: {file: terrain.stl, scale: [1, 1, 1]}           # an open surface (STL, OBJ, DAE)
    obstacles:                            # optional list
      - name: rock_1                      # unique
        box: [0.4, 0.3, 0.2]              # full sides (m); or one of
        # sphere: 0.2 | cylinder: [radius, length] | capsule: [radius, length] | cone: [radius, length]
        # mesh: {file: rock.obj, scale: [1, 1, 1], convex: false}
        position: [1.2, 0.0, 0.1]         # m, ground frame (default 0)
        orientation: [0, 0, 0, 1]         # quaternion (x, y, z, w), or rpy: [roll, pitch, yaw] (rad)
        padding: 0.0                      # extra clearance of this obstacle (m)

Relative file names are relative to the YAML file's folder. Every error is a
:class:`~mechanism_model_core.errors.ModelFileError` naming the file and line and what is wrong.
"""

from __future__ import annotations

import math
import os

import numpy as np

from .. import terrain as T
from ..errors import ModelFileError
from .yaml_lines import line_of as _line, read_yaml_with_lines
from .. import shapes as S
from ..collision.environment import Environment, Obstacle, terrain_obstacle
from ..mesh_files import MeshError, read_mesh
from ..spatial import make_transform, quaternion_to_matrix, rpy_to_matrix

_TOP_KEYS = {"terrain", "obstacles"}
_SHAPE_KEYS = ("box", "sphere", "cylinder", "capsule", "cone", "mesh")
_OBSTACLE_KEYS = {"name", "position", "orientation", "rpy", "padding", *_SHAPE_KEYS}
#: Largest height-field grid (points) a file may give.
MAX_GRID_POINTS = 4_000_000


def load_environment(path) -> Environment:
    """The :class:`Environment` described by the YAML file ``path`` (format in the module docstring)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelFileError("environment file does not exist", path)
    data = read_yaml_with_lines(path, "an environment file")
    if data is None:
        return Environment()
    return _Reader(path).environment(data)


def load_terrain(path):
    """The terrain of the environment file ``path`` as a :mod:`mechanism_model_core.terrain` object (``Plane``,
    ``HeightField`` (bilinear), ``TriangleMesh``) for settling and terrain odometry, or None when the file has
    no ``terrain``; obstacles are not read."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelFileError("environment file does not exist", path)
    data = read_yaml_with_lines(path, "an environment file")
    if not isinstance(data, dict) or data.get("terrain") is None:
        return None
    return _Reader(path).terrain_object(data["terrain"], _line(data["terrain"], _line(data)))


class _Reader:
    def __init__(self, path: str):
        self.path = path
        self.folder = os.path.dirname(os.path.abspath(path))

    def fail(self, message, line=None):
        return ModelFileError(message, self.path, line)

    def numbers(self, value, n, what, line, positive=False):
        seq = value if isinstance(value, (list, tuple)) else [value]
        if len(seq) != n or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seq):
            raise self.fail(f"{what} must be {n} number{'s' if n > 1 else ''}, got {value!r}", line)
        out = [float(v) for v in seq]
        if not all(math.isfinite(v) for v in out):
            raise self.fail(f"{what} must be finite, got {value!r}", line)
        if positive and not all(v > 0 for v in out):
            raise self.fail(f"{what} must be positive, got {value!r}", line)
        return out

    def file(self, name, line) -> str:
        if not isinstance(name, str) or not name:
            raise self.fail(f"a file name is needed, got {name!r}", line)
        p = name[len("file://"):] if name.startswith("file://") else name
        p = p if os.path.isabs(p) else os.path.join(self.folder, p)
        if not os.path.isfile(p):
            raise self.fail(f"file {name!r} does not exist ({p})", line)
        return p

    def environment(self, data) -> Environment:
        if not isinstance(data, dict):
            raise self.fail("an environment file is a mapping with 'terrain' and/or 'obstacles'", _line(data))
        unknown = set(data) - _TOP_KEYS
        if unknown:
            raise self.fail(f"unknown key(s) {sorted(map(str, unknown))} (known: {sorted(_TOP_KEYS)})",
                            _line(data))
        obstacles = []
        if data.get("terrain") is not None:
            obstacles.append(self.terrain(data["terrain"], _line(data["terrain"], _line(data))))
        items = data.get("obstacles") or []
        if not isinstance(items, list):
            raise self.fail("'obstacles' must be a list", _line(data))
        names = {}
        for item in items:
            ob = self.obstacle(item, _line(item, _line(items)))
            if ob.name in names:
                raise self.fail(f"two obstacles named {ob.name!r} (the first at line {names[ob.name]})",
                                _line(item))
            names[ob.name] = _line(item)
            obstacles.append(ob)
        return Environment(obstacles)

    # ------------------------------------------------------------------ terrain
    def terrain(self, spec, line) -> Obstacle:
        t, depth = self._terrain(spec, line)
        try:
            if isinstance(t, tuple):                  # a mesh: its obstacle straight from the triangles
                return Obstacle("terrain", S.TriangleMesh(*t))
            return terrain_obstacle(t, "terrain", depth=depth) if isinstance(t, T.HeightField) else \
                terrain_obstacle(t, "terrain")
        except (ValueError, TypeError) as exc:        # what coal cannot take (heights beyond +-1e6 m ...)
            (kind, body), = spec.items()
            raise self.fail(f"terrain {kind}: {exc}", _line(body, line)) from None

    def terrain_object(self, spec, line):
        t, _ = self._terrain(spec, line)
        return T.TriangleMesh(*t) if isinstance(t, tuple) else t

    def _terrain(self, spec, line):
        """``(Plane or HeightField or (vertices, faces), depth)`` of a ``terrain`` entry."""
        if not isinstance(spec, dict) or len(spec) != 1:
            raise self.fail("'terrain' needs exactly one of plane, height_field, mesh", line)
        (kind, body), = spec.items()
        bline = _line(body, line)
        if not isinstance(body, dict):
            raise self.fail(f"terrain {kind!r} must be a mapping", bline)
        try:
            if kind == "plane":
                self.keys(body, {"point", "normal"}, "plane", bline)
                return T.Plane(self.numbers(body.get("point", [0, 0, 0]), 3, "plane point", bline),
                               self.numbers(body.get("normal", [0, 0, 1]), 3, "plane normal", bline)), None
            if kind == "height_field":
                self.keys(body, {"heights", "file", "spacing", "origin", "depth"}, "height_field", bline)
                H = self.heights(body, bline)
                spacing = self.numbers(body.get("spacing"), 2, "height_field spacing", bline, positive=True)
                origin = self.numbers(body.get("origin", [0, 0]), 2, "height_field origin", bline)
                depth = self.numbers(body.get("depth", 1.0), 1, "height_field depth", bline, positive=True)[0]
                return T.HeightField(H, spacing, origin), depth
            if kind == "mesh":
                self.keys(body, {"file", "scale"}, "mesh", bline)
                return self.mesh_file(body, bline), None
        except ModelFileError:
            raise
        except (ValueError, TypeError) as exc:
            raise self.fail(f"terrain {kind}: {exc}", bline) from None
        raise self.fail(f"unknown terrain kind {kind!r} (plane, height_field, mesh)", line)

    def keys(self, body, known, what, line):
        unknown = set(body) - set(known)
        if unknown:
            raise self.fail(f"{what}: unknown key(s) {sorted(map(str, unknown))} (known: {sorted(known)})", line)

    def heights(self, body, line) -> np.ndarray:
        if ("heights" in body) == ("file" in body):
            raise self.fail("height_field needs either 'heights' or 'file'", line)
        if "heights" in body:
            try:
                H = np.array(body["heights"], dtype=float)
            except (ValueError, TypeError):
                raise self.fail("height_field heights must be a list of equally long lists of numbers",
                                _line(body["heights"], line)) from None
        else:
            p = self.file(body["file"], line)
            if os.path.getsize(p) > 16 * MAX_GRID_POINTS:
                raise self.fail(f"height file {body['file']!r} is too large", line)
            try:
                H = np.load(p, allow_pickle=False) if p.endswith(".npy") else \
                    np.loadtxt(p, delimiter=",", ndmin=2)
                H = np.asarray(H, dtype=float)
            except (OSError, ValueError) as exc:
                raise self.fail(f"height file {body['file']!r} cannot be read: {exc}", line) from None
        if H.ndim != 2 or min(H.shape) < 2:
            raise self.fail(f"height_field heights must be a grid of at least 2 x 2, got shape {H.shape}", line)
        if H.size > MAX_GRID_POINTS:
            raise self.fail(f"height_field has {H.size} points, more than the limit of {MAX_GRID_POINTS}", line)
        if not np.all(np.isfinite(H)):
            raise self.fail("height_field heights must be finite", line)
        return H

    def mesh_file(self, body, line):
        p = self.file(body.get("file"), line)
        scale = self.numbers(body.get("scale", [1, 1, 1]), 3, "mesh scale", line, positive=True)
        try:
            V, F = read_mesh(p)
        except MeshError as exc:
            raise self.fail(str(exc), line) from None
        return V * np.asarray(scale), F

    # ------------------------------------------------------------------ obstacles
    def obstacle(self, item, line) -> Obstacle:
        if not isinstance(item, dict):
            raise self.fail("each obstacle is a mapping with a name, a shape and a pose", line)
        self.keys(item, _OBSTACLE_KEYS, "obstacle", line)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail("each obstacle needs a non-empty 'name'", line)
        kinds = [k for k in _SHAPE_KEYS if k in item]
        if len(kinds) != 1:
            raise self.fail(f"obstacle {name!r} needs exactly one shape of {', '.join(_SHAPE_KEYS)}", line)
        kind = kinds[0]
        value = item[kind]
        try:
            if kind == "box":
                geo = S.Box(*self.numbers(value, 3, f"obstacle {name!r} box", line, positive=True))
            elif kind == "sphere":
                geo = S.Sphere(*self.numbers(value, 1, f"obstacle {name!r} sphere radius", line, positive=True))
            elif kind in ("cylinder", "capsule", "cone"):
                r, length = self.numbers(value, 2, f"obstacle {name!r} {kind} [radius, length]", line,
                                         positive=True)
                geo = {"cylinder": S.Cylinder, "capsule": S.Capsule, "cone": S.Cone}[kind](r, length)
            else:
                if not isinstance(value, dict):
                    raise self.fail(f"obstacle {name!r}: mesh must be a mapping with a 'file'", line)
                self.keys(value, {"file", "scale", "convex"}, f"obstacle {name!r} mesh", line)
                V, F = self.mesh_file(value, _line(value, line))
                geo = S.ConvexHull(V) if value.get("convex") else S.TriangleMesh(V, F)
        except ModelFileError:
            raise
        except (ValueError, TypeError) as exc:
            raise self.fail(f"obstacle {name!r}: {exc}", line) from None
        p = self.numbers(item.get("position", [0, 0, 0]), 3, f"obstacle {name!r} position", line)
        if "orientation" in item and "rpy" in item:
            raise self.fail(f"obstacle {name!r}: give orientation or rpy, not both", line)
        if "orientation" in item:
            quat = np.array(self.numbers(item["orientation"], 4, f"obstacle {name!r} orientation", line))
            big = float(np.abs(quat).max())          # scaled first: the norm of (0, 0, 0, 1e200) overflows
            if big == 0 or big * float(np.linalg.norm(quat / big)) < 1e-9:
                raise self.fail(f"obstacle {name!r}: orientation is a zero quaternion", line)
            quat = quat / big
            R = quaternion_to_matrix(quat / np.linalg.norm(quat))
        else:
            R = rpy_to_matrix(self.numbers(item.get("rpy", [0, 0, 0]), 3, f"obstacle {name!r} rpy", line))
        pad = self.numbers(item.get("padding", 0.0), 1, f"obstacle {name!r} padding", line)[0]
        if pad < 0:
            raise self.fail(f"obstacle {name!r}: padding must be >= 0, got {pad}", line)
        return Obstacle(name, geo, make_transform(R, p), pad)
