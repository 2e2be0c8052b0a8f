"""The stack against the simulated driver: ros2 launch parareal_pushing sim.launch.py [scene_file:=...]

Joins the exported ROS_DOMAIN_ID (else an isolated domain, and prints the export line to see it);
``ros2 launch parareal_pushing sim.launch.py --show-args`` lists every argument (domain, devices,
params_file). A node that dies ends the launch with exit code 1 and its reason.
"""

from parapush.programs.launch_graph import generate_graph_launch_description


def generate_launch_description():
    return generate_graph_launch_description("sim")
