"""Quasi-statics (CLARAty 2.2.2, 6.10, 13.4.4): gravity and applied loads, centre of mass, joint stiffness
and gravity deflection, contact and wheel loads, tip-over stability.

Every function takes the mechanism and the state (joint values, gravity, loads); what is precomputed from the
mechanism (the compiled mass arrays, :class:`MassModel`, the gravity and contact plans) is in its derived data
(:mod:`..data`); ``gravity_torques``, ``wrench_torques``, ``static_torques``, ``center_of_mass``,
``com_jacobian`` and ``contact_loads`` take it explicitly too (``data=data_of(mechanism)``, checked to be the
mechanism's own), as Pinocchio's functions take ``data``. Units are SI; generalized
forces are N m for revolute and N for prismatic coordinates; frames and vectors are in the ground frame
unless a function says otherwise.

=====================  ===========================================================================
module                 what
=====================  ===========================================================================
:mod:`.mass`           per-body and per-segment mass arrays, centre of mass (whole or subtree), its
                       Jacobian, :class:`Payload`
:mod:`.gravity`        generalized gravity (single and batched), :class:`Wrench`, ``J^T w``, static torques
:mod:`.contacts`       :class:`Contact`, contact loads with passive joints, slip and lift-off
:mod:`.stability`      support-polygon margin, Papadopoulos-Rey force-angle measure, tip-over direction
:mod:`.deflection`     joint stiffness (six parameters per joint) and the deflected equilibrium
=====================  ===========================================================================
"""

from .contacts import Contact, ContactLoads, contact_loads, passive_coordinates, wheel_contacts
from .deflection import Deflection, compliant_joints, compliant_mechanism, deflected_equilibrium
from .gravity import Wrench, gravity_torques, static_torques, wrench_torques
from .mass import MassModel, Payload, center_of_mass, com_jacobian, mass_model, total_mass
from .stability import (StabilityMargin, force_angle_margin, mechanism_stability, support_polygon,
                        support_polygon_margin)

__all__ = ["Contact", "ContactLoads", "Deflection", "MassModel", "Payload", "StabilityMargin", "Wrench",
           "center_of_mass", "com_jacobian", "compliant_joints", "compliant_mechanism", "contact_loads",
           "deflected_equilibrium", "force_angle_margin", "gravity_torques", "mass_model", "mechanism_stability",
           "passive_coordinates", "static_torques", "support_polygon", "support_polygon_margin", "total_mass",
           "wheel_contacts", "wrench_torques"]
