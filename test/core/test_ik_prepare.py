"""``prepare_ik`` (issue 20: "caches are built when the model is loaded or on first use outside the caller's
budget, so the first solve on a model is as fast as the thousandth"): after it, the first solves on a frame --
random targets, random and mid-range seeds, with and without locked joints -- build nothing (every per-model
IK cache counted, :mod:`.ik_builds`), and their answers are those of a mechanism never prepared, field by
field. ``group_tip_frames`` finds the frames a motor group's IK requests name."""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
import pytest

from mechanism_model_core import OrientationConstraint, PoseConstraint, PositionConstraint, forward_kinematics
from mechanism_model_core.errors import InvalidConfiguration, UnknownFrame, UnknownJoint
from mechanism_model_core.ik import DLSSolver, IKOptions, IKProblem, prepare_ik, problem_and_solver, solve_ik
from mechanism_model_core.ik.prepare import PreparedFrame, group_tip_frames
from mechanism_model_core.io.urdf import load_urdf

from . import ik_builds
from .optional_deps import require
from .test_ik_near_decomposable import GEOMETRY, _urdf

require("eaik", "eaik")

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")
UR5 = (os.path.join(DATA, "ur5", "ur5.urdf"), "tool0")
PANDA = (os.path.join(DATA, "panda", "panda.urdf"), "panda_link8")
FINGERS = ("panda_finger_joint1",)


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_urdf(str(path))


@pytest.fixture(scope="module")
def baxter_like(tmp_path_factory):
    path = tmp_path_factory.mktemp("prepare") / "baxter_like.urdf"
    path.write_text(_urdf("baxter_like", *GEOMETRY["baxter_like"]), encoding="utf-8")
    return str(path), "tool"


def _cases(m, tip, rng, k=4):
    """``k`` (target, seed) pairs: targets at random in-limit configurations, the first seed the middle of the
    ranges, the others random."""
    lo, hi = np.maximum(m.lower_limits, -np.pi), np.minimum(m.upper_limits, np.pi)
    out = []
    for i in range(k):
        qt = lo + rng.random(m.nq) * (hi - lo)
        seed = 0.5 * (lo + hi) if i == 0 else lo + rng.random(m.nq) * (hi - lo)
        out.append((forward_kinematics(m, m.configuration(qt)).pose(tip), seed))
    return out


def _same(a, b) -> bool:
    """Every field of two IKResults equal (NaN equal to NaN), the time aside."""
    fields = ("success", "reason", "iterations", "restarts", "solver", "levels", "levels_met", "message")
    if not (np.array_equal(a.q, b.q) and all(getattr(a, f) == getattr(b, f) for f in fields)
            and tuple(a.coordinate_names) == tuple(b.coordinate_names) and len(a.residuals) == len(b.residuals)):
        return False
    return all((x.name, x.kind, x.priority, x.satisfied) == (y.name, y.kind, y.priority, y.satisfied)
               and np.array_equal([x.position, x.orientation], [y.position, y.orientation], equal_nan=True)
               and np.array_equal(x.vector, y.vector) for x, y in zip(a.residuals, b.residuals))


@pytest.mark.parametrize("arm, locked, solver", [("ur5", (), "eaik"), ("panda", (), "eaik"),
                                                   ("panda", FINGERS, "eaik"), ("baxter_like", (), "near-eaik")])
def test_after_prepare_the_first_solves_build_nothing_and_answer_as_without(arm, locked, solver, baxter_like,
                                                                           monkeypatch):
    path, tip = {"ur5": UR5, "panda": PANDA, "baxter_like": baxter_like}[arm]
    prepared, fresh = _load(path), _load(path)
    report = prepare_ik(prepared, [tip], locked=locked)
    assert [(r.frame, r.locked, r.solver) for r in report] == [(tip, locked, solver)]
    assert report[0].seconds > 0
    cases = _cases(prepared, tip, np.random.default_rng(20))
    built = ik_builds.install(monkeypatch)
    for T, seed in cases:
        r = solve_ik(prepared, PoseConstraint(tip, T), seed, locked=list(locked), timeout=60.0,
                     tol_position=1e-5, tol_orientation=1e-5)
        assert not built, f"a solve after prepare_ik built {dict(built)}"
        assert r.success and r.solver.startswith(solver), r      # (its population LM fallback too)
        for task in (PositionConstraint(tip, T[:3, 3]), OrientationConstraint(tip, T[:3, :3])):
            r = solve_ik(prepared, task, seed, locked=list(locked), timeout=60.0)
            assert not built, f"a {type(task).__name__} solve after prepare_ik built {dict(built)}"
            assert r.success, r
    # the control: the same solves on the mechanism never prepared build the caches (the counter sees them)
    # and give the same answers, field by field
    for T, seed in cases:
        a = solve_ik(prepared, PoseConstraint(tip, T), seed, locked=list(locked), timeout=60.0,
                     tol_position=1e-5, tol_orientation=1e-5)
        b = solve_ik(fresh, PoseConstraint(tip, T), seed, locked=list(locked), timeout=60.0,
                     tol_position=1e-5, tol_orientation=1e-5)
        assert _same(a, b), (a, b)
    assert built[solver.replace("eaik", "EAIKSolver").replace("near-EAIKSolver", "NearDecomposableSolver")] == 1
    assert built["ProblemStructure"] >= 1


@pytest.mark.parametrize("arm, locked, name", [("ur5", (), "eaik"), ("panda", FINGERS, "eaik"),
                                                 ("baxter_like", (), "near-eaik")])
def test_problem_and_solver_answer_as_solve_ik_does(arm, locked, name, baxter_like):
    """``problem_and_solver`` (what ``solve_ik`` and ``prepare_ik`` build on): its problem holds the seed's locked
    values, its solver is the one ``solve_ik`` reports (the closed form ``auto`` picks for a full pose, DLS by
    name), and solving the one with the other gives ``solve_ik``'s answer field by field (a 60 s budget: no
    deadline can end one side early); a position alone gets no pose closed form; malformed constraints raise as
    ``solve_ik``'s do."""
    path, tip = {"ur5": UR5, "panda": PANDA, "baxter_like": baxter_like}[arm]
    m = _load(path)
    for T, seed in _cases(m, tip, np.random.default_rng(21), 3):
        P, s = problem_and_solver(m, PoseConstraint(tip, T), seed, locked=locked)
        assert isinstance(P, IKProblem) and s.name == name
        assert sorted(P.locked.tolist()) == sorted(m.coordinate_index(n) for n in locked)
        assert np.array_equal(P.template[P.locked], np.clip(seed, m.lower_limits, m.upper_limits)[P.locked])
        t0 = time.perf_counter()
        got = s.solve(P, IKOptions(timeout=60.0, rng=np.random.default_rng(0), start=t0, deadline=t0 + 60.0))
        want = solve_ik(m, PoseConstraint(tip, T), seed, locked=locked, timeout=60.0)
        assert want.solver == got.solver and _same(got, want)
        assert isinstance(problem_and_solver(m, PoseConstraint(tip, T), seed, solver="dls")[1], DLSSolver)
        assert problem_and_solver(m, PositionConstraint(tip, T[:3, 3]), seed)[1].name in ("lm", "dls")
    with pytest.raises(InvalidConfiguration, match="sequence"):
        problem_and_solver(m, "tool", None)
    with pytest.raises(InvalidConfiguration, match="not a constraint"):
        problem_and_solver(m, [object()], None)


def test_prepare_twice_builds_nothing_new(monkeypatch):
    m = _load(PANDA[0])
    prepare_ik(m, [PANDA[1]])
    built = ik_builds.install(monkeypatch)
    prepare_ik(m, [PANDA[1]])
    assert not built, dict(built)


def test_prepare_refuses_unknown_frames_joints_and_bad_seeds():
    m = _load(UR5[0])
    with pytest.raises(UnknownFrame):
        prepare_ik(m, ["no_such_frame"])
    with pytest.raises(UnknownJoint):
        prepare_ik(m, ["tool0"], locked=["no_such_joint"])
    with pytest.raises(InvalidConfiguration):
        prepare_ik(m, ["tool0"], q0=np.full(m.nq, np.nan))
    with pytest.raises(InvalidConfiguration):
        prepare_ik(m, ["tool0"], targets=-1)
    with pytest.raises(InvalidConfiguration, match="kinds"):
        prepare_ik(m, ["tool0"], kinds=("pose", "velocity"))
    r = prepare_ik(m, "tool0", targets=0)                   # one frame by name
    assert len(r) == 1 and isinstance(r[0], PreparedFrame) and (r[0].frame, r[0].solver) == ("tool0", "eaik")


def test_group_tip_frames_are_the_frames_fixed_to_the_groups_last_link():
    m = _load(UR5[0])
    arm = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
           "wrist_3_joint"]
    tips = group_tip_frames(m, arm)
    assert set(tips) == {"wrist_3_link", "ee_link", "tool0"}, tips
    assert group_tip_frames(m, arm[:3]) == ["forearm_link"]
    assert group_tip_frames(m, ["no_such_joint"]) == []
    assert group_tip_frames(m, []) == []
    p = _load(PANDA[0])                                      # the fingers are two branches: no one chain
    assert group_tip_frames(p, ["panda_finger_joint1", "panda_finger_joint2"]) == []


def test_a_rover_arm_prepared_as_the_ik_service_does_builds_nothing_at_other_rover_poses(monkeypatch):
    """The IK service's requests lock every joint but the arm group's and take the rover's pose from the robot
    state: prepared once at home (group_tip_frames, the group's joints free), the first solves at other rover
    poses -- chassis, suspension and mast moved -- build nothing (the closed form and the engines' tables do not
    depend on the held values before the arm) and reach their targets."""
    from mechanism_model_core import load_model
    from mechanism_model_core.io.motor_groups import load_motor_groups
    from mechanism_model_core.library import model_path
    m = load_model(model_path("curiosity/curiosity_rover.xml"))
    arm = load_motor_groups(m)["arm_joint_trajectory_controller"]
    tips = group_tip_frames(m, arm.joint_names)
    locked = [c for c in m.independent_coordinates if c not in set(arm.joint_names)]
    prepare_ik(m, tips, locked=locked)
    rng = np.random.default_rng(4)
    built = ik_builds.install(monkeypatch)
    for _ in range(4):
        q0 = np.array(m.home, dtype=float)
        for name in locked:
            i = m.coordinate_index(name)
            q0[i] = rng.uniform(max(m.lower_limits[i], -0.3), min(m.upper_limits[i], 0.3))
        q = q0.copy()
        for name, lo, hi in zip(arm.joint_names, arm.lower, arm.upper):
            q[m.coordinate_index(name)] = rng.uniform(max(lo, -3.0), min(hi, 3.0))
        T = forward_kinematics(m, q).pose(tips[-1])
        r = solve_ik(m, PoseConstraint(tips[-1], T), q0, locked=locked, timeout=60.0, tol_position=1e-6,
                     tol_orientation=1e-6)
        assert not built, dict(built)
        assert r.success, r
        F = forward_kinematics(m, r.q).pose(tips[-1])
        assert np.linalg.norm(F[:3, 3] - T[:3, 3]) < 1e-6
