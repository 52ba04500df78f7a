"""Colours of a mechanism's bodies for viewers (the URDF export's ``<material>``, hence RViz's RobotModel).

A bounding shape's own colour wins (:attr:`~mechanism_model_core.model.BoundingShape.color`, e.g. read from a
URDF ``<visual><material>``); otherwise :func:`body_color` picks a default from the body's name, so a
rover's wheels, chassis, arm and mast are told apart at a glance instead of all being RViz's default red.
RGBA components are in [0, 1].
"""

from __future__ import annotations

#: (name fragments, RGBA): the first entry with a fragment in the lower-cased body name applies
BODY_COLORS: tuple[tuple[tuple[str, ...], tuple[float, float, float, float]], ...] = (
    (("wheel", "tire", "tyre", "track"), (0.18, 0.18, 0.20, 1.0)),                  # rubber
    (("camera", "sensor", "lidar", "imu", "tool", "gripper", "finger", "hand"), (0.20, 0.45, 0.85, 1.0)),
    (("chassis", "body", "base", "torso", "trunk", "hull", "deck"), (0.90, 0.62, 0.15, 1.0)),   # amber
    (("foot", "toe"), (0.18, 0.18, 0.20, 1.0)),
    (("mast", "head", "pan", "tilt"), (0.80, 0.82, 0.86, 1.0)),                     # light aluminium
    (("rocker", "bogie", "diff", "suspension", "strut", "steer", "knuckle"), (0.55, 0.57, 0.60, 1.0)),
)
#: anything else (arm and leg links, ...): aluminium
DEFAULT_COLOR = (0.70, 0.72, 0.75, 1.0)


def body_color(name: str) -> tuple[float, float, float, float]:
    """The default RGBA of body ``name`` (see :data:`BODY_COLORS`)."""
    low = name.lower()
    for fragments, rgba in BODY_COLORS:
        if any(f in low for f in fragments):
            return rgba
    return DEFAULT_COLOR


def shape_color(shape, body: str) -> tuple[float, float, float, float]:
    """``shape``'s own colour, else its body's default."""
    own = getattr(shape, "color", None)
    return tuple(own) if own is not None else body_color(body)


def material_name(rgba) -> str:
    """A stable material name for a colour (``mm_e69e26ff``): equal colours share one name in a URDF."""
    return "mm_" + "".join(f"{max(0, min(255, round(float(c) * 255))):02x}" for c in rgba)


__all__ = ["BODY_COLORS", "DEFAULT_COLOR", "body_color", "material_name", "shape_color"]
