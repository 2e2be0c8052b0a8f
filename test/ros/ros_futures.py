"""Waiting on rclpy futures from a test thread (not a test module)."""

from __future__ import annotations

import time


def wait_future(future, timeout: float = 10.0):
    """The result of an rclpy future completed by the spinning executor, within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not future.done():
        assert time.monotonic() < deadline, f"no answer within {timeout} s"
        time.sleep(0.005)
    return future.result()
