"""Launch descriptions generated from the node graph (config/graph.yaml).

Imported by the launch files in ``launch/``; :func:`generate_graph_launch_description` needs
the ``launch`` and ``launch_ros`` packages of a full ROS 2 install (the pip wheels have none;
there the bringup, :mod:`parapush.programs.bringup`, runs the same graph with the same exit
policy). :func:`exit_policy_arguments`, :func:`shutdown_policy_arguments` and
:func:`priority_arguments` (the graph's ``nice``) need neither, so the policy is testable anywhere.

Exit policy: a node with ``on_exit: shutdown`` exiting non-zero while the stack runs, a respawnable
one out of restarts, or any node exiting non-zero while the stack stops, raises :class:`StackFailedError`
in launch's exit handler: ``ros2 launch`` prints ``Caught exception in launch (see debug for
traceback): <reason>`` on one line, stops every node and exits 1 (as the bringup exits 1 with
``[bringup] failed: <reason>``); a zero exit while the stack runs stops it with exit 0 (the
terminal's Ctrl-C reaching the node before launch: :func:`exit_policy_arguments`). The scene
file, the parameter overlay and the device addresses are checked before any node starts (a
missing scene: exit 1, nothing started).

The network is the bringup's (:func:`parapush.programs.bringup.prepare_network`, from
``config/network.yaml``): launch arguments ``domain`` (a number, auto: the exported
``ROS_DOMAIN_ID`` else an isolated one, or isolated), ``discovery_range`` (empty: the exported
one, else the file's), ``device_ports`` (sim) and ``join``; the chosen domain and range are set in
the environment of every node, the chosen ports passed as parameters, and all of it logged at
start, with the ``export`` line that lets another terminal see the stack.
"""

from __future__ import annotations

from pathlib import Path

from parapush.graph import (
    DEFAULT_SCENE,
    DEVICE_ARGUMENTS,
    PACKAGE,
    SIGINT_TIMEOUT,
    SIGTERM_TIMEOUT,
    NodeEntry,
    device_overrides,
    load_graph,
    resolve_scene_path,
)
from parapush.stack_network import load_network_settings

TRUE_TEXTS = ("true", "1", "yes")


class StackFailedError(RuntimeError):
    """A node of the stack failed (its exit policy): raised in launch's exit handler, whose
    message ``ros2 launch`` prints on one line before stopping the stack and exiting 1."""


def _fail_unless_stopping(entry: NodeEntry, event: object, context: object, reason: str) -> object:
    """Raise :class:`StackFailedError` for ``entry``'s non-zero exit. A zero exit while the launch
    stops is nothing; one while it runs stops the launch cleanly (returns launch's Shutdown):
    the terminal's Ctrl-C reaches every node of ``ros2 launch`` at once (they share its process
    group), and a node may exit 0 before launch has handled its own SIGINT. Measured under the
    real launch: the state estimator's clean exit was reported as a failure and the launch exited
    1 on Ctrl-C. (The bringup's nodes run in their own process group and never see the terminal's
    Ctrl-C; there a node's exit while the stack runs always fails it.)"""
    code = getattr(event, "returncode", None)
    stopping = getattr(context, "is_shutdown", False)
    if code == 0:
        return None if stopping else _clean_shutdown(f"{entry.name} exited with code 0 (stopped)")
    if stopping:
        raise StackFailedError(f"{entry.name} exited with code {code} while the stack stopped")
    raise StackFailedError(f"{entry.name} exited with code {code} ({reason})")


def _clean_shutdown(reason: str) -> object:
    """launch's ``EmitEvent(Shutdown(reason))``: every node stopped, ``ros2 launch`` exits 0."""
    from launch.actions import EmitEvent
    from launch.events import Shutdown

    return EmitEvent(event=Shutdown(reason=reason))


def exit_policy_arguments(entry: NodeEntry) -> dict[str, object]:
    """The ``launch_ros.actions.Node`` keyword arguments that apply ``entry.on_exit``.

    Returns:
        "shutdown": an ``on_exit`` handler that raises :class:`StackFailedError` (the stack stops,
        ``ros2 launch`` exits 1 with the reason). "respawn": ``respawn``, ``respawn_delay``,
        ``respawn_max_retries`` and an ``on_exit`` handler that raises at the exit after the last
        allowed restart (as the bringup does). Either handler also raises for a non-zero exit
        while the launch is stopping (a node that did not stop cleanly), and does nothing for
        a zero exit then; a zero exit while the launch runs returns launch's Shutdown (exit 0).
    """
    if not entry.respawns:
        def on_shutdown_exit(event: object, context: object) -> object:
            return _fail_unless_stopping(entry, event, context, "on_exit: shutdown in graph.yaml")

        return {"on_exit": on_shutdown_exit}
    exits = 0

    def on_respawn_exit(event: object, context: object) -> object:
        nonlocal exits
        if getattr(context, "is_shutdown", False):
            return _fail_unless_stopping(entry, event, context, "")
        exits += 1
        if exits > entry.max_restarts:
            return _fail_unless_stopping(entry, event, context, f"after {entry.max_restarts} restarts, graph.yaml")
        return None

    return {"respawn": True, "respawn_delay": entry.respawn_delay, "respawn_max_retries": entry.max_restarts,
            "on_exit": on_respawn_exit}


def shutdown_policy_arguments() -> dict[str, str]:
    """The ``launch_ros.actions.Node`` keyword arguments of the stop: the bringup's timeouts
    (``SIGINT_TIMEOUT`` before SIGTERM, ``SIGTERM_TIMEOUT`` before SIGKILL)."""
    return {"sigterm_timeout": str(SIGINT_TIMEOUT), "sigkill_timeout": str(SIGTERM_TIMEOUT)}


def priority_arguments(entry: NodeEntry) -> dict[str, object]:
    """The ``launch_ros.actions.Node`` keyword arguments that apply ``entry.nice``: a ``nice -n``
    prefix (relative to the launch's own niceness, as the bringup's ``os.nice`` in the child), or
    none at the default priority."""
    return {"prefix": f"nice -n {entry.nice}"} if entry.nice else {}


def launch_arguments(network) -> list[tuple[str, str, str]]:
    """(name, default, description) of every launch argument, given the profile's network settings."""
    arguments = [
        ("scene_file", DEFAULT_SCENE, "scene: a YAML path, or a file name in the package's config/scenes/"),
        ("log_level", "info", "ROS log level"),
        ("params_file", "", "a ROS parameter file applied to every node after the package's files "
                            "(sections per node name or /**)"),
        ("allow_loopback", "false", "true: let the robot profile reach devices on 127.0.0.1"),
        ("sim_devices", "false", "true: run the robot profile against the simulated devices (on the sim "
                                 "profile's network, the simulated driver started too)"),
        ("domain", str(network.domain), "ROS domain: N, auto (the exported ROS_DOMAIN_ID, else a free one "
                                        "of this machine) or isolated (a free one whatever is exported)"),
        ("discovery_range", "", "ROS_AUTOMATIC_DISCOVERY_RANGE of the nodes (empty: the exported one for an "
                                f"auto domain, else {network.discovery_range})"),
        ("device_ports", network.device_ports, "simulated devices' ports: auto (free) or fixed"),
        ("join", "false", "true: start even when this graph's nodes run on the domain"),
    ]
    arguments += [(argument.name, "", f"{argument.description} (empty: the parameter file's)")
                  for argument in DEVICE_ARGUMENTS]
    return arguments


def generate_graph_launch_description(profile: str):
    """All nodes of ``profile`` ("sim" or "real") with their parameter files and exit policy."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration

    graph = load_graph()
    network = load_network_settings(graph.config_dir / "network.yaml")[profile]
    actions = [DeclareLaunchArgument(name, default_value=default, description=description)
               for name, default, description in launch_arguments(network)]
    leases = []  # the isolated domain's reservation, held while the launch runs

    def start_nodes(context) -> list:  # raising aborts the launch before any node starts (exit 1)
        values = {name: LaunchConfiguration(name).perform(context).strip() for name, _, _ in launch_arguments(network)}
        return stack_actions(graph, profile, values, leases)

    actions.append(OpaqueFunction(function=start_nodes))
    return LaunchDescription(actions)


def stack_actions(graph, profile: str, values: dict[str, str], leases: list) -> list:
    """The actions that start the stack, from the launch arguments' ``values``: the checks first
    (scene, parameter overlay, device addresses, network), then the environment, the log lines and
    the nodes. ``leases`` keeps the isolated domain's reservation for the launch's life."""
    from launch.actions import LogInfo, SetEnvironmentVariable
    from launch_ros.actions import Node

    from parapush.programs.bringup import describe_network, prepare_network

    scene = resolve_scene_path(values["scene_file"])
    overlay = [str(Path(values["params_file"]).expanduser().resolve())] if values["params_file"] else []
    if overlay and not Path(overlay[0]).is_file():
        raise FileNotFoundError(f"params_file: no such file {overlay[0]!r}")
    sim_devices = values["sim_devices"].lower() in TRUE_TEXTS
    entries = graph.stack_nodes(profile, sim_devices=sim_devices)
    devices = device_overrides({argument.name: values[argument.name] for argument in DEVICE_ARGUMENTS},
                               [entry.name for entry in entries])
    prepared = prepare_network(profile, graph, domain=values["domain"] or None,
                               discovery_range=values["discovery_range"] or None,
                               ports=values["device_ports"] or None, join=values["join"].lower() in TRUE_TEXTS,
                               sim_devices=sim_devices)
    leases.append(prepared.lease)
    overrides = prepared.overrides(devices)
    graph.check_device_addresses(profile, overrides,
                                 allow_loopback=sim_devices or values["allow_loopback"].lower() in TRUE_TEXTS)
    started = [SetEnvironmentVariable(name, value) for name, value in prepared.network.environment().items()]
    lines = describe_network(graph, profile, prepared.network, prepared.device_ports, overrides,
                             sim_devices=sim_devices)
    visibility = prepared.visibility()
    started += [LogInfo(msg=line) for line in [*lines, *([visibility] if visibility else [])]]
    for entry in entries:
        started.append(
            Node(
                package=PACKAGE,
                executable=entry.executable,
                name=entry.name,
                # a namespace makes the name fully specified, so launch_ros writes the dict parameters
                # below under the node's own section: under "/**" (its choice for an unspecified
                # namespace) rcl let the node's section in the graph's files win over them
                namespace="",
                output="screen",
                emulate_tty=True,
                parameters=[*(str(path) for path in graph.parameter_files(entry, profile)), *overlay,
                            {"scene_file": str(scene)}, overrides.get(entry.name, {})],
                arguments=["--ros-args", "--log-level", values["log_level"] or "info"],
                **exit_policy_arguments(entry),
                **shutdown_policy_arguments(),
                **priority_arguments(entry),
            )
        )
    return started
