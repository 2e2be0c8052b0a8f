"""Launch descriptions generated from the node graph (config/graph.yaml).

Imported by the launch files in ``launch/``; :func:`generate_graph_launch_description` needs
the ``launch`` and ``launch_ros`` packages of a full ROS 2 install (the pip wheels have none;
there the bringup, :mod:`parapush.programs.bringup`, runs the same graph with the same exit
policy). :func:`exit_policy_arguments` and :func:`priority_arguments` (the graph's ``nice``) need
neither, so the policy is testable anywhere.

The network is the bringup's (:func:`parapush.programs.bringup.prepare_network`, from
``config/network.yaml``): launch arguments ``domain`` (a number or auto), ``discovery_range``,
``device_ports`` (sim) and ``join``; the chosen domain and range are set in the environment
of every node, the chosen ports passed as parameters, and all of it logged at start.
"""

from __future__ import annotations

from collections.abc import Callable

from parapush.graph import DEFAULT_SCENE, PACKAGE, NodeEntry, load_graph
from parapush.stack_network import load_network_settings

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


def priority_arguments(entry: NodeEntry) -> dict[str, object]:
    """The ``launch_ros.actions.Node`` keyword arguments that apply ``entry.nice``: a ``nice -n``
    prefix (relative to the launch's own niceness, as the bringup's ``os.nice`` in the child), or
    none at the default priority."""
    return {"prefix": f"nice -n {entry.nice}"} if entry.nice else {}


def generate_graph_launch_description(profile: str):
    """All nodes of ``profile`` ("sim" or "real") with their parameter files and exit policy."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, SetEnvironmentVariable, Shutdown
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    from parapush.programs.bringup import describe_network, prepare_network

    graph = load_graph()
    network = load_network_settings(graph.config_dir / "network.yaml")[profile]
    actions = [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, description) in SHARED_ARGUMENTS.items()
    ]
    actions.append(DeclareLaunchArgument("log_level", default_value="info", description="ROS log level"))
    actions.append(DeclareLaunchArgument("allow_loopback", default_value="false",
                                         description="true: let this profile reach devices on 127.0.0.1"))
    actions.append(DeclareLaunchArgument("domain", default_value=str(network.domain),
                                         description="ROS domain (auto: a free one of this machine)"))
    actions.append(DeclareLaunchArgument("discovery_range", default_value=network.discovery_range,
                                         description="ROS_AUTOMATIC_DISCOVERY_RANGE of the nodes"))
    actions.append(DeclareLaunchArgument("device_ports", default_value=network.device_ports,
                                         description="simulated devices' ports: auto (free) or fixed"))
    actions.append(DeclareLaunchArgument("join", default_value="false",
                                         description="true: start even when this graph's nodes run on the domain"))
    leases = []  # the auto domain's reservation, held while the launch runs

    def check_device_addresses(context) -> list:  # before any node starts; raising aborts the launch
        allow = LaunchConfiguration("allow_loopback").perform(context).strip().lower() in ("true", "1", "yes")
        graph.check_device_addresses(profile, allow_loopback=allow)
        return []

    actions.append(OpaqueFunction(function=check_device_addresses))

    def start_nodes(context) -> list:  # after the device check; raising aborts the launch
        def argument(name: str) -> str:
            return LaunchConfiguration(name).perform(context).strip()

        domain = argument("domain")
        prepared = prepare_network(profile, graph, domain=domain if domain == "auto" else int(domain),
                                   discovery_range=argument("discovery_range"), ports=argument("device_ports"),
                                   join=argument("join").lower() in ("true", "1"))
        leases.append(prepared.lease)
        overrides = prepared.overrides()
        started = [SetEnvironmentVariable(name, value) for name, value in prepared.network.environment().items()]
        started += [LogInfo(msg=line) for line in describe_network(graph, profile, prepared.network,
                                                                   prepared.device_ports, overrides)]
        for entry in graph.for_profile(profile):
            shared = {name: LaunchConfiguration(name) for name in SHARED_ARGUMENTS}
            started.append(
                Node(
                    package=PACKAGE,
                    executable=entry.executable,
                    name=entry.name,
                    output="screen",
                    emulate_tty=True,
                    parameters=[*(str(path) for path in graph.parameter_files(entry, profile)), shared,
                                overrides.get(entry.name, {})],
                    arguments=["--ros-args", "--log-level", LaunchConfiguration("log_level")],
                    **exit_policy_arguments(entry, lambda reason: Shutdown(reason=reason)),
                    **priority_arguments(entry),
                )
            )
        return started

    actions.append(OpaqueFunction(function=start_nodes))
    return LaunchDescription(actions)
