"""Static checks of the node graph: what the launch files and the bringup name exists.

- every executable of config/graph.yaml is installed by CMakeLists.txt and is a module
  ``parapush.nodes.<executable>`` with a ``main``;
- every parameter file exists, is a ROS 2 parameter file for that node, and every key in
  it is a parameter the node declares (its ``PARAMETERS``);
- the launch files build their descriptions from the same graph, with the bringup's exit policy
  (a failed node ends the stack with a non-zero exit) and its stop timeouts.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import types
from pathlib import Path

import pytest
import yaml

from parapush.graph import PROFILES, SIGINT_TIMEOUT, SIGTERM_TIMEOUT, WILDCARD_SECTION, load_graph
from parapush.nodes import sim_driver
from parapush.nodes.node_main import SHUTDOWN_REPORT_AFTER
from parapush.nodes.parameters import flatten_parameters
from parapush.programs.bringup import Bringup
from parapush.programs.launch_graph import StackFailedError, exit_policy_arguments, shutdown_policy_arguments

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


class ExitEvent:
    """Stands for launch's ProcessExited event (the launch libraries are not installed here)."""

    def __init__(self, returncode: int) -> None:
        self.returncode = returncode


class LaunchContext:
    """Stands for launch's LaunchContext: ``is_shutdown`` once the launch stops (Ctrl-C, a failure)."""

    def __init__(self, is_shutdown: bool) -> None:
        self.is_shutdown = is_shutdown


RUNNING, STOPPING = LaunchContext(False), LaunchContext(True)


class Shutdown:
    """Stands for launch.events.Shutdown."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class EmitEvent:
    """Stands for launch.actions.EmitEvent."""

    def __init__(self, event: object) -> None:
        self.event = event


@pytest.fixture
def launch_stand_ins(monkeypatch):
    """launch.actions.EmitEvent and launch.events.Shutdown (the launch libraries are not installed here)."""
    package = types.ModuleType("launch")
    actions, events = types.ModuleType("launch.actions"), types.ModuleType("launch.events")
    actions.EmitEvent, events.Shutdown = EmitEvent, Shutdown
    for name, module in (("launch", package), ("launch.actions", actions), ("launch.events", events)):
        monkeypatch.setitem(sys.modules, name, module)


@pytest.mark.parametrize("entry", GRAPH.nodes, ids=lambda entry: entry.name)
def test_launch_exit_handlers_match_the_graph_policy(entry, launch_stand_ins):
    """The launch files' exit policy is the bringup's (Bringup.supervise, bringup.exit_status) for
    a non-zero exit: a shutdown node's exit, or a respawnable one's after its last restart, fails the
    launch (launch prints the raised reason and exits 1); while stopping, exit 0 passes and any other
    code fails. A zero exit while the launch runs stops it cleanly (the terminal's Ctrl-C reaches
    every node of ``ros2 launch`` at once; the bringup's nodes never see it)."""
    arguments = exit_policy_arguments(entry)
    on_exit = arguments["on_exit"]
    assert on_exit(ExitEvent(0), STOPPING) is None
    with pytest.raises(StackFailedError, match=f"{entry.name} exited with code -2 while the stack stopped"):
        on_exit(ExitEvent(-2), STOPPING)
    if entry.on_exit == "shutdown":
        assert set(arguments) == {"on_exit"}
        stop = on_exit(ExitEvent(0), RUNNING)
        assert isinstance(stop, EmitEvent) and isinstance(stop.event, Shutdown), stop
        assert stop.event.reason == f"{entry.name} exited with code 0 (stopped)"
        for code in (1, -9):
            with pytest.raises(StackFailedError, match=rf"^{entry.name} exited with code {code} \(on_exit: shutdown"):
                on_exit(ExitEvent(code), RUNNING)
        return
    assert entry.on_exit == "respawn"
    assert arguments["respawn"] is True
    assert arguments["respawn_delay"] == entry.respawn_delay
    assert arguments["respawn_max_retries"] == entry.max_restarts
    # launch calls on_exit at every exit and respawns max_restarts times: the exit after them fails the launch.
    assert [on_exit(ExitEvent(-9), RUNNING) for _ in range(entry.max_restarts)] == [None] * entry.max_restarts
    with pytest.raises(StackFailedError, match=f"{entry.name} exited with code -9 .after {entry.max_restarts}"):
        on_exit(ExitEvent(-9), RUNNING)


def test_launch_and_bringup_stop_with_the_same_timeouts():
    """Both stop a node with SIGINT, SIGTERM after SIGINT_TIMEOUT, SIGKILL after SIGTERM_TIMEOUT."""
    assert shutdown_policy_arguments() == {"sigterm_timeout": str(SIGINT_TIMEOUT),
                                           "sigkill_timeout": str(SIGTERM_TIMEOUT)}
    assert Bringup.__dataclass_fields__["stop_timeout"].default == SIGINT_TIMEOUT
    source = (ROOT / "src" / "parapush" / "programs" / "bringup.py").read_text()
    assert "(signal.SIGTERM, SIGTERM_TIMEOUT), (signal.SIGKILL, SIGTERM_TIMEOUT)" in source
    # The simulated driver's grace (ros2 launch stops every node at once) ends before a stopping
    # node dumps its stacks and long before SIGTERM.
    grace = next(spec for spec in sim_driver.PARAMETERS if spec.name == "shutdown_grace")
    assert grace.maximum < SHUTDOWN_REPORT_AFTER < SIGINT_TIMEOUT


def test_launch_nodes_take_their_exit_and_shutdown_policy_from_the_graph():
    """The generated launch_ros Node actions get exit_policy_arguments(entry) and
    shutdown_policy_arguments() as keyword arguments, and no other exit handling."""
    path = ROOT / "src" / "parapush" / "programs" / "launch_graph.py"
    tree = ast.parse(path.read_text())
    node_calls = [call for call in ast.walk(tree)
                  if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "Node"]
    assert len(node_calls) == 1, f"{path}: expected one Node(...) action"
    spread = {getattr(keyword.value.func, "id", None): keyword.value for keyword in node_calls[0].keywords
              if keyword.arg is None and isinstance(keyword.value, ast.Call)}
    policy = spread.get("exit_policy_arguments")
    assert policy is not None and isinstance(policy.args[0], ast.Name) and policy.args[0].id == "entry", \
        f"{path}: Node(...) does not take **exit_policy_arguments(entry)"
    assert "shutdown_policy_arguments" in spread, f"{path}: Node(...) does not take **shutdown_policy_arguments()"
    named = {keyword.arg for keyword in node_calls[0].keywords if keyword.arg}
    assert not named & {"on_exit", "respawn", "sigterm_timeout", "sigkill_timeout"}


def test_the_scene_is_checked_before_any_node_is_created():
    """launch_graph.stack_actions resolves the scene (raising for a missing one) before its first Node."""
    path = ROOT / "src" / "parapush" / "programs" / "launch_graph.py"
    function = next(node for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.FunctionDef) and node.name == "stack_actions")
    calls = [node for node in ast.walk(function) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
    lines = {call.func.id: call.lineno for call in reversed(calls)}
    assert lines["resolve_scene_path"] < lines["Node"]
