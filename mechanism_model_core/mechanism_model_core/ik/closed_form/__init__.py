"""Closed-form (analytic) IK: solvers that override the generic ones for mechanisms or chains of a known
structure (CLARAty 2.3, 8.10, 11.3, 12.2), all built on the planar two-link elbow of :mod:`.planar`.

* :class:`~.ypppy.YPPPYSolver` -- yaw-pitch-pitch-pitch-yaw arms (MER IDD; registered for the shipped model);
* :class:`~.yppp.YPPPSolver` -- yaw-pitch-pitch-pitch arms (the Moonrise digging arm);
* :class:`~.ypp_leg.YPPLegSolver` -- yaw-pitch-pitch legs (LEMUR);
* :mod:`.eaik_solver` -- decomposable 6R arms (and 7R with one joint swept) through the optional ``eaik``;
* :mod:`.near_decomposable` -- arms on a lift (TIAGo, Fetch: exact, the lift held) and arms whose chain is
  near a decomposable one (Baxter's and the xArm's offset wrists: the approximate chain's branches are starts
  for a few Gauss-Newton steps on the exact one);
* :func:`~.pan_tilt.pan_tilt_solutions` -- two-axis pointing chains (a mast's pan-tilt: every aim at a point).

Every closed-form answer is confirmed by the core's forward kinematics before it counts
(:func:`~.common.confirm_candidates`); the generic solver is the fallback.
"""

from .common import confirm_candidates, nearest_in_limits
from .eaik_solver import EAIKSolver, eaik_available, eaik_solver_for
from .near_decomposable import NearDecomposableSolver, near_decomposable_solver_for
from .solutions import ik_solutions
from .pan_tilt import pan_tilt_solutions
from .planar import two_link
from .ypp_leg import YPPLegSolver
from .yppp import YPPPSolver
from .ypppy import YPPPYSolver

__all__ = ["EAIKSolver", "NearDecomposableSolver", "YPPLegSolver", "YPPPSolver", "YPPPYSolver",
           "confirm_candidates", "eaik_available", "eaik_solver_for", "ik_solutions", "near_decomposable_solver_for", "nearest_in_limits",
           "pan_tilt_solutions", "two_link"]
