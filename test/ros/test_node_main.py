"""``run_node``'s exit codes, from a real process: a node whose callback raises exits non-zero
(the spin thread died), a healthy node stopped by SIGINT exits 0, one slow to shut down writes
where it is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from parapush.nodes.node_main import EXIT_SPIN_FAILED, SHUTDOWN_REPORT_AFTER

# A tiny node: a 20 ms timer whose callback raises after `raise_after` calls (never when < 0);
# its close() takes `close_seconds`.
NODE = textwrap.dedent("""
    import sys
    import time
    from rclpy.node import Node
    from parapush.nodes.node_main import run_node

    class Faulty(Node):
        BLOCKING_CALLBACKS = sys.argv[2] == "multi-threaded"  # run_node's MultiThreadedExecutor

        def __init__(self):
            super().__init__("faulty_node")
            self.calls = 0
            self.create_timer(0.02, self.tick)
            print("node up", flush=True)

        def tick(self):
            self.calls += 1
            if self.calls == int(sys.argv[1]):
                raise RuntimeError("callback failed on purpose")

        def close(self):
            time.sleep(float(sys.argv[3]))

    sys.exit(run_node(Faulty, sys.argv[:1]))
""")


def start_node(raise_after: int, executor: str = "single-threaded", close_seconds: float = 0.0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", NODE, str(raise_after), executor, str(close_seconds)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


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
    process = start_node(raise_after=-1)
    try:
        assert process.stdout.readline().strip() == "node up"
        time.sleep(0.3)  # the timer runs
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, errors
    assert "most recent call first" not in errors, errors  # shut down in time: no stacks written


def test_a_node_slow_to_shut_down_writes_where_it_is():
    process = start_node(raise_after=-1, close_seconds=SHUTDOWN_REPORT_AFTER + 1.5)
    try:
        assert process.stdout.readline().strip() == "node up"
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, errors
    assert "most recent call first" in errors and "in close" in errors, errors  # every thread's stack
