"""Models and control-side descriptions for locomotors (CLARAty 004 sections 11-13).

:mod:`.wheeled`: ``Wheeled_Locomotor_Model`` -- steering and wheel rates from body motion, odometry, rocker-bogie
settling on terrain (12).
"""
