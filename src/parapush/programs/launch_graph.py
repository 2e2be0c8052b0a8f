"""Launch descriptions generated from the node graph (config/graph.yaml).

Imported only by the launch files in ``launch/``: it needs the ``launch`` and ``launch_ros``
packages of a full ROS 2 install (the pip wheels have none; there the bringup,
:mod:`parapush.programs.bringup`, runs the same graph).
"""

from __future__ import annotations

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from parapush.graph import DEFAULT_SCENE, PACKAGE, load_graph

# Launch arguments passed to every node as parameter overrides (when the node declares them).
SHARED_ARGUMENTS = {
    "scene_file": (DEFAULT_SCENE, "scene: a YAML path, or a file name in the package's config/scenes/"),
}


def generate_graph_launch_description(profile: str) -> LaunchDescription:
    """All nodes of ``profile`` ("sim" or "real") with their parameter files."""
    graph = load_graph()
    actions = [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, description) in SHARED_ARGUMENTS.items()
    ]
    actions.append(DeclareLaunchArgument("log_level", default_value="info", description="ROS log level"))
    for entry in graph.for_profile(profile):
        overrides = {name: LaunchConfiguration(name) for name in SHARED_ARGUMENTS}
        actions.append(
            Node(
                package=PACKAGE,
                executable=entry.executable,
                name=entry.name,
                output="screen",
                emulate_tty=True,
                parameters=[*(str(path) for path in graph.parameter_files(entry, profile)), overrides],
                arguments=["--ros-args", "--log-level", LaunchConfiguration("log_level")],
            )
        )
    return LaunchDescription(actions)
