"""The tests' free ports (test/local_ports.py): single ports and ranges never overlap, and are free."""

from __future__ import annotations

import socket

from local_ports import free_port, free_port_range
from parapush.stack_network import port_is_held


def test_a_port_range_is_free_and_holds_none_of_the_ports_handed_out():
    singles = {free_port(socket.SOCK_STREAM) for _ in range(8)}  # a Ray node's other ports
    first = range(start := free_port_range(51), start + 51)
    second = range(start := free_port_range(51), start + 51)
    assert len(singles) == 8
    assert not singles & set(first) and not singles & set(second) and not set(first) & set(second)
    assert not any(port_is_held(port, socket.SOCK_STREAM) for port in [*first, *second])
