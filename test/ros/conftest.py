"""Fixtures for tests of real rclpy nodes over Fast DDS on loopback.

When ``PARAPUSH_REQUIRE_ROS=1`` (set by ``scripts/run test``) a missing rclpy or missing
interfaces fail the run instead of skipping it.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator

import pytest

try:
    import parareal_pushing.msg  # noqa: F401  (the interfaces are built)
    import rclpy
    from rclpy.context import Context

    from parapush.nodes.node_main import make_executor, spin_wake_guard, stop_spinning
except ImportError as error:  # pragma: no cover - depends on the machine
    if os.environ.get("PARAPUSH_REQUIRE_ROS") == "1":
        raise
    pytest.skip(f"ROS 2 not available: {error}", allow_module_level=True)


class SpinningExecutor:
    """Spins each added node on its own executor and thread, as ``run_node`` would run it
    (:func:`parapush.nodes.node_main.make_executor`); at shutdown, stops every spin as ``run_node``
    does (:func:`parapush.nodes.node_main.stop_spinning`), then destroys the nodes."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self._running: list[tuple[object, threading.Thread, object]] = []
        self._nodes: list[object] = []

    def add(self, *nodes):
        for node in nodes:
            wake = spin_wake_guard(node)
            executor = make_executor(node, context=self.context)
            executor.add_node(node)
            thread = threading.Thread(target=executor.spin, name=f"spin-{node.get_name()}", daemon=True)
            thread.start()
            self._running.append((executor, thread, wake))
            self._nodes.append(node)
        return nodes[0] if len(nodes) == 1 else nodes

    def shutdown(self) -> None:
        stuck = [thread.name for executor, thread, wake in self._running if not stop_spinning(executor, thread, wake)]
        assert not stuck, f"still spinning after their executors' shutdown: {stuck}"
        for node in reversed(self._nodes):
            node.destroy_node()
        self._nodes.clear()


@pytest.fixture
def ros_context() -> Iterator[Context]:
    """A context of its own per test. Its nodes (hence its DDS participant) are destroyed at the
    end of the test, not whenever the garbage collector gets to them: Fast DDS 3.2 can livelock
    destroying a participant while another participant of the process is being discovered (a
    node that failed in its constructor, collected during the next test, hung a run)."""
    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
    try:
        yield context
    finally:
        gc.collect()  # the nodes the spinning fixture did not hold (e.g. one that failed to start)
        rclpy.shutdown(context=context)


@pytest.fixture
def spinning(ros_context) -> Iterator[SpinningExecutor]:
    executor = SpinningExecutor(ros_context)
    try:
        yield executor
    finally:
        executor.shutdown()
