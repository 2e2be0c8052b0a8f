"""Test-wide settings: every DDS participant of a test run stays in its own domain."""

import os
import socket

import pytest

# scripts/run sets a per-run domain; a bare `pytest` gets one derived from its PID so that
# parallel runs on one machine do not cross-talk.
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))


@pytest.fixture
def free_udp_port() -> int:
    """A UDP port on 127.0.0.1 that no socket holds now (the OS picks it; it may be taken again later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
