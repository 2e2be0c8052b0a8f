"""The bringup refuses a domain where nodes of this graph already run (another stack on the robot's
domain), unless told to join them (issue 21). The domains are reserved by the test itself
(parapush.stack_network.reserve_domain), so parallel runs do not meet."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest
import yaml

from parapush.programs.bringup import StackConflictError, isolated_bringup, main
from parapush.stack_network import StackNetwork, reserve_domain

FOREIGN_NODE = """
import sys, rclpy
rclpy.init()
node = rclpy.create_node(sys.argv[1])
print("up", flush=True)
try:
    rclpy.spin(node)
except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
    pass
"""


@pytest.fixture
def domains():
    with contextlib.ExitStack() as leases:
        first = leases.enter_context(reserve_domain())
        second = leases.enter_context(reserve_domain())
        yield first.domain, second.domain


@contextlib.contextmanager
def foreign_node(name: str, network: StackNetwork):
    """A node called ``name`` in another process on ``network`` (another stack's, or a tool's)."""
    process = subprocess.Popen([sys.executable, "-c", FOREIGN_NODE, name], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, **network.environment()})
    try:
        assert process.stdout.readline().strip() == "up"
        yield
    finally:
        process.kill()  # a stand-in: no clean shutdown to wait for
        process.wait(timeout=10)


def robot_network_file(tmp_path, domain: int):
    path = tmp_path / "network.yaml"
    path.write_text(yaml.safe_dump({"real": {"domain": domain, "discovery_range": "LOCALHOST"}}))
    return path


def robot_bringup(tmp_path, domain: int, **options):
    """The real profile's isolated bringup with the robot's network on ``domain`` (loopback allowed)."""
    return isolated_bringup("real", network_file=robot_network_file(tmp_path, domain), allow_loopback=True, **options)


def test_robot_bringup_refuses_a_domain_where_this_graphs_nodes_run_unless_joining(tmp_path, domains):
    taken, free = domains
    with foreign_node("mpc", StackNetwork(taken, "LOCALHOST")):
        with pytest.raises(StackConflictError, match=rf"domain {taken}: another stack runs there \(/mpc .*--join"):
            robot_bringup(tmp_path, taken, discovery_wait=3.0)
        joined = robot_bringup(tmp_path, taken, join=True)
        assert joined.network == StackNetwork(taken, "LOCALHOST")
        assert joined.child_environment()["ROS_DOMAIN_ID"] == str(taken)
        elsewhere = robot_bringup(tmp_path, free, discovery_wait=1.0)
        assert elsewhere.network.domain == free


def test_other_nodes_on_the_domain_do_not_count_as_a_stack(tmp_path, domains):
    domain, _ = domains
    with foreign_node("rviz_of_someone", StackNetwork(domain, "LOCALHOST")):
        bringup = robot_bringup(tmp_path, domain, discovery_wait=2.0)
        assert bringup.network.domain == domain


def test_bringup_command_refuses_with_exit_status_3(domains, capsys):
    domain, _ = domains
    with foreign_node("executor", StackNetwork(domain, "LOCALHOST")):
        assert main(["--profile", "sim", "--domain", str(domain)]) == 3
    assert f"refused: domain {domain}: another stack runs there (/executor" in capsys.readouterr().err
