"""Issue 10.5: forward kinematics is exact for any finite joint angle (wheels are continuous joints whose
angle grows without bound on a long drive). The one-configuration pass, the batch pass and the per-step
transforms a TF publisher uses must agree with each other and with the definition (``Joint.transform``,
which takes sin and cos of each angle) at |q| = 1e12 and 1e16 rad."""

import math

import numpy as np
import pytest

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics, jacobian
from mechanism_model_core.kinematics import joint_transforms
from mechanism_model_core.spatial import make_transform, rpy_to_matrix


def wheel_chain(offsets=True):
    """A rover-like tree: a chain of continuous joints about varied axes, a prismatic mast, a ball joint."""
    b = MechanismBuilder("wheels")
    rng = np.random.default_rng(4)
    parent = None
    for i in range(7):
        P = make_transform(rpy_to_matrix(rng.uniform(-1, 1, 3)), rng.uniform(-0.3, 0.3, 3))
        off = float(rng.uniform(-1, 1)) if offsets else 0.0
        b.add_body(f"w{i}", parent, Joint.continuous(f"j{i}", P, axis=rng.normal(size=3), offset=off))
        parent = f"w{i}"
    b.add_body("mast", "w2", Joint.prismatic("mast", make_transform(None, (0, 0, 0.2)), axis=(0, 1, 1)))
    b.add_body("head", "mast", Joint.ball("head", make_transform(None, (0.1, 0, 0))))
    b.add_frame("w6", "tool", make_transform(rpy_to_matrix((0.1, 0.2, 0.3)), (0.05, 0.0, 0.1)))
    return b.build()


def reference_poses(mech, q):
    world = {mech.ground: np.eye(4)}
    for spec in mech.bodies[1:]:
        world[spec.name] = world[spec.parent] @ spec.joint.transform(q[mech.joint_slice(spec.joint.name)])
    return world


def compose_steps(mech, q):
    """Body poses from the per-step transforms, as a TF listener composes the tree."""
    E = joint_transforms(mech, q)
    world = {mech.ground: np.eye(4)}
    k = 0
    for spec in mech.bodies[1:]:
        T = world[spec.parent]
        if spec.joint.dof == 0:
            T = T @ spec.joint.placement
        for _ in spec.joint.elementary_motions():
            T = T @ E[k]
            k += 1
        world[spec.name] = T
    assert k == len(E)
    return world


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e12, 1e16])
def test_single_batch_and_steps_agree_at_huge_angles(scale):
    mech = wheel_chain()
    rng = np.random.default_rng(int(math.log10(scale)))
    Q = rng.uniform(-1, 1, (5, mech.nq)) * scale
    Q[:, mech.coordinate_names.index("mast")] = 0.3          # a length, not an angle
    F_batch = forward_kinematics(mech, Q).frame_array()
    for k, q in enumerate(Q):
        F = forward_kinematics(mech, q).frame_array()
        np.testing.assert_allclose(F, F_batch[k], atol=1e-9)
        steps = compose_steps(mech, q)
        for name, T in steps.items():
            np.testing.assert_allclose(F[mech.frame(name).index], T, atol=1e-9, err_msg=name)
        for T in F:
            R = T[:3, :3]
            assert np.abs(R.T @ R - np.eye(3)).max() < 1e-12


@pytest.mark.parametrize("scale", [1e12, 1e16])
def test_huge_angles_match_the_definition(scale):
    mech = wheel_chain(offsets=False)          # Joint.transform adds the offset in floating point
    rng = np.random.default_rng(9)
    q = rng.uniform(-1, 1, mech.nq) * scale
    q[mech.coordinate_names.index("mast")] = -0.2
    ref = reference_poses(mech, q)
    fk = forward_kinematics(mech, q)
    for name, T in ref.items():
        np.testing.assert_allclose(fk.pose(name), T, atol=1e-9, err_msg=name)
    # the Jacobian rides on the same pass: its angular rows are the world axes of the joints
    J = jacobian(mech, q, "tool")
    assert np.all(np.isfinite(J))
    z0 = ref["w0"][:3, :3] @ (mech.joint("j0").axis / np.linalg.norm(mech.joint("j0").axis))
    np.testing.assert_allclose(J[3:, 0], z0, atol=1e-9)
