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
    from rclpy.executors import MultiThreadedExecutor
except ImportError as error:  # pragma: no cover - depends on the machine
    if os.environ.get("PARAPUSH_REQUIRE_ROS") == "1":
        raise
    pytest.skip(f"ROS 2 not available: {error}", allow_module_level=True)


class SpinningExecutor:
    """A MultiThreadedExecutor spinning its nodes in a background thread."""

    def __init__(self, context: Context, threads: int = 4) -> None:
        self.context = context
        self.executor = MultiThreadedExecutor(num_threads=threads, context=context)
        self._thread = threading.Thread(target=self.executor.spin, name="test-executor", daemon=True)
        self._started = False

    def add(self, *nodes):
        for node in nodes:
            self.executor.add_node(node)
        if not self._started:
            self._thread.start()
            self._started = True
        return nodes[0] if len(nodes) == 1 else nodes

    def shutdown(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        if self._started:
            self._thread.join(timeout=5.0)


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
