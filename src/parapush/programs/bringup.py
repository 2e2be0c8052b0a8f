"""Bringup without ``ros2 launch``: every node of the graph as a child process.

Reads the same ``config/graph.yaml`` and parameter files as ``launch/*.launch.py``, starts each
node with ``python -m parapush.program_entry parapush.nodes.<executable> --ros-args --params-file
...`` (:mod:`parapush.program_entry`: a stop while it imports is quiet), and applies
the graph's exit policy while the stack runs (a supervisor thread): a node with ``on_exit:
respawn`` is started again after its delay, up to its restart count; the exit of any other node
(or of a respawnable one out of restarts) stops the stack. Stopping (Ctrl-C, SIGTERM, or that
policy) goes stage by stage in the graph's ``shutdown_order`` (the MPC and the executor first,
the drivers last); each node gets SIGINT, then SIGTERM, then SIGKILL after timeouts; a Ctrl-C
in the terminal reaches the bringup alone (each child runs in a process group of its own), so
that order holds. Children also die with the bringup (Linux ``PR_SET_PDEATHSIG``), so no node
or worker is orphaned. The bringup's exit status is 0 when it was stopped and every node exited
0, else 1 with the reason on one line (``[bringup] failed: ...``: a node that died or failed to
start, or one that did not exit 0 when stopped). Each child runs at its graph entry's ``nice``
(set between fork and exec, relative to the bringup's own niceness, as the launch files' ``nice
-n`` prefix does), so the threads and worker processes a node starts inherit it: planning
yields the CPU to the state estimator and the executor.

Each profile runs on the network of ``config/network.yaml`` (:func:`isolated_bringup`): the sim
profile on the exported ``ROS_DOMAIN_ID`` (and ``ROS_AUTOMATIC_DISCOVERY_RANGE``) where the user
exported one, else on a ROS domain of its own with discovery on this machine (``--domain
isolated``: whatever is exported, as the demo, the benchmarks and the tests ask), its simulated
devices on free ports; the robot profile on the robot's domain, refused when nodes of this graph
already run there (``--join`` joins them). The domain, the discovery range, the devices' ports
or addresses, and the ``export`` line another terminal needs to see the stack are printed at start.

    python -m parapush.programs.bringup --profile sim --scene clutter_fig1.yaml
    python -m parapush.programs.bringup --profile real --sim-devices      # the robot profile, simulated devices
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from parapush.graph import (
    DEFAULT_SCENE,
    DEVICE_ARGUMENTS,
    MAX_NICE,
    PROFILES,
    SIGINT_TIMEOUT,
    SIGTERM_TIMEOUT,
    NodeEntry,
    NodeGraph,
    config_dir,
    device_overrides,
    load_graph,
    resolve_scene_path,
)
from parapush.stack_network import (
    AUTO,
    DEVICE_PORT_MODES,
    DISCOVERY_RANGES,
    ISOLATED,
    DomainLease,
    NetworkError,
    NetworkSettings,
    SimDevicePorts,
    StackNetwork,
    exported_network,
    load_network_settings,
    parse_domain,
    reserve_domain,
)

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def child_setup(nice: int) -> Callable[[], None]:
    """The function a node's child process runs between fork and exec: it dies with the bringup
    (``PR_SET_PDEATHSIG``) and lowers its priority by ``nice`` (0..19; 0 leaves it as inherited)."""
    if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= MAX_NICE:
        raise ValueError(f"nice: expected an integer in [0, {MAX_NICE}], got {nice!r}")

    def setup() -> None:
        _die_with_parent()
        if nice:
            os.nice(nice)  # the whole process: exec keeps it, and every thread it starts inherits it

    return setup


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
        network: the ROS domain and discovery range of the children (their environment; printed
            at start); None: inherited from this process.
        domain_lease: the reservation of ``network.domain`` on this machine, released by :meth:`stop`.
        device_ports: the simulated devices' ports when this stack chose them (printed at start).
        visibility: what to export to see the stack from another terminal (printed at start), if anything.
        parameter_files: ROS parameter files applied to every node after the graph's files (the
            launch argument ``params_file``), before ``overrides``; a missing one is refused here.
        sim_devices: also run the simulated devices' nodes (the simulated driver) and let a robot
            profile reach them on loopback (the launch argument ``sim_devices``); the caller gives
            the device addresses (:func:`prepare_network` with ``sim_devices``).
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
    network: StackNetwork | None = None
    domain_lease: DomainLease | None = None
    device_ports: SimDevicePorts | None = None
    visibility: str | None = None
    parameter_files: tuple[Path, ...] = ()
    sim_devices: bool = False
    supervise_period: float = 0.1
    stop_timeout: float = SIGINT_TIMEOUT
    nodes: list[RunningNode] = field(default_factory=list, init=False)
    stop_reason: str | None = field(default=None, init=False)
    events: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"profile: expected one of {PROFILES}, got {self.profile!r}")
        self.graph = self.graph or load_graph()
        self.scene_path = resolve_scene_path(self.scene_file)
        self.parameter_files = tuple(Path(path).expanduser().resolve() for path in self.parameter_files)
        missing = [str(path) for path in self.parameter_files if not path.is_file()]
        if missing:
            raise FileNotFoundError(f"parameter_files: no such file(s) {missing}")
        unknown = sorted(set(self.overrides) - {entry.name for entry in self.entries()})
        if unknown:
            raise ValueError(f"overrides: no node(s) {unknown} in profile {self.profile!r}")
        self.graph.check_device_addresses(self.profile, self.overrides,
                                          allow_loopback=self.allow_loopback or self.sim_devices)
        self._stopping = threading.Event()  # no more respawns
        self._stopped = threading.Event()  # every stage stopped
        self._lock = threading.RLock()  # one of: a supervision step, a stop
        self._supervisor: threading.Thread | None = None
        self._parameter_dir: Path | None = None  # the nodes' files of this bringup's values

    def entries(self) -> tuple[NodeEntry, ...]:
        """The nodes this bringup runs: the profile's, and the simulated devices' with ``sim_devices``."""
        return self.graph.stack_nodes(self.profile, sim_devices=self.sim_devices)

    def command(self, entry: NodeEntry) -> list[str]:
        """The command line that runs ``entry``, exactly as a launch file would configure it: the
        graph's and the caller's parameter files, then a file of this bringup's own values
        (``scene_file`` and ``overrides``), last, so they win. Not ``-p``: with a ``/**`` section
        among the files (config/model.yaml's) rcl let the node's own section win over ``-p``
        (measured: ``-p planner_config:=... -p state_timeout:=1.0`` left the mpc node at
        config/mpc.yaml's planner.yaml and 5.0), so ``--param`` overrides went unapplied without a word."""
        command = [sys.executable, "-m", "parapush.program_entry", f"parapush.nodes.{entry.executable}"]
        command += ["--ros-args", "-r", f"__node:={entry.name}"]
        for path in self.graph.parameter_files(entry, self.profile):
            command += ["--params-file", str(path)]
        for path in self.parameter_files:
            command += ["--params-file", str(path)]
        command += ["--params-file", str(self._own_parameter_file(entry))]
        return command

    def own_parameters(self, entry: NodeEntry) -> dict[str, object]:
        """The values this bringup gives ``entry`` (``scene_file`` and its overrides, typed), as the
        last parameter file of its :meth:`command` holds them."""
        return yaml.safe_load(self._own_parameter_file(entry).read_text())[entry.name]["ros__parameters"]

    def _own_parameter_file(self, entry: NodeEntry) -> Path:
        """``entry``'s parameter file of this bringup's values (written once, removed by :meth:`stop`)."""
        with self._lock:
            if self._parameter_dir is None:
                self._parameter_dir = Path(tempfile.mkdtemp(prefix="parapush-parameters-"))
            path = self._parameter_dir / f"{entry.name}.yaml"
            if not path.is_file():
                values = {"scene_file": str(self.scene_path)}
                values.update({name: _parameter_value(value)
                               for name, value in self.overrides.get(entry.name, {}).items()})
                path.write_text(yaml.safe_dump({entry.name: {"ros__parameters": values}}))
            return path

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
                env={**os.environ, **self.child_environment(), "PYTHONUNBUFFERED": "1"},
                preexec_fn=child_setup(entry.nice),
                # A process group of its own: a Ctrl-C in the terminal (SIGINT to the terminal's
                # foreground group) reaches the bringup alone, which stops the nodes in shutdown_order.
                process_group=0,
            )
        finally:
            if output is not None:
                output.close()  # the child holds its own copy

    def child_environment(self) -> dict[str, str]:
        """The environment variables the nodes get on top of this process's: the network's, then ``environment``."""
        return {**(self.network.environment() if self.network is not None else {}), **self.environment}

    def describe_network(self) -> list[str]:
        """What the nodes join and where they reach the devices, one line each (printed at start)."""
        return describe_network(self.graph, self.profile, self.network, self.device_ports, self.overrides,
                                sim_devices=self.sim_devices)

    def start(self) -> None:
        """Start every node of the profile and the supervisor that applies the exit policy."""
        for line in self.describe_network():
            self._say(line)
        if self.visibility:
            self._say(self.visibility)
        lowered = [f"{entry.name} +{entry.nice}" for entry in self.entries() if entry.nice]
        if lowered:
            self._say(f"lower priority (nice): {', '.join(lowered)}; the others at the default")
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        for entry in self.entries():
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

    def stop(self, *, timeout: float = SIGINT_TIMEOUT) -> dict[str, int]:
        """Stop every node, stage by stage in the graph's shutdown order; return their exit codes.

        Each stage: SIGINT and up to ``timeout`` s to exit, then SIGTERM (``SIGTERM_TIMEOUT`` s), then
        SIGKILL (the launch files give every node the same timeouts: ``sigterm_timeout``, ``sigkill_timeout``).
        """
        self._stopping.set()
        with self._lock:
            running = {node.entry.name: node for node in self.nodes}
            for stage in self.graph.shutdown_stages(self.profile, sim_devices=self.sim_devices):
                nodes = [running[entry.name] for entry in stage if entry.name in running]
                if any(node.process.poll() is None for node in nodes):
                    self._say(f"stopping {', '.join(node.entry.name for node in nodes)}")
                _stop_processes([node.process for node in nodes], timeout)
            if self._parameter_dir is not None:
                shutil.rmtree(self._parameter_dir, ignore_errors=True)
                self._parameter_dir = None
        self._stopped.set()
        if self.domain_lease is not None:
            self.domain_lease.release()
        if self._supervisor is not None and self._supervisor is not threading.current_thread():
            self._supervisor.join(timeout=timeout)
        return {node.entry.name: node.process.returncode for node in self.nodes}

    def __enter__(self) -> Bringup:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def describe_network(graph: NodeGraph, profile: str, network: StackNetwork | None,
                     device_ports: SimDevicePorts | None, overrides: Mapping[str, Mapping[str, object]], *,
                     sim_devices: bool = False) -> list[str]:
    """The domain, the discovery range, the simulated devices' ports and the device addresses, one line each."""
    lines = [network.describe() if network is not None else
             f"ROS domain {os.environ.get('ROS_DOMAIN_ID', '0 (default)')}, discovery range "
             f"{os.environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE', 'SYSTEM_DEFAULT')} (inherited)"]
    if device_ports is not None:
        lines.append(f"simulated devices on 127.0.0.1: {device_ports.describe()}")
    addresses = []
    for node in graph.stack_nodes(profile, sim_devices=sim_devices):
        for name in graph.device_addresses.get(node.name, ()):
            value = graph.parameter_value(node, profile, name, overrides.get(node.name))
            addresses.append(f"{node.name}.{name} = {value}")
    if addresses:
        lines.append("device addresses: " + ", ".join(addresses))
    return lines


def _stop_processes(processes: Sequence[subprocess.Popen], timeout: float) -> None:
    """SIGINT, then SIGTERM, then SIGKILL, each after waiting for the processes to exit."""
    for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, SIGTERM_TIMEOUT), (signal.SIGKILL, SIGTERM_TIMEOUT)):
        alive = [process for process in processes if process.poll() is None]
        if not alive:
            return
        for process in alive:
            process.send_signal(sig)
        deadline = time.monotonic() + wait
        for process in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))


def _parameter_value(value: object) -> object:
    """A parameter value as its file holds it: a text (``--param node.name=TEXT``) typed as ROS
    types a ``-p`` value (YAML: ``1.0`` a double, ``true`` a bool, ``a/b.yaml`` a string)."""
    if isinstance(value, str) and value:
        return yaml.safe_load(value)
    return value


def add_network_arguments(parser: argparse.ArgumentParser) -> None:
    """``--domain`` and ``--ports``: the command-line overrides of ``config/network.yaml``."""
    parser.add_argument("--domain", type=parse_domain, default=None,
                        help="ROS domain of the stack: N, auto (the exported ROS_DOMAIN_ID, else a free one) or "
                             "isolated (a free one whatever is exported); default: config/network.yaml's "
                             "(sim: auto)")
    parser.add_argument("--discovery-range", choices=DISCOVERY_RANGES, default=None,
                        help="ROS_AUTOMATIC_DISCOVERY_RANGE of the nodes (default: the exported one for an "
                             "auto domain, else config/network.yaml's)")
    parser.add_argument("--ports", choices=DEVICE_PORT_MODES, default=None,
                        help="simulated devices' ports: auto (free ones; sim default) or fixed (profile_sim.yaml's)")


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


class StackConflictError(NetworkError):
    """Nodes of this graph already run on the chosen domain (another stack)."""


def graph_nodes_on_network(network: StackNetwork, names: Sequence[str], wait: float) -> list[str]:
    """The nodes named in ``names`` that a participant on ``network`` discovers within ``wait`` s
    (sorted "namespace/name" strings); rclpy is imported here, the rest of this module runs without it."""
    import rclpy
    from rclpy.context import Context

    saved = os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE")
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = network.discovery_range  # rcl reads it at init
    context = Context()
    try:
        # Not this process's argv: under ros2 launch it is the launch command line, whose
        # arguments (allow_loopback:=true) rcl would parse as deprecated remap rules and warn.
        context.init(["parapush_stack_probe"], domain_id=network.domain, initialize_logging=False)
    finally:
        if saved is None:
            os.environ.pop("ROS_AUTOMATIC_DISCOVERY_RANGE")
        else:
            os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = saved
    try:
        probe = rclpy.create_node(f"parapush_stack_probe_{os.getpid()}", context=context,
                                  enable_rosout=False, start_parameter_services=False)
        found: set[str] = set()
        deadline = time.monotonic() + wait
        while True:
            found |= {f"{namespace.rstrip('/')}/{name}" for name, namespace in probe.get_node_names_and_namespaces()
                      if name in names}
            if found or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        probe.destroy_node()
        return sorted(found)
    finally:
        context.try_shutdown()


FIXED_DEVICE_PORTS = SimDevicePorts(natnet_command=1510, natnet_data=1511, gripper_tcp=15020)
"""The simulated devices' fixed ports (Motive's NatNet ports, profile_sim.yaml's gripper port)."""
SIM_DEVICE_CLIENTS = {"state_estimator": {"server_address": "127.0.0.1", "local_interface": "127.0.0.1",
                                          "multicast": False}}
"""What a robot profile's nodes are given, besides the ports, to reach the simulated devices."""


@dataclass
class PreparedNetwork:
    """A profile's network, chosen (:func:`prepare_network`).

    Attributes:
        network: the domain and discovery range.
        lease: the domain's reservation when it was chosen here (isolated), else None.
        device_ports: the simulated devices' ports when chosen here (``device_ports: auto``), else None.
        source: where the domain came from: "environment" (the exported ``ROS_DOMAIN_ID``),
            "isolated" (reserved here), "argument" (given by the caller), "network.yaml".
        sim_devices: a robot profile run against the simulated devices (:func:`prepare_network`).
    """

    network: StackNetwork
    lease: DomainLease | None
    device_ports: SimDevicePorts | None
    source: str = "network.yaml"
    sim_devices: bool = False

    def overrides(self, overrides: Mapping[str, Mapping[str, object]] | None = None) -> dict[str, dict[str, object]]:
        """The device ports' parameter overrides (with ``sim_devices``, also the simulated devices'
        loopback addresses: :data:`SIM_DEVICE_CLIENTS`), then ``overrides`` (which win)."""
        merged = self.device_ports.overrides() if self.device_ports is not None else {}
        if self.sim_devices:
            for node, values in SIM_DEVICE_CLIENTS.items():
                merged.setdefault(node, {}).update(values)
        for node, values in (overrides or {}).items():
            merged.setdefault(node, {}).update(values)
        return merged

    def visibility(self, environ: Mapping[str, str] | None = None) -> str | None:
        """What a user must export to see this stack from another terminal; None when a terminal
        with ``environ`` (default: this process's) already is on its network."""
        environ = os.environ if environ is None else environ
        wanted = self.network.environment()
        if all(environ.get(name, "").strip() == value for name, value in wanted.items()):
            return None
        return f"to see this stack from another terminal: {self.network.export_line()}"


def choose_domain(setting: NetworkSettings, domain: int | str | None, discovery_range: str | None,
                  environ: Mapping[str, str] | None = None) -> tuple[int | str, str, str]:
    """(domain or "isolated", discovery range, source) for a profile's ``setting`` and the caller's choices.

    ``domain`` None takes the setting's; "auto" (the sim profile's setting) takes the exported
    ``ROS_DOMAIN_ID`` where there is one, else "isolated"; "isolated" is kept whatever is exported.
    The range: ``discovery_range``, else (for "auto") the exported ``ROS_AUTOMATIC_DISCOVERY_RANGE``,
    else the setting's.
    """
    chosen = setting.domain if domain is None else domain
    source = "network.yaml" if domain is None else "argument"
    exported_domain, exported_range = exported_network(environ)
    if chosen == ISOLATED:
        return ISOLATED, discovery_range or setting.discovery_range, "isolated"
    if chosen != AUTO:
        return chosen, discovery_range or setting.discovery_range, source
    discovery_range = discovery_range or exported_range or setting.discovery_range
    if exported_domain is not None:
        return exported_domain, discovery_range, "environment"
    return ISOLATED, discovery_range, "isolated"


def prepare_network(profile: str, graph: NodeGraph, *, domain: int | str | None = None,
                    discovery_range: str | None = None, ports: str | None = None,
                    join: bool = False, discovery_wait: float = 2.0,
                    network_file: Path | None = None, environ: Mapping[str, str] | None = None,
                    sim_devices: bool = False) -> PreparedNetwork:
    """The profile's network from ``config/network.yaml`` (or ``network_file``), with the caller's choices.

    Args:
        domain: a domain, "auto" (the exported ``ROS_DOMAIN_ID``, else an isolated one) or
            "isolated" (a domain no stack of this machine uses, whatever is exported) instead of
            the file's (:func:`choose_domain`).
        discovery_range: a ROS_AUTOMATIC_DISCOVERY_RANGE instead of the file's (or the exported one).
        ports: "auto" or "fixed" instead of the file's ``device_ports`` (profiles of the
            graph's ``loopback_profiles``: the simulated devices).
        join: accept nodes of this graph already running on a domain not reserved here.
        discovery_wait: s to look for such nodes.
        environ: the environment the exported domain and range are read from (default: this process's).
        sim_devices: a robot profile run against the simulated devices: the network of the
            graph's first ``loopback_profiles`` profile (sim), and the devices' ports and loopback
            addresses for the nodes (:meth:`PreparedNetwork.overrides`).

    Raises:
        NetworkError: invalid settings (or exported values), or no free domain.
        StackConflictError: nodes of this graph already run on the domain and ``join`` is false.
    """
    settings = load_network_settings(network_file or config_dir() / "network.yaml")
    sim_devices = sim_devices and profile not in graph.loopback_profiles
    if sim_devices and not graph.loopback_profiles:
        raise NetworkError("sim_devices: the graph has no profile with simulated devices (loopback_profiles)")
    network_profile = graph.loopback_profiles[0] if sim_devices else profile
    if network_profile not in settings:
        raise NetworkError(f"{network_file or 'network.yaml'}: no network for profile {network_profile!r}")
    setting = settings[network_profile]
    if ports is not None and ports not in DEVICE_PORT_MODES:
        raise NetworkError(f"ports: expected one of {DEVICE_PORT_MODES}, got {ports!r}")
    chosen, discovery_range, source = choose_domain(setting, parse_domain(domain), discovery_range, environ)
    lease = reserve_domain() if chosen == ISOLATED else None
    try:
        network = StackNetwork(lease.domain if lease is not None else chosen, discovery_range)
        if lease is None and not join:
            running = graph_nodes_on_network(network, [entry.name for entry in graph.nodes], discovery_wait)
            if running:
                raise StackConflictError(
                    f"domain {network.domain}: another stack runs there ({', '.join(running)} discovered with "
                    f"discovery range {network.discovery_range}; the domain came from {source}); stop it, choose "
                    f"another domain (--domain, launch argument domain:=N or domain:=isolated), or join it on "
                    f"purpose (--join, join:=true)")
        auto_ports = (ports or setting.device_ports) == "auto"
        device_ports = (SimDevicePorts.free() if auto_ports else FIXED_DEVICE_PORTS) if sim_devices else (
            SimDevicePorts.free() if auto_ports and profile in graph.loopback_profiles else None)
        return PreparedNetwork(network, lease, device_ports, source, sim_devices)
    except BaseException:
        if lease is not None:
            lease.release()
        raise


def isolated_bringup(profile: str, scene_file: str = DEFAULT_SCENE,
                     overrides: Mapping[str, Mapping[str, object]] | None = None, log_dir: Path | None = None, *,
                     domain: int | str | None = None, discovery_range: str | None = None,
                     ports: str | None = None, join: bool = False, discovery_wait: float = 2.0,
                     network_file: Path | None = None, **options) -> Bringup:
    """A :class:`Bringup` on the profile's network (:func:`prepare_network`, same arguments).

    ``domain=None`` is the file's setting: the sim profile's ``auto`` honours an exported
    ``ROS_DOMAIN_ID``; programs that start stacks of their own (the demo, the benchmarks, the
    tests) pass ``domain="isolated"`` so that a domain exported around them is never shared.
    The scene is resolved first: a missing one is refused before the network is chosen.

    Args:
        overrides: the caller's parameter overrides; they win over the chosen ports.
        options: further :class:`Bringup` fields (``graph``, ``allow_loopback``, ...).

    Raises:
        FileNotFoundError: the scene file does not exist (naming ``scene_file``).
    """
    resolve_scene_path(scene_file)
    graph = options.pop("graph", None) or load_graph()
    prepared = prepare_network(profile, graph, domain=domain, discovery_range=discovery_range, ports=ports,
                               join=join, discovery_wait=discovery_wait, network_file=network_file,
                               sim_devices=options.get("sim_devices", False))
    try:
        return Bringup(profile, scene_file, prepared.overrides(overrides), log_dir, graph=graph,
                       network=prepared.network, domain_lease=prepared.lease, device_ports=prepared.device_ports,
                       visibility=prepared.visibility(), **options)
    except BaseException:
        if prepared.lease is not None:
            prepared.lease.release()
        raise


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=PROFILES, default="sim")
    parser.add_argument("--scene", default=DEFAULT_SCENE, help="scene YAML path or name in config/scenes/")
    parser.add_argument("--param", action="append", default=[], metavar="NODE.NAME=VALUE",
                        help="parameter override for one node (repeatable)")
    parser.add_argument("--params-file", action="append", default=[], type=Path, metavar="FILE",
                        help="a ROS parameter file applied to every node after the graph's files (sections per "
                             "node name or /**; repeatable; launch argument params_file:=FILE)")
    parser.add_argument("--log-dir", type=Path, default=None, help="write each node's output to DIR/<node>.log")
    parser.add_argument("--allow-loopback", action="store_true",
                        help="let the real profile reach devices on 127.0.0.1 (refused by default: the simulator's)")
    add_network_arguments(parser)
    parser.add_argument("--join", action="store_true",
                        help="start even when nodes of this graph already run on the domain (another stack)")
    parser.add_argument("--sim-devices", action="store_true",
                        help="robot profile against the simulated devices (launch argument sim_devices:=true)")
    for argument in DEVICE_ARGUMENTS:
        parser.add_argument("--" + argument.name.replace("_", "-"), dest=f"device_{argument.name}", default="",
                            metavar=argument.kind.upper(),
                            help=f"{argument.description} (launch argument {argument.name}:=...)")
    parser.add_argument("--graph", type=Path, default=None,
                        help="a node graph file instead of the package's config/graph.yaml (tests)")
    options = parser.parse_args(args)
    try:
        graph = load_graph(options.graph)
        overrides = device_overrides({argument.name: getattr(options, f"device_{argument.name}")
                                      for argument in DEVICE_ARGUMENTS},
                                     [entry.name for entry in graph.stack_nodes(
                                         options.profile, sim_devices=options.sim_devices)])
        for node, values in parse_overrides(options.param).items():
            overrides.setdefault(node, {}).update(values)
        bringup = isolated_bringup(options.profile, options.scene, overrides, options.log_dir,
                                   domain=options.domain, discovery_range=options.discovery_range,
                                   ports=options.ports, join=options.join, allow_loopback=options.allow_loopback,
                                   parameter_files=tuple(options.params_file), sim_devices=options.sim_devices,
                                   graph=graph)
    except StackConflictError as error:
        print(f"[bringup] refused: {error}", file=sys.stderr, flush=True)
        return 3
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
    print(f"[bringup] stopped: {codes}", flush=True)
    return exit_status(bringup.stop_reason, codes)


EXIT_NODE_FAILED = 1
"""The bringup's exit status when a node ended the stack (the exit policy) or did not exit 0 when stopped."""


def exit_status(stop_reason: str | None, codes: Mapping[str, int | None]) -> int:
    """0 when the caller stopped the stack and every node exited 0; else ``EXIT_NODE_FAILED``, with
    the reason printed on one line (``[bringup] failed: ...``), as ``ros2 launch`` does."""
    failed = {name: code for name, code in codes.items() if code != 0}
    if stop_reason is None and not failed:
        return 0
    reason = stop_reason or "node(s) did not exit 0 when stopped: " + ", ".join(
        f"{name} {code}" for name, code in failed.items())
    print(f"[bringup] failed: {reason}", file=sys.stderr, flush=True)
    return EXIT_NODE_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
