"""The stack against the simulated driver: ros2 launch parareal_pushing sim.launch.py [scene_file:=...]"""

from parapush.programs.launch_graph import generate_graph_launch_description


def generate_launch_description():
    return generate_graph_launch_description("sim")
