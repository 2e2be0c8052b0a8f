"""``run_node``'s exit codes, from a real process: a node whose callback raises exits non-zero
(the spin thread died), a healthy node stopped by SIGINT exits 0 (however many SIGINTs), one slow to shut down writes
where it is, and so does a process that hangs at its exit when SIGTERM comes; an installed node
stopped while it still imports exits 0 too. And its stop of
the spin thread, in-process: ``stop_spinning`` ends a spin that rclpy's shutdown alone leaves
waiting."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from std_msgs.msg import String

from parapush.nodes.node_main import EXIT_SPIN_FAILED, SHUTDOWN_REPORT_AFTER, spin_wake_guard, stop_spinning

# A tiny node: a 20 ms timer whose callback raises after `raise_after` calls (never when < 0);
# its close() takes `close_seconds`; with `stuck_thread`, a thread that never ends keeps the
# interpreter from exiting after run_node returns.
NODE = textwrap.dedent("""
    import sys
    import threading
    import time
    from rclpy.node import Node
    from parapush.nodes.node_main import run_node

    class Faulty(Node):
        BLOCKING_CALLBACKS = sys.argv[2] == "multi-threaded"  # run_node's MultiThreadedExecutor

        def __init__(self):
            super().__init__("faulty_node")
            self.calls = 0
            self.create_timer(0.02, self.tick)
            if sys.argv[4] == "stuck_thread":
                threading.Thread(target=self.wait_forever, name="never-ends").start()
            print("node up", flush=True)

        def wait_forever(self):
            threading.Event().wait()

        def tick(self):
            self.calls += 1
            if self.calls == int(sys.argv[1]):
                raise RuntimeError("callback failed on purpose")

        def close(self):
            time.sleep(float(sys.argv[3]))

    sys.exit(run_node(Faulty, sys.argv[:1]))
""")


# Prepended to NODE: reports on stderr when rclpy's shutdown uninstalls its signal handlers.
WATCH_HANDLER_UNINSTALL = textwrap.dedent("""
    import sys
    import rclpy

    def report_uninstall():
        print("rclpy uninstalled its signal handlers", file=sys.stderr, flush=True)

    rclpy.uninstall_signal_handlers = report_uninstall
""")


def start_node(raise_after: int, executor: str = "single-threaded", close_seconds: float = 0.0,
               exit: str = "clean", prelude: str = "") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", prelude + NODE, str(raise_after), executor, str(close_seconds),
                             exit],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def stop_with_one_sigint(process: subprocess.Popen, *, after: float = 0.0, timeout: float = 30.0) -> str:
    """Once the node is up (and ``after`` s more), one SIGINT; asserts it exits 0 and returns its stderr."""
    try:
        assert process.stdout.readline().strip() == "node up"
        time.sleep(after)
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=timeout)
    finally:
        process.kill()
    assert process.returncode == 0, errors
    return errors


@pytest.mark.parametrize("executor", ["single-threaded", "multi-threaded"])
def test_node_whose_callback_raises_exits_non_zero(executor):
    process = start_node(raise_after=3, executor=executor)
    try:
        _, errors = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == EXIT_SPIN_FAILED, errors
    assert "RuntimeError: callback failed on purpose" in errors  # the traceback, for the log
    assert "[FATAL] the executor stopped: RuntimeError: callback failed on purpose" in errors


def test_healthy_node_stopped_by_sigint_exits_zero():
    errors = stop_with_one_sigint(start_node(raise_after=-1), after=0.3)  # the timer runs
    assert "most recent call first" not in errors, errors  # shut down in time: no stacks written


def test_sigints_repeated_while_the_node_stops_leave_no_traceback():
    """Under ``ros2 launch`` a Ctrl-C gives each node two SIGINTs (the terminal's and launch's);
    here a burst of them during and after close(): still exit 0, and no KeyboardInterrupt."""
    process = start_node(raise_after=-1, close_seconds=0.3)
    try:
        assert process.stdout.readline().strip() == "node up"
        deadline = time.monotonic() + 20.0
        while process.poll() is None and time.monotonic() < deadline:
            process.send_signal(signal.SIGINT)
            time.sleep(0.005)
        _, errors = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, errors
    assert "KeyboardInterrupt" not in errors and "Traceback" not in errors, errors


def test_the_stop_leaves_the_signal_handlers_to_run_node():
    """rclpy's uninstall of its signal handlers (which run_node never installs) sets SIGINT to
    SIG_DFL for a moment, seen with strace: a second SIGINT landing then killed the node with exit
    -2 and no output (a fresh-clone CI run of the test above). The stop must not call it."""
    errors = stop_with_one_sigint(start_node(raise_after=-1, prelude=WATCH_HANDLER_UNINSTALL))
    assert "rclpy uninstalled its signal handlers" not in errors, errors


@pytest.mark.parametrize(("node", "started_by"), [("visualizer", "ros2 run"), ("mpc", "ros2 run"),
                                                  ("visualizer", "bringup")])
def test_a_node_stopped_while_it_imports_exits_zero_without_a_traceback(node, started_by):
    """``ros2 run`` / ``ros2 launch`` start the installed script, the bringup ``python -m
    parapush.program_entry``; the import (rclpy, MuJoCo, the learned models) takes over a second
    even on a fast machine, and a Ctrl-C right after a stack's start lands in it (a visualizer at
    nice +10 was still importing 20 s in)."""
    from ament_index_python.packages import get_package_prefix

    from parapush.programs.bringup import Bringup

    module = f"parapush.nodes.{node}"
    bringup = Bringup("sim")
    try:
        if started_by == "ros2 run":
            prefix = get_package_prefix("parareal_pushing")
            command = [sys.executable, os.path.join(prefix, "lib", "parareal_pushing", node)]
        else:
            command = bringup.command(next(entry for entry in bringup.entries() if entry.name == node))
            assert command[1:4] == ["-m", "parapush.program_entry", module]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(0.2)  # past the interpreter's own start, well inside the node module's import
            process.send_signal(signal.SIGINT)
            _, errors = process.communicate(timeout=60)
        finally:
            process.kill()
    finally:
        bringup.stop()
    assert process.returncode == 0, errors
    assert "Traceback" not in errors, errors
    assert f"{module}: stopped by SIGINT while starting" in errors


def test_a_node_slow_to_shut_down_writes_where_it_is():
    errors = stop_with_one_sigint(start_node(raise_after=-1, close_seconds=SHUTDOWN_REPORT_AFTER + 1.5), timeout=60)
    assert "most recent call first" in errors and "in close" in errors, errors  # every thread's stack


def test_a_process_hanging_at_its_exit_writes_where_it_is_when_sigterm_comes():
    process = start_node(raise_after=-1, exit="stuck_thread")
    try:
        assert process.stdout.readline().strip() == "node up"
        process.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):  # run_node returned; the thread holds the exit
            process.wait(timeout=SHUTDOWN_REPORT_AFTER + 1.0)
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == -signal.SIGTERM, errors
    assert "most recent call first" in errors and "in wait_forever" in errors, errors


class HoldingGroup(ReentrantCallbackGroup):
    """A callback group whose ``can_execute``, once armed, holds the spin thread there: after the
    spin's check for shutdown, before its wait (the executor asks while building the wait set)."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = threading.Event()
        self.holding = threading.Event()
        self.release = threading.Event()

    def can_execute(self, entity) -> bool:
        if self.armed.is_set() and not self.release.is_set():
            self.holding.set()
            self.release.wait(10.0)
        return True


@pytest.mark.parametrize("executor_type", [SingleThreadedExecutor, MultiThreadedExecutor])
def test_stop_spinning_ends_a_spin_that_shutdown_caught_before_its_wait(ros_context, executor_type):
    node = rclpy.create_node("spin_caught_before_its_wait", context=ros_context)
    group = HoldingGroup()
    node.create_subscription(String, "nobody_publishes_here", lambda message: None, 1, callback_group=group)
    wake = spin_wake_guard(node)
    executor = executor_type(context=ros_context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    try:
        spinner.start()
        time.sleep(0.3)  # the spin waits
        group.armed.set()
        executor.wake()  # it wakes, checks for shutdown (none yet) and builds its next wait set
        assert group.holding.wait(10.0)
        executor.shutdown(timeout_sec=0)  # now, while it is held
        group.release.set()
        spinner.join(1.0)
        assert spinner.is_alive()  # rclpy's shutdown alone: it waits on the quiet subscription
        assert stop_spinning(executor, spinner, wake, timeout=5.0)
    finally:
        group.release.set()
        stop_spinning(executor, spinner, wake, timeout=5.0)
        node.destroy_node()
