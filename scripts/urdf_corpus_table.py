#!/usr/bin/env python3
"""The table "loads / same FK" of docs/urdf.md: every URDF of the PyPI example-robot-data package, and any
further URDF or xacro files or folders given as arguments, loaded with mechanism_model_core and compared with
Pinocchio (urdfdom): same links, Pinocchio's joints with the same limits, every link's pose within 1e-9 at
random configurations (test/core/urdf_corpus.py does the comparison; test_urdf_corpus.py is the CI test).

    .venv/bin/python scripts/urdf_corpus_table.py [FILE_OR_DIR ...] > table.md

Needs pin and example-robot-data (requirements-test.txt); xacro files need xacro and their packages
(MM_PACKAGE_PATH). Prints a Markdown table and a summary line.
"""

from __future__ import annotations

import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from core.urdf_corpus import compare, example_robot_data_dir, example_robot_data_urdfs  # noqa: E402


def _files(args):
    out = [("example-robot-data", f) for f in example_robot_data_urdfs()]
    for a in args:
        if os.path.isdir(a):
            found = sorted(glob.glob(os.path.join(a, "**", "*.urdf"), recursive=True)
                           + glob.glob(os.path.join(a, "**", "*.urdf.xacro"), recursive=True))
            out += [(os.path.basename(os.path.normpath(a)), f) for f in found]
        else:       # a file: named after its package folder (<pkg>/urdf/robot.urdf.xacro -> pkg)
            d = os.path.dirname(os.path.abspath(a))
            if os.path.basename(d) in ("urdf", "robots", "xacro"):
                d = os.path.dirname(d)
            out.append((os.path.basename(d), a))
    return out


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    erd = example_robot_data_dir() or ""
    rows, loads, same, refused, total = [], 0, 0, 0, 0     # loads: of those urdfdom accepts
    for origin, path in _files(args):
        v = compare(path)
        total += 1
        loads += v.loads and v.pinocchio_loads
        same += v.same
        refused += (not v.loads and not v.pinocchio_loads)
        name = os.path.relpath(path, erd) if path.startswith(erd) and erd else os.path.basename(path)
        worst = "" if v.worst != v.worst else f"{v.worst:.1e}"
        rows.append(f"| {origin} | {name} | {v.links or ''} | {v.joints or ''} | "
                    f"{'yes' if v.loads else 'no'} | {v.status} | {worst} | {len(v.warnings)} |")
    print("| source | description | links | joints | loads | verdict | max FK difference | warnings |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    accepted = total - refused
    print(f"\n{total} descriptions: {accepted} that urdfdom accepts, of which {loads} "
          f"load and {same} have the same links, joints, limits and FK as Pinocchio "
          f"({100.0 * same / max(accepted, 1):.0f} %); {refused} refused by urdfdom and by us.")
    return 0 if same == accepted else 1


if __name__ == "__main__":
    sys.exit(main())
