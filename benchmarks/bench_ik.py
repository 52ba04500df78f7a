"""Inverse kinematics on the TRAC-IK protocol (issue 20), on public arm descriptions, all solvers in one process.

Protocol (Beeson & Ames, TRAC-IK, 2015): for each arm, targets are the tip poses of N random in-limit
configurations (continuous joints in [-pi, pi]); each solve starts from a random in-limit configuration
("random" seeds) or from the middle of the joint ranges ("mid"); a solve succeeds when the returned joints lie
within the limits AND reach the target pose to 1e-5 in both the position norm (m) and the orientation norm
(|log3(R R_t^T)|, rad), every answer judged with Pinocchio (pin) on the same URDF; 5 ms budget per solve.

Solvers: ours (``solve_ik`` with its defaults, ``timeout=0.005``, tolerances 1e-5), TRAC-IK (``pytracik``,
``Speed``, 5 ms, eps 1e-5; its own stopping test is per axis), roboticstoolbox ``ik_LM`` (C++, ``ilimit=30,
slimit=100, tol=1e-10, joint_limits=True``), ikpy (``orientation_mode="all"``; no limit handling in its
optimizer beyond bounds; fewer targets: it is slow). Peers are benchmark-only, never runtime dependencies.

Times are CPU time of the whole process per solve (``time.process_time``; TRAC-IK runs two threads) on a
machine shared with other jobs: medians, 95th percentiles, and ratios between solvers measured in this run.
``--cpu-budget`` adds a success rate with the budget counted in CPU time (ours ended through ``solve_ik``'s
``cancel`` once the thread has used 5 ms of CPU): the protocol as an idle machine runs it, where a loaded one
turns the wall-clock budget into a measure of its load.
Also: out-of-reach targets (2x the reach bound away) and the batch solver's throughput (``solve_ik_batch``).

Arms: URDFs from the ``example-robot-data`` wheel (PyPI) and /work/shared/data/robot-models when present.

Usage::

    python benchmarks/bench_ik.py --n 1000                      # every arm found, both seed modes
    python benchmarks/bench_ik.py --n 200 --arms ur5,panda --only ours,tracik
    python benchmarks/bench_ik.py --n 1000 --cpu-budget ours --write BENCHMARKS.md   # the IK table
    python benchmarks/bench_ik.py --n 1000 --arms '' --urdf xarm6=/tmp/xarm6.urdf \
        --urdf fetch=/tmp/fetch.urdf:base_link:gripper_link --cpu-budget ours   # URDFs of your own
    python benchmarks/bench_ik.py --n 10000 --arms panda,z1 --only ours,tracik,rtb_ik_LM --batch 0 \
        --cpu-budget ours --write BENCHMARKS.md --block 10k-closed   # another marked block
    python benchmarks/bench_ik.py --n 300 --arms xarm7,baxter --only ours,ours_lm --batch 0   # closed form vs LM
"""

from __future__ import annotations

import argparse
import glob
import math
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

TOL = 1e-5
BUDGET = 0.005
_MARK_START = "<!-- bench_ik{}:start -->"
_MARK_END = "<!-- bench_ik{}:end -->"
SHARED = "/work/shared/data/robot-models/models"


def _erd_root():
    import importlib.util

    for base in sys.path:
        p = os.path.join(base, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(p):
            return p
    spec = importlib.util.find_spec("cmeel")
    return None if spec is None else None


#: name -> (URDF relative to example-robot-data's robots/ or an absolute path, base link, tip link)
ARMS = {
    "ur3": ("ur_description/urdf/ur3_robot.urdf", "base_link", "tool0"),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "base_link", "tool0"),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", "base_link", "tool0"),
    "ur5_limited": ("ur_description/urdf/ur5_joint_limited_robot.urdf", "base_link", "tool0"),
    "panda": ("panda_description/urdf/panda.urdf", "panda_link0", "panda_link8"),
    "kinova": ("kinova_description/robots/kinova.urdf", None, None),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", None, None),
    "z1": ("z1_description/urdf/z1.urdf", None, None),
    "tiago": ("tiago_description/robots/tiago_no_hand.urdf", "base_link", "arm_tool_link"),
    "talos_arm": ("talos_data/robots/talos_left_arm.urdf", None, None),
    "baxter": ("baxter_description/urdf/baxter.urdf", "base", "left_hand_link"),
    "iiwa14": (os.path.join(SHARED, "iiwa14"), None, None),
}


def add_arm(spec):
    """``NAME=PATH[:BASE:TIP]`` (``--urdf``): an arm from a URDF file outside the wheel and the shared folder;
    returns NAME. An empty BASE or TIP takes the default (the root; the frame with the longest chain)."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise SystemExit(f"--urdf {spec!r}: expected NAME=PATH[:BASE:TIP]")
    path, *links = rest.split(":")
    if len(links) not in (0, 2):
        raise SystemExit(f"--urdf {spec!r}: give both BASE and TIP (either may be empty) or neither")
    base, tip = (links or ["", ""])
    ARMS[name] = (os.path.abspath(path), base or None, tip or None)
    return name


def _resolve(name):
    rel, base, tip = ARMS[name]
    if os.path.isfile(rel):
        return rel, base, tip
    if os.path.isabs(rel):
        files = sorted(glob.glob(os.path.join(rel, "*.urdf")))
        return (files[0] if files else None), base, tip
    root = _erd_root()
    return (None if root is None else os.path.join(root, rel)), base, tip


class Arm:
    """One arm: our mechanism, Pinocchio's model (the judge), the chain from base to tip."""

    def __init__(self, name):
        import pinocchio as pin
        from mechanism_model_core.io.urdf import load_urdf
        from mechanism_model_core.kinematics import frame_chain

        path, base, tip = _resolve(name)
        if path is None or not os.path.exists(path):
            raise FileNotFoundError(f"{name}: no URDF found")
        self.name, self.path = name, path
        with open(path, encoding="utf-8") as f:
            self.urdf = f.read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.m = m = load_urdf(path)
        if tip is None:                     # the frame with the longest chain (the arm's last link)
            tip = max((f for f in m.frame_names), key=lambda f: (frame_chain(m, f).n, -len(f)))
        self.tip = tip
        self.base = base or m.ground
        ch = frame_chain(m, tip)
        self.coords = np.array(ch.coords)
        self.dof = len(self.coords)
        lo, hi = m.lower_limits[self.coords], m.upper_limits[self.coords]
        self.lo = np.where(np.isfinite(lo), lo, -math.pi)
        self.hi = np.where(np.isfinite(hi), hi, math.pi)
        self.pin = pin
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.pm = pin.buildModelFromXML(self.urdf)
        self.pd = self.pm.createData()
        self.fid = self.pm.getFrameId(tip)
        self.names = [m.coordinate_names[i] for i in self.coords]
        # the chain's base link in the URDF's root (TRAC-IK and roboticstoolbox take targets in the base)
        pin.framesForwardKinematics(self.pm, self.pd, pin.neutral(self.pm))
        self.T_root_base = self.pd.oMf[self.pm.getFrameId(self.base)].homogeneous.copy() \
            if self.pm.existFrame(self.base) else np.eye(4)
        self.T_base_root = np.linalg.inv(self.T_root_base)
        self.pin_idx = []
        for n in self.names:
            jid = self.pm.getJointId(n)
            self.pin_idx.append((self.pm.joints[jid].idx_q, self.pm.joints[jid].nq))

    def full(self, qc):
        q = np.array(self.m.home, dtype=float)
        q[self.coords] = qc
        return q

    def pose(self, qc):
        qp = self.pin.neutral(self.pm)
        for (i, nq), v in zip(self.pin_idx, qc):
            if nq == 2:
                qp[i:i + 2] = [math.cos(v), math.sin(v)]
            else:
                qp[i] = v
        self.pin.framesForwardKinematics(self.pm, self.pd, qp)
        return self.pd.oMf[self.fid].homogeneous.copy()

    def judge(self, qc, T):
        if qc is None:
            return False
        qc = np.asarray(qc, dtype=float)
        if qc.shape != (self.dof,) or not np.all(np.isfinite(qc)):
            return False
        m = self.m
        if not (np.all(qc >= m.lower_limits[self.coords] - 1e-9) and np.all(qc <= m.upper_limits[self.coords] + 1e-9)):
            return False
        F = self.pose(qc)
        pe = float(np.linalg.norm(F[:3, 3] - T[:3, 3]))
        oe = float(np.linalg.norm(self.pin.log3(F[:3, :3] @ T[:3, :3].T)))
        return pe <= TOL and oe <= TOL


# ------------------------------------------------------------------ solvers: (arm) -> solve(T, seed) -> q
class CpuBudget:
    """``solve_ik``'s ``cancel``: set once the calling thread has used ``budget`` seconds of CPU since it was
    made (the budget an idle machine gives, whatever the pre-emption of a loaded one adds to the wall clock)."""

    def __init__(self, budget):
        self.end = time.thread_time() + budget

    def is_set(self):
        return time.thread_time() > self.end


def solver_ours(arm, budget=BUDGET, solver="auto"):
    from mechanism_model_core.constraints import PoseConstraint
    from mechanism_model_core.ik import solve_ik

    def solve(T, seed):
        # budget > BUDGET: the CPU-budget pass, a CPU clock ends the solve and the wall one is a safety net
        cancel = CpuBudget(BUDGET) if budget > BUDGET else None
        r = solve_ik(arm.m, PoseConstraint(arm.tip, T), arm.full(seed), timeout=budget, tol_position=TOL,
                     tol_orientation=TOL, cancel=cancel, solver=solver)
        return r.q[arm.coords]

    return solve


def solver_ours_lm(arm, budget=BUDGET):
    """Ours with the population LM forced (``solver="lm"``, no closed form): beside ``ours``, what the closed
    forms and their starts change, in one process."""
    return solver_ours(arm, budget, solver="lm")


def solver_tracik(arm, budget=BUDGET):
    import pytracik
    from scipy.spatial.transform import Rotation

    ik = pytracik.TRAC_IK(arm.base, arm.tip, arm.urdf, budget, TOL, pytracik.SolveType.Speed)
    if pytracik.get_num_joints(ik) != arm.dof:
        raise RuntimeError(f"TRAC-IK chain has {pytracik.get_num_joints(ik)} joints, ours {arm.dof}")
    # pytracik 0.0.3 reads some URDFs' limits as [0, 0] (Panda): give it the URDF's limits explicitly
    # (continuous joints: +-2 pi)
    lo, hi = arm.m.lower_limits[arm.coords], arm.m.upper_limits[arm.coords]
    pytracik.set_joint_limits(ik, np.where(np.isfinite(lo), lo, -2 * math.pi),
                              np.where(np.isfinite(hi), hi, 2 * math.pi))

    def solve(T, seed):
        # pytracik.ik(solver, seed, x, y, z, qx, qy, qz, qw) -> [status (>= 0: found), q...]
        T = arm.T_base_root @ T
        x, y, z, w = Rotation.from_matrix(T[:3, :3]).as_quat()
        out = pytracik.ik(ik, np.asarray(seed, dtype=float), *T[:3, 3], x, y, z, w)
        return out[1:] if out[0] >= 0 else None

    return solve


def solver_rtb(arm):
    import roboticstoolbox as rtb
    from roboticstoolbox.models.URDF.URDFRobot import URDF_file

    import re
    import tempfile

    # roboticstoolbox runs every URDF through xacro, which looks up the packages of mesh files: drop the
    # visual and collision elements (kinematics only) into a temporary copy
    text = re.sub(r"<(visual|collision)\b.*?</\1>", "", arm.urdf, flags=re.S)
    tmp = tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False)
    tmp.write(text)
    tmp.close()
    links, name, _ = URDF_file(tmp.name)
    robot = rtb.Robot(links, name=name)
    ets = robot.ets(start=arm.base, end=arm.tip)
    if ets.n != arm.dof:
        raise RuntimeError(f"rtb chain has {ets.n} joints, ours {arm.dof}")
    # the sub-chain's joints keep the whole robot's indices (q10..q16 on Baxter), which its C++ ik_LM reads
    # out of the 7-vector: number them 0..n-1
    for i, et in enumerate(ets.joints()):
        et.jindex = i
    # and it may start at the URDF's root rather than at the base link (TIAGo: base_footprint): targets in
    # whichever frame its forward kinematics uses, checked once
    q = 0.5 * (arm.lo + arm.hi)
    F = np.array(ets.fkine(q))
    T_in = next((M for M in (arm.T_base_root, np.eye(4)) if np.allclose(F, M @ arm.pose(q), atol=1e-9)), None)
    if T_in is None:
        raise RuntimeError("rtb forward kinematics differs from Pinocchio's")

    def solve(T, seed):
        out = ets.ik_LM(T_in @ T, q0=seed, ilimit=30, slimit=100, tol=1e-10, joint_limits=True)
        return out.q if hasattr(out, "q") else out[0]

    return solve


def solver_ikpy(arm):
    import ikpy.chain

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = ikpy.chain.Chain.from_urdf_file(arm.path, base_elements=[arm.base], last_link_vector=None,
                                                active_links_mask=None)
    names = [lk.name for lk in chain.links]
    active = [i for i, lk in enumerate(chain.links) if lk.name in arm.names]
    chain.active_links_mask = np.array([i in active for i in range(len(names))])
    if len(active) != arm.dof:
        raise RuntimeError("ikpy chain differs")

    # ikpy's chain ends at the first child of each link, which may be a fixed frame beside the tip (UR's
    # ee_link next to tool0): targets are turned into that end frame's pose (a constant offset)
    full0 = np.zeros(len(names))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F0 = chain.forward_kinematics(full0)
    offset = np.linalg.inv(F0) @ arm.pose(np.zeros(arm.dof))

    def solve(T, seed):
        init = np.zeros(len(names))
        init[active] = seed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            full = chain.inverse_kinematics_frame(T @ np.linalg.inv(offset), initial_position=init,
                                                  orientation_mode="all")
        return np.asarray(full)[active]

    return solve


SOLVERS = {"ours": solver_ours, "tracik": solver_tracik, "rtb_ik_LM": solver_rtb, "ikpy": solver_ikpy,
           "ours_lm": solver_ours_lm}
LABEL = {"ours": "ours `solve_ik`", "tracik": "TRAC-IK (pytracik)", "rtb_ik_LM": "roboticstoolbox `ik_LM`",
         "ikpy": "ikpy", "ours_lm": "ours, `solver=\"lm\"`"}
SLOW = {"ikpy"}


#: --cpu-budget: solvers run again, a success counted only when its CPU time is within the budget times the
#: solver's threads (what the budget gives on an idle machine): ours ended by a CPU clock (CpuBudget) with
#: 2 s of wall time as a safety net (a loaded machine stalled single solves for up to 0.9 s), TRAC-IK (no such
#: hook) with CPU_WALL x the budget of wall time
CPU_WALL = 20
WALL_NET = 2.0
THREADS = {"ours": 1, "tracik": 2, "ours_lm": 1}


def _timed(arm, solve, Ts, seeds, N):
    ok, times = np.zeros(N, dtype=bool), np.zeros(N)
    for k in range(N):
        t0 = time.process_time()
        try:
            q = solve(Ts[k], seeds[k])
        except Exception:
            q = None
        times[k] = time.process_time() - t0
        ok[k] = arm.judge(q, Ts[k])
    return ok, times * 1e3


def run_arm(arm, only, n, n_slow, seed, cpu_budget=()):
    rng = np.random.default_rng(seed)
    Qt = rng.uniform(arm.lo, arm.hi, size=(n, arm.dof))
    Ts = [arm.pose(q) for q in Qt]
    seeds = {"random": rng.uniform(arm.lo, arm.hi, size=(n, arm.dof)),
             "mid": np.tile(0.5 * (arm.lo + arm.hi), (n, 1))}
    rows = []
    built, relaxed = {}, {}
    for key in only:
        try:
            built[key] = SOLVERS[key](arm)
            if key in cpu_budget and key in THREADS:
                net = WALL_NET if key in ("ours", "ours_lm") else CPU_WALL * BUDGET
                relaxed[key] = SOLVERS[key](arm, budget=net)
        except Exception as e:       # a peer that cannot read this URDF: a finding, not a crash
            print(f"  {arm.name}: {key} unavailable: {type(e).__name__}: {str(e)[:120]}", flush=True)
    for mode in ("random", "mid"):
        for key, solve in built.items():
            N = min(n, n_slow) if key in SLOW else n
            ok, t = _timed(arm, solve, Ts, seeds[mode], N)
            row = dict(arm=arm.name, dof=arm.dof, solver=key, mode=mode, n=N, success=ok.mean(),
                       median=float(np.median(t)), p95=float(np.percentile(t, 95)), success_cpu=None)
            extra = ""
            if key in relaxed:
                okc, tc = _timed(arm, relaxed[key], Ts, seeds[mode], N)
                row["success_cpu"] = float(np.mean(okc & (tc <= 1e3 * BUDGET * THREADS[key])))
                extra = f" cpu-budget success={100 * row['success_cpu']:6.2f}%"
            rows.append(row)
            print(f"  {arm.name:12s} {arm.dof} {mode:6s} {key:10s} n={N:5d} success={100 * ok.mean():6.2f}% "
                  f"median={np.median(t):.3f} ms p95={np.percentile(t, 95):.3f} ms{extra} "
                  f"load={os.getloadavg()[0]:.1f}", flush=True)
    return rows


def unreachable(arm, n=200, seed=7):
    """Targets at twice the reach bound: CPU time until ours reports them."""
    from mechanism_model_core.constraints import PoseConstraint
    from mechanism_model_core.ik import solve_ik

    rng = np.random.default_rng(seed)
    ts, reasons = [], []
    for _ in range(n):
        d = rng.normal(size=3)
        T = np.eye(4)
        T[:3, 3] = 2.5 * d / np.linalg.norm(d) * max(1.0, _reach(arm))
        t0 = time.process_time()
        r = solve_ik(arm.m, PoseConstraint(arm.tip, T), arm.m.home, timeout=BUDGET, tol_position=TOL,
                     tol_orientation=TOL)
        ts.append(time.process_time() - t0)
        reasons.append(r.reason)
    return float(np.median(ts) * 1e3), float(np.percentile(ts, 95) * 1e3), sum(r == "unreachable" for r in reasons) / n


def _reach(arm):
    from mechanism_model_core.kinematics import frame_chain

    ch = frame_chain(arm.m, arm.tip)
    P = ch.Pm.reshape(ch.n, 4, 4)
    return float(sum(np.linalg.norm(P[i, :3, 3]) for i in range(1, ch.n)) + np.linalg.norm(ch.F[:3, 3]))


def batch_throughput(arm, n, seed=5):
    from mechanism_model_core.ik import solve_ik_batch

    rng = np.random.default_rng(seed)
    Qt = rng.uniform(arm.lo, arm.hi, size=(n, arm.dof))
    T = np.stack([arm.pose(q) for q in Qt])
    S = np.stack([arm.full(q) for q in rng.uniform(arm.lo, arm.hi, size=(n, arm.dof))])
    t0 = time.process_time()
    res = solve_ik_batch(arm.m, arm.tip, T, S, tol_position=TOL, tol_orientation=TOL)
    dt = time.process_time() - t0
    ok = sum(arm.judge(res.q[k][arm.coords], T[k]) for k in range(n))
    return n / dt, ok / n


def rover_queries(n=150, seed=0):
    """compute_ik-like queries on the library's rovers (other joints locked, the rover standing still): CPU
    median per solve and success for the MER IDD's apxs pose, Rocky 8's arm_tool pose on the assembled rover
    and its mast camera's orientation. Uses only API that predates issue 20, so the same function times an
    older checkout (``PYTHONPATH=<checkout>/mechanism_model_core python benchmarks/bench_ik.py --rovers``)."""
    from mechanism_model_core import OrientationConstraint, PoseConstraint, forward_kinematics, load_model
    from mechanism_model_core.ik import solve_ik
    from mechanism_model_core.library import model_path

    def bench(m, make, active):
        rng = np.random.default_rng(seed)
        locked = [c for c in m.independent_coordinates if c not in active]
        idx = [m.coordinate_index(a) for a in active]
        base = m.random_configuration(np.random.default_rng(99))
        ts, ok = [], 0
        for _ in range(n):
            qt = base.copy()
            qt[idx] = m.random_configuration(rng)[idx]
            q0 = qt.copy()
            q0[idx] = m.random_configuration(rng)[idx]
            c = make(forward_kinematics(m, qt))
            t0 = time.process_time()
            r = solve_ik(m, [c], q0, locked=locked, timeout=0.05)
            ts.append(time.process_time() - t0)
            ok += r.success
        return float(np.median(ts) * 1e3), ok / n

    mer = load_model(model_path("mer/mer_idd.xml"))
    r8 = load_model(model_path("rocky8/rocky8_rover.xml"))
    arm = [c for c in r8.independent_coordinates if c.startswith("arm")]
    mast = [c for c in r8.independent_coordinates if c.startswith("mast")]
    return {"MER IDD apxs pose": bench(mer, lambda fk: PoseConstraint("apxs", fk.pose("apxs")),
                                       mer.independent_coordinates),
            "Rocky 8 arm_tool pose": bench(r8, lambda fk: PoseConstraint("arm_tool", fk.pose("arm_tool")), arm),
            "Rocky 8 mast orientation": bench(r8, lambda fk: OrientationConstraint(
                "mast_camera", fk.pose("mast_camera")[:3, :3]), mast)}


def markdown(rows) -> str:
    cpu = any(r.get("success_cpu") is not None for r in rows)
    head = "| arm | DOF | seeds | solver | targets | success | median CPU ms | p95 CPU ms | median vs ours |"
    rule = "|---|---|---|---|---|---|---|---|---|"
    if cpu:
        head += " success, CPU budget |"
        rule += "---|"
    out = [head, rule]
    ours = {(r["arm"], r["mode"]): r["median"] for r in rows if r["solver"] == "ours"}
    for r in rows:
        o = ours.get((r["arm"], r["mode"]))
        ratio = f"{r['median'] / o:.2f}" if o else "--"
        line = (f"| {r['arm']} | {r['dof']} | {r['mode']} | {LABEL[r['solver']]} | {r['n']} | "
                f"{100 * r['success']:.2f} % | {r['median']:.3f} | {r['p95']:.3f} | {ratio} |")
        if cpu:
            sc = r.get("success_cpu")
            line += (" -- |" if sc is None else f" {100 * sc:.2f} % |")
        out.append(line)
    return "\n".join(out)


def write_section(path, text, name=""):
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    MARK_START = _MARK_START.format(f":{name}" if name else "")
    MARK_END = _MARK_END.format(f":{name}" if name else "")
    block = f"{MARK_START}\n{text}\n{MARK_END}"
    if MARK_START in doc and MARK_END in doc:
        a, b = doc.index(MARK_START), doc.index(MARK_END) + len(MARK_END)
        doc = doc[:a] + block + doc[b:]
    else:
        doc = doc.rstrip() + "\n\n" + block + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="targets per arm and seed mode")
    ap.add_argument("--n-slow", type=int, default=50, help="targets for ikpy")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--only", default="ours,tracik,rtb_ik_LM,ikpy",
                    help="solvers to run, of " + ",".join(SOLVERS) + " (ours_lm: ours with the population LM "
                         "forced, no closed form)")
    ap.add_argument("--batch", type=int, default=10000, help="Panda targets for the batch throughput")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--write", metavar="BENCHMARKS.md")
    ap.add_argument("--rovers", action="store_true", help="only the compute_ik-like rover queries")
    ap.add_argument("--cpu-budget", nargs="?", const="ours,tracik", default="", metavar="SOLVERS",
                    help=f"also run these of ours,tracik (both when no list is given) again and count a success "
                         f"only within the budget of CPU (x2 for TRAC-IK's two threads): ours ended by a CPU clock, "
                         f"TRAC-IK given {CPU_WALL}x its wall budget; the protocol on an idle machine, measured on "
                         f"a loaded one")
    ap.add_argument("--urdf", action="append", default=[], metavar="NAME=PATH[:BASE:TIP]",
                    help="an extra arm from a URDF file (repeat for more; run after --arms, which may be empty): "
                         "BASE and TIP default to the root and the frame with the longest chain")
    ap.add_argument("--block", default="", help="name of the marked block --write replaces (several tables "
                                                "can live in BENCHMARKS.md: --block 10k)")
    a = ap.parse_args(argv)
    if a.rovers:
        for k, (ms, ok) in rover_queries().items():
            print(f"{k}: median {ms:.3f} ms CPU, success {100 * ok:.1f} %")
        return
    only = [s for s in a.only.split(",") if s]
    names = [n for n in a.arms.split(",") if n] + [add_arm(spec) for spec in a.urdf]
    rows, unreach, missing = [], [], []
    load0 = os.getloadavg()[0]
    for name in names:
        try:
            arm = Arm(name)
        except Exception as e:
            missing.append(f"{name} ({type(e).__name__}: {str(e)[:100]})")
            print(f"{name}: not loaded: {e}", flush=True)
            continue
        print(f"{name}: {arm.dof} DOF, tip {arm.tip}", flush=True)
        rows += run_arm(arm, only, a.n, a.n_slow, a.seed, [k for k in a.cpu_budget.split(",") if k])
        if "ours" in only:
            unreach.append((name, *unreachable(arm)))
    thr = None
    if a.batch and "panda" in names:
        thr = batch_throughput(Arm("panda"), a.batch)
        print(f"batch: {thr[0]:.0f} Panda solves/s CPU, success {100 * thr[1]:.2f} %")
    load1 = os.getloadavg()[0]

    from importlib.metadata import PackageNotFoundError, version

    vers = []
    for dist in ("pytracik", "roboticstoolbox-python", "ikpy", "pin", "eaik"):
        try:
            vers.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            pass
    cmd = " ".join(sys.argv[1:] if argv is None else argv)
    meta = (f"Measured {time.strftime('%Y-%m-%d')} with `python benchmarks/bench_ik.py {cmd}` on {platform.machine()} / Python {platform.python_version()} / numpy "
            f"{np.__version__}; {', '.join(vers)}. Load average {load0:.1f} at the start, {load1:.1f} at the "
            f"end (2 cores shared with other jobs). {a.n} targets per arm and seed mode ({a.n_slow} for ikpy).")
    if a.cpu_budget:
        meta += (f" Last column (--cpu-budget): {' and '.join(LABEL[k] for k in a.cpu_budget.split(',') if k)} "
                 f"run again, a success counted only when the solve's CPU time is within {1e3 * BUDGET:g} ms "
                 f"({2e3 * BUDGET:g} ms for TRAC-IK's two threads): the budget on an idle machine, without the "
                 f"pre-emption a loaded one adds to the wall clock. Ours is ended by a CPU clock (`cancel`) with "
                 f"{WALL_NET:g} s of wall time as a safety net, TRAC-IK by {CPU_WALL}x its wall budget.")
    text = meta + "\n\n" + markdown(rows)
    if unreach:
        text += ("\n\nOut-of-reach targets (2.5x the reach bound away), ours: " +
                 "; ".join(f"{n} median {m:.3f} ms / p95 {p:.3f} ms CPU, {100 * f:.0f} % reported unreachable"
                           for n, m, p, f in unreach) + ".")
    if thr:
        text += (f"\n\nBatch (`solve_ik_batch`, Panda, {a.batch} targets, random seeds): {thr[0]:.0f} solves/s "
                 f"of CPU, {100 * thr[1]:.2f} % success.")
    if missing:
        text += "\n\nNot loaded: " + "; ".join(missing) + "."
    print(text)
    if a.write:
        write_section(a.write, text, a.block)


if __name__ == "__main__":
    main()
