"""Programs a user runs that are not ROS nodes: the demo, the bringup that starts the node
graph as child processes, the launch descriptions generated from ``config/graph.yaml``, and
identification from a recorded run. They may import rclpy; the core never imports them."""
