"""Joint trajectories: the time-stamped points sent to a ``joint_trajectory_controller``, and the time
parameterization of a geometric joint path within velocity and acceleration limits.

:class:`JointTrajectory` holds points (positions, velocities, accelerations, ``time_from_start``) exactly as
``trajectory_msgs/JointTrajectory`` does, and :meth:`JointTrajectory.sample` evaluates it between points the
way ros2_control's ``joint_trajectory_controller`` does when all three are given (a quintic per segment,
continuous in position, velocity and acceleration). Limits are therefore checked on what the controller
executes, not only at the points.

:func:`time_parameterize` makes a path of joint configurations into such a trajectory with the time-optimal
path parameterization of `toppra <https://github.com/hungpham2511/toppra>`_ (reachability analysis; Pham &
Pham, IEEE T-RO 2018): the path is a cubic spline through the configurations in a path parameter ``s``, toppra
finds the fastest ``s(t)`` that keeps every joint's ``|qd| <= vmax`` and ``|qdd| <= amax`` at the grid points,
and the result is verified on the executed quintics (uniformly slowed down if a sample exceeds a limit between
grid points). toppra is an optional dependency: ``pip install toppra``.

Units: seconds, radians (metres for prismatic joints), rad/s, rad/s^2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data import SHARED
from ..errors import InvalidConfiguration, MechanismModelError
from ..extras import install_hint

__all__ = ["JointTrajectory", "TrajectoryError", "limit_ratios", "time_parameterize"]


class TrajectoryError(MechanismModelError):
    """A path cannot be time-parameterized (bad limits, non-finite input, the optional library missing)."""


@dataclass
class JointTrajectory:
    """Points of a joint trajectory (``trajectory_msgs/JointTrajectory`` semantics).

    ``times``: (N,) seconds from start, strictly increasing, ``times[0] == 0``; ``positions``,
    ``velocities``, ``accelerations``: (N, n) in joint units; ``joint_names`` names the n columns.
    """

    joint_names: tuple
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def duration(self) -> float:
        return float(self.times[-1]) if len(self.times) else 0.0

    def __len__(self) -> int:
        return len(self.times)

    def sample(self, t):
        """``(q, qd, qdd)`` at time(s) ``t`` (scalar or array; clamped to [0, duration]): the quintic through
        the neighbouring points' positions, velocities and accelerations, as the ros2_control joint
        trajectory controller interpolates. Shapes (n,) or (len(t), n)."""
        scalar = np.ndim(t) == 0
        t = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), 0.0, self.duration)
        T = self.times
        if len(T) == 1:
            q = np.repeat(self.positions[:1], len(t), axis=0)
            z = np.zeros_like(q)
            return (q[0], z[0], z[0]) if scalar else (q, z, z)
        k = np.clip(np.searchsorted(T, t, side="right") - 1, 0, len(T) - 2)
        h = (T[k + 1] - T[k])[:, None]
        tau = (t - T[k])[:, None]
        p0, p1 = self.positions[k], self.positions[k + 1]
        v0, v1 = self.velocities[k], self.velocities[k + 1]
        a0, a1 = self.accelerations[k], self.accelerations[k + 1]
        # quintic c0 + c1 tau + ... + c5 tau^5 matching (p, v, a) at both ends of the segment
        c0, c1, c2 = p0, v0, 0.5 * a0
        d = p1 - p0 - v0 * h - 0.5 * a0 * h * h
        e = v1 - v0 - a0 * h
        f = a1 - a0
        c3 = (10 * d - 4 * e * h + 0.5 * f * h * h) / h ** 3
        c4 = (-15 * d + 7 * e * h - f * h * h) / h ** 4
        c5 = (6 * d - 3 * e * h + 0.5 * f * h * h) / h ** 5
        q = c0 + tau * (c1 + tau * (c2 + tau * (c3 + tau * (c4 + tau * c5))))
        qd = c1 + tau * (2 * c2 + tau * (3 * c3 + tau * (4 * c4 + tau * 5 * c5)))
        qdd = 2 * c2 + tau * (6 * c3 + tau * (12 * c4 + tau * 20 * c5))
        return (q[0], qd[0], qdd[0]) if scalar else (q, qd, qdd)

    def scaled(self, k: float) -> "JointTrajectory":
        """The same path ``k`` times slower (``k >= 1`` slows down): times x k, velocities / k,
        accelerations / k^2."""
        return JointTrajectory(self.joint_names, self.times * k, self.positions.copy(), self.velocities / k,
                               self.accelerations / (k * k), dict(self.info))


def _segment_coefficients(traj: JointTrajectory):
    """Quintic coefficients (6, S, n) of every segment in the local time ``tau`` and the durations (S,)."""
    h = np.diff(traj.times)[:, None]
    p0, p1 = traj.positions[:-1], traj.positions[1:]
    v0, v1 = traj.velocities[:-1], traj.velocities[1:]
    a0, a1 = traj.accelerations[:-1], traj.accelerations[1:]
    d = p1 - p0 - v0 * h - 0.5 * a0 * h * h
    e = v1 - v0 - a0 * h
    f = a1 - a0
    c3 = (10 * d - 4 * e * h + 0.5 * f * h * h) / h ** 3
    c4 = (-15 * d + 7 * e * h - f * h * h) / h ** 4
    c5 = (6 * d - 3 * e * h + 0.5 * f * h * h) / h ** 5
    return np.stack([p0, v0, 0.5 * a0, c3, c4, c5]), h[:, 0]


def limit_ratios(traj: JointTrajectory, vmax, amax, samples_per_segment: int = 8):
    """Largest ``|qd| / vmax`` and ``|qdd| / amax`` over the points and ``samples_per_segment`` samples inside
    every segment of the executed quintics (1.0 = at the limit)."""
    if len(traj) < 2:
        return 0.0, 0.0
    c, h = _segment_coefficients(traj)
    S, n = c.shape[1], c.shape[2]
    # in the segment's normalized time u = tau / h: qd = sum_k k c_k h^(k-1) u^(k-1), qdd likewise; every
    # sample of every segment by one matrix product each
    hp = h[None, :, None] ** np.arange(5)[:, None, None]                                     # (5, S, 1)
    Dv = (np.arange(1, 6)[:, None, None] * c[1:] * hp).reshape(5, S * n)
    Da = (np.array([2.0, 6.0, 12.0, 20.0])[:, None, None] * c[2:] * hp[:4]).reshape(4, S * n)
    u = np.linspace(0.0, 1.0, samples_per_segment + 1)
    U = u[:, None] ** np.arange(5)                                                          # (U, 5)
    qd = np.abs(U @ Dv).max(axis=0).reshape(S, n).max(axis=0)
    qdd = np.abs(U[:, :4] @ Da).max(axis=0).reshape(S, n).max(axis=0)
    return float(np.max(qd / vmax)), float(np.max(qdd / amax))


def _limits(values, n, what):
    v = np.broadcast_to(np.asarray(values, dtype=float), (n,)).copy()
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise TrajectoryError(f"{what} limits must be finite and positive for every joint, got {v.tolist()}")
    return v


def _import_toppra():
    if _TOPPRA:
        return _TOPPRA[0]
    try:
        import toppra
        import toppra.algorithm
        import toppra.constraint
    except ImportError as e:  # pragma: no cover - exercised where the extra is missing
        raise TrajectoryError(f"time parameterization needs toppra: {install_hint('trajectory')} ({e})") \
            from None
    import logging

    logging.getLogger("toppra").setLevel(logging.WARNING)
    _memoize_available_solvers(toppra)
    _TOPPRA.append(toppra)
    return toppra


_TOPPRA: list = []


def _memoize_available_solvers(toppra) -> None:
    """toppra's reachability algorithm asks ``toppra.solverwrapper.available_solvers()`` on every
    construction, which searches ``sys.path`` for the optional qpOASES and cvxpy packages (about half a
    millisecond, a tenth of a whole parameterization). The answer cannot change within a process once
    toppra is imported, so it is computed once (same function, same answer; its print still happens when
    asked for with ``output_msg=True``)."""
    sw = getattr(toppra, "solverwrapper", None)
    original = getattr(sw, "available_solvers", None)
    if original is None or getattr(original, "_mm_memoized", False):
        return
    cache: list = []

    def available_solvers(output_msg=True):
        if not cache:
            cache.append(original(output_msg=False))
        if output_msg:
            print(cache[0])
        return cache[0]

    available_solvers._mm_memoized = True
    available_solvers.__doc__ = original.__doc__
    sw.available_solvers = available_solvers


def _constraints(toppra, vmax, amax):
    """toppra's limit constraints, kept per limits (a memo of :data:`..data.SHARED`: building one formats
    every row into a string)."""
    return SHARED.memo("trajectory.toppra_constraints", 64).get(
        (vmax.tobytes(), amax.tobytes()),
        lambda: [toppra.constraint.JointVelocityConstraint(np.vstack([-vmax, vmax]).T),
                 toppra.constraint.JointAccelerationConstraint(np.vstack([-amax, amax]).T)])


def time_parameterize(path, vmax, amax, joint_names=(), *, min_grid: int = 40,
                      max_grid: int = 50, verify_samples: int = 16,
                      margin: float = 0.995) -> JointTrajectory:
    """Fastest trajectory along ``path`` ((N, n) joint configurations, N >= 1) that starts and ends at rest
    with ``|qd| <= vmax`` and ``|qdd| <= amax`` per joint (scalars or (n,) arrays; rad/s, rad/s^2 or m/s,
    m/s^2).

    The executed quintics are sampled ``verify_samples`` times per segment; if a sample exceeds ``margin``
    times a limit, the whole trajectory is slowed down uniformly until none does (the margin covers the
    peaks between samples).

    The returned points are the path's configurations (in order, each one reached exactly), plus grid points
    inserted where consecutive configurations are far apart, so that toppra's grid has at least ``min_grid``
    intervals. ``info``: ``toppra_duration`` (s, before verification), ``slowdown`` (the uniform factor the
    verification applied, 1.0 when toppra's profile already held between the points), ``ratios`` (the
    largest velocity and acceleration ratios to the limits after it).
    Raises :class:`TrajectoryError` for non-finite input or limits, or when toppra finds no parameterization.
    """
    Q = np.asarray(path, dtype=float)
    if Q.ndim != 2 or Q.shape[0] < 1 or not np.all(np.isfinite(Q)):
        raise InvalidConfiguration(f"path must be a finite (N, n) array of configurations, got shape {Q.shape}")
    n = Q.shape[1]
    vmax = _limits(vmax, n, "velocity")
    amax = _limits(amax, n, "acceleration")
    names = tuple(joint_names) or tuple(f"q{i}" for i in range(n))
    # drop repeated configurations (a zero-length step has no parameter interval)
    if len(Q) > 1:
        Q = Q[np.concatenate([[True], np.max(np.abs(np.diff(Q, axis=0)), axis=1) > 1e-12])]
    if len(Q) == 1:
        z = np.zeros((1, n))
        return JointTrajectory(names, np.zeros(1), Q.copy(), z, z.copy(), {"slowdown": 1.0, "ratios": (0.0, 0.0)})
    # path parameter: joint-space arc length scaled by the velocity limits (each joint's share of the time)
    ds = np.max(np.abs(np.diff(Q, axis=0)) / vmax, axis=1)
    s = np.concatenate([[0.0], np.cumsum(ds)])
    s /= s[-1]
    # toppra's grid: the configurations themselves (every k-th when there are more than max_grid), each
    # interval split so that there are at least min_grid intervals
    if len(s) - 1 > max_grid:
        knots = s[np.unique(np.linspace(0, len(s) - 1, max_grid + 1).round().astype(int))]
    else:
        knots = s
    splits = np.maximum(1, np.ceil(np.diff(knots) * min_grid)).astype(int)
    seg = np.repeat(np.arange(len(knots) - 1), splits)                  # each interval split evenly
    frac = (np.arange(len(seg)) - np.repeat(np.cumsum(splits) - splits, splits)) / np.repeat(splits, splits)
    grid = np.concatenate([knots[seg] + frac * np.diff(knots)[seg], knots[-1:]])
    toppra = _import_toppra()
    if len(Q) == 2:      # a cubic spline needs three points: a straight joint-space segment
        Q3 = np.vstack([Q[0], 0.5 * (Q[0] + Q[1]), Q[1]])
        spline = toppra.SplineInterpolator([0.0, 0.5, 1.0], Q3, bc_type="natural")
    else:
        spline = toppra.SplineInterpolator(s, Q, bc_type="not-a-knot")
    cons = _constraints(toppra, vmax, amax)
    inst = toppra.algorithm.TOPPRA(cons, spline, gridpoints=grid, solver_wrapper="seidel",
                                   parametrizer="ParametrizeConstAccel")
    sdd, sd, _ = inst.compute_parameterization(0.0, 0.0)[:3]
    if sd is None or sdd is None or not np.all(np.isfinite(sd)):
        raise TrajectoryError("toppra found no time parameterization within the limits (the path may need "
                              "infinite acceleration, e.g. a kink with non-zero speed)")
    sd = np.maximum(np.asarray(sd, dtype=float), 0.0)
    sdd = np.asarray(sdd, dtype=float)[:len(grid) - 1]
    tg = np.concatenate([[0.0], np.cumsum(2.0 * np.diff(grid) / np.maximum(sd[:-1] + sd[1:], 1e-12))])
    # output points: every configuration and grid point; within a grid interval the path acceleration is
    # constant, so sd(s)^2 = sd_i^2 + 2 sdd_i (s - s_i) and the time follows in closed form
    out = np.union1d(s, grid)
    i = np.clip(np.searchsorted(grid, out, side="right") - 1, 0, len(grid) - 2)
    u = out - grid[i]
    sd_o = np.sqrt(np.maximum(sd[i] ** 2 + 2.0 * sdd[i] * u, 0.0))
    times = tg[i] + 2.0 * u / np.maximum(sd[i] + sd_o, 1e-12)
    on_grid = np.isclose(u, 0.0, atol=1e-15) & (i > 0)
    sdd_o = np.where(on_grid, 0.5 * (sdd[i] + sdd[np.maximum(i - 1, 0)]), sdd[i])   # mean of both sides
    qs = spline(out)
    qs[0], qs[-1] = Q[0], Q[-1]
    d1 = spline(out, 1)
    d2 = spline(out, 2)
    vel = d1 * sd_o[:, None]
    acc = d2 * (sd_o ** 2)[:, None] + d1 * sdd_o[:, None]
    vel[0] = vel[-1] = 0.0
    traj = JointTrajectory(names, times, qs, vel, acc)
    toppra_duration = traj.duration
    rv, ra = limit_ratios(traj, vmax, amax, verify_samples)
    k = max(1.0, rv / margin, float(np.sqrt(ra / margin)))
    if k > 1.0:
        traj = traj.scaled(k)
        rv, ra = rv / k, ra / (k * k)
    traj.info = {"toppra_duration": toppra_duration, "slowdown": k, "ratios": (rv, ra), "grid": len(grid)}
    return traj
