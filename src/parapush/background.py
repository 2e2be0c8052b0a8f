"""Background threads and sockets of the device endpoints (NatNet client, simulated devices).

Stopping a worker thread (set its stop event, join, fail loudly if it hangs), opening a UDP
socket that is closed again when setting it up fails, reading the address a socket is bound to
and closing sockets, written once for every endpoint that owns a thread or a socket.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["bound_address", "close_sockets", "new_udp_socket", "stop_thread"]


def stop_thread(thread: threading.Thread | None, stop: threading.Event, timeout_s: float, what: str) -> None:
    """Set ``stop`` and join ``thread`` (no-op when None).

    Raises:
        RuntimeError: naming ``what`` when the thread is still alive after ``timeout_s`` seconds.
    """
    if thread is None:
        return
    stop.set()
    thread.join(timeout_s)
    if thread.is_alive():
        raise RuntimeError(f"{what} did not stop within {timeout_s} s")


@contextmanager
def new_udp_socket() -> Iterator[socket.socket]:
    """A new UDP/IPv4 socket for the ``with`` block to set up (options, bind, membership).

    If the block raises :class:`OSError` the socket is closed and the error propagates; otherwise
    the socket stays open after the block, owned by the caller (see :func:`close_sockets`)::

        with new_udp_socket() as sock:
            sock.bind((host, port))
        self._socket = sock
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    try:
        yield sock
    except OSError:
        sock.close()
        raise


def bound_address(sock: socket.socket | None, owner: str) -> tuple[str, int]:
    """(host, port) ``sock`` is bound to (the real port after binding port 0).

    Raises:
        RuntimeError: ``"<owner> is not started"`` when ``sock`` is None.
    """
    if sock is None:
        raise RuntimeError(f"{owner} is not started")
    host, port = sock.getsockname()[:2]
    return host, port


def close_sockets(*sockets: socket.socket | None) -> None:
    """Close each of ``sockets`` that is not None."""
    for sock in sockets:
        if sock is not None:
            sock.close()
