"""The public URDF corpus and its comparison with Pinocchio (which reads URDF with urdfdom), shared by
``test_urdf_corpus.py`` and ``scripts/urdf_corpus_table.py`` (the table in docs/urdf.md).

For one description: Pinocchio builds its model (fixed base, mimic joints as independent joints, as KDL and
robot_state_publisher move them); we load it with ``load_model``. The verdict:

* ``refused``: urdfdom refuses it (Pinocchio raises) and so do we, with a ModelFileError;
* ``same``: both load, the same links (every link a frame of ours, nothing more), every Pinocchio joint a joint
  of ours with the same position, velocity and effort limits, and every link at the same pose (max abs
  difference of the 4x4 matrices <= 1e-9) at ``configurations`` random configurations within the limits;
* anything else is a failure, with what differs.
"""

from __future__ import annotations

import glob
import math
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from mechanism_model_core import ModelFileError, forward_kinematics, load_model
from mechanism_model_core.io.urdf import URDFWarning

FK_TOL = 1e-9


def example_robot_data_dir() -> str | None:
    """The ``robots`` folder of the PyPI ``example-robot-data`` package (cmeel prefix), or None."""
    try:
        import cmeel
    except ImportError:
        return None
    for base in {os.path.dirname(os.path.dirname(cmeel.__file__))} | set(_site_dirs()):
        d = os.path.join(base, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(d):
            return d
    return None


def _site_dirs():
    import site
    import sys

    return [p for p in site.getsitepackages() + [site.getusersitepackages()] + sys.path if os.path.isdir(p)]


def example_robot_data_urdfs() -> list:
    d = example_robot_data_dir()
    return sorted(glob.glob(os.path.join(d, "**", "*.urdf"), recursive=True)) if d else []


@dataclass
class Verdict:
    path: str
    loads: bool = False
    pinocchio_loads: bool = False
    same: bool = False
    worst: float = math.nan
    links: int = 0
    joints: int = 0
    warnings: list = field(default_factory=list)
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.same or (not self.loads and not self.pinocchio_loads)

    @property
    def status(self) -> str:
        if self.same:
            return "same FK"
        if not self.loads and not self.pinocchio_loads:
            return "refused (urdfdom too)"
        return "DIFFERS: " + self.problem


def compare(path: str, configurations: int = 5, seed: int = 0, xacro_args: dict | None = None) -> Verdict:
    """The :class:`Verdict` for the URDF (or xacro file, expanded with ``xacro_args``) at ``path``."""
    import pinocchio as pin

    from .test_pinocchio_oracle import pin_configuration

    v = Verdict(path)
    try:
        if path.endswith(".xacro"):     # Pinocchio reads the expansion; we read the .xacro itself
            from mechanism_model_core.io.xacro_file import expand_xacro
            pmodel = pin.buildModelFromXML(expand_xacro(path, xacro_args))
        else:
            pmodel = pin.buildModelFromUrdf(path)
        v.pinocchio_loads = True
    except (ValueError, RuntimeError, ModelFileError) as exc:     # ModelFileError: xacro refused it
        v.problem = f"Pinocchio: {exc}"
        pmodel = None
    mech = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            mech = load_model(path, xacro_args=xacro_args) if path.endswith(".xacro") else load_model(path)
        except ModelFileError as exc:
            v.problem = f"ours: {exc}"
    v.warnings = [str(w.message) for w in caught if issubclass(w.category, URDFWarning)]
    v.loads = mech is not None
    if not (v.loads and v.pinocchio_loads):
        if v.loads and not v.pinocchio_loads:
            v.problem = "we load what urdfdom refuses; " + v.problem
        return v
    v.links, v.joints = len(mech.frame_names), len(mech.joint_names)
    pin_links = {f.name for f in pmodel.frames if f.type == pin.FrameType.BODY}
    if pin_links != set(mech.frame_names):
        v.problem = (f"links differ: only Pinocchio {sorted(pin_links - set(mech.frame_names))[:5]}, only ours "
                     f"{sorted(set(mech.frame_names) - pin_links)[:5]}")
        return v
    problem = _limits_problem(pmodel, mech)
    if problem:
        v.problem = problem
        return v
    rng = np.random.default_rng(seed)
    pdata = pmodel.createData()
    worst = 0.0
    fids = {f: pmodel.getFrameId(f, pin.FrameType.BODY) for f in mech.frame_names}
    for _ in range(configurations):
        q = mech.random_configuration(rng)
        pin.framesForwardKinematics(pmodel, pdata, pin_configuration(pmodel, mech, q))
        poses = forward_kinematics(mech, q).all_poses()
        for f, fid in fids.items():
            worst = max(worst, float(np.abs(pdata.oMf[fid].homogeneous - poses[f]).max()))
    v.worst = worst
    v.same = worst <= FK_TOL
    if not v.same:
        v.problem = f"max |T_ours - T_pinocchio| = {worst:.3e}"
    return v


def _limits_problem(pmodel, mech) -> str:
    for jid in range(1, pmodel.njoints):
        name = pmodel.names[jid]
        if name not in mech.joint_names:
            return f"Pinocchio joint {name!r} is not a joint of ours"
        jm = pmodel.joints[jid]
        if jm.nq != 1 or jm.nv != 1:       # continuous (cos, sin), multi-DOF: no position limits to compare
            continue
        j = mech.joint(name)
        for ours, theirs, what in ((j.lower[0], pmodel.lowerPositionLimit[jm.idx_q], "lower"),
                                   (j.upper[0], pmodel.upperPositionLimit[jm.idx_q], "upper")):
            if math.isfinite(ours) and abs(ours - theirs) > 1e-12 * max(1.0, abs(ours)):
                return f"joint {name!r}: {what} limit {ours} here, {theirs} in Pinocchio"
        for ours, theirs, what in ((j.velocity, pmodel.velocityLimit[jm.idx_v], "velocity"),
                                   (j.effort, pmodel.effortLimit[jm.idx_v], "effort")):
            ours = ours if math.isfinite(ours) else 0.0   # URDF's 0 / missing reads as unlimited here
            if math.isfinite(theirs) and abs(ours - theirs) > 1e-12 * max(1.0, abs(ours)):
                return f"joint {name!r}: {what} limit {ours} here, {theirs} in Pinocchio"
    return ""
