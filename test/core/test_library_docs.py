"""The counts models/README.md documents for each library file are what the tools say (issue 14.9): the
joint-coordinate count (nq) and the number of bodies, as ``mechanism-model info`` and ``models`` print them."""

from __future__ import annotations

import os
import re

import pytest

from mechanism_model_core import load_model
from mechanism_model_core.cli import main
from mechanism_model_core.library import list_models, model_path

README = os.path.join(os.path.dirname(__file__), "..", "..", "models", "README.md")


def table_rows():
    """(files, nq cell, bodies cell) of the library table."""
    with open(README, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| file | what | joints (nq) | bodies"))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("| `"):
            break
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        files = re.findall(r"`([^`]+\.(?:xml|urdf|kindsl|dh))`", cells[0])
        rows.append((files, cells[2], cells[3]))
    return rows


ROWS = table_rows()


def documented_nq(cell: str, n_files: int) -> list[int]:
    """``"floating + 16 mobility + 2 mast + 5 arm (29)"`` -> [29]; ``"6, 3"`` -> [6, 3]; ``"5"`` -> [5]."""
    total = re.search(r"\((\d+)\)\s*$", cell)
    if total and n_files == 1:
        return [int(total.group(1))]
    return [int(v) for v in cell.split(",")]


def test_the_table_covers_every_assembly_of_the_library():
    documented = {f for files, _, _ in ROWS for f in files}
    assert documented == set(list_models())


@pytest.mark.parametrize("files,nq_cell,bodies_cell", ROWS, ids=[r[0][0] for r in ROWS])
def test_documented_counts_are_the_tools_counts(files, nq_cell, bodies_cell, capsys):
    nqs = documented_nq(nq_cell, len(files))
    bodies = [int(v) for v in bodies_cell.split(",")]
    assert len(nqs) == len(bodies) == len(files)
    for f, nq, nb in zip(files, nqs, bodies):
        m = load_model(model_path(f))
        assert (m.nq, len(m.bodies)) == (nq, nb), f
        main(["info", model_path(f), "--no-frames"])
        out = capsys.readouterr().out
        assert f"{nb} bodies" in out and f"nq = {nq}" in out


def test_models_command_counts_bodies_as_info_does(capsys):
    main(["models"])
    out = capsys.readouterr().out
    m = load_model(model_path("rocky8/rocky8_rover.xml"))
    assert f"rocky8: {len(m.bodies)} bodies (with the ground), nq = {m.nq}" in out


def test_every_library_path_the_readmes_name_exists():
    """The READMEs' examples (``info rocky8/rocky8_rover.xml``, ``--model mer/mer_idd.xml``) name real files."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    library = set(list_models())
    for doc in ("README.md", os.path.join("models", "README.md"), os.path.join("docs", "cli.md")):
        with open(os.path.join(root, doc), encoding="utf-8") as fh:
            text = fh.read()
        for name in re.findall(r"(?<![\w/.])([a-z0-9_]+/[a-z0-9_]+\.(?:xml|urdf))\b", text):
            if name.split("/")[0] in {os.path.dirname(m) for m in library}:
                assert name in library, f"{doc} names {name}, which is not in the library"


def test_an_unknown_model_name_suggests_the_closest_library_names(capsys):
    code = main(["info", "rocky8/rocky8_model.xml"])
    err = capsys.readouterr().err
    assert code == 1
    assert "did you mean" in err and "rocky8/rocky8_rover.xml" in err
    code = main(["fk", "mer/idd.xml"])
    assert code == 1 and "did you mean mer/mer_idd.xml?" in capsys.readouterr().err
