"""The bringup's exit policy and shutdown order (config/graph.yaml's on_exit, shutdown_order),
with stand-in processes (shell loops) instead of nodes: no ROS involved."""

from __future__ import annotations

import os
import signal
import time

import pytest
import yaml

from parapush.graph import load_graph
from parapush.programs.bringup import Bringup

# Logs "<name> ready" once its trap is set; on SIGINT: logs "<name> stop", takes 0.3 s (a node's
# close()), logs "<name> exited" and exits 0.
STAND_IN = ('trap \'echo "$0 stop" >> "$1"; sleep 0.3; echo "$0 exited" >> "$1"; exit 0\' INT; '
            'echo "$0 ready" >> "$1"; while :; do sleep 0.02; done')


class StandInBringup(Bringup):
    """A bringup whose nodes are shell loops that log their shutdown to ``journal``."""

    journal = None

    def command(self, entry):
        return ["bash", "-c", STAND_IN, entry.name, str(self.journal)]


def make_bringup(tmp_path, *, respawn_delay=0.2, max_restarts=2) -> StandInBringup:
    nodes = [
        {"name": "driver", "executable": "driver", "parameters": "p.yaml", "profiles": ["sim"], "on_exit": "shutdown"},
        {"name": "worker", "executable": "worker", "parameters": "p.yaml", "profiles": ["sim"], "on_exit": "respawn",
         "respawn_delay": respawn_delay, "max_restarts": max_restarts},
        {"name": "guard", "executable": "guard", "parameters": "p.yaml", "profiles": ["sim"], "on_exit": "shutdown"},
    ]
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump({"nodes": nodes, "shutdown_order": [["guard"], ["worker"], ["driver"]]}))
    bringup = StandInBringup("sim", graph=load_graph(path), supervise_period=0.02, stop_timeout=5.0)
    bringup.journal = tmp_path / "journal.txt"
    bringup.journal.touch()
    return bringup


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def shutdown_journal(bringup) -> list[str]:
    """The stand-ins' stop and exit lines, in order."""
    return [line for line in bringup.journal.read_text().split("\n") if line and not line.endswith(" ready")]


def wait_until_ready(bringup, count: int) -> None:
    wait_for(lambda: bringup.journal.read_text().count(" ready\n") >= count)


def node(bringup, name):
    return next(node for node in bringup.nodes if node.entry.name == name)


@pytest.fixture
def bringup(tmp_path):
    bringup = make_bringup(tmp_path)
    yield bringup
    bringup.stop(timeout=2.0)


def test_respawnable_node_is_restarted_after_its_delay(bringup):
    bringup.start()
    worker = node(bringup, "worker")
    first = worker.process.pid
    killed_at = time.monotonic()
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: worker.restarts == 1)
    assert time.monotonic() - killed_at >= worker.entry.respawn_delay
    assert worker.process.pid != first and worker.process.poll() is None
    assert bringup.stop_reason is None and not bringup.failed()
    assert all(node.process.poll() is None for node in bringup.nodes)


def test_exit_after_the_last_restart_stops_the_stack(bringup):
    bringup.start()
    wait_until_ready(bringup, 3)
    worker = node(bringup, "worker")
    for restart in range(1, worker.entry.max_restarts + 1):
        os.kill(worker.process.pid, signal.SIGKILL)
        wait_for(lambda restart=restart: worker.restarts == restart)
    os.kill(worker.process.pid, signal.SIGKILL)
    wait_for(lambda: bringup.stop_reason is not None)
    assert "worker" in bringup.stop_reason and "max_restarts" in bringup.stop_reason
    wait_for(lambda: all(node.process.poll() is not None for node in bringup.nodes))
    assert node(bringup, "guard").process.returncode == 0 and node(bringup, "driver").process.returncode == 0
    assert ("worker", -signal.SIGKILL) in bringup.failed()


def test_shutdown_node_exit_stops_the_stack_in_order(bringup):
    bringup.start()
    wait_until_ready(bringup, 3)
    os.kill(node(bringup, "driver").process.pid, signal.SIGKILL)
    wait_for(lambda: bringup.stop_reason is not None)
    assert bringup.stop_reason.startswith("driver exited with code -9")
    wait_for(lambda: all(node.process.poll() is not None for node in bringup.nodes))
    assert node(bringup, "worker").restarts == 0  # stopped, not respawned
    assert shutdown_journal(bringup) == ["guard stop", "guard exited", "worker stop", "worker exited"]


def test_stop_goes_stage_by_stage(bringup):
    bringup.start()
    wait_until_ready(bringup, 3)
    codes = bringup.stop(timeout=5.0)
    assert codes == {"driver": 0, "worker": 0, "guard": 0}
    assert shutdown_journal(bringup) == ["guard stop", "guard exited", "worker stop", "worker exited",
                                         "driver stop", "driver exited"]
    assert bringup.stop_reason is None


def test_a_respawned_node_is_stopped_in_its_stage(bringup):
    bringup.start()
    worker = node(bringup, "worker")
    os.kill(worker.process.pid, signal.SIGKILL)
    wait_for(lambda: worker.restarts == 1)
    wait_until_ready(bringup, 4)
    assert bringup.stop(timeout=5.0) == {"driver": 0, "worker": 0, "guard": 0}
    assert shutdown_journal(bringup) == ["guard stop", "guard exited", "worker stop", "worker exited",
                                         "driver stop", "driver exited"]


def test_robot_bringup_refuses_the_simulators_mocap_address_unless_allowed():
    with pytest.raises(ValueError, match=r"state_estimator\.server_address is '127\.0\.0\.1' in profile 'real'"):
        Bringup("real")
    Bringup("real", allow_loopback=True)
    Bringup("real", overrides={"state_estimator": {"server_address": "192.168.1.10"}})
