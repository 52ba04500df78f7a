"""What every model-file reader checks about the numbers it read, in one place.

Each function returns the problem as a sentence (``None`` when there is none); the reader raises it as a
:class:`~mechanism_model_core.errors.ModelFileError` with its own file and the line of the element it read,
so the rules are the same for CLARAty XML, URDF, KinDSL and D-H tables:

* **limits**: every number finite; a position limit of magnitude :data:`UNBOUNDED` (1e9) or more means "no
  limit" (CLARAty XML writes unbounded limits so; in URDF it is read so with a warning); lower <= upper;
  velocity and effort limits not negative; a home value given in the file within the position limits.
* **mass properties**: mass finite and not negative; the centre of mass finite; the inertia tensor
  finite, symmetric and positive semi-definite (a point mass or a massless link may have zero inertia).
  The triangle inequality of the principal moments (``I1 + I2 >= I3``) is not enforced: published URDFs
  (PR2, HyQ) round their inertias past it, and every algorithm here works without it.
* **poses**: the pose of every body at the home configuration is finite (placements of 1e308 m add up
  to infinity in forward kinematics).
"""

from __future__ import annotations

import math

import numpy as np
from ..errors import ModelStructureError
from ..kinematics import forward_kinematics

#: Position limits at or beyond this magnitude are unbounded.
UNBOUNDED = 1e9

#: Relative tolerance of the inertia checks (file values are rounded).
INERTIA_RTOL = 1e-6


def _g(v: float) -> str:
    return f"{v:.6g}"


def position_limit(value: float) -> float:
    """``value``, or +-inf when its magnitude is :data:`UNBOUNDED` or more."""
    if value >= UNBOUNDED:
        return math.inf
    if value <= -UNBOUNDED:
        return -math.inf
    return float(value)


def number_problem(value: float, what: str) -> str | None:
    """A non-finite number (NaN, +-inf)."""
    if not math.isfinite(value):
        return f"{what} is not a finite number ({value})"
    return None


def limits_problem(lower, upper, velocity: float | None = None, effort: float | None = None,
                   names: tuple[str, str] = ("velocity", "effort")) -> str | None:
    """Position limits (per coordinate, already through :func:`position_limit`), velocity and effort
    limits as read from the file (``None``: not given); ``names`` are the file's words for the last two."""
    for lo, hi in zip(lower, upper):
        if math.isnan(lo) or math.isnan(hi):
            return "a position limit is NaN"
        if lo > hi:
            return f"lower limit {_g(lo)} is above upper limit {_g(hi)}"
    for value, what in zip((velocity, effort), names):
        if value is None:
            continue
        if math.isnan(value):
            return f"the {what} limit is NaN"
        if value < 0:
            return f"the {what} limit {_g(value)} is negative (a limit is a magnitude)"
    return None


def home_problem(home, lower, upper) -> str | None:
    """A home value given in the file outside the position limits."""
    for k, (h, lo, hi) in enumerate(zip(home, lower, upper)):
        if not math.isfinite(h):
            return f"home value {h} is not finite"
        if h < lo or h > hi:
            which = "" if len(home) == 1 else f" (coordinate {k})"
            return f"home value {_g(h)}{which} is outside the limits [{_g(lo)}, {_g(hi)}]"
    return None


def mass_problem(mass: float, com=None, inertia=None) -> str | None:
    """Mass (kg), centre of mass (m) and inertia tensor (kg m^2, about the centre of mass) that no body
    can have."""
    if not math.isfinite(mass):
        return f"the mass is not finite ({mass})"
    if mass < 0:
        return f"negative mass {_g(mass)}"
    if com is not None and not np.all(np.isfinite(com)):
        return "the centre of mass is not finite"
    if inertia is None:
        return None
    I = np.asarray(inertia, dtype=float)
    if not np.all(np.isfinite(I)):
        return "the inertia tensor is not finite"
    scale = max(float(np.max(np.abs(I))), 1e-300)
    tol = INERTIA_RTOL * scale
    if np.max(np.abs(I - I.T)) > tol:
        return "the inertia tensor is not symmetric"
    moments = np.linalg.eigvalsh(0.5 * (I + I.T))
    if moments[0] < -tol:
        return (f"the inertia tensor is not positive semi-definite (principal moments "
                f"{', '.join(_g(v) for v in moments)})")
    return None


def axis_direction(axis) -> np.ndarray:
    """A joint axis scaled so that its largest component is +-1 (``1e308 1e308 0`` is a direction whose
    length overflows; its direction is (1, 1, 0)). Zero and non-finite axes pass through unchanged, for
    the joint to refuse."""
    a = np.asarray(axis, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        return a
    m = float(np.max(np.abs(a)))
    return a / m if m > 0 else a


def nonfinite_frame(mechanism) -> str | None:
    """The first body (in tree order), else named frame, whose pose at the home configuration is not
    finite, or None."""
    with np.errstate(all="ignore"):
        W = forward_kinematics(mechanism, mechanism.home).frame_array()
    ok = np.all(np.isfinite(W.reshape(len(W), -1)), axis=1)
    if ok.all():
        return None
    bad = {name for name, good in zip(mechanism.frame_names, ok) if not good}
    for body in mechanism.bodies:
        if body.name in bad:
            return body.name
    return next(name for name in mechanism.frame_names if name in bad)


def check_poses(mechanism) -> None:
    """Raise :class:`~mechanism_model_core.errors.ModelStructureError` about the frame (see
    :func:`nonfinite_frame`) whose pose at home is not finite; a reader maps it to the frame's line."""
    frame = nonfinite_frame(mechanism)
    if frame is not None:
        raise ModelStructureError(f"the pose of {frame!r} at the home configuration is not finite: its "
                                  f"placements add up beyond floating point", ("frame", frame))
