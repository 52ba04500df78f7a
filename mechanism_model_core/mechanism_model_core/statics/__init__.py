"""Quasi-statics (CLARAty 2.2.2, 6.10, 13.4.4): gravity and applied loads, centre of mass, joint stiffness
and gravity deflection, contact and wheel loads, tip-over stability.

Every function takes the mechanism and the state (joint values, gravity, loads); nothing is stored on the
mechanism. Units are SI; generalized forces are N m for revolute and N for prismatic coordinates.
"""

from .stability import (StabilityMargin, force_angle_margin, mechanism_stability, support_polygon,
                        support_polygon_margin)

__all__ = ["StabilityMargin", "force_angle_margin", "mechanism_stability", "support_polygon",
           "support_polygon_margin"]
from .mass import MassModel, Payload, center_of_mass, com_jacobian, mass_model, total_mass
from .gravity import Wrench, gravity_torques, static_torques, wrench_torques

__all__ += ["MassModel", "Payload", "center_of_mass", "com_jacobian", "mass_model", "total_mass", "Wrench",
            "gravity_torques", "static_torques", "wrench_torques"]
from .contacts import Contact, ContactLoads, contact_loads, passive_coordinates, wheel_contacts

__all__ += ["Contact", "ContactLoads", "contact_loads", "passive_coordinates", "wheel_contacts"]
from .deflection import Deflection, compliant_joints, compliant_mechanism, deflected_equilibrium

__all__ += ["Deflection", "compliant_joints", "compliant_mechanism", "deflected_equilibrium"]
