"""Models and control-side descriptions for manipulators and locomotors (CLARAty 004 sections 11-13).

:mod:`.wheeled`: ``Wheeled_Locomotor_Model`` -- steering and wheel rates from body motion, odometry, rocker-bogie
settling on terrain (12).
:mod:`.manipulator`: ``Manipulator_Model`` -- one chain as an arm or a mast: FK/IK/Jacobian in chain
coordinates, specialized solvers per adaptation, Cartesian paths, pointing, gravity compensation (11-13).
:mod:`.legged`: ``Legged_Locomotor_Model`` -- leg IK, body IK, static stability, gaits on flat ground and slopes.
:mod:`.trajectory`: joint trajectories and their time parameterization within limits.
"""
