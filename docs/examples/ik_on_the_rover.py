"""The README's inverse-kinematics example: the arm reaches a point, the mast camera looks at it."""

import numpy as np

import mechanism_model_core as mm
from mechanism_model_core.library import model_path

rover = mm.load_model(model_path("rocky8/rocky8_rover.xml"))
home = mm.forward_kinematics(rover)
goal = home.position("arm_tool", relative_to="chassis") + [-0.20, 0.15, -0.10]  # metres, chassis frame
look_at = (home.pose("chassis") @ np.append(goal, 1.0))[:3]                     # the same point, ground frame
result = mm.solve_ik(rover, [
    mm.PositionConstraint("arm_tool", goal, relative_to="chassis", priority=0),
    mm.PointAtConstraint("mast_camera", target_point=look_at, axis=(1, 0, 0), priority=1),
], locked=[c for c in rover.coordinate_names if c.startswith("chassis.")], timeout=0.05)

if __name__ == "__main__":
    print(result)
    print({k: round(v, 3) for k, v in result.as_dict().items() if k.startswith(("arm_", "mast_"))})
