"""The standard parameter tools against the running sim stack (the bringup, as ``scripts/run
demo`` starts it): list, get and describe parameters on every node with rclpy's parameter
client (the requests ``ros2 param list/get/describe`` and rqt send), then every node still
answers and none has exited or been respawned."""

from __future__ import annotations

import os
import time

import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter_client import AsyncParameterClient

from parapush.graph import load_graph
from parapush.programs.bringup import Bringup
from parapush.stack_network import SimDevicePorts

NODES = [entry.name for entry in load_graph().for_profile("sim")]
# (The prediction service used to overwrite rclpy's Node._parameters: the first get-parameters
# request killed it, issue 17.)


class StackClient:
    """A node of the test's own spinning on its own executor, with a parameter client per node."""

    def __init__(self, domain: int) -> None:
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node("parameter_tools_test", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.clients = {name: AsyncParameterClient(self.node, name) for name in NODES}

    def wait(self, future, timeout: float):
        self.executor.spin_until_future_complete(future, timeout_sec=timeout)
        assert future.done(), f"no answer within {timeout} s"
        return future.result()

    def first_answer(self, name: str, timeout: float) -> float | None:
        """Seconds until the node first answers a list-parameters request (None: not within
        ``timeout``), re-sending it every few seconds.

        Discovered services are not enough: a node's parameter services exist from its first
        line, before the node has finished starting (the prediction service builds its models)
        and spins; and a reply sent before the server has matched this client's reply reader
        is dropped by Fast DDS after 100 ms (rmw_fastrtps), so a first request can go
        unanswered. Once one is answered, both sides are up and matched."""
        start = time.monotonic()
        deadline = start + timeout
        while time.monotonic() < deadline:
            if not self.clients[name].services_are_ready():
                self.executor.spin_once(timeout_sec=0.1)
                continue
            future = self.clients[name].list_parameters()
            wait = min(3.0, max(0.1, deadline - time.monotonic()))
            self.executor.spin_until_future_complete(future, timeout_sec=wait)
            if future.done():
                return time.monotonic() - start
            future.cancel()  # a late answer to it is ignored; the next request is a new one
        return None

    def close(self) -> None:
        self.node.destroy_node()
        self.executor.shutdown()
        rclpy.shutdown(context=self.context)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    logs = tmp_path_factory.mktemp("stack") / "logs"
    domain = int(os.environ["ROS_DOMAIN_ID"]) % 100 + 130
    overrides = SimDevicePorts.free().overrides()  # the simulated devices on free ports, and their clients
    overrides["sim_driver"]["seed"] = 3
    bringup = Bringup("sim", "clutter_fig1.yaml", overrides, logs, environment={"ROS_DOMAIN_ID": str(domain)})
    bringup.start()
    client = StackClient(domain)
    try:
        deadline = time.monotonic() + 120
        for name in NODES:
            seconds = client.first_answer(name, max(1.0, deadline - time.monotonic()))
            assert seconds is not None, f"{name}: no parameter answer; failed {bringup.failed()}; logs in {logs}"
            print(f"{name}: first parameter answer after {seconds:.1f} s")
        yield bringup, client, logs
    finally:
        client.close()
        codes = bringup.stop(timeout=15)
        print(f"stack stopped: {codes}; events {bringup.events}")


def running(bringup: Bringup, name: str):
    return next(node for node in bringup.nodes if node.entry.name == name)


@pytest.mark.parametrize("name", NODES)
def test_list_get_describe_parameters(stack, name):
    bringup, client, logs = stack
    parameters = client.clients[name]
    listed = client.wait(parameters.list_parameters(), 10.0).result.names
    assert "use_sim_time" in listed and len(listed) > 1, f"{name}: listed {listed}"
    values = client.wait(parameters.get_parameters(listed), 10.0).values
    assert len(values) == len(listed) and all(value.type != 0 for value in values), f"{name}: unset values"
    descriptors = client.wait(parameters.describe_parameters(listed), 10.0).descriptors
    assert [descriptor.name for descriptor in descriptors] == listed
    print(f"{name}: {len(listed)} parameters listed, read and described")


@pytest.mark.parametrize("name", NODES)
def test_node_still_answers_after_the_requests(stack, name):
    bringup, client, logs = stack
    time.sleep(0.5)  # a node killed by a request has exited by now
    node = running(bringup, name)
    assert node.process.poll() is None and node.restarts == 0, \
        f"{name} exited ({node.process.returncode}) or was respawned ({node.restarts}); logs in {logs}"
    listed = client.wait(client.clients[name].list_parameters(), 10.0).result.names
    assert "use_sim_time" in listed
