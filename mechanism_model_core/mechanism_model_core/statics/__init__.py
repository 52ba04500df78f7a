"""Quasi-statics (CLARAty 2.2.2, 6.10, 13.4.4): gravity and applied loads, centre of mass, joint stiffness
and gravity deflection, contact and wheel loads, tip-over stability.

Every function takes the mechanism and the state (joint values, gravity, loads); nothing is stored on the
mechanism. Units are SI; generalized forces are N m for revolute and N for prismatic coordinates.
"""

from .stability import StabilityMargin, force_angle_margin, support_polygon, support_polygon_margin

__all__ = ["StabilityMargin", "force_angle_margin", "support_polygon", "support_polygon_margin"]
