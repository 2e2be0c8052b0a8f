"""A real two-node Ray cluster on this machine for tests: a head and a second node, each
started with ``ray start`` on 127.0.0.1 with its own ports and ``CPUS_PER_NODE`` CPUs, in a
temporary folder.

Each ``ray start`` runs in a new session; Ray's daemons and its worker processes stay in it
(the workers get their own process groups, not their own sessions), so :meth:`stop` ends
exactly the processes of this cluster (by session id, read from ``/proc``) and never another
user's Ray. Ray advertises 127.0.0.1 as the host's own address (``resolve_ip_for_localhost``);
the nodes still run on this machine only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from local_ports import free_port, free_port_range

CLUSTER_ENVIRONMENT = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # a token left in ~/.ray by another run would turn on token auth for the head only
    "RAY_AUTH_MODE": "disabled",
}
"""Environment of the cluster's processes and of the test process that connects to it."""

CPUS_PER_NODE = 2
"""Ray CPUs (actor slots) each node offers."""

WORKER_PORTS = 51
"""Ports each node may give its worker processes (``--min-worker-port`` to ``--max-worker-port``)."""


def _tcp_port() -> int:
    return free_port(socket.SOCK_STREAM)


def _session_of(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[3])  # state ppid pgrp session ...


class LocalRayCluster:
    """Start with :meth:`start`; always call :meth:`stop` (a fixture's finalizer)."""

    def __init__(self) -> None:
        self.temp_dir = Path(tempfile.mkdtemp(prefix="pp-ray-", dir="/tmp"))  # short: socket paths
        self.sessions: list[int] = []
        self.address = ""
        self.ray = shutil.which("ray", path=os.path.dirname(sys.executable)) or "ray"
        self.environment = {**os.environ, **CLUSTER_ENVIRONMENT}

    def _node_ports(self) -> list[str]:
        options = ["--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
                   "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port"]
        arguments = []
        for option in options:
            arguments += [option, str(_tcp_port())]
        low = free_port_range(WORKER_PORTS)
        return arguments + ["--min-worker-port", str(low), "--max-worker-port", str(low + WORKER_PORTS - 1)]

    def _ray_start(self, arguments: list[str]) -> None:
        process = subprocess.Popen(
            [self.ray, "start", "--node-ip-address=127.0.0.1", f"--num-cpus={CPUS_PER_NODE}",
             "--object-store-memory=80000000", "--disable-usage-stats", *arguments, *self._node_ports()],
            env=self.environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )
        self.sessions.append(process.pid)  # the session of every process it starts
        output, _ = process.communicate(timeout=180)
        if process.returncode != 0:
            raise RuntimeError(f"ray start failed ({process.returncode}):\n{output[-3000:]}")

    def start(self) -> LocalRayCluster:
        port = _tcp_port()
        self._ray_start(["--head", f"--port={port}", f"--temp-dir={self.temp_dir}", "--include-dashboard=false",
                         f"--dashboard-port={_tcp_port()}"])
        self.address = f"127.0.0.1:{port}"
        self._ray_start([f"--address={self.address}"])
        return self

    def node_of(self, pid: int) -> int | None:
        """0 for a process of the head node, 1 for one of the second node, None for neither."""
        session = _session_of(pid)
        return self.sessions.index(session) if session in self.sessions else None

    def processes(self) -> list[int]:
        """Process ids of this cluster's processes (alive or zombie)."""
        sessions = set(self.sessions)
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        return [pid for pid in pids if pid != os.getpid() and _session_of(pid) in sessions]

    def stop(self) -> None:
        """End this cluster's processes (TERM, then KILL after 5 s) and remove its folder."""
        for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
            for pid in self.processes():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            until = time.monotonic() + grace
            while time.monotonic() < until and self._alive():
                time.sleep(0.1)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def _alive(self) -> bool:
        for pid in self.processes():
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                return True
        return False
