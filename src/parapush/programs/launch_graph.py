"""Launch descriptions generated from the node graph (config/graph.yaml).

Imported by the launch files in ``launch/``; :func:`generate_graph_launch_description` needs
the ``launch`` and ``launch_ros`` packages of a full ROS 2 install (the pip wheels have none;
there the bringup, :mod:`parapush.programs.bringup`, runs the same graph with the same exit
policy). :func:`exit_policy_arguments` needs neither, so the policy is testable anywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from parapush.graph import DEFAULT_SCENE, PACKAGE, NodeEntry, load_graph

# Launch arguments passed to every node as parameter overrides (when the node declares them).
SHARED_ARGUMENTS = {
    "scene_file": (DEFAULT_SCENE, "scene: a YAML path, or a file name in the package's config/scenes/"),
}


def exit_policy_arguments(entry: NodeEntry, shutdown: Callable[[str], object]) -> dict[str, object]:
    """The ``launch_ros.actions.Node`` keyword arguments that apply ``entry.on_exit``.

    Args:
        entry: the node's graph entry.
        shutdown: makes the action that stops the launch, given a reason
            (``launch.actions.Shutdown(reason=...)``).

    Returns:
        "shutdown": ``on_exit`` = the shutdown action. "respawn": ``respawn``, ``respawn_delay``,
        ``respawn_max_retries`` and an ``on_exit`` callable that returns the shutdown action at
        the exit after the last allowed restart (as the bringup does), else nothing.
    """
    if not entry.respawns:
        return {"on_exit": shutdown(f"{entry.name} exited (on_exit: shutdown in graph.yaml)")}
    exits = 0

    def on_exit(event: object, context: object) -> object | None:  # noqa: ARG001 - launch's handler signature
        nonlocal exits
        exits += 1
        if exits > entry.max_restarts:
            return shutdown(f"{entry.name} exited after {entry.max_restarts} restarts (graph.yaml)")
        return None

    return {"respawn": True, "respawn_delay": entry.respawn_delay, "respawn_max_retries": entry.max_restarts,
            "on_exit": on_exit}


def generate_graph_launch_description(profile: str):
    """All nodes of ``profile`` ("sim" or "real") with their parameter files and exit policy."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction, Shutdown
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    graph = load_graph()
    actions = [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, description) in SHARED_ARGUMENTS.items()
    ]
    actions.append(DeclareLaunchArgument("log_level", default_value="info", description="ROS log level"))
    actions.append(DeclareLaunchArgument("allow_loopback", default_value="false",
                                         description="true: let this profile reach devices on 127.0.0.1"))

    def check_device_addresses(context) -> list:  # before any node starts; raising aborts the launch
        allow = LaunchConfiguration("allow_loopback").perform(context).strip().lower() in ("true", "1", "yes")
        graph.check_device_addresses(profile, allow_loopback=allow)
        return []

    actions.append(OpaqueFunction(function=check_device_addresses))
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
                **exit_policy_arguments(entry, lambda reason: Shutdown(reason=reason)),
            )
        )
    return LaunchDescription(actions)
