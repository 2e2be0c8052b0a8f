"""Free ports on the loopback interface for tests that start servers (simulated devices, NatNet)."""

from __future__ import annotations

import os
import random
import socket

from parapush.stack_network import device_port_candidates, first_free_port

_ORDER = random.Random(os.getpid())
_HANDED_OUT: set[int] = set()


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    """A port of socket type ``kind`` (UDP by default, ``socket.SOCK_STREAM`` for TCP) that no
    socket of this machine holds now, never the same twice in one test run: one of the simulated
    devices' candidates (``device_port_candidates``: no DDS port, none the kernel hands out by
    itself), so no node's DDS socket takes it before the test's server binds it."""
    candidates = device_port_candidates()
    _ORDER.shuffle(candidates)
    port = first_free_port(candidates, kind, taken=_HANDED_OUT)
    assert port is not None, "every candidate port is held"
    _HANDED_OUT.add(port)
    return port
