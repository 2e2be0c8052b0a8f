"""Fixtures for tests of real rclpy nodes over Fast DDS on loopback.

When ``PARAPUSH_REQUIRE_ROS=1`` (set by ``scripts/run test``) a missing rclpy or missing
interfaces fail the run instead of skipping it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

try:
    import parareal_pushing.msg  # noqa: F401  (the interfaces are built)
    import rclpy
    from rclpy.context import Context

    from parapush.nodes.node_main import make_executor
except ImportError as error:  # pragma: no cover - depends on the machine
    if os.environ.get("PARAPUSH_REQUIRE_ROS") == "1":
        raise
    pytest.skip(f"ROS 2 not available: {error}", allow_module_level=True)


class SpinningExecutor:
    """Spins each added node on its own executor and thread, as ``run_node`` would run it
    (:func:`parapush.nodes.node_main.make_executor`)."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self._running: list[tuple[object, threading.Thread]] = []

    def add(self, *nodes):
        for node in nodes:
            executor = make_executor(node, context=self.context)
            executor.add_node(node)
            thread = threading.Thread(target=executor.spin, name=f"spin-{node.get_name()}", daemon=True)
            thread.start()
            self._running.append((executor, thread))
        return nodes[0] if len(nodes) == 1 else nodes

    def shutdown(self) -> None:
        for executor, _ in self._running:
            executor.shutdown(timeout_sec=5.0)
        for _, thread in self._running:
            thread.join(timeout=5.0)


@pytest.fixture
def ros_context() -> Iterator[Context]:
    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
    try:
        yield context
    finally:
        rclpy.shutdown(context=context)


@pytest.fixture
def spinning(ros_context) -> Iterator[SpinningExecutor]:
    executor = SpinningExecutor(ros_context)
    try:
        yield executor
    finally:
        executor.shutdown()
