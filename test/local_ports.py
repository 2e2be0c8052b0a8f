"""Free ports on the loopback interface for tests that start servers (simulated devices, NatNet)."""

from __future__ import annotations

import os
import random
import socket

from parapush.stack_network import device_port_candidates, ephemeral_ports, first_free_port, port_is_held

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


def free_port_range(count: int, kind: int = socket.SOCK_STREAM) -> int:
    """The first of ``count`` consecutive ports that no socket of this machine holds now, for a server
    that binds many (Ray's worker ports): in the kernel's ephemeral range, where none of the ports
    :func:`free_port` hands out lie (a range among those candidates met the other ports handed out
    to the same Ray node, 8 per 250, and Ray refused to start), and where no range was handed out before."""
    ephemeral = ephemeral_ports()
    starts = list(range(ephemeral.start, ephemeral.stop - count + 1, count))
    _ORDER.shuffle(starts)
    for start in starts:
        ports = range(start, start + count)
        if any(port in _HANDED_OUT for port in ports) or any(port_is_held(port, kind) for port in ports):
            continue
        _HANDED_OUT.update(ports)
        return start
    raise AssertionError(f"no {count} consecutive free ports in the ephemeral range {ephemeral}")
