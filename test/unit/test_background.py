"""Stopping background threads, opening UDP sockets and reading socket addresses (parapush.background)."""

from __future__ import annotations

import socket
import threading

import pytest

from parapush.background import bound_address, close_sockets, new_udp_socket, stop_thread


def test_stop_thread_sets_the_event_and_joins():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    stop_thread(thread, stop, 2.0, "the waiter")
    assert stop.is_set() and not thread.is_alive()
    stop_thread(None, threading.Event(), 2.0, "nothing")  # no thread: no-op


def test_stop_thread_names_a_thread_that_does_not_stop():
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)  # ignores the stop event
    thread.start()
    try:
        with pytest.raises(RuntimeError, match=r"^the stubborn thread did not stop within 0.05 s$"):
            stop_thread(thread, threading.Event(), 0.05, "the stubborn thread")
    finally:
        release.set()
        thread.join(2.0)


def test_bound_address_reports_the_real_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        host, port = bound_address(sock, "the server")
        assert host == "127.0.0.1" and port == sock.getsockname()[1] and port > 0
    with pytest.raises(RuntimeError, match=r"^the server is not started$"):
        bound_address(None, "the server")


def test_close_sockets_skips_none():
    first = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    second = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    close_sockets(first, None, second)
    assert first.fileno() == -1 and second.fileno() == -1


def test_new_udp_socket_stays_open_after_its_set_up():
    with new_udp_socket() as sock:
        sock.bind(("127.0.0.1", 0))
    try:
        assert sock.type == socket.SOCK_DGRAM and sock.family == socket.AF_INET
        assert sock.fileno() >= 0 and bound_address(sock, "the socket")[1] > 0
    finally:
        sock.close()


def test_new_udp_socket_is_closed_when_its_set_up_fails():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        with pytest.raises(OSError), new_udp_socket() as sock:
            sock.bind(taken.getsockname())  # the port is in use
    assert sock.fileno() == -1


def test_new_udp_socket_leaves_other_errors_to_the_caller():
    with pytest.raises(KeyError), new_udp_socket() as sock:
        raise KeyError("not a socket error")
    try:
        assert sock.fileno() >= 0
    finally:
        sock.close()
