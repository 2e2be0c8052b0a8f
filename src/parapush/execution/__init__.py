"""Execution: the arm velocity command stream, its hard safety limits, and the gripper driver."""
