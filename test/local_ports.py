"""Free ports on the loopback interface for tests that start servers (simulated devices, NatNet)."""

from __future__ import annotations

import socket


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    """A port on 127.0.0.1 of socket type ``kind`` (UDP by default, ``socket.SOCK_STREAM`` for TCP)
    that no socket holds now: the OS picks it; it may be taken again later."""
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
