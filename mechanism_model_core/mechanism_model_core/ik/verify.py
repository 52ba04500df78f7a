"""Check a specialized (closed-form) solver against the generic one on random reachable targets."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..constraints import PoseConstraint
from ..kinematics import forward_kinematics
from ..model import Mechanism
from ..spatial import log_so3
from .solve import solve_ik

__all__ = ["VerificationReport", "verify_specialized"]


@dataclass
class VerificationReport:
    """Outcome of :func:`verify_specialized` over ``n`` random reachable targets."""

    n: int
    specialized_success: int
    generic_success: int
    agree: int
    max_position_error: float
    max_orientation_error: float
    failures: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.agree == self.n


def verify_specialized(solver, mechanism: Mechanism, frame: str | None = None, n: int = 100, rng=None,
                       tol_position: float = 1e-6, tol_orientation: float = 1e-5,
                       timeout: float = 0.2) -> VerificationReport:
    """Compare a specialized solver with the generic ``"dls"`` solver on ``n`` targets made by forward
    kinematics of random in-limit configurations (so every target is reachable).

    They *agree* on a target when both succeed and the forward kinematics of both solutions reach the target
    within tolerance (the two may pick different branches of a redundant set). Also counts the generic
    solution's distance to the nearest closed-form branch when the solver offers ``all_solutions``."""
    rng = np.random.default_rng(rng)
    frame = frame or getattr(solver, "frame", None)
    qs = mechanism.random_configuration(rng, size=n)
    Ts = forward_kinematics(mechanism, qs).pose(frame)
    sp_ok = gen_ok = agree = 0
    max_p = max_o = 0.0
    failures = []
    for k in range(n):
        c = PoseConstraint(frame, Ts[k])
        q0 = mechanism.home
        a = solve_ik(mechanism, [c], q0, solver=solver, timeout=timeout, tol_position=tol_position,
                     tol_orientation=tol_orientation)
        b = solve_ik(mechanism, [c], q0, solver="dls", timeout=timeout, tol_position=tol_position,
                     tol_orientation=tol_orientation, rng=k)
        errs = []
        for res in (a, b):
            T = forward_kinematics(mechanism, res.q).pose(frame)
            errs.append((float(np.linalg.norm(T[:3, 3] - Ts[k][:3, 3])),
                         float(np.linalg.norm(log_so3(T[:3, :3] @ Ts[k][:3, :3].T)))))
        max_p = max(max_p, errs[0][0])
        max_o = max(max_o, errs[0][1])
        sp_ok += a.success
        gen_ok += b.success
        good = (a.success and b.success and all(e[0] <= tol_position and e[1] <= tol_orientation
                                                 for e in errs) and mechanism.within_limits(a.q, 1e-9))
        agree += good
        if not good:
            failures.append((qs[k], a, b))
    return VerificationReport(n, sp_ok, gen_ok, agree, max_p, max_o, failures)
