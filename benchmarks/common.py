"""Robots shared by the benchmark scripts, described once and built for every library.

Each robot is a plain list of joints (parent link, child link, URDF origin ``xyz``/``rpy``, axis, limits).
From that one description this module writes a URDF string (read by Pinocchio, roboticstoolbox, ikpy and
kinpy) and builds the same robot with :class:`~mechanism_model_core.MechanismBuilder`, so every library
sees the same numbers. The benchmark scripts cross-check the libraries against each other before timing.

Robots:

* ``ur5`` -- Universal Robots UR5, from its published standard D-H parameters (a, d, alpha), flange
  frame ``tool0``;
* ``panda`` -- Franka Emika Panda, from its published modified (Craig) D-H parameters, flange frame
  ``panda_link8``;
* ``chain10`` -- a 10-joint serial chain with generic placements (every joint offset in x, y and z and
  turned by roll, pitch and yaw) and axes along x, y and z in turn, tool frame ``tool``.

Units: metres and radians.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

# ----------------------------------------------------------------------------------------- descriptions


@dataclass(frozen=True)
class JointSpec:
    name: str
    parent: str
    child: str
    xyz: tuple
    rpy: tuple
    axis: tuple | None = (0.0, 0.0, 1.0)   # None: a fixed joint
    lower: float = -math.pi
    upper: float = math.pi


@dataclass(frozen=True)
class RobotSpec:
    name: str
    base: str
    tip: str
    joints: tuple

    @property
    def moving(self) -> list[JointSpec]:
        return [j for j in self.joints if j.axis is not None]

    @property
    def links(self) -> list[str]:
        return [self.base] + [j.child for j in self.joints]

    @property
    def nq(self) -> int:
        return len(self.moving)

    def random_configurations(self, n: int, seed: int = 0) -> np.ndarray:
        rng = np.random.default_rng(seed)
        lo = np.array([j.lower for j in self.moving])
        hi = np.array([j.upper for j in self.moving])
        return rng.uniform(lo, hi, size=(n, self.nq))


def ur5() -> RobotSpec:
    """UR5, standard D-H: ``T_{i-1,i} = Rz(q_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``."""
    d = (0.089159, 0.0, 0.0, 0.10915, 0.09465, 0.0823)
    a = (0.0, -0.425, -0.39225, 0.0, 0.0, 0.0)
    alpha = (math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0)
    names = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")
    links = ["base_link"] + [f"{n}_link" for n in names]
    joints = []
    for i, n in enumerate(names):
        # joint i+1 sits at the D-H frame i: Tz(d_i) Tx(a_i) Rx(alpha_i) after joint i
        xyz = (0.0, 0.0, 0.0) if i == 0 else (a[i - 1], 0.0, d[i - 1])
        rpy = (0.0, 0.0, 0.0) if i == 0 else (alpha[i - 1], 0.0, 0.0)
        joints.append(JointSpec(f"{n}_joint", links[i], links[i + 1], xyz, rpy, (0.0, 0.0, 1.0),
                                -2 * math.pi, 2 * math.pi))
    joints.append(JointSpec("tool0_joint", links[-1], "tool0", (a[5], 0.0, d[5]), (alpha[5], 0.0, 0.0),
                            None))
    return RobotSpec("ur5", "base_link", "tool0", tuple(joints))


def panda() -> RobotSpec:
    """Franka Panda, modified D-H: ``T_{i-1,i} = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(q_i) Tz(d_i)``."""
    a = (0.0, 0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088, 0.0)
    d = (0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.0, 0.107)
    alpha = (0.0, -math.pi / 2, math.pi / 2, math.pi / 2, -math.pi / 2, math.pi / 2, math.pi / 2, 0.0)
    lower = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
    upper = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
    joints = []
    for i in range(8):
        # Rx(alpha) Tx(a) Tz(d) = translation (a, -sin(alpha) d, cos(alpha) d) then Rx(alpha)
        xyz = (a[i], -math.sin(alpha[i]) * d[i], math.cos(alpha[i]) * d[i])
        rpy = (alpha[i], 0.0, 0.0)
        if i < 7:
            joints.append(JointSpec(f"panda_joint{i + 1}", f"panda_link{i}", f"panda_link{i + 1}", xyz, rpy,
                                    (0.0, 0.0, 1.0), lower[i], upper[i]))
        else:
            joints.append(JointSpec("panda_joint8", "panda_link7", "panda_link8", xyz, rpy, None))
    return RobotSpec("panda", "panda_link0", "panda_link8", tuple(joints))


def chain10() -> RobotSpec:
    """A 10-joint serial chain with generic placements (fixed pseudo-random numbers, seed 10)."""
    rng = np.random.default_rng(10)
    axes = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))
    joints = []
    for i in range(10):
        xyz = tuple(float(v) for v in np.round(rng.uniform(-0.3, 0.3, 3), 4))
        rpy = tuple(float(v) for v in np.round(rng.uniform(-1.5, 1.5, 3), 4))
        joints.append(JointSpec(f"joint{i + 1}", f"link{i}", f"link{i + 1}", xyz, rpy, axes[i % 3],
                                -math.pi, math.pi))
    joints.append(JointSpec("tool_joint", "link10", "tool", (0.05, 0.02, 0.1), (0.1, -0.2, 0.3), None))
    return RobotSpec("chain10", "link0", "tool", tuple(joints))


ROBOTS = {"ur5": ur5, "panda": panda, "chain10": chain10}

# ----------------------------------------------------------------------------------------- builders


def _fmt(v) -> str:
    return " ".join(repr(float(x)) for x in v)


def urdf_string(spec: RobotSpec) -> str:
    """The robot as a URDF document (every link with a small inertia, as some parsers require one)."""
    out = ['<?xml version="1.0"?>', f'<robot name="{spec.name}">']
    for link in spec.links:
        out.append(f'  <link name="{link}"><inertial><mass value="1.0"/><origin xyz="0 0 0"/>'
                   f'<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')
    for j in spec.joints:
        kind = "fixed" if j.axis is None else "revolute"
        out.append(f'  <joint name="{j.name}" type="{kind}">')
        out.append(f'    <parent link="{j.parent}"/><child link="{j.child}"/>')
        out.append(f'    <origin xyz="{_fmt(j.xyz)}" rpy="{_fmt(j.rpy)}"/>')
        if j.axis is not None:
            out.append(f'    <axis xyz="{_fmt(j.axis)}"/>')
            out.append(f'    <limit lower="{j.lower!r}" upper="{j.upper!r}" effort="100" velocity="3"/>')
        out.append('  </joint>')
    out.append('</robot>')
    return "\n".join(out) + "\n"


def origin_matrix(xyz, rpy) -> np.ndarray:
    """URDF origin: ``Trans(xyz) @ Rz(yaw) @ Ry(pitch) @ Rx(roll)`` (written out, no library)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    T = np.eye(4)
    T[:3, :3] = [[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                 [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                 [-sp, cp * sr, cp * cr]]
    T[:3, 3] = xyz
    return T


def build_mechanism(spec: RobotSpec, core=None):
    """The robot as a :class:`mechanism_model_core.Mechanism` (base link fixed on the ground); ``core`` is
    another build of the package to use instead (the benchmark's ``--before``)."""
    if core is None:
        import mechanism_model_core as core
    Joint, MechanismBuilder = core.Joint, core.MechanismBuilder

    b = MechanismBuilder(spec.name)
    b.add_body(spec.base, joint=Joint.fixed(f"{spec.base}_fixed"))
    for j in spec.joints:
        T = origin_matrix(j.xyz, j.rpy)
        if j.axis is None:
            joint = Joint.fixed(j.name, T)
        else:
            joint = Joint.revolute(j.name, T, axis=j.axis, lower=j.lower, upper=j.upper)
        b.add_body(j.child, parent=j.parent, joint=joint)
    return b.build()


def build_pinocchio(spec: RobotSpec):
    import pinocchio as pin

    model = pin.buildModelFromXML(urdf_string(spec))
    return model, model.createData()


def build_rtb(spec: RobotSpec, tmpdir: str):
    """roboticstoolbox ``Robot`` (ETS, C-accelerated) read from the same URDF file."""
    import os

    import roboticstoolbox as rtb
    from roboticstoolbox.models.URDF.URDFRobot import URDF_file

    path = os.path.join(tmpdir, f"{spec.name}.urdf")
    with open(path, "w") as f:
        f.write(urdf_string(spec))
    links, name, _ = URDF_file(path)
    return rtb.Robot(links, name=name)


def build_ikpy(spec: RobotSpec, tmpdir: str):
    import os

    import ikpy.chain

    path = os.path.join(tmpdir, f"{spec.name}_ikpy.urdf")
    with open(path, "w") as f:
        f.write(urdf_string(spec))
    # ikpy numbers its links: an origin link, then one per joint; only the moving joints are active
    mask = [False] + [j.axis is not None for j in spec.joints]
    return ikpy.chain.Chain.from_urdf_file(path, base_elements=[spec.base], active_links_mask=mask)


def build_kinpy(spec: RobotSpec):
    import kinpy

    return kinpy.build_chain_from_urdf(urdf_string(spec).encode())


def build_kinpy_serial(spec: RobotSpec):
    import kinpy

    return kinpy.build_serial_chain_from_urdf(urdf_string(spec).encode(), spec.tip, spec.base)


def replace_marked_section(path: str, section: str, begin: str, end: str) -> None:
    """Put ``section`` (which starts with ``begin`` and ends with ``end``) into the file at ``path``.

    The text between an existing pair of markers is replaced; without one the section is appended. Every
    other section of BENCHMARKS.md stays as it is.
    """
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Benchmarks\n\n"
    if begin in text and end in text:
        pre, rest = text.split(begin, 1)
        text = pre + section.rstrip("\n") + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
