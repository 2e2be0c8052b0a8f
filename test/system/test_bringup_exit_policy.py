"""The bringup as a ROS user runs it (issue 31), with real nodes: ``python -m parapush.programs.bringup``.

The same exit and shutdown policy as ``ros2 launch`` of the launch files (checked statically in
test_graph_static.py), tested here through the bringup, which builds the same graph:

- Ctrl-C: every node exits 0, without a traceback, the executor releases the gripper while the
  simulated driver is up; the bringup exits 0. The stack joined the exported ROS_DOMAIN_ID.
- every node SIGINTed at once (what ``ros2 launch`` does): the simulated driver keeps its devices
  up until the executor has released the gripper; every node exits 0, without a traceback.
- a node killed: the bringup stops the stack and exits 1 with a one-line reason.
- a missing scene: refused before any node starts (no log folder).

A three-node graph (simulated driver, state estimator, executor: the devices and their clients),
with the project's parameter files, so the test needs neither the planner nor the prediction service.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from node_exits import unclean_exits
from parapush.graph import load_graph
from parapush.programs.bringup import Bringup
from parapush.stack_network import AUTO_DOMAINS, SimDevicePorts

NODES = ("sim_driver", "state_estimator", "executor")
READY = "ready:"
"""What the executor logs once it holds the tool (the gripper activated and closed on it)."""
START_TIMEOUT = 120.0
"""s for three nodes to start on a loaded 2-core machine (MuJoCo, the gripper's activation)."""
BAD_SIGNS = ("Traceback", "KeyboardInterrupt", "never awaited", "release failed", "Current thread",
             "Connection refused", "Repeating....")
"""Tracebacks, stacks written by a node slow to stop, a failed release, pymodbus's start-up noise."""


@pytest.fixture
def graph_file(tmp_path) -> Path:
    project = load_graph()
    nodes = []
    for name in NODES:
        entry = project.node(name)
        for path in project.parameter_files(entry, "sim"):
            shutil.copy(path, tmp_path / path.name)
        nodes.append({"name": name, "executable": entry.executable, "parameters": list(entry.parameters),
                      "profiles": ["sim"], "on_exit": "shutdown"})
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump({
        "nodes": nodes, "profile_parameters": {"sim": "profile_sim.yaml"},
        "device_addresses": {"state_estimator": ["server_address"], "executor": ["gripper.address"]},
        "loopback_profiles": ["sim"], "shutdown_order": [["executor"], ["state_estimator"], ["sim_driver"]]}))
    return path


def wait_until_ready(log_dir: Path, alive, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    log = log_dir / "executor.log"
    while not (log.is_file() and READY in log.read_text(errors="replace")):
        assert alive(), f"the stack stopped while starting; logs in {log_dir}"
        assert time.monotonic() < deadline, f"executor not ready in {timeout} s; logs in {log_dir}"
        time.sleep(0.2)


def bad_signs(log_dir: Path) -> dict[str, list[str]]:
    """{node: the BAD_SIGNS in its log} for every node whose log has any."""
    found = {}
    for name in NODES:
        text = (log_dir / f"{name}.log").read_text(errors="replace")
        signs = [sign for sign in BAD_SIGNS if sign in text]
        if signs:
            found[name] = signs
    return found


def start_bringup(graph_file: Path, log_dir: Path, *arguments: str, environment: dict[str, str]) -> subprocess.Popen:
    command = [sys.executable, "-m", "parapush.programs.bringup", "--graph", str(graph_file), "--log-dir",
               str(log_dir), *arguments]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **environment})


def finish(process: subprocess.Popen, timeout: float = 60.0) -> str:
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"the bringup did not exit in {timeout} s:\n{output}")
    return output


def fail_with_output(process: subprocess.Popen, error: BaseException) -> None:
    """Stop the bringup and fail with ``error`` and what the bringup printed."""
    process.kill()
    output, _ = process.communicate()
    pytest.fail(f"{error}\nbringup output:\n{output}")


def node_pid(log_dir: Path, name: str) -> int:
    """The process id of the node ``name`` of the bringup writing to ``log_dir`` (its command line)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"__node:={name}".encode() in words and any(str(log_dir.parent).encode() in word for word in words):
            return int(entry.name)
    raise AssertionError(f"no process of node {name}")


@pytest.mark.slow
def test_ctrl_c_stops_every_node_cleanly_on_the_exported_domain(graph_file, tmp_path):
    log_dir = tmp_path / "logs"
    domain = str(int(os.environ["ROS_DOMAIN_ID"]) % 100 + 130)  # the suite's range: no other stack's
    process = start_bringup(graph_file, log_dir, environment={"ROS_DOMAIN_ID": domain,
                                                              "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"})
    try:
        wait_until_ready(log_dir, lambda: process.poll() is None)
    except AssertionError as error:
        fail_with_output(process, error)
    process.send_signal(signal.SIGINT)  # Ctrl-C: the terminal signals the bringup's group, not the nodes'
    output = finish(process)
    assert process.returncode == 0, output
    assert f"ROS domain {domain}, discovery range LOCALHOST" in output, output
    assert "export ROS_DOMAIN_ID" not in output, "the user's terminal is on the stack's network already"
    assert "stopped: {'sim_driver': 0, 'state_estimator': 0, 'executor': 0}" in output, output
    assert "gripper released" in (log_dir / "executor.log").read_text(), f"no release; logs in {log_dir}"
    assert not bad_signs(log_dir), f"{bad_signs(log_dir)}; logs in {log_dir}"


@pytest.mark.slow
def test_every_node_stopped_at_once_still_releases_the_gripper(graph_file, tmp_path):
    """What ``ros2 launch`` does at a Ctrl-C: SIGINT to every node at the same moment."""
    log_dir = tmp_path / "logs"
    bringup = Bringup("sim", "clutter_fig1.yaml", SimDevicePorts.free().overrides(), log_dir, load_graph(graph_file),
                      environment={"ROS_DOMAIN_ID": str(int(os.environ["ROS_DOMAIN_ID"]) % 100 + 130)})
    bringup.start()
    try:
        wait_until_ready(log_dir, lambda: not bringup.failed())
        for node in bringup.nodes:
            node.process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 30.0
        while any(node.process.poll() is None for node in bringup.nodes):
            assert time.monotonic() < deadline, f"nodes still running 30 s after SIGINT; logs in {log_dir}"
            time.sleep(0.1)
    finally:
        codes = bringup.stop(timeout=10.0)
    assert not (unclean := unclean_exits(codes, log_dir)), unclean
    assert "gripper released" in (log_dir / "executor.log").read_text(), f"no release; logs in {log_dir}"
    assert "devices kept up" in (log_dir / "sim_driver.log").read_text(), f"no grace; logs in {log_dir}"
    assert not bad_signs(log_dir), f"{bad_signs(log_dir)}; logs in {log_dir}"


@pytest.mark.slow
def test_a_killed_node_ends_the_bringup_with_a_non_zero_exit_and_its_reason(graph_file, tmp_path):
    log_dir = tmp_path / "logs"
    process = start_bringup(graph_file, log_dir, "--domain", "isolated", environment={})
    try:
        wait_until_ready(log_dir, lambda: process.poll() is None)
        os.kill(node_pid(log_dir, "state_estimator"), signal.SIGKILL)
    except AssertionError as error:
        fail_with_output(process, error)
    output = finish(process)
    assert process.returncode == 1, output
    failures = [line for line in output.splitlines() if line.startswith("[bringup] failed:")]
    assert failures == ["[bringup] failed: state_estimator exited with code -9 (on_exit: shutdown)"], output
    lines = [line for line in output.splitlines() if line.startswith("[bringup] ROS domain ")]
    assert lines and int(lines[0].split()[3].rstrip(",")) in AUTO_DOMAINS, output  # isolated, as asked
    assert "export ROS_DOMAIN_ID=" in output, output


def test_a_missing_scene_is_refused_before_any_node_starts(graph_file, tmp_path):
    log_dir = tmp_path / "logs"
    process = start_bringup(graph_file, log_dir, "--scene", "no_such_scene.yaml", environment={})
    output = finish(process, timeout=60.0)
    assert process.returncode == 2, output
    assert "scene_file: 'no_such_scene.yaml' is not a file in " in output, output
    assert not log_dir.exists(), "a node was started"
