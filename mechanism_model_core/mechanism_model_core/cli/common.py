"""What the subcommands share: loading a model by file or library name, joint values from ``name=value``
words, number and pose formatting, and the argument groups several commands take (MODEL, ``--q``)."""

from __future__ import annotations

import math
import sys

import numpy as np

from ..errors import MechanismModelError
from ..expressions import evaluate
from ..spatial import matrix_to_quaternion, matrix_to_rpy
from ..io import load_model
from ..package_paths import add_package_path
from ..library import default_model_path, model_path

PROG = "mechanism-model"


class CommandError(MechanismModelError):
    """A command-line request that cannot be carried out (printed without a traceback)."""


# ---------------------------------------------------------------------------------------------- models
def resolve(model: str | None) -> str:
    """A file path or a library path (``rocky8/rocky8_rover.xml``) -> an existing path; ``None``: default."""
    return default_model_path() if model is None else model_path(model)


_xacro_args: dict = {}


def load(model: str | None):
    """Load a model given as a file path or library path (``None``: the default model); a ``.xacro`` file
    is expanded with the ``--xacro-arg`` values (:func:`apply_model_options`)."""
    path = resolve(model)
    if path.lower().endswith(".xacro"):
        return load_model(path, xacro_args=dict(_xacro_args))
    return load_model(path)


def model_options(sp) -> None:
    """``--xacro-arg NAME:=VALUE`` and ``--package-path NAME=DIR`` (for xacro files and package:// URIs)."""
    sp.add_argument("--xacro-arg", action="append", default=[], metavar="NAME:=VALUE",
                    help="an argument of a .xacro model (as xacro's NAME:=VALUE); repeat for more")
    sp.add_argument("--package-path", action="append", default=[], metavar="NAME=DIR",
                    help="where ROS package NAME is, for $(find NAME) and package://NAME/ (also DIR alone: "
                         "a folder of packages; MM_PACKAGE_PATH takes the same entries); repeat for more")


def apply_model_options(args) -> None:
    """Take ``--xacro-arg`` and ``--package-path`` from parsed ``args`` (where the command has them)."""
    for item in getattr(args, "xacro_arg", None) or ():
        name, sep, value = item.partition(":=")
        if not sep or not name.strip():
            raise CommandError(f"--xacro-arg {item!r} is not of the form NAME:=VALUE")
        _xacro_args[name.strip()] = value
    for item in getattr(args, "package_path", None) or ():
        try:
            add_package_path(item)
        except ValueError as exc:
            raise CommandError(f"--package-path: {exc}") from None


# ---------------------------------------------------------------------------------------------- joint values
def parse_values(mech, pairs, degrees: bool = False) -> dict:
    """``["joint1=0.3", "chassis.z=0.1"]`` -> ``{name: float}`` (safe expressions; degrees for angles)."""
    out = {}
    for item in pairs or ():
        for token in item.split(","):
            token = token.strip()
            if not token:
                continue
            name, sep, text = token.partition("=")
            name = name.strip()
            if not sep or not name or not text.strip():
                raise CommandError(f"joint value {token!r} is not of the form name=value")
            idx = mech.coordinate_index(name)  # UnknownJoint names the known ones
            value = evaluate(text.strip())
            if degrees and not mech.coordinate_is_prismatic[idx]:
                value = math.radians(value)
            out[name] = value
    return out


def configuration(mech, pairs, degrees: bool = False) -> np.ndarray:
    """The full configuration for ``name=value`` words: others at home, couplings followed."""
    return mech.configuration(parse_values(mech, pairs, degrees))


# ---------------------------------------------------------------------------------------------- formatting
def fmt(v: float, width: int = 10, prec: int = 6) -> str:
    """A fixed-width number; values that would print as -0.000000 print as 0.000000."""
    if abs(v) < 0.5 * 10.0 ** (-prec):
        v = 0.0
    return f"{v:{width}.{prec}f}"


def limit_text(lo: float, hi: float, prismatic: bool) -> str:
    if not (math.isfinite(lo) or math.isfinite(hi)):
        return "unlimited"
    unit = "m" if prismatic else "rad"
    return f"[{lo:.4g}, {hi:.4g}] {unit}"


def pose_dict(T: np.ndarray) -> dict:
    """A pose as JSON-ready lists: 4x4 matrix, xyz (m), URDF rpy (rad), quaternion (x, y, z, w)."""
    return {"matrix": np.round(T, 12).tolist(), "xyz": T[:3, 3].tolist(),
            "rpy": matrix_to_rpy(T[:3, :3]).tolist(), "quaternion_xyzw": matrix_to_quaternion(T[:3, :3]).tolist()}


def print_pose(name: str, ref: str, T: np.ndarray, out=None) -> None:
    """A pose as a 4x4 matrix, xyz, URDF roll-pitch-yaw and quaternion (x y z w)."""
    out = sys.stdout if out is None else out
    d = pose_dict(T)
    print(f"{name} in {ref}:", file=out)
    for row in T:
        print("  " + " ".join(fmt(v) for v in row), file=out)
    print("  xyz  (m)        " + " ".join(fmt(v) for v in d["xyz"]), file=out)
    print("  rpy  (rad)      " + " ".join(fmt(v) for v in d["rpy"]) + "   (URDF roll-pitch-yaw)", file=out)
    print("  quat (x y z w)  " + " ".join(fmt(v) for v in d["quaternion_xyzw"]), file=out)


def pose_table_header(out=None) -> None:
    out = sys.stdout if out is None else out
    print(f"  {'frame':30s} {'x':>10s} {'y':>10s} {'z':>10s} {'roll':>10s} {'pitch':>10s} {'yaw':>10s}",
          file=out)


def pose_table_row(frame: str, T: np.ndarray, out=None) -> None:
    out = sys.stdout if out is None else out
    vals = list(T[:3, 3]) + list(matrix_to_rpy(T[:3, :3]))
    print(f"  {frame:30s} " + " ".join(fmt(v) for v in vals), file=out)


# ---------------------------------------------------------------------------------------------- arguments
def model_arg(sp, optional: bool = False) -> None:
    """The MODEL positional (a file or a library path)."""
    if optional:
        sp.add_argument("model", nargs="?", default=None,
                        help="model file or library path (default: the default rover)")
    else:
        sp.add_argument("model", help="model file or library path, e.g. rocky8/rocky8_rover.xml")
    model_options(sp)


def q_args(sp) -> None:
    """``--q NAME=VALUE ...`` and ``--degrees``."""
    sp.add_argument("--q", nargs="+", action="extend", metavar="NAME=VALUE", default=[],
                    help="joint values (radians / metres; expressions like pi/2 allowed); others stay home")
    sp.add_argument("--degrees", action="store_true", help="angles in --q are in degrees")
