"""Bringup without ``ros2 launch``: every node of the graph as a child process.

Reads the same ``config/graph.yaml`` and parameter files as ``launch/*.launch.py``, starts
each node with ``python -m parapush.nodes.<executable> --ros-args --params-file ...``,
and shuts them all down cleanly: on Ctrl-C/SIGTERM (or when any node exits with an
error) every child gets SIGINT, then SIGTERM, then SIGKILL after timeouts. Children also
die with the bringup (Linux ``PR_SET_PDEATHSIG``), so no node or worker is orphaned.

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
    entry: NodeEntry
    process: subprocess.Popen
    log_path: Path | None = None


@dataclass
class Bringup:
    """Starts and stops the nodes of one profile of the graph.

    Attributes:
        profile: "sim" or "real".
        scene_file: scene path or name (passed to every node as ``scene_file``).
        overrides: extra parameters per node name: {node: {parameter: value}}.
        log_dir: when set, each node's output goes to ``<log_dir>/<node>.log``; else inherited.
        graph: the node graph (default: config/graph.yaml).
        environment: extra environment variables for the children.
    """

    profile: str = "sim"
    scene_file: str = DEFAULT_SCENE
    overrides: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    log_dir: Path | None = None
    graph: NodeGraph | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    nodes: list[RunningNode] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"profile: expected one of {PROFILES}, got {self.profile!r}")
        self.graph = self.graph or load_graph()
        self.scene_path = resolve_scene_path(self.scene_file)
        unknown = sorted(set(self.overrides) - {entry.name for entry in self.graph.for_profile(self.profile)})
        if unknown:
            raise ValueError(f"overrides: no node(s) {unknown} in profile {self.profile!r}")

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

    def start(self) -> None:
        environment = {**os.environ, **self.environment, "PYTHONUNBUFFERED": "1"}
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        for entry in self.graph.for_profile(self.profile):
            log_path = self.log_dir / f"{entry.name}.log" if self.log_dir is not None else None
            output = open(log_path, "w") if log_path is not None else None  # noqa: SIM115 - owned by the child
            process = subprocess.Popen(
                self.command(entry),
                stdout=output,
                stderr=subprocess.STDOUT if output is not None else None,
                env=environment,
                preexec_fn=_die_with_parent,
            )
            if output is not None:
                output.close()
            self.nodes.append(RunningNode(entry, process, log_path))

    def failed(self) -> list[tuple[str, int]]:
        """(node, exit code) of every node that has exited."""
        return [(node.entry.name, node.process.returncode) for node in self.nodes if node.process.poll() is not None]

    def stop(self, *, timeout: float = 10.0) -> dict[str, int]:
        """Stop every node (SIGINT, then SIGTERM, then SIGKILL); return their exit codes."""
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            alive = [node for node in self.nodes if node.process.poll() is None]
            if not alive:
                break
            for node in alive:
                node.process.send_signal(sig)
            deadline = time.monotonic() + wait
            for node in alive:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    node.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        return {node.entry.name: node.process.returncode for node in self.nodes}

    def __enter__(self) -> Bringup:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


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
    options = parser.parse_args(args)
    try:
        bringup = Bringup(options.profile, options.scene, parse_overrides(options.param), options.log_dir)
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
    status = 0
    while not stopping:
        failed = bringup.failed()
        if failed:
            print(f"[bringup] node(s) exited: {failed}; stopping the others", file=sys.stderr, flush=True)
            status = 1
            break
        time.sleep(0.2)
    codes = bringup.stop()
    print(f"[bringup] stopped: {codes}", flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
