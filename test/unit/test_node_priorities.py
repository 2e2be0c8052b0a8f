"""Process priorities of the node graph (config/graph.yaml's per-node ``nice``): validated, applied by
the bringup to the child before exec (stand-in children, no ROS), and declared the same way to the
launch files (``priority_arguments``, read by the one ``Node(...)`` of launch_graph.py)."""

from __future__ import annotations

import ast
import os
import sys
import time
from pathlib import Path

import pytest
import yaml

from parapush.graph import MAX_NICE, GraphError, NodeEntry, load_graph
from parapush.programs.bringup import Bringup, child_setup
from parapush.programs.launch_graph import priority_arguments

ROOT = Path(__file__).resolve().parents[2]
GRAPH = load_graph(ROOT / "config" / "graph.yaml")
SAFETY_NODES = ("state_estimator", "executor")
PLANNING_NODES = ("mpc", "prediction_service")


def entry(**changes) -> NodeEntry:
    fields = {"name": "worker", "executable": "worker", "parameters": "p.yaml", "profiles": ["sim"],
              "on_exit": "shutdown"}
    return NodeEntry(**{**fields, **changes})


def test_nice_defaults_to_the_default_priority():
    assert entry().nice == 0


@pytest.mark.parametrize("nice", [-1, MAX_NICE + 1, 2.5, "5", True, None])
def test_invalid_nice_is_refused_naming_the_node_and_field(nice):
    with pytest.raises(GraphError, match=r"nodes\['worker'\]\.nice"):
        entry(nice=nice)


@pytest.mark.parametrize("nice", [-3, 20, 1.0])
def test_child_setup_refuses_an_invalid_nice(nice):
    with pytest.raises(ValueError, match="nice"):
        child_setup(nice)


def test_the_project_graph_runs_safety_nodes_at_the_default_priority_and_planning_lower():
    for name in SAFETY_NODES:
        assert GRAPH.node(name).nice == 0, name
    for name in PLANNING_NODES:
        assert GRAPH.node(name).nice > 0, name


def test_an_unknown_priority_field_in_the_file_names_it(tmp_path):
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump({
        "nodes": [{"name": "a", "executable": "a", "parameters": "p.yaml", "profiles": ["sim"],
                   "on_exit": "shutdown", "nice": 25}],
        "shutdown_order": [["a"]]}))
    with pytest.raises(GraphError, match=r"nodes\['a'\]\.nice"):
        load_graph(path)


class PriorityProbe(Bringup):
    """A bringup whose nodes print their own niceness (and a thread's) to their log and exit."""

    def command(self, entry):
        probe = ("import os, threading; seen = []; t = threading.Thread(target=lambda: seen.append("
                 "os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))); t.start(); t.join(); "
                 "print(os.getpriority(os.PRIO_PROCESS, 0), seen[0], flush=True)")
        return [sys.executable, "-c", probe]


def test_the_bringup_starts_each_child_at_its_configured_priority(tmp_path):
    nodes = [
        {"name": "guard", "executable": "guard", "parameters": "p.yaml", "profiles": ["sim"], "on_exit": "shutdown"},
        {"name": "planner", "executable": "planner", "parameters": "p.yaml", "profiles": ["sim"],
         "on_exit": "shutdown", "nice": 7},
    ]
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump({"nodes": nodes, "shutdown_order": [["guard", "planner"]]}))
    bringup = PriorityProbe("sim", graph=load_graph(path), log_dir=tmp_path / "logs")
    base = os.getpriority(os.PRIO_PROCESS, 0)
    lowered = min(base + 7, MAX_NICE)  # the kernel caps niceness at 19
    for node in bringup.graph.nodes:
        process = bringup._spawn(node, tmp_path / f"{node.name}.log", append=False)
        assert process.wait(timeout=30) == 0
    deadline = time.monotonic() + 5.0
    while not all((tmp_path / f"{name}.log").read_text().strip() for name in ("guard", "planner")):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert (tmp_path / "guard.log").read_text().split() == [str(base), str(base)]
    # the process and a thread it starts (a fine worker, an executor thread) both run 7 lower
    assert (tmp_path / "planner.log").read_text().split() == [str(lowered), str(lowered)]
    # this process is untouched
    assert os.getpriority(os.PRIO_PROCESS, 0) == base


@pytest.mark.parametrize("node", GRAPH.nodes, ids=lambda node: node.name)
def test_the_launch_files_apply_the_same_priority_as_the_bringup(node):
    arguments = priority_arguments(node)
    if node.nice == 0:
        assert arguments == {}
    else:
        assert arguments == {"prefix": f"nice -n {node.nice}"}


def test_the_launch_nodes_take_their_priority_from_the_graph():
    """The one generated launch_ros Node action gets priority_arguments(entry) as keyword arguments,
    and both launch files generate from that function."""
    path = ROOT / "src" / "parapush" / "programs" / "launch_graph.py"
    tree = ast.parse(path.read_text())
    node_calls = [call for call in ast.walk(tree)
                  if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "Node"]
    assert len(node_calls) == 1, f"{path}: expected one Node(...) action"
    spread = [keyword.value for keyword in node_calls[0].keywords if keyword.arg is None]
    assert any(isinstance(value, ast.Call) and getattr(value.func, "id", None) == "priority_arguments"
               and isinstance(value.args[0], ast.Name) and value.args[0].id == "entry" for value in spread), \
        f"{path}: Node(...) does not take **priority_arguments(entry)"
    assert not any(keyword.arg == "prefix" for keyword in node_calls[0].keywords), "a second prefix"
    for launch_file in sorted((ROOT / "launch").glob("*.launch.py")):
        assert "generate_graph_launch_description" in launch_file.read_text(), launch_file
