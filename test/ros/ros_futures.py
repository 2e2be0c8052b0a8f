"""Waiting on rclpy futures from a test thread (not a test module): the demo's wait, failing the test."""

from __future__ import annotations

from parapush.programs.demo_faults import wait_for_future


def wait_future(future, timeout: float = 10.0):
    """The result of an rclpy future completed by the spinning executor, within ``timeout`` s
    (else an AssertionError: the test fails rather than errors)."""
    return wait_for_future(future, timeout, "the future", error=AssertionError)
