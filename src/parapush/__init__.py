"""parapush: the ROS-free core of parareal_pushing.

Physics predictions for planar pushing that are as accurate as MuJoCo but faster,
thanks to Parareal (a cheap coarse model corrected by the fine MuJoCo model run in
parallel across time), and the planning, estimation, execution and simulated-device
code built on them.

Importing this package never imports rclpy or any ROS message type; the thin ROS 2
nodes live in :mod:`parapush.nodes` and are only imported by their entry points.
"""

__version__ = "0.1.0"
