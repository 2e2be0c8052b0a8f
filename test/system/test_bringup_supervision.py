"""The bringup's exit policy with real nodes: a respawnable node killed with SIGKILL comes back
and answers again; a node with ``on_exit: shutdown`` that dies stops the whole stack.

A two-node graph (the identification node, respawn; the state estimator, shutdown) with the
project's parameter files, so the test needs neither the simulated devices nor the planner.
"""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest
import rclpy
import yaml
from parareal_pushing.srv import IdentifyObject
from rclpy.context import Context

from local_ports import free_port
from parapush.graph import load_graph
from parapush.programs.bringup import Bringup


@pytest.fixture
def graph(tmp_path):
    project = load_graph()
    nodes = []
    for name, policy in (("identification", {"on_exit": "respawn", "respawn_delay": 0.5, "max_restarts": 1}),
                         ("state_estimator", {"on_exit": "shutdown"})):
        entry = project.node(name)
        for path in project.parameters_paths(entry):
            shutil.copy(path, tmp_path / path.name)
        nodes.append({"name": name, "executable": entry.executable, "parameters": list(entry.parameters),
                      "profiles": ["sim"], **policy})
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump({"nodes": nodes, "shutdown_order": [["state_estimator"], ["identification"]]}))
    return load_graph(path)


@pytest.fixture
def ros(tmp_path):
    domain = int(os.environ["ROS_DOMAIN_ID"]) % 100 + 130
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node("supervision_test", context=context)
    yield domain, node
    node.destroy_node()
    rclpy.shutdown(context=context)


def identification_answers(node, timeout: float) -> bool:
    """An (empty, so invalid) IdentifyObject request gets an answer within ``timeout``.

    Asked again every 2 s: a request sent while discovery still lists the killed server is lost.
    """
    client = node.create_client(IdentifyObject, "/identify_object")
    executor = rclpy.executors.SingleThreadedExecutor(context=node.context)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not client.wait_for_service(timeout_sec=0.2):
                continue
            future = client.call_async(IdentifyObject.Request())
            rclpy.spin_until_future_complete(node, future, timeout_sec=2.0, executor=executor)
            if future.done():
                return not future.result().success and bool(future.result().message)
            client.remove_pending_request(future)
        return False
    finally:
        executor.shutdown()
        node.destroy_client(client)


def test_killed_respawnable_node_comes_back_and_a_dead_guard_stops_the_stack(graph, ros, tmp_path):
    domain, node = ros
    overrides = {"state_estimator": {"command_port": free_port()}, "identification": {"workers": 1}}
    bringup = Bringup("sim", "clutter_fig1.yaml", overrides, tmp_path / "logs", graph,
                      environment={"ROS_DOMAIN_ID": str(domain)}, stop_timeout=15.0)
    bringup.start()
    try:
        assert identification_answers(node, 60.0), f"identification not up; logs in {tmp_path / 'logs'}"
        identification = next(running for running in bringup.nodes if running.entry.name == "identification")
        first = identification.process.pid
        killed = time.monotonic()
        os.kill(first, signal.SIGKILL)
        assert identification_answers(node, 60.0), f"not back after SIGKILL; logs in {tmp_path / 'logs'}"
        print(f"identification killed (SIGKILL) and answering again after {time.monotonic() - killed:.1f} s")
        assert identification.restarts == 1 and identification.process.pid != first
        assert bringup.stop_reason is None and not bringup.failed()

        estimator = next(running for running in bringup.nodes if running.entry.name == "state_estimator")
        os.kill(estimator.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(running.process.poll() is None for running in bringup.nodes):
            assert time.monotonic() < deadline, f"stack not stopped; events {bringup.events}"
            time.sleep(0.1)
        assert bringup.stop_reason.startswith("state_estimator exited with code -9"), bringup.stop_reason
        assert identification.process.returncode in (0, -signal.SIGINT), "identification not stopped cleanly"
        assert identification.restarts == 1, "a node stopped by the policy must not be respawned"
    finally:
        bringup.stop(timeout=10)
