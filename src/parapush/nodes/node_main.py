"""The ``main()`` shared by every node: init, build, spin on a multi-threaded executor, clean up.

Ctrl-C (SIGINT) and SIGTERM are handled here rather than by rclpy, so that the node's
``close()`` runs while the context is still valid: the executor's last zero twist, the MPC
stopping a running goal and the gripper release are still published before shutdown. A node
stopped by SIGINT or SIGTERM exits 0, without a traceback, however many SIGINTs come
(``ros2 launch`` sends its own after the terminal's).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.exceptions import InvalidHandle
from rclpy.executors import Executor, ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.guard_condition import GuardCondition
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from parapush.nodes.parameters import ParameterError
from parapush.stop_signals import StopSignals

EXIT_BAD_PARAMETER = 2
EXIT_START_FAILED = 3
EXIT_SPIN_FAILED = 4
SHUTDOWN_REPORT_AFTER = 5.0
"""s: a node still shutting down this long after its stop began writes every thread's stack to
stderr (its log). The bringup sends SIGTERM 10 s after SIGINT and SIGKILL 3 s later, which leaves
no trace of where a node hung."""
SPIN_EXIT_TIMEOUT = 5.0
"""s a node waits for its executor's thread to leave ``spin()`` before destroying the node."""


def make_executor(node: Node, *, threads: int | None = None, context=None) -> Executor:
    """The executor a node runs on.

    Single-threaded, unless the node blocks inside callbacks (``BLOCKING_CALLBACKS = True``,
    e.g. the MPC's action goal): rclpy's MultiThreadedExecutor re-dispatches a ready timer
    until a worker runs it, and under CPU contention this starved subscriptions for seconds
    (measured: 100 Hz messages with a 1.5 s gap beside a 10 ms timer; none single-threaded).
    Nodes that block get at least 4 threads so a long callback does not starve the others.
    """
    if getattr(node, "BLOCKING_CALLBACKS", False):
        return MultiThreadedExecutor(num_threads=threads or max(4, os.cpu_count() or 1), context=context)
    return SingleThreadedExecutor(context=context)


def _spin(executor: Executor, failures: list[BaseException]) -> None:
    """``executor.spin()``; an exception out of it (a callback's) is printed and kept in ``failures``."""
    try:
        executor.spin()
    except ExternalShutdownException:
        pass
    except BaseException as error:  # noqa: BLE001 - the node must exit non-zero, whatever was raised
        traceback.print_exc()
        failures.append(error)


def spin_wake_guard(node: Node) -> GuardCondition:
    """A guard condition of ``node`` for :func:`stop_spinning`; create it before the spin starts."""
    return node.create_guard_condition(lambda: None, callback_group=ReentrantCallbackGroup())


def stop_spinning(executor: Executor, spinner: threading.Thread | None, wake: GuardCondition, *,
                  timeout: float = SPIN_EXIT_TIMEOUT) -> bool:
    """Shut ``executor`` down and wait until ``spinner``, the thread in its ``spin()``, has left it.

    rclpy's ``Executor.shutdown()`` wakes a spin that is waiting, but not one caught between its
    check for shutdown and its wait (building the wait set, e.g. right after a callback): that
    spin waits without the executor's guard condition, which shutdown has destroyed, on the
    node's own entities alone, so until one of them is ready, and for ever when they stay quiet.
    Seen in a stack's stop: a visualizer whose publishers stopped beside it kept its spin thread
    in the wait past the join, and its node and context were destroyed under it. ``wake``
    (:func:`spin_wake_guard`), a guard condition of the node, is in that wait set whatever the
    moment: it is triggered until the thread has left.

    Returns:
        True when ``spinner`` has ended (or is None) within ``timeout`` seconds.
    """
    executor.shutdown(timeout_sec=2.0)
    deadline = time.monotonic() + timeout
    while spinner is not None and spinner.is_alive() and time.monotonic() < deadline:
        try:
            wake.trigger()
        except InvalidHandle:  # the node or its context is gone already, and its entities with it
            spinner.join(max(0.0, deadline - time.monotonic()))
            break
        spinner.join(0.05)
    return spinner is None or not spinner.is_alive()


def _ignore_further_interrupts(stop_signals: StopSignals) -> None:
    """Put back the handlers :class:`StopSignals` replaced, but ignore SIGINT from now on.

    Under ``ros2 launch`` a node gets two SIGINTs at a Ctrl-C (the terminal's, to the whole process
    group, and launch's own): the second one, arriving while the node already stops, must not raise
    ``KeyboardInterrupt`` (a traceback and exit code -2). SIGTERM goes back to its previous handler,
    so that the bringup's SIGTERM still ends a node hung at its exit.
    """
    with contextlib.suppress(KeyboardInterrupt):  # a SIGINT between the restore and the line below
        stop_signals.restore()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None, *, threads: int | None = None) -> int:
    """Run one node until SIGINT, SIGTERM or the context shutting down.

    A node that cannot start because of a parameter prints the parameter's name and
    returns ``EXIT_BAD_PARAMETER`` (2); any other start-up failure returns 3; an exception
    that ends the executor's spin (a callback raised) stops the node and returns
    ``EXIT_SPIN_FAILED`` (4), so launch and the bringup see it died.
    """
    stop_signals = StopSignals().install()  # a handler that takes no lock (parapush.stop_signals says why)
    rclpy.init(args=list(args) if args is not None else sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor = None
    spinner = None
    wake: GuardCondition | None = None
    try:
        try:
            node = factory()
        except ParameterError as error:
            print(f"[FATAL] {error}", file=sys.stderr)
            return EXIT_BAD_PARAMETER
        except Exception as error:  # noqa: BLE001 - report any start-up failure and exit non-zero
            print(f"[FATAL] cannot start: {type(error).__name__}: {error}", file=sys.stderr)
            return EXIT_START_FAILED
        wake = spin_wake_guard(node)
        executor = make_executor(node, threads=threads)
        executor.add_node(node)
        # executor.spin() in its own thread (spin_once in a loop rebuilds the wait set for every
        # callback and cannot keep up with 100+ Hz topics); this thread waits for a signal.
        failures: list[BaseException] = []
        spinner = threading.Thread(target=_spin, args=(executor, failures), name="executor", daemon=True)
        spinner.start()
        while not stop_signals.wait(0.1):
            if not spinner.is_alive() or not rclpy.ok():
                break
        if failures:
            error = failures[0]
            print(f"[FATAL] the executor stopped: {type(error).__name__}: {error}", file=sys.stderr)
            return EXIT_SPIN_FAILED
        return 0
    finally:
        faulthandler.dump_traceback_later(SHUTDOWN_REPORT_AFTER, exit=False)
        if node is not None:
            close = getattr(node, "close", None)
            if callable(close):
                close()  # while the context is valid: last commands still go out
        if executor is not None and wake is not None and not stop_spinning(executor, spinner, wake):
            # out of rclpy before the node and the context go; its stack is written at SHUTDOWN_REPORT_AFTER
            print(f"[WARN] the executor's thread is still in spin() {SPIN_EXIT_TIMEOUT} s after its shutdown",
                  file=sys.stderr, flush=True)
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            # rclpy's handlers were never installed (SignalHandlerOptions.NO); its uninstall would
            # still set SIGINT and SIGTERM to SIG_DFL for a moment (seen with strace), and a second
            # SIGINT landing then killed the node silently (exit -2, a fresh-clone CI run).
            rclpy.shutdown(uninstall_handlers=False)
        _ignore_further_interrupts(stop_signals)
        faulthandler.cancel_dump_traceback_later()
        # The timer does not cover what runs after this (the interpreter's exit joins threads and
        # runs atexit handlers): a process that hangs there writes every thread's stack when the
        # bringup's SIGTERM comes, then dies of that signal.
        faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)
