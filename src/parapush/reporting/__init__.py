"""Reports of runs and benchmarks (plots), ROS-free."""
