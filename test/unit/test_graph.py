"""The node graph's exit policy and shutdown order (config/graph.yaml), and their validation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from parapush.graph import GraphError, NodeEntry, load_graph

ROOT = Path(__file__).resolve().parents[2]


def entry(**changes) -> NodeEntry:
    fields = {"name": "worker", "executable": "worker", "parameters": "worker.yaml", "profiles": ["sim"],
              "on_exit": "respawn", "respawn_delay": 0.5, "max_restarts": 2}
    return NodeEntry(**{**fields, **changes})


def write_graph(tmp_path, nodes, shutdown_order) -> Path:
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump({"nodes": nodes, "shutdown_order": shutdown_order}))
    return path


def test_the_project_graph_respawns_only_the_rebuildable_nodes():
    graph = load_graph(ROOT / "config" / "graph.yaml")
    policy = {node.name: node.on_exit for node in graph.nodes}
    assert policy == {"sim_driver": "shutdown", "state_estimator": "shutdown", "prediction_service": "respawn",
                      "identification": "respawn", "mpc": "shutdown", "executor": "shutdown",
                      "visualizer": "respawn"}


@pytest.mark.parametrize("profile", ["sim", "real"])
def test_the_project_graph_stops_mpc_then_executor_first_and_the_drivers_last(profile):
    graph = load_graph(ROOT / "config" / "graph.yaml")
    stages = [[node.name for node in stage] for stage in graph.shutdown_stages(profile)]
    assert stages[:2] == [["mpc"], ["executor"]]
    assert sorted(name for stage in stages for name in stage) == sorted(n.name for n in graph.for_profile(profile))
    if profile == "sim":
        assert stages[-1] == ["sim_driver"]


@pytest.mark.parametrize(("changes", "field"), [
    ({"on_exit": "restart"}, "on_exit"),
    ({"respawn_delay": -1.0}, "respawn_delay"),
    ({"respawn_delay": None}, "respawn_delay"),
    ({"respawn_delay": True}, "respawn_delay"),
    ({"max_restarts": 0}, "max_restarts"),
    ({"max_restarts": 1.5}, "max_restarts"),
    ({"on_exit": "shutdown", "max_restarts": None}, "respawn_delay"),
    ({"on_exit": "shutdown", "respawn_delay": None}, "max_restarts"),
])
def test_invalid_exit_policy_names_the_field(changes, field):
    with pytest.raises(GraphError, match=rf"nodes\['worker'\]\.{field}"):
        entry(**changes)


def test_shutdown_node_needs_no_respawn_settings():
    node = entry(on_exit="shutdown", respawn_delay=None, max_restarts=None)
    assert not node.respawns


def test_missing_on_exit_is_an_error(tmp_path):
    nodes = [{"name": "worker", "executable": "worker", "parameters": "worker.yaml", "profiles": ["sim"]}]
    with pytest.raises(GraphError, match="nodes\\[0\\]"):
        load_graph(write_graph(tmp_path, nodes, [["worker"]]))


@pytest.mark.parametrize("order", [[["a"]], [["a", "b"], ["b"]], [["a", "b", "c"]], [["a"], [], ["b"]], "a b"])
def test_shutdown_order_must_name_every_node_once(tmp_path, order):
    nodes = [{"name": name, "executable": name, "parameters": f"{name}.yaml", "profiles": ["sim"],
              "on_exit": "shutdown"} for name in ("a", "b")]
    with pytest.raises(GraphError, match="shutdown_order"):
        load_graph(write_graph(tmp_path, nodes, order))


def test_shutdown_stages_leave_out_other_profiles(tmp_path):
    nodes = [{"name": "driver", "executable": "driver", "parameters": "d.yaml", "profiles": ["sim"],
              "on_exit": "shutdown"},
             {"name": "guard", "executable": "guard", "parameters": "g.yaml", "profiles": ["sim", "real"],
              "on_exit": "shutdown"}]
    graph = load_graph(write_graph(tmp_path, nodes, [["guard"], ["driver"]]))
    assert [[node.name for node in stage] for stage in graph.shutdown_stages("real")] == [["guard"]]
    assert [[node.name for node in stage] for stage in graph.shutdown_stages("sim")] == [["guard"], ["driver"]]


@pytest.fixture
def project_graph():
    return load_graph(ROOT / "config" / "graph.yaml")


def test_sim_profile_reaches_the_simulated_devices_on_loopback(project_graph):
    project_graph.check_device_addresses("sim")
    estimator = project_graph.node("state_estimator")
    assert project_graph.parameter_value(estimator, "sim", "server_address") == "127.0.0.1"


@pytest.mark.parametrize("address", [None, "127.0.0.1", "127.0.1.1", "localhost", "::1"])
def test_robot_profile_refuses_the_estimator_on_loopback(project_graph, address):
    overrides = {} if address is None else {"state_estimator": {"server_address": address}}
    with pytest.raises(GraphError, match=r"state_estimator\.server_address .*profile 'real'.*allow"):
        project_graph.check_device_addresses("real", overrides)
    project_graph.check_device_addresses("real", overrides, allow_loopback=True)


@pytest.mark.parametrize("address", ["192.168.1.10", "motive-pc.lab"])
def test_robot_profile_accepts_a_motive_host(project_graph, address):
    project_graph.check_device_addresses("real", {"state_estimator": {"server_address": address}})


def test_unset_device_address_counts_as_loopback(tmp_path):
    (tmp_path / "estimator.yaml").write_text(yaml.safe_dump({"estimator": {"ros__parameters": {"rate": 1.0}}}))
    nodes = [{"name": "estimator", "executable": "state_estimator", "parameters": "estimator.yaml",
              "profiles": ["sim", "real"], "on_exit": "shutdown"}]
    path = write_graph(tmp_path, nodes, [["estimator"]])
    data = yaml.safe_load(path.read_text())
    data.update(device_addresses={"estimator": ["network.host"]}, loopback_profiles=["sim"])
    path.write_text(yaml.safe_dump(data))
    graph = load_graph(path)
    assert graph.parameter_value(graph.node("estimator"), "real", "network.host") is None
    with pytest.raises(GraphError, match="network.host is unset"):
        graph.check_device_addresses("real")
    graph.check_device_addresses("real", {"estimator": {"network.host": "10.0.0.2"}})
    graph.check_device_addresses("sim")


def test_device_addresses_must_name_graph_nodes(tmp_path):
    nodes = [{"name": "a", "executable": "a", "parameters": "a.yaml", "profiles": ["sim"], "on_exit": "shutdown"}]
    path = write_graph(tmp_path, nodes, [["a"]])
    data = yaml.safe_load(path.read_text())
    data.update(device_addresses={"b": ["host"]})
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(GraphError, match=r"device_addresses: no node\(s\) \['b'\]"):
        load_graph(path)
