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


def test_sim_launch_reserves_a_domain_and_hands_free_ports_to_the_nodes(launch_stand_ins):
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
    # Nodes start after the environment is set (actions run in order).
    kinds = [type(action).__name__ for action in started]
    assert kinds.index("Node") > max(index for index, kind in enumerate(kinds) if kind == "SetEnvironmentVariable")


def test_launch_arguments_override_the_network_file(launch_stand_ins):
    started = launch_nodes("sim", domain="77", discovery_range="SUBNET", device_ports="fixed", join="true")
    environment = {action.args[0]: action.args[1] for action in started
                   if type(action).__name__ == "SetEnvironmentVariable"}
    assert environment == {"ROS_DOMAIN_ID": "77", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    assert all(action.kwargs["parameters"][-1] == {} for action in started if type(action).__name__ == "Node")
