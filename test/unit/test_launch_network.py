"""The launch files' network (parapush.programs.launch_graph): the launch arguments domain,
discovery_range, device_ports and join, applied as the bringup applies them. The pip wheels have
no ``launch``/``launch_ros``; stand-ins record the actions the description creates."""

from __future__ import annotations

import sys
import types

import pytest

from parapush.programs.launch_graph import generate_graph_launch_description
from parapush.stack_network import AUTO_DOMAINS


class Action:
    """Records its constructor's arguments."""

    def __init__(self, *args, **kwargs) -> None:
        self.args = args
        self.kwargs = kwargs


class LaunchConfiguration(Action):
    def perform(self, context) -> str:
        return context[self.args[0]]


@pytest.fixture
def launch_stand_ins(monkeypatch):
    launch = types.ModuleType("launch")
    launch.LaunchDescription = Action
    actions = types.ModuleType("launch.actions")
    for name in ("DeclareLaunchArgument", "LogInfo", "OpaqueFunction", "SetEnvironmentVariable", "Shutdown"):
        setattr(actions, name, type(name, (Action,), {}))
    substitutions = types.ModuleType("launch.substitutions")
    substitutions.LaunchConfiguration = LaunchConfiguration
    launch_ros = types.ModuleType("launch_ros")
    ros_actions = types.ModuleType("launch_ros.actions")
    ros_actions.Node = type("Node", (Action,), {})
    modules = {"launch": launch, "launch.actions": actions, "launch.substitutions": substitutions,
               "launch_ros": launch_ros, "launch_ros.actions": ros_actions}
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


def launch_nodes(profile: str, **arguments: str) -> list[Action]:
    """The actions the description starts, with its arguments' defaults unless given."""
    description = generate_graph_launch_description(profile)
    context = {action.args[0]: action.kwargs["default_value"] for action in description.args[0]
               if type(action).__name__ == "DeclareLaunchArgument"}
    context.update(arguments)
    functions = [action.kwargs["function"] for action in description.args[0]
                 if type(action).__name__ == "OpaqueFunction"]
    started = []
    for function in functions:
        started += function(context)
    return started


def test_sim_launch_reserves_a_domain_and_hands_free_ports_to_the_nodes(launch_stand_ins, monkeypatch):
    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)  # the user exported nothing: an isolated domain
    monkeypatch.delenv("ROS_AUTOMATIC_DISCOVERY_RANGE", raising=False)
    started = launch_nodes("sim")
    environment = {action.args[0]: action.args[1] for action in started
                   if type(action).__name__ == "SetEnvironmentVariable"}
    assert int(environment["ROS_DOMAIN_ID"]) in AUTO_DOMAINS
    assert environment["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    nodes = {action.kwargs["name"]: action.kwargs["parameters"][-1] for action in started
             if type(action).__name__ == "Node"}
    port = nodes["sim_driver"]["gripper_tcp_port"]
    assert nodes["executor"]["gripper.address"] == f"tcp://127.0.0.1:{port}" and port != 15020
    assert nodes["state_estimator"]["command_port"] == nodes["sim_driver"]["natnet_command_port"]
    logged = " ".join(action.kwargs["msg"] for action in started if type(action).__name__ == "LogInfo")
    assert f"ROS domain {environment['ROS_DOMAIN_ID']}" in logged and str(port) in logged
    assert (f"export ROS_DOMAIN_ID={environment['ROS_DOMAIN_ID']} ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST"
            in logged)
    # Nodes start after the environment is set (actions run in order).
    kinds = [type(action).__name__ for action in started]
    assert kinds.index("Node") > max(index for index, kind in enumerate(kinds) if kind == "SetEnvironmentVariable")


def test_launch_arguments_override_the_network_file(launch_stand_ins):
    started = launch_nodes("sim", domain="77", discovery_range="SUBNET", device_ports="fixed", join="true")
    environment = {action.args[0]: action.args[1] for action in started
                   if type(action).__name__ == "SetEnvironmentVariable"}
    assert environment == {"ROS_DOMAIN_ID": "77", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    assert all(action.kwargs["parameters"][-1] == {} for action in started if type(action).__name__ == "Node")


def node_actions(started: list[Action]) -> dict[str, Action]:
    return {action.kwargs["name"]: action for action in started if type(action).__name__ == "Node"}


def test_sim_launch_honours_an_exported_domain_and_range(launch_stand_ins, monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", "79")
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET")
    started = launch_nodes("sim", join="true")
    environment = {action.args[0]: action.args[1] for action in started
                   if type(action).__name__ == "SetEnvironmentVariable"}
    assert environment == {"ROS_DOMAIN_ID": "79", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    logged = " ".join(action.kwargs["msg"] for action in started if type(action).__name__ == "LogInfo")
    assert "export ROS_DOMAIN_ID" not in logged  # the user's terminal is on the stack's network already
    started = launch_nodes("sim", domain="isolated")
    environment = {action.args[0]: action.args[1] for action in started
                   if type(action).__name__ == "SetEnvironmentVariable"}
    assert int(environment["ROS_DOMAIN_ID"]) in AUTO_DOMAINS


def test_a_missing_scene_or_overlay_is_refused_before_any_node(launch_stand_ins, tmp_path):
    with pytest.raises(FileNotFoundError, match="scene_file: 'no_such_scene.yaml'"):
        launch_nodes("sim", scene_file="no_such_scene.yaml", domain="isolated")
    with pytest.raises(FileNotFoundError, match="params_file: no such file"):
        launch_nodes("sim", params_file=str(tmp_path / "missing.yaml"), domain="isolated")


def test_device_arguments_and_the_overlay_reach_the_nodes(launch_stand_ins, tmp_path):
    overlay = tmp_path / "mine.yaml"
    overlay.write_text("mpc:\n  ros__parameters:\n    model.iterations: 2\n")
    started = launch_nodes("real", natnet_server="10.0.0.5", natnet_multicast="true",
                           gripper_address="tcp://10.0.0.6:502", twist_topic="/arm/twist",
                           params_file=str(overlay), domain="isolated")
    nodes = node_actions(started)
    assert "sim_driver" not in nodes
    assert nodes["state_estimator"].kwargs["parameters"][-1] == {"server_address": "10.0.0.5", "multicast": True}
    assert nodes["executor"].kwargs["parameters"][-1] == {"gripper.address": "tcp://10.0.0.6:502",
                                                          "twist_topic": "/arm/twist"}
    for node in nodes.values():
        parameters = node.kwargs["parameters"]
        assert parameters[-3] == str(overlay.resolve()) and "scene_file" in parameters[-2]
        assert node.kwargs["sigterm_timeout"] and callable(node.kwargs["on_exit"])


def test_the_robot_launch_refuses_loopback_naming_the_launch_arguments(launch_stand_ins):
    with pytest.raises(ValueError, match=r"natnet_server:=HOST gripper_address:=ADDRESS.*sim_devices:=true"):
        launch_nodes("real", domain="isolated")


def test_the_robot_launch_against_the_simulated_devices(launch_stand_ins, monkeypatch):
    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    started = launch_nodes("real", sim_devices="true")
    nodes = node_actions(started)
    assert "sim_driver" in nodes
    port = nodes["sim_driver"].kwargs["parameters"][-1]["gripper_tcp_port"]
    assert nodes["executor"].kwargs["parameters"][-1]["gripper.address"] == f"tcp://127.0.0.1:{port}"
    assert nodes["state_estimator"].kwargs["parameters"][-1]["server_address"] == "127.0.0.1"
    environment = {action.args[0]: action.args[1] for action in started
                   if type(action).__name__ == "SetEnvironmentVariable"}
    assert int(environment["ROS_DOMAIN_ID"]) in AUTO_DOMAINS  # the sim profile's network, not the robot's 42
    assert environment["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
