"""Writing a mechanism as RobCoGen KinDSL (``.kindsl``), for :func:`mechanism_model_core.io.save_model`.

What KinDSL can say, and so what is written:

* revolute (and continuous) joints about, and prismatic joints along, +z of the joint frame. A joint whose
  axis is not +z gets a joint frame turned onto its axis (:func:`~mechanism_model_core.spatial.rotation_z_to`),
  and the link frame is that joint frame at zero, as KinDSL defines it: the link frames of such bodies are
  turned against our body frames by that constant rotation; every named frame keeps its pose. A joint
  ``offset`` is folded into the joint frame;
* fixed joints do not exist in KinDSL: a body on a fixed joint is merged into its parent link (its mass
  lumped in, its frame kept as a named frame of that link, its named frames and children moved along);
* the base: the ground with its named frames and mass (``RobotBase <ground>``), or, when the ground carries
  exactly one body on a floating joint, that body as ``RobotBase <body> floating`` (the floating joint's
  placement, if any, is dropped with a warning);
* mass, centre of mass and inertia, converted to KinDSL's convention (about the link origin, in link axes,
  products of inertia as plain integrals).

KinDSL has no joint limits, couplings, bounding shapes or multi-DOF joints other than the floating base:
limits, couplings and shapes are left out with one warning; a ball or planar joint, or a name that is not
an identifier, is an error. Loading the written file gives the same pose for every named frame and every body
whose joint axis is +z, for the same joint values.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..builder import combine_mass
from ..errors import ModelFileError
from ..joints import JointType
from ..model import MassProperties
from .. import spatial


class KinDSLWarning(UserWarning):
    """Something of the mechanism that KinDSL cannot hold was left out."""


def _n(v: float) -> str:
    v = float(v)
    if abs(v) < 1e-15:
        v = 0.0
    return repr(v)


def _vec(v) -> str:
    return "(" + ", ".join(_n(x) for x in v) + ")"


def _pose_lines(T: np.ndarray, indent: str) -> list[str]:
    """``translation``/``rotation`` of ``T`` (KinDSL rotations: about x, then the new y, then the new z)."""
    # intrinsic x-y'-z'' angles (a, b, c) of R are minus the URDF roll-pitch-yaw of R^T
    abc = -spatial.matrix_to_rpy(np.asarray(T[:3, :3]).T)
    return [f"{indent}translation = {_vec(T[:3, 3])}", f"{indent}rotation = {_vec(abc)}"]


def _identifier(name: str, what: str) -> str:
    if not name.isidentifier():
        raise ModelFileError(f"{what} {name!r} is not a KinDSL name (letters, digits and '_' only)")
    return name


def to_kindsl(mechanism, name: str | None = None) -> str:
    """The KinDSL text of ``mechanism`` (see the module for what KinDSL cannot hold)."""
    m = mechanism
    robot = _identifier(name or m.name, "robot name")
    ground = m.bodies[0]
    roots = m.children(m.ground)
    lost = set()
    floating = len(roots) == 1 and m.body(roots[0]).spec.joint.type is JointType.FLOATING
    if floating:
        base = roots[0]
        if not np.allclose(m.body(base).spec.joint.placement, np.eye(4), atol=1e-12):
            warnings.warn(f"KinDSL: the floating joint of {base!r} is placed off the ground's origin; the "
                          f"placement is dropped (world poses shift by it)", KinDSLWarning, stacklevel=3)
        if ground.frames or ground.mass.mass:
            lost.add("the ground's own frames and mass")
    else:
        base = m.ground
    # every body's link and its pose in that link: T_link_body
    link_of: dict[str, str] = {base: base}
    T_link: dict[str, np.ndarray] = {base: np.eye(4)}
    links: dict[str, dict] = {}       # link -> {"mass": MassProperties, "frames": {name: T}, "children": []}
    joints: list[tuple] = []          # (kind, name, T_parentlink_jointframe)

    def new_link(link: str, spec, T_link_body: np.ndarray) -> None:
        links[link] = {"mass": MassProperties(), "frames": {}, "children": []}
        merge(link, spec, T_link_body, own=True)

    def merge(link: str, spec, T: np.ndarray, own: bool = False) -> None:
        info = links[link]
        R, p = T[:3, :3], T[:3, 3]
        mass = MassProperties(spec.mass.mass, R @ spec.mass.com + p, R @ spec.mass.inertia @ R.T)
        info["mass"] = combine_mass(info["mass"], mass)
        if not own:
            info["frames"][_identifier(spec.name, "body")] = T
        for fname, F in spec.frames.items():
            info["frames"][_identifier(fname, "frame")] = T @ np.asarray(F)
        if spec.shapes:
            lost.add("bounding shapes")

    new_link(base, m.body(base).spec if base != m.ground else ground, np.eye(4))
    order = list(m.children(base))
    stack = list(reversed(order))
    while stack:
        body = stack.pop()
        spec = m.body(body).spec
        j = spec.joint
        parent = spec.parent
        plink = link_of[parent]
        T_parent = T_link[parent] @ j.placement          # our joint frame in the parent's link
        if j.type is JointType.FIXED:
            link_of[body], T_link[body] = plink, T_parent
            merge(plink, spec, T_parent)
        elif j.type in (JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC):
            if j.coupling:
                lost.add("couplings")
            if np.isfinite(j.lower[0]) or np.isfinite(j.upper[0]):
                lost.add("joint limits")
            C = spatial.make_transform(spatial.rotation_z_to(j.axis))
            offset = spatial.make_transform(
                spatial.axis_angle_matrix(j.axis, j.offset) if j.type is not JointType.PRISMATIC else None,
                None if j.type is not JointType.PRISMATIC else np.asarray(j.axis) * j.offset)
            T_joint = T_parent @ offset @ C                 # the KinDSL joint frame, z along the axis
            kind = "p_joint" if j.type is JointType.PRISMATIC else "r_joint"
            joints.append((kind, _identifier(j.name, "joint"), T_joint))
            link_of[body] = _identifier(body, "body")
            T_link[body] = spatial.inverse(C)              # our body frame in its link frame
            new_link(body, spec, T_link[body])
            links[plink]["children"].append((body, j.name))
        else:
            raise ModelFileError(f"KinDSL has only revolute and prismatic joints (and a floating base); joint "
                                 f"{j.name!r} is {j.type.value}")
        stack.extend(reversed(m.children(body)))
    if lost:
        warnings.warn(f"KinDSL cannot hold {', '.join(sorted(lost))}: left out of the file", KinDSLWarning,
                      stacklevel=3)
    out = [f"// {robot}: written by mechanism_model_core from {m.source or 'a mechanism'}",
           f"Robot {robot}", "{"]
    ids = {name: k for k, name in enumerate(links)}
    for lname, info in links.items():
        head = f"RobotBase {_identifier(lname, 'body')}" + (" floating" if floating and lname == base else "") \
            if lname == base else f"link {lname}"
        out.append(f"{head} {{")
        if lname != base:
            out.append(f"    id = {ids[lname]}")
        mp = info["mass"]
        c = np.asarray(mp.com)
        I_o = np.asarray(mp.inertia) + mp.mass * (float(c @ c) * np.eye(3) - np.outer(c, c))
        out += ["    inertia_properties {", f"        mass = {_n(mp.mass)}", f"        CoM = {_vec(c)}",
                f"        Ix = {_n(I_o[0, 0])}  Iy = {_n(I_o[1, 1])}  Iz = {_n(I_o[2, 2])}  "
                f"Ixy = {_n(-I_o[0, 1])}  Ixz = {_n(-I_o[0, 2])}  Iyz = {_n(-I_o[1, 2])}", "    }"]
        out.append("    children {")
        out += [f"        {child} via {jname}" for child, jname in info["children"]]
        out.append("    }")
        if info["frames"]:
            out.append("    frames {")
            for fname, F in info["frames"].items():
                out += [f"        {fname} {{"] + _pose_lines(F, "            ") + ["        }"]
            out.append("    }")
        out += ["}", ""]
    for kind, jname, T in joints:
        out += [f"{kind} {jname} {{", "    ref_frame {"] + _pose_lines(T, "        ") + ["    }", "}", ""]
    out.append("}")
    return "\n".join(out) + "\n"


def save_kindsl(mechanism, path) -> None:
    """Write ``mechanism`` to ``path`` as KinDSL (:func:`to_kindsl`)."""
    text = to_kindsl(mechanism)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
