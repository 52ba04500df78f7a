"""Joint stiffness and the deflected equilibrium under gravity and loads (CLARAty 2.2.2.1, 2.2.2.3, 4.17.2).

Stiffness model. A joint's ``stiffness`` ``(kx, ky, kz, tx, ty, tz)`` (N/m and N m/rad; CLARAty XML
``<Joint_Stiffness>``) is a linear spring between the joint's commanded pose and the body it carries, in the
axes of the joint (= body) frame: the body may translate by ``(x, y, z)`` and rotate by ``(roll, pitch,
yaw)`` (URDF rpy) away from where the rigid joint puts it, so the joint is compliant in all six directions,
not only about its own axis (``tz`` about a revolute joint's z axis is the servo's stiffness). A value of 0
(the DTD default: not given) or ``inf`` is rigid in that direction; a *compliance* of 0 is rigidity.

Equilibrium. The compliant joints become 6-DOF *deflection joints* inserted under each compliant joint
(:func:`compliant_mechanism`; the carried body keeps its name and frames), and the deflections ``u`` solve

    K u + s(u) = 0,      s(u) = static joint torques of gravity, payloads and wrenches on the deflection joints

the stationarity condition of spring plus gravity potential (dead loads). It is solved as the nonlinear
fixed point it is -- Newton steps with the tangent stiffness ``K + ds/du`` (central differences) and a
backtracking line search on the residual -- not as one linearized step; with every joint rigid the answer
is the rigid one, exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..data import derived
from ..builder import edit
from ..errors import MechanismModelError, NoSolution
from ..joints import Joint
from ..kinematics import forward_kinematics
from ..model import Mechanism
from .gravity import DEFAULT_GRAVITY, Wrench, parse_gravity, static_torques
from .mass import Payload
from ..spatial import rotation_vector

__all__ = ["Deflection", "compliant_joints", "compliant_mechanism", "deflected_equilibrium"]

#: coordinate suffixes of a deflection joint, in Joint.floating's order
_DOF = ("x", "y", "z", "roll", "pitch", "yaw")
_SUFFIX = "__deflection"


def _stiffness_vector(joint: Joint) -> np.ndarray | None:
    """The six stiffnesses with rigid directions as inf; None when the joint is rigid in all six."""
    if joint.stiffness is None:
        return None
    k = np.array(joint.stiffness, dtype=float)
    if np.any(np.isnan(k)) or np.any(k < 0):
        raise MechanismModelError(f"joint {joint.name!r}: stiffness must be >= 0 (0 or inf: rigid), got "
                                  f"{joint.stiffness}")
    k = np.where(k == 0, np.inf, k)
    return None if np.all(np.isinf(k)) else k


def compliant_joints(mechanism: Mechanism) -> dict:
    """``{joint name: (6,) stiffness with inf where rigid}`` for every joint with some finite stiffness."""
    out = {}
    for j in mechanism.joints:
        k = _stiffness_vector(j)
        if k is not None:
            out[j.name] = k
    return out


def compliant_mechanism(mechanism: Mechanism) -> Mechanism:
    """``mechanism`` with a 6-DOF deflection joint ``<joint>__deflection`` (coordinates ``.x`` ... ``.yaw``)
    under every compliant joint: the joint's body becomes a massless ``<body>__rigid`` carrier and the body
    itself, with its mass, frames and children, sits on the deflection joint. At zero deflection every frame
    is where it is in ``mechanism``. Kept in the mechanism's derived data (:mod:`..data`)."""
    return derived(mechanism, "statics.compliant_mechanism", _build_compliant)


def _build_compliant(mechanism: Mechanism) -> Mechanism:
    b = edit(mechanism)
    for name in compliant_joints(mechanism):
        body = mechanism.child_body_of_joint(name)
        spec = b.body(body)
        carrier = f"{body}__rigid"
        b.add_body(carrier, spec.parent, spec.joint)
        b.update_body(body, parent=carrier, joint=Joint.floating(f"{name}{_SUFFIX}"))
    return b.build()


@dataclass(frozen=True, eq=False)
class Deflection:
    """Result of :func:`deflected_equilibrium`.

    ``deflections``: ``{joint: (6,) (x, y, z, roll, pitch, yaw)}`` (m, rad) of each compliant joint's body
    from its rigid pose, in the joint frame; ``spring_wrenches``: ``{joint: (6,)}`` the generalized spring
    forces ``-K u`` (N, N m) that hold the loads; ``converged``, ``iterations``, ``residual`` (N or N m);
    ``mechanism`` the compliant mechanism (:func:`compliant_mechanism`) and ``q`` its configuration: every
    frame of the original model is a frame of it, at its deflected pose; ``q_rigid`` the configuration of
    the original model; ``torques`` the joint torques on the original model's independent coordinates at
    the deflected pose (N m, N)."""

    deflections: dict
    spring_wrenches: dict
    converged: bool
    iterations: int
    residual: float
    mechanism: Mechanism
    q: np.ndarray
    q_rigid: np.ndarray
    original: Mechanism
    torques: np.ndarray

    def pose(self, frame: str, relative_to: str | None = None) -> np.ndarray:
        """Deflected pose ``T_relative_to_frame`` (4x4) of any frame of the original model."""
        return forward_kinematics(self.mechanism, self.q).pose(frame, relative_to)

    def rigid_pose(self, frame: str, relative_to: str | None = None) -> np.ndarray:
        return forward_kinematics(self.original, self.q_rigid).pose(frame, relative_to)

    def poses(self) -> dict:
        """Deflected poses (ground frame) of every frame of the original model."""
        fk = forward_kinematics(self.mechanism, self.q)
        return {f: fk.pose(f) for f in self.original.frame_names}

    def frame_deflection(self, frame: str) -> np.ndarray:
        """``[dp; dtheta]`` (6,): the frame's origin displacement (m) and rotation vector (rad) from its rigid
        pose to its deflected pose, both in the ground frame (a tool's sag)."""
        Td, Tr = self.pose(frame), self.rigid_pose(frame)
        return np.concatenate([Td[:3, 3] - Tr[:3, 3], rotation_vector(Td[:3, :3] @ Tr[:3, :3].T)])


def deflected_equilibrium(mechanism: Mechanism, q=None, gravity=DEFAULT_GRAVITY,
                          wrenches: Sequence[Wrench] = (), payloads: Sequence[Payload] | None = None,
                          tol: float = 1e-10, max_iterations: int = 50) -> Deflection:
    """The equilibrium of ``mechanism`` at commanded joint values ``q`` with its joints' stiffness under
    ``gravity`` (m/s^2, ground frame), ``payloads`` and applied ``wrenches`` (dead loads: their direction
    does not turn with the deflection unless expressed in a deflecting frame). Raises :class:`NoSolution`
    when the loads exceed what the springs can hold (no convergence within ``max_iterations``)."""
    g = parse_gravity(gravity)
    qf = mechanism.configuration(q)
    if qf.ndim != 1:
        raise MechanismModelError("deflected_equilibrium takes one configuration")
    stiff = compliant_joints(mechanism)
    aug = compliant_mechanism(mechanism)
    names = aug.coordinate_names
    index = {c: i for i, c in enumerate(names)}
    qa = np.array(aug.home)
    for c, v in zip(mechanism.coordinate_names, qf):
        qa[index[c]] = v
    u_idx, k_list, owners = [], [], []
    for jname, k in stiff.items():
        for d, kd in zip(_DOF, k):
            if math.isfinite(kd):
                u_idx.append(index[f"{jname}{_SUFFIX}.{d}"])
                k_list.append(kd)
                owners.append((jname, _DOF.index(d)))
    u_idx = np.array(u_idx, dtype=int)
    K = np.array(k_list)

    def load(u):
        x = qa.copy()
        x[u_idx] = u
        return static_torques(aug, x, g, wrenches, payloads, coordinates="full")[u_idx]

    u = np.zeros(len(u_idx))
    it, res = 0, 0.0
    converged = True
    if len(u_idx):
        r = K * u + load(u)
        scale = max(1.0, float(np.abs(r).max()))
        res = float(np.abs(r).max())
        converged = False
        for it in range(1, max_iterations + 1):
            if res <= tol * scale:
                converged = True
                it -= 1
                break
            H = np.diag(K) + _jacobian_fd(load, u, 1e-7 * np.maximum(1.0, 1.0 / np.sqrt(K)))
            try:
                du = -np.linalg.solve(H, r)
            except np.linalg.LinAlgError:
                du = -np.linalg.lstsq(H, r, rcond=None)[0]
            step = 1.0
            for _ in range(30):                       # backtracking on the residual
                un = u + step * du
                rn = K * un + load(un)
                if np.all(np.isfinite(rn)) and np.abs(rn).max() < res or step < 1e-6:
                    break
                step *= 0.5
            u, r = un, rn
            res = float(np.abs(r).max())
        else:
            converged = res <= tol * scale
        if not converged:
            raise NoSolution(f"deflected equilibrium did not converge in {max_iterations} iterations "
                             f"(residual {res:.3g}): the loads may exceed what the joint springs can hold")
    qa[u_idx] = u
    defl = {j: np.zeros(6) for j in stiff}
    spring = {j: np.zeros(6) for j in stiff}
    for (j, d), ui, ki in zip(owners, u, K):
        defl[j][d] = ui
        spring[j][d] = -ki * ui
    # torques of the original joints at the deflected pose (the actuators hold the same loads)
    tau_aug = static_torques(aug, qa, g, wrenches, payloads, coordinates="full")
    tau_full = np.array([tau_aug[index[c]] for c in mechanism.coordinate_names])
    if mechanism.couplings:
        tau = mechanism.coupling_jacobian(qf).T @ tau_full
    else:
        tau = tau_full
    return Deflection(defl, spring, converged, it, res, aug, qa, qf, mechanism, tau)


def _jacobian_fd(f, x, h):
    """Central-difference Jacobian of ``f`` at ``x`` with per-coordinate steps ``h``."""
    n = len(x)
    J = np.empty((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = h[i]
        J[:, i] = (f(x + e) - f(x - e)) / (2 * h[i])
    return J
