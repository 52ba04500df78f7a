"""Pictures of a mechanism in a configuration (matplotlib, Agg backend, imported only when used).

>>> render_png(mechanism, q, "rover.png")

draws, from two viewpoints (an oblique 3-D view and a side view along -y, or a top view for a mechanism
that lies in the x-y plane, such as the four-bar):

* links as lines from each body origin to its parent body's origin (not to the ground for floating and
  planar joints, whose "link" would be meaningless);
* named frames as axis triads, x red, y green, z blue (reference frames, which repeat body origins, are
  left out), joined to their body's origin by a thin dashed line;
* bounding shapes as wireframes: boxes as their 12 edges, cylinders as two circles and four generators,
  spheres as three great circles; mesh shapes are not drawn.

No pyplot and no global matplotlib state is used, so rendering is safe in servers and tests.
"""

from __future__ import annotations

import math

import numpy as np

from .kinematics import forward_kinematics

#: (elevation, azimuth) in degrees and a title for each panel
VIEWS = ((25.0, -60.0, "oblique view"), (0.0, -90.0, "side view (x-z plane)"))
#: used instead of VIEWS for mechanisms that lie in the x-y plane (a side view of them shows nothing)
PLANAR_VIEWS = ((25.0, -60.0, "oblique view"), (90.0, -90.0, "top view (x-y plane)"))


# ---------------------------------------------------------------------------------------------- geometry
def box_edges(size) -> list[np.ndarray]:
    """The 12 edges of a box of full lengths ``size`` centred at the origin, each a (2, 3) array."""
    half = 0.5 * np.asarray(size, dtype=float)
    signs = [(sx, sy, sz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    edges = []
    for i, a in enumerate(signs):
        for b in signs[i + 1:]:
            if sum(u != v for u, v in zip(a, b)) == 1:  # corners that differ along one axis
                edges.append(np.array([a, b], dtype=float) * half)
    return edges


def cylinder_lines(radius: float, length: float, n: int = 24) -> list[np.ndarray]:
    """Wireframe of a cylinder along z centred at the origin: two circles and four generators."""
    t = np.linspace(0.0, 2.0 * math.pi, n + 1)
    h = 0.5 * length
    out = []
    for z in (-h, h):
        out.append(np.column_stack([radius * np.cos(t), radius * np.sin(t), np.full_like(t, z)]))
    for a in (0.0, 0.5 * math.pi, math.pi, 1.5 * math.pi):
        x, y = radius * math.cos(a), radius * math.sin(a)
        out.append(np.array([[x, y, -h], [x, y, h]]))
    return out


def sphere_lines(radius: float, n: int = 24) -> list[np.ndarray]:
    t = np.linspace(0.0, 2.0 * math.pi, n + 1)
    c, s, z = radius * np.cos(t), radius * np.sin(t), np.zeros_like(t)
    return [np.column_stack([c, s, z]), np.column_stack([c, z, s]), np.column_stack([z, c, s])]


def shape_lines(shape) -> list[np.ndarray]:
    """Polylines (in the shape's own frame) drawing one bounding shape; empty for mesh / none."""
    d = shape.dimensions
    if shape.type == "box" and len(d) == 3:
        return box_edges(d)
    if shape.type == "cylinder" and len(d) >= 2:
        return cylinder_lines(d[0], d[1])
    if shape.type == "sphere" and len(d) >= 1:
        return sphere_lines(d[0])
    return []


def _apply(T: np.ndarray, pts: np.ndarray) -> np.ndarray:
    return pts @ T[:3, :3].T + T[:3, 3]


def scene(mechanism, q=None, frames=None) -> dict:
    """Everything to draw, in ground coordinates (metres).

    Returns ``{"links": [(2,3)...], "shapes": [(k,3)...], "frames": {name: 4x4}, "origins": {body: xyz},
    "tethers": [(2,3)...]}`` (tethers join each drawn frame to its body's origin).
    """
    fk = forward_kinematics(mechanism, q)
    poses = fk.all_poses()
    ground = mechanism.ground
    links, shapes = [], []
    origins = {}
    for spec in mechanism.bodies:
        origins[spec.name] = poses[spec.name][:3, 3]
    for spec in mechanism.bodies[1:]:
        j = spec.joint
        if spec.parent == ground and j is not None and j.type.value in ("floating", "planar"):
            continue
        links.append(np.array([origins[spec.parent], origins[spec.name]]))
    for spec in mechanism.bodies:
        T = poses[spec.name]
        for s in spec.shapes:
            for line in shape_lines(s):
                shapes.append(_apply(T @ np.asarray(s.transform), line))
    if frames is None:
        frames = [f for f in mechanism.frame_names if mechanism.frame(f).kind not in ("body", "reference")]
    tethers = [np.array([origins[mechanism.frame(f).body], poses[f][:3, 3]]) for f in frames]
    return {"links": links, "shapes": shapes, "frames": {f: poses[f] for f in frames}, "origins": origins,
            "tethers": tethers}


def _extent(sc) -> tuple[np.ndarray, float]:
    pts = [np.asarray(v) for v in sc["origins"].values()]
    pts += [p for line in sc["shapes"] for p in line]
    pts += [T[:3, 3] for T in sc["frames"].values()]
    P = np.array(pts) if pts else np.zeros((1, 3))
    lo, hi = P.min(axis=0), P.max(axis=0)
    centre = 0.5 * (lo + hi)
    half = max(0.5 * float(np.max(hi - lo)), 0.05)
    return centre, half


def draw(ax, sc, *, labels: bool = True, triad: float | None = None) -> None:
    """Draw a :func:`scene` on a matplotlib 3-D axes."""
    centre, half = _extent(sc)
    triad = triad if triad is not None else 0.12 * half
    for line in sc["shapes"]:
        ax.plot(line[:, 0], line[:, 1], line[:, 2], color="0.55", linewidth=0.6)
    for line in sc.get("tethers", ()):
        ax.plot(line[:, 0], line[:, 1], line[:, 2], color="0.35", linewidth=0.6, linestyle="--")
    for line in sc["links"]:
        ax.plot(line[:, 0], line[:, 1], line[:, 2], color="black", linewidth=2.0)
    O = np.array(list(sc["origins"].values()))
    ax.scatter(O[:, 0], O[:, 1], O[:, 2], color="black", s=6, depthshade=False)
    for name, T in sc["frames"].items():
        p = T[:3, 3]
        for k, colour in enumerate(("red", "green", "blue")):
            e = p + triad * T[:3, k]
            ax.plot([p[0], e[0]], [p[1], e[1]], [p[2], e[2]], color=colour, linewidth=1.2)
        if labels:
            ax.text(p[0], p[1], p[2], " " + name, fontsize=5, color="0.2")
    for k, setter in enumerate((ax.set_xlim, ax.set_ylim, ax.set_zlim)):
        setter(centre[k] - half, centre[k] + half)
    try:
        ax.set_box_aspect((1, 1, 1))
    except AttributeError:  # pragma: no cover - matplotlib < 3.3
        pass
    ax.set_xlabel("x (m)", fontsize=7)
    ax.set_ylabel("y (m)", fontsize=7)
    ax.set_zlabel("z (m)", fontsize=7)
    ax.tick_params(labelsize=6)


def is_planar_xy(sc, ratio: float = 0.05) -> bool:
    """True when everything in the scene lies within a thin slab around a plane z = const."""
    pts = [np.asarray(v) for v in sc["origins"].values()] + [T[:3, 3] for T in sc["frames"].values()]
    P = np.array(pts)
    span = np.ptp(P, axis=0)
    return bool(span[2] <= ratio * max(span[0], span[1], 1e-9))


def render_png(mechanism, q=None, path="mechanism.png", *, frames=None, labels: bool = True,
               views=None, dpi: int = 100, size=(12.0, 6.0), title: str | None = None) -> str:
    """Draw ``mechanism`` at joint values ``q`` (home when None) from each of ``views`` side by side and
    write a PNG to ``path``; returns ``path``. ``views`` defaults to :data:`VIEWS`, or :data:`PLANAR_VIEWS`
    for a mechanism lying in the x-y plane."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    sc = scene(mechanism, q, frames)
    if views is None:
        views = PLANAR_VIEWS if is_planar_xy(sc) else VIEWS
    fig = Figure(figsize=size, dpi=dpi)
    FigureCanvasAgg(fig)
    for k, (elev, azim, name) in enumerate(views):
        ax = fig.add_subplot(1, len(views), k + 1, projection="3d")
        draw(ax, sc, labels=labels and k == 0)
        ax.view_init(elev=elev, azim=azim)
        ax.set_title(name, fontsize=9)
        if abs(elev) < 1e-9 and abs(abs(azim) - 90.0) < 1e-9:  # looking along y: its ticks are noise
            ax.set_yticks([])
            ax.set_ylabel("")
        elif abs(abs(elev) - 90.0) < 1e-9:                       # looking along z
            ax.set_zticks([])
            ax.set_zlabel("")
    fig.subplots_adjust(left=0.0, right=1.0, bottom=0.03, top=0.9, wspace=0.0)
    fig.suptitle(title or f"{mechanism.name}: {len(mechanism.bodies) - 1} bodies, nq = {mechanism.nq}",
                 fontsize=11)
    fig.savefig(path, format="png", dpi=dpi)
    return path
