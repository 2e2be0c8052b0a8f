"""The ``main()`` shared by every node: init, build, spin on a multi-threaded executor, clean up."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node

from parapush.nodes.parameters import ParameterError

EXIT_BAD_PARAMETER = 2
EXIT_START_FAILED = 3


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None, *, threads: int | None = None) -> int:
    """Run one node until shutdown (Ctrl-C, SIGTERM, or the context shutting down).

    A node that cannot start because of a parameter prints the parameter's name and
    returns ``EXIT_BAD_PARAMETER`` (2); any other start-up failure returns 3.
    """
    rclpy.init(args=list(args) if args is not None else sys.argv)
    node = None
    try:
        try:
            node = factory()
        except ParameterError as error:
            print(f"[FATAL] {error}", file=sys.stderr)
            return EXIT_BAD_PARAMETER
        except Exception as error:  # noqa: BLE001 - report any start-up failure and exit non-zero
            print(f"[FATAL] cannot start: {type(error).__name__}: {error}", file=sys.stderr)
            return EXIT_START_FAILED
        # At least 4 threads whatever the core count: long callbacks (an action goal, a blocking
        # service call) must not starve subscriptions and service answers.
        executor = MultiThreadedExecutor(num_threads=threads or max(4, os.cpu_count() or 1))
        executor.add_node(node)
        try:
            executor.spin()
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            executor.shutdown(timeout_sec=2.0)
        return 0
    finally:
        if node is not None:
            close = getattr(node, "close", None)
            if callable(close):
                close()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
