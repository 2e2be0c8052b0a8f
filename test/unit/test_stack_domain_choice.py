"""Which domain a stack joins (issue 31): the sim profile's ``domain: auto`` honours an exported
``ROS_DOMAIN_ID`` and ``ROS_AUTOMATIC_DISCOVERY_RANGE`` (so the user's own terminal sees the
stack), picks an isolated domain only where nothing is exported and then says what to export;
programs ask for an isolated domain whatever is exported (``domain="isolated"``). Also the
bringup's command-line arguments for the devices, the parameter overlay and the simulated devices
of the robot profile, and its exit status. No node is started."""

from __future__ import annotations

import pytest
import yaml

from parapush.graph import DEVICE_ARGUMENTS, GraphError, device_overrides, load_graph
from parapush.programs.bringup import (
    EXIT_NODE_FAILED,
    FIXED_DEVICE_PORTS,
    Bringup,
    choose_domain,
    exit_status,
    isolated_bringup,
    prepare_network,
)
from parapush.stack_network import (
    AUTO_DOMAINS,
    NetworkError,
    NetworkSettings,
    StackNetwork,
    exported_network,
    parse_domain,
)

SIM = NetworkSettings("auto", "LOCALHOST", "auto")
ROBOT = NetworkSettings(42, "SUBNET")


def test_auto_takes_the_exported_domain_and_range():
    environ = {"ROS_DOMAIN_ID": "7", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    assert choose_domain(SIM, None, None, environ) == (7, "SUBNET", "environment")
    assert choose_domain(SIM, "auto", None, environ) == (7, "SUBNET", "environment")
    # only the domain exported: the file's range (discovery stays on this machine)
    assert choose_domain(SIM, None, None, {"ROS_DOMAIN_ID": "7"}) == (7, "LOCALHOST", "environment")
    # an argument wins over the environment
    assert choose_domain(SIM, None, "OFF", environ) == (7, "OFF", "environment")
    assert choose_domain(SIM, 12, None, environ) == (12, "LOCALHOST", "argument")


def test_auto_isolates_only_where_nothing_is_exported_and_isolated_always():
    assert choose_domain(SIM, None, None, {}) == ("isolated", "LOCALHOST", "isolated")
    assert choose_domain(SIM, None, None, {"ROS_DOMAIN_ID": " "}) == ("isolated", "LOCALHOST", "isolated")
    assert choose_domain(SIM, None, None, {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}) == (
        "isolated", "SUBNET", "isolated")
    exported = {"ROS_DOMAIN_ID": "7", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    assert choose_domain(SIM, "isolated", None, exported) == ("isolated", "LOCALHOST", "isolated")


def test_a_fixed_domain_in_the_file_is_kept():
    assert choose_domain(ROBOT, None, None, {"ROS_DOMAIN_ID": "7"}) == (42, "SUBNET", "network.yaml")
    assert choose_domain(ROBOT, "auto", None, {"ROS_DOMAIN_ID": "7"}) == (7, "SUBNET", "environment")


def test_invalid_exported_values_and_arguments_are_refused_naming_them():
    with pytest.raises(NetworkError, match="ROS_DOMAIN_ID: expected a ROS domain id"):
        exported_network({"ROS_DOMAIN_ID": "seven"})
    with pytest.raises(NetworkError, match="ROS_DOMAIN_ID"):
        exported_network({"ROS_DOMAIN_ID": "300"})
    with pytest.raises(NetworkError, match="ROS_AUTOMATIC_DISCOVERY_RANGE: expected one of"):
        exported_network({"ROS_AUTOMATIC_DISCOVERY_RANGE": "LAN"})
    assert parse_domain(" Isolated ") == "isolated" and parse_domain("12") == 12 and parse_domain("") is None
    with pytest.raises(NetworkError, match="domain: expected"):
        parse_domain("lab")


def test_the_export_line_is_what_a_second_terminal_needs():
    assert StackNetwork(12, "LOCALHOST").export_line() == \
        "export ROS_DOMAIN_ID=12 ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST"


def test_an_exported_domain_is_honoured_by_the_bringup(monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", "77")
    monkeypatch.delenv("ROS_AUTOMATIC_DISCOVERY_RANGE", raising=False)
    prepared = prepare_network("sim", load_graph(), join=True)  # join: no 2 s look for other stacks
    assert prepared.network == StackNetwork(77, "LOCALHOST") and prepared.lease is None
    assert prepared.source == "environment"
    # the range was not exported: a second terminal needs it too
    assert prepared.visibility().endswith("export ROS_DOMAIN_ID=77 ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST")
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    assert prepare_network("sim", load_graph(), join=True).visibility() is None


def test_nothing_exported_gives_an_isolated_domain_and_the_line_to_export(monkeypatch, capsys):
    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    monkeypatch.delenv("ROS_AUTOMATIC_DISCOVERY_RANGE", raising=False)
    bringup = isolated_bringup("sim")
    try:
        assert bringup.network.domain in AUTO_DOMAINS and bringup.domain_lease.held
        assert bringup.visibility.endswith(f"export ROS_DOMAIN_ID={bringup.network.domain} "
                                           "ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST")
    finally:
        bringup.stop()


def test_isolated_ignores_the_exported_domain(monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", "77")
    first = isolated_bringup("sim", domain="isolated")
    second = isolated_bringup("sim", domain="isolated")
    try:
        assert first.network.domain != second.network.domain
        assert {first.network.domain, second.network.domain} <= set(AUTO_DOMAINS)
    finally:
        first.stop()
        second.stop()


def test_a_missing_scene_is_refused_before_the_network_is_chosen(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the network was chosen for a missing scene")

    monkeypatch.setattr("parapush.programs.bringup.prepare_network", no_network)
    with pytest.raises(FileNotFoundError, match="scene_file: 'no_such_scene.yaml'"):
        isolated_bringup("sim", "no_such_scene.yaml")


def test_device_arguments_become_the_nodes_parameters():
    nodes = ["state_estimator", "executor", "sim_driver"]
    overrides = device_overrides({"natnet_server": "10.0.0.5", "natnet_multicast": "true",
                                  "natnet_command_port": "1600", "gripper_address": "tcp://10.0.0.6:502",
                                  "twist_topic": "/arm/twist", "natnet_local": ""}, nodes)
    assert overrides == {"state_estimator": {"server_address": "10.0.0.5", "multicast": True, "command_port": 1600},
                         "executor": {"gripper.address": "tcp://10.0.0.6:502", "twist_topic": "/arm/twist"},
                         "sim_driver": {"twist_topic": "/arm/twist"}}
    with pytest.raises(GraphError, match="natnet_command_port: expected an integer"):
        device_overrides({"natnet_command_port": "x"}, nodes)
    with pytest.raises(GraphError, match="natnet_multicast: expected true or false"):
        device_overrides({"natnet_multicast": "maybe"}, nodes)
    graph = load_graph()
    for argument in DEVICE_ARGUMENTS:  # every target is a node of the graph
        assert all(graph.node(node) for node, _ in argument.targets)


def test_robot_profile_refusal_names_the_launch_arguments():
    with pytest.raises(GraphError, match=r"natnet_server:=HOST .*sim_devices:=true.*allow_loopback:=true"):
        Bringup("real")


def test_robot_profile_against_the_simulated_devices(monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", "78")
    bringup = isolated_bringup("real", sim_devices=True, join=True, ports="fixed")
    try:
        names = [entry.name for entry in bringup.entries()]
        assert names[0] == "sim_driver" and "executor" in names
        assert bringup.network == StackNetwork(78, "LOCALHOST")  # the sim profile's network, not the robot's
        estimator = bringup.own_parameters(bringup.graph.node("state_estimator"))
        assert estimator["server_address"] == "127.0.0.1" and estimator["multicast"] is False
        assert estimator["command_port"] == FIXED_DEVICE_PORTS.natnet_command
        executor = bringup.own_parameters(bringup.graph.node("executor"))
        assert executor["gripper.address"] == f"tcp://127.0.0.1:{FIXED_DEVICE_PORTS.gripper_tcp}"
        assert [entry.name for entry in bringup.graph.shutdown_stages("real", sim_devices=True)[-1]] == ["sim_driver"]
    finally:
        bringup.stop()


def test_a_parameter_overlay_goes_to_every_node_after_the_graphs_files(tmp_path):
    overlay = tmp_path / "mine.yaml"
    overlay.write_text(yaml.safe_dump({"mpc": {"ros__parameters": {"model.iterations": 2}}}))
    bringup = Bringup("sim", parameter_files=(overlay,))
    for entry in bringup.entries():
        command = bringup.command(entry)
        files = [command[index + 1] for index, word in enumerate(command) if word == "--params-file"]
        assert files[-2] == str(overlay.resolve())  # after the graph's files, before the bringup's own values
        assert bringup.own_parameters(entry)["scene_file"] == str(bringup.scene_path) and "-p" not in command
    bringup.stop()  # removes the bringup's own files
    with pytest.raises(FileNotFoundError, match="parameter_files: no such file"):
        Bringup("sim", parameter_files=(tmp_path / "missing.yaml",))


def test_exit_status_is_non_zero_with_a_one_line_reason(capsys):
    assert exit_status(None, {"mpc": 0, "executor": 0}) == 0
    assert exit_status("state_estimator exited with code -9 (on_exit: shutdown)", {"mpc": 0}) == EXIT_NODE_FAILED
    assert capsys.readouterr().err == "[bringup] failed: state_estimator exited with code -9 (on_exit: shutdown)\n"
    assert exit_status(None, {"mpc": -2, "executor": 0}) == EXIT_NODE_FAILED
    assert "mpc -2" in capsys.readouterr().err
