"""Static checks of the node graph: what the launch files and the bringup name exists.

- every executable of config/graph.yaml is installed by CMakeLists.txt and is a module
  ``parapush.nodes.<executable>`` with a ``main``;
- every parameter file exists, is a ROS 2 parameter file for that node, and every key in
  it is a parameter the node declares (its ``PARAMETERS``);
- the launch files build their descriptions from the same graph.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
import yaml

from parapush.graph import PROFILES, WILDCARD_SECTION, load_graph
from parapush.nodes.parameters import flatten_parameters
from parapush.programs.launch_graph import exit_policy_arguments

ROOT = Path(__file__).resolve().parents[2]
GRAPH = load_graph(ROOT / "config" / "graph.yaml")


def cmake_list(name: str) -> list[str]:
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(rf"set\({name}\s+([^)]*)\)", text)
    assert match, f"CMakeLists.txt: no set({name} ...)"
    return match.group(1).split()


def cmake_nodes() -> list[str]:
    return cmake_list("PARAPUSH_NODES")


@pytest.mark.parametrize("entry", GRAPH.nodes, ids=lambda entry: entry.name)
def test_executable_is_installed_and_has_main(entry):
    assert entry.executable in cmake_nodes(), f"{entry.executable} is not installed by CMakeLists.txt"
    module = importlib.import_module(f"parapush.nodes.{entry.executable}")
    assert callable(getattr(module, "main", None)), f"parapush.nodes.{entry.executable} has no main()"


@pytest.mark.parametrize("entry", GRAPH.nodes, ids=lambda entry: entry.name)
def test_parameter_file_keys_are_declared(entry):
    module = importlib.import_module(f"parapush.nodes.{entry.executable}")
    defaults = {spec.name: spec for spec in module.PARAMETERS}
    for path in GRAPH.parameters_paths(entry):
        assert path.is_file(), f"{path} does not exist"
        data = yaml.safe_load(path.read_text())
        # A file of one node has that node's section; a shared file (model.yaml) the wildcard one.
        assert len(data) == 1 and set(data) <= {entry.name, WILDCARD_SECTION}, (
            f"{path}: expected one top-level key, {entry.name!r} or {WILDCARD_SECTION!r}, got {list(data)}")
        parameters = flatten_parameters(next(iter(data.values()))["ros__parameters"])
        undeclared = sorted(set(parameters) - set(defaults))
        assert not undeclared, f"{path}: keys not declared by {entry.executable}: {undeclared}"
        for key, value in parameters.items():
            defaults[key].validate(value)  # raises naming the parameter if the file's value is invalid


def test_the_shared_model_file_goes_to_every_node_that_predicts():
    for name in ("prediction_service", "mpc", "identification"):
        assert GRAPH.node(name).parameters[0] == "model.yaml", name


@pytest.mark.parametrize("profile", sorted(GRAPH.profile_parameters))
def test_profile_parameter_files_only_set_declared_parameters(profile):
    path = GRAPH.config_dir / GRAPH.profile_parameters[profile]
    assert path.is_file(), f"{path} does not exist"
    data = yaml.safe_load(path.read_text())
    nodes = {entry.name: entry for entry in GRAPH.for_profile(profile)}
    assert set(data) <= set(nodes), f"{path}: sections for nodes not in profile {profile!r}: {set(data) - set(nodes)}"
    for name, section in data.items():
        module = importlib.import_module(f"parapush.nodes.{nodes[name].executable}")
        specs = {spec.name: spec for spec in module.PARAMETERS}
        for key, value in flatten_parameters(section["ros__parameters"]).items():
            assert key in specs, f"{path}: {name}.{key} is not declared by {nodes[name].executable}"
            specs[key].validate(value)


def test_every_cmake_node_and_program_is_a_module():
    for package, names in (("nodes", cmake_nodes()), ("programs", cmake_list("PARAPUSH_PROGRAMS"))):
        for name in names:
            module = importlib.import_module(f"parapush.{package}.{name}")
            assert callable(getattr(module, "main", None)), name


@pytest.mark.parametrize("profile", PROFILES)
def test_launch_files_are_generated_from_the_graph(profile):
    path = ROOT / "launch" / f"{'sim' if profile == 'sim' else 'robot'}.launch.py"
    tree = ast.parse(path.read_text())
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    names = [(call.func.id if isinstance(call.func, ast.Name) else None, call.args) for call in calls]
    assert any(name == "generate_graph_launch_description" and args and args[0].value == profile
               for name, args in names), f"{path} does not generate the {profile!r} graph"
    assert GRAPH.for_profile(profile), f"no nodes in profile {profile!r}"


def launch_shutdown(reason: str) -> tuple[str, str]:
    """Stands for ``launch.actions.Shutdown(reason=...)`` (the launch libraries are not installed here)."""
    return ("Shutdown", reason)


@pytest.mark.parametrize("entry", GRAPH.nodes, ids=lambda entry: entry.name)
def test_launch_exit_actions_match_the_graph_policy(entry):
    arguments = exit_policy_arguments(entry, launch_shutdown)
    if entry.on_exit == "shutdown":
        assert set(arguments) == {"on_exit"}
        assert arguments["on_exit"][0] == "Shutdown" and entry.name in arguments["on_exit"][1]
        return
    assert entry.on_exit == "respawn"
    assert arguments["respawn"] is True
    assert arguments["respawn_delay"] == entry.respawn_delay
    assert arguments["respawn_max_retries"] == entry.max_restarts
    on_exit = arguments["on_exit"]
    # launch calls on_exit at every exit and respawns max_restarts times: the exit after them stops the launch.
    assert [on_exit(None, None) for _ in range(entry.max_restarts)] == [None] * entry.max_restarts
    action = on_exit(None, None)
    assert action is not None and action[0] == "Shutdown" and entry.name in action[1]


def test_launch_nodes_take_their_exit_policy_from_the_graph():
    """The generated launch_ros Node actions get exit_policy_arguments(entry, ...) as keyword arguments."""
    path = ROOT / "src" / "parapush" / "programs" / "launch_graph.py"
    tree = ast.parse(path.read_text())
    node_calls = [call for call in ast.walk(tree)
                  if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "Node"]
    assert len(node_calls) == 1, f"{path}: expected one Node(...) action"
    spread = [keyword.value for keyword in node_calls[0].keywords if keyword.arg is None]
    assert any(isinstance(value, ast.Call) and getattr(value.func, "id", None) == "exit_policy_arguments"
               and isinstance(value.args[0], ast.Name) and value.args[0].id == "entry" for value in spread), \
        f"{path}: Node(...) does not take **exit_policy_arguments(entry, ...)"
    shutdown_factories = [call for call in ast.walk(tree)
                          if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Shutdown"]
    assert shutdown_factories and all(keyword.arg == "reason" for call in shutdown_factories
                                      for keyword in call.keywords)
