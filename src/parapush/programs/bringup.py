"""Bringup without ``ros2 launch``: every node of the graph as a child process.

Reads the same ``config/graph.yaml`` and parameter files as ``launch/*.launch.py``, starts
each node with ``python -m parapush.nodes.<executable> --ros-args --params-file ...``, and
applies the graph's exit policy while the stack runs (a supervisor thread): a node with
``on_exit: respawn`` is started again after its delay, up to its restart count; the exit of
any other node (or of a respawnable one out of restarts) stops the stack. Stopping (Ctrl-C,
SIGTERM, or that policy) goes stage by stage in the graph's ``shutdown_order`` (the MPC and the
executor first, the drivers last); each node gets SIGINT, then SIGTERM, then SIGKILL after
timeouts. Children also die with the bringup (Linux ``PR_SET_PDEATHSIG``), so no node or
worker is orphaned.

    python -m parapush.programs.bringup --profile sim --scene clutter_fig1.yaml
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from parapush.graph import DEFAULT_SCENE, PROFILES, NodeEntry, NodeGraph, load_graph, resolve_scene_path

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class RunningNode:
    """One node's current process.

    Attributes:
        entry: its graph entry.
        process: the running (or exited) process; replaced on a respawn.
        log_path: where its output goes (None: inherited).
        restarts: how many times it was respawned.
        exited_at: monotonic time (s) its exit was seen while a respawn is pending, else None.
    """

    entry: NodeEntry
    process: subprocess.Popen
    log_path: Path | None = None
    restarts: int = 0
    exited_at: float | None = None


@dataclass
class Bringup:
    """Starts, supervises and stops the nodes of one profile of the graph.

    Attributes:
        profile: "sim" or "real".
        scene_file: scene path or name (passed to every node as ``scene_file``).
        overrides: extra parameters per node name: {node: {parameter: value}}.
        log_dir: when set, each node's output goes to ``<log_dir>/<node>.log``; else inherited.
        graph: the node graph (default: config/graph.yaml).
        environment: extra environment variables for the children.
        allow_loopback: start a profile outside the graph's ``loopback_profiles`` (the robot)
            with device addresses on loopback (else refused: :meth:`NodeGraph.check_device_addresses`).
        supervise_period: s between two checks of the exit policy.
        stop_timeout: s each stage gets to exit after SIGINT when the policy stops the stack.
        stop_reason: why the supervisor stopped the stack (None while it runs or when stopped by the caller).
        events: what the supervisor did (exits, respawns, stages stopped), in order.
    """

    profile: str = "sim"
    scene_file: str = DEFAULT_SCENE
    overrides: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    log_dir: Path | None = None
    graph: NodeGraph | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    allow_loopback: bool = False
    supervise_period: float = 0.1
    stop_timeout: float = 10.0
    nodes: list[RunningNode] = field(default_factory=list, init=False)
    stop_reason: str | None = field(default=None, init=False)
    events: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"profile: expected one of {PROFILES}, got {self.profile!r}")
        self.graph = self.graph or load_graph()
        self.scene_path = resolve_scene_path(self.scene_file)
        unknown = sorted(set(self.overrides) - {entry.name for entry in self.graph.for_profile(self.profile)})
        if unknown:
            raise ValueError(f"overrides: no node(s) {unknown} in profile {self.profile!r}")
        self.graph.check_device_addresses(self.profile, self.overrides, allow_loopback=self.allow_loopback)
        self._stopping = threading.Event()  # no more respawns
        self._stopped = threading.Event()  # every stage stopped
        self._lock = threading.RLock()  # one of: a supervision step, a stop
        self._supervisor: threading.Thread | None = None

    def command(self, entry: NodeEntry) -> list[str]:
        """The command line that runs ``entry``, exactly as a launch file would configure it."""
        command = [sys.executable, "-m", f"parapush.nodes.{entry.executable}"]
        command += ["--ros-args", "-r", f"__node:={entry.name}"]
        for path in self.graph.parameter_files(entry, self.profile):
            command += ["--params-file", str(path)]
        command += ["-p", f"scene_file:={self.scene_path}"]
        for name, value in self.overrides.get(entry.name, {}).items():
            command += ["-p", f"{name}:={_parameter_text(value)}"]
        return command

    def _spawn(self, entry: NodeEntry, log_path: Path | None, *, append: bool) -> subprocess.Popen:
        output = open(log_path, "a" if append else "w") if log_path is not None else None  # noqa: SIM115
        try:
            if output is not None and append:
                output.write(f"[bringup] respawned {entry.name}\n")
                output.flush()
            return subprocess.Popen(
                self.command(entry),
                stdout=output,
                stderr=subprocess.STDOUT if output is not None else None,
                env={**os.environ, **self.environment, "PYTHONUNBUFFERED": "1"},
                preexec_fn=_die_with_parent,
            )
        finally:
            if output is not None:
                output.close()  # the child holds its own copy

    def start(self) -> None:
        """Start every node of the profile and the supervisor that applies the exit policy."""
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        for entry in self.graph.for_profile(self.profile):
            log_path = self.log_dir / f"{entry.name}.log" if self.log_dir is not None else None
            self.nodes.append(RunningNode(entry, self._spawn(entry, log_path, append=False), log_path))
        self._supervisor = threading.Thread(target=self._supervise_until_stopped, name="bringup-supervisor",
                                            daemon=True)
        self._supervisor.start()

    def _say(self, text: str) -> None:
        self.events.append(text)
        print(f"[bringup] {text}", file=sys.stderr, flush=True)

    def supervise(self, now: float | None = None) -> str | None:
        """Apply the exit policy once: respawn what is due; return why the stack must stop, or None."""
        now = time.monotonic() if now is None else now
        for node in self.nodes:
            code = node.process.poll()
            if code is None:
                continue
            entry = node.entry
            if not entry.respawns:
                return f"{entry.name} exited with code {code} (on_exit: shutdown)"
            if node.restarts >= entry.max_restarts:
                return f"{entry.name} exited with code {code} after {node.restarts} restarts (max_restarts)"
            if node.exited_at is None:
                node.exited_at = now
                self._say(f"{entry.name} exited with code {code}; respawning in {entry.respawn_delay:.1f} s "
                          f"(restart {node.restarts + 1} of {entry.max_restarts})")
            elif now - node.exited_at >= entry.respawn_delay:
                node.process = self._spawn(entry, node.log_path, append=True)
                node.restarts += 1
                node.exited_at = None
                self._say(f"{entry.name} respawned (pid {node.process.pid})")
        return None

    def _supervise_until_stopped(self) -> None:
        # Runs until every stage has stopped: the children it respawned get PR_SET_PDEATHSIG when
        # this thread (their parent) ends, which must not stop them before their stage.
        while not self._stopped.wait(self.supervise_period):
            with self._lock:
                if self._stopping.is_set():
                    continue
                reason = self.supervise()
            if reason is not None:
                self.stop_reason = reason
                self._say(f"{reason}: stopping the stack")
                self.stop(timeout=self.stop_timeout)
                return

    def failed(self) -> list[tuple[str, int]]:
        """(node, exit code) of every node that has exited and will not be respawned."""
        return [(node.entry.name, node.process.returncode) for node in self.nodes
                if node.process.poll() is not None
                and not (node.entry.respawns and node.restarts < node.entry.max_restarts)]

    def stop(self, *, timeout: float = 10.0) -> dict[str, int]:
        """Stop every node, stage by stage in the graph's shutdown order; return their exit codes.

        Each stage: SIGINT and up to ``timeout`` s to exit, then SIGTERM (3 s), then SIGKILL.
        """
        self._stopping.set()
        with self._lock:
            running = {node.entry.name: node for node in self.nodes}
            for stage in self.graph.shutdown_stages(self.profile):
                nodes = [running[entry.name] for entry in stage if entry.name in running]
                if any(node.process.poll() is None for node in nodes):
                    self._say(f"stopping {', '.join(node.entry.name for node in nodes)}")
                _stop_processes([node.process for node in nodes], timeout)
        self._stopped.set()
        if self._supervisor is not None and self._supervisor is not threading.current_thread():
            self._supervisor.join(timeout=timeout)
        return {node.entry.name: node.process.returncode for node in self.nodes}

    def __enter__(self) -> Bringup:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _stop_processes(processes: Sequence[subprocess.Popen], timeout: float) -> None:
    """SIGINT, then SIGTERM, then SIGKILL, each after waiting for the processes to exit."""
    for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        alive = [process for process in processes if process.poll() is None]
        if not alive:
            return
        for process in alive:
            process.send_signal(sig)
        deadline = time.monotonic() + wait
        for process in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))


def _parameter_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_overrides(items: Sequence[str]) -> dict[str, dict[str, str]]:
    """``node.parameter=value`` strings as {node: {parameter: value}}."""
    overrides: dict[str, dict[str, str]] = {}
    for item in items:
        key, separator, value = item.partition("=")
        node, dot, parameter = key.partition(".")
        if not separator or not dot or not node or not parameter:
            raise ValueError(f"--param: expected node.parameter=value, got {item!r}")
        overrides.setdefault(node, {})[parameter] = value
    return overrides


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=PROFILES, default="sim")
    parser.add_argument("--scene", default=DEFAULT_SCENE, help="scene YAML path or name in config/scenes/")
    parser.add_argument("--param", action="append", default=[], metavar="NODE.NAME=VALUE",
                        help="parameter override for one node (repeatable)")
    parser.add_argument("--log-dir", type=Path, default=None, help="write each node's output to DIR/<node>.log")
    parser.add_argument("--allow-loopback", action="store_true",
                        help="let the real profile reach devices on 127.0.0.1 (refused by default: the simulator's)")
    options = parser.parse_args(args)
    try:
        bringup = Bringup(options.profile, options.scene, parse_overrides(options.param), options.log_dir,
                          allow_loopback=options.allow_loopback)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    stopping = False

    def request_stop(signum, frame):  # noqa: ARG001
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    bringup.start()
    names = ", ".join(node.entry.name for node in bringup.nodes)
    print(f"[bringup] profile {options.profile}: started {names}; Ctrl-C stops", flush=True)
    while not stopping and bringup.stop_reason is None:
        time.sleep(0.2)
    codes = bringup.stop()
    print(f"[bringup] stopped: {codes}" + (f" ({bringup.stop_reason})" if bringup.stop_reason else ""), flush=True)
    return 1 if bringup.stop_reason else 0


if __name__ == "__main__":
    raise SystemExit(main())
