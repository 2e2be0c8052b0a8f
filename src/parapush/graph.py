"""The node graph (config/graph.yaml): which nodes run, with which parameter files, per profile.

ROS-free, so the launch files, the bringup and the static checks all read the same file.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

PROFILES = ("sim", "real")
ON_EXIT = ("respawn", "shutdown")
PACKAGE = "parareal_pushing"
DEFAULT_SCENE = "clutter_fig1.yaml"
WILDCARD_SECTION = "/**"
"""A parameter file's section that applies to every node given the file (ROS 2 wildcard)."""
LOOPBACK_HOST_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
MAX_NICE = 19
"""The lowest scheduling priority a node may ask for (Linux nice values: 0 default, 19 lowest)."""
SIGINT_TIMEOUT = 10.0
"""s a node gets to exit after its SIGINT before it gets SIGTERM: the bringup's per stage, the
launch files' ``sigterm_timeout`` (every node at once, so the simulated driver keeps its devices
up for its ``shutdown_grace`` while the executor releases the gripper)."""
SIGTERM_TIMEOUT = 3.0
"""s a node gets after its SIGTERM before SIGKILL (the bringup's; the launch files' ``sigkill_timeout``)."""


@dataclass(frozen=True)
class DeviceArgument:
    """A device address or port the launch files and the bringup take as an argument.

    Attributes:
        name: the launch argument (``natnet_server:=...``; bringup ``--natnet-server``).
        kind: the parameter's type, "str", "int" or "bool" (the argument is text).
        targets: (node, parameter) pairs the value is given to.
        description: what it is, with its unit.
    """

    name: str
    kind: str
    targets: tuple[tuple[str, str], ...]
    description: str

    def __post_init__(self) -> None:
        if self.kind not in ("str", "int", "bool"):
            raise GraphError(f"{self.name}.kind: expected str, int or bool, got {self.kind!r}")
        if not self.targets:
            raise GraphError(f"{self.name}.targets: expected at least one (node, parameter)")

    def value(self, text: str) -> object:
        """The parameter value of the argument's ``text``.

        Raises:
            GraphError: naming the argument.
        """
        text = text.strip()
        if self.kind == "bool":
            if text.lower() not in ("true", "false", "1", "0"):
                raise GraphError(f"{self.name}: expected true or false, got {text!r}")
            return text.lower() in ("true", "1")
        if self.kind == "int":
            try:
                return int(text)
            except ValueError:
                raise GraphError(f"{self.name}: expected an integer, got {text!r}") from None
        return text


DEVICE_ARGUMENTS = (
    DeviceArgument("natnet_server", "str", (("state_estimator", "server_address"),),
                   "Motive's host (NatNet server IPv4 address)"),
    DeviceArgument("natnet_local", "str", (("state_estimator", "local_interface"),),
                   "local IPv4 address facing Motive"),
    DeviceArgument("natnet_multicast", "bool", (("state_estimator", "multicast"),),
                   "true: NatNet data by multicast; false: unicast"),
    DeviceArgument("natnet_multicast_group", "str", (("state_estimator", "multicast_group"),),
                   "NatNet multicast group (empty in the file: as announced by Motive)"),
    DeviceArgument("natnet_command_port", "int", (("state_estimator", "command_port"),),
                   "Motive's NatNet command UDP port"),
    DeviceArgument("natnet_data_port", "int", (("state_estimator", "data_port"),),
                   "NatNet multicast data UDP port (0 in the file: as announced by Motive)"),
    DeviceArgument("gripper_address", "str", (("executor", "gripper.address"),),
                   "Robotiq 2F-85: a serial device (/dev/ttyUSB0) or tcp://host:port (Modbus TCP)"),
    DeviceArgument("twist_topic", "str", (("executor", "twist_topic"), ("sim_driver", "twist_topic")),
                   "the arm's TwistStamped input (MoveIt Servo's delta_twist_cmds)"),
)
"""Every device address and port of the stack, as launch arguments (empty: the parameter files')."""


def device_overrides(values: Mapping[str, str], nodes: Sequence[str]) -> dict[str, dict[str, object]]:
    """{node: {parameter: value}} for the device arguments in ``values`` (by argument name; empty
    text: not given), for the nodes named in ``nodes``.

    Raises:
        GraphError: an unknown argument or a value of the wrong type, naming the argument.
    """
    known = {argument.name: argument for argument in DEVICE_ARGUMENTS}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise GraphError(f"device arguments: unknown {unknown}; known: {sorted(known)}")
    overrides: dict[str, dict[str, object]] = {}
    for name, text in values.items():
        if text is None or not str(text).strip():
            continue
        value = known[name].value(str(text))
        for node, parameter in known[name].targets:
            if node in nodes:
                overrides.setdefault(node, {})[parameter] = value
    return overrides


class GraphError(ValueError):
    """The graph description is invalid; the message names the entry."""


@dataclass(frozen=True)
class NodeEntry:
    """One node of the graph.

    Attributes:
        name: ROS node name.
        executable: executable of the package (module ``parapush.nodes.<executable>``).
        parameters: parameter file names, relative to the config directory, in the order they
            apply (later files win; e.g. the shared ``model.yaml`` first, then the node's own).
            A file's section for the node (its name) or for every node (``/**``) applies.
        profiles: profiles the node runs in (subset of ``PROFILES``).
        on_exit: what happens when the node's process exits while the stack runs:
            "respawn" (started again after ``respawn_delay``; once ``max_restarts`` restarts are
            used up, its next exit shuts the stack down) or "shutdown" (the stack stops).
        respawn_delay: s between the exit and the restart (respawn only).
        max_restarts: restarts allowed, >= 1 (respawn only).
        nice: the node's scheduling niceness, an integer in [0, ``MAX_NICE``]: 0 (the default
            priority) for the nodes that must keep their rates whatever else runs (the state
            estimator, the executor, the drivers); positive (lower priority) for work that may
            slow down under overload (planning, the prediction service's fine workers,
            visualization). The bringup sets it in the child before ``exec`` and the launch files
            start the node under ``nice -n``, so every thread and worker process the node starts
            inherits it. Negative values (a higher priority than the default) would need
            privileges and are refused.
    """

    name: str
    executable: str
    parameters: tuple[str, ...]
    profiles: tuple[str, ...]
    on_exit: str
    respawn_delay: float | None = None
    max_restarts: int | None = None
    nice: int = 0

    def __post_init__(self) -> None:
        for field_name in ("name", "executable"):
            value = getattr(self, field_name)
            if not isinstance(value, str) or not value:
                raise GraphError(f"nodes[{self.name!r}].{field_name}: expected a non-empty string")
        files = (self.parameters,) if isinstance(self.parameters, str) else tuple(self.parameters or ())
        if not files or not all(isinstance(name, str) and name for name in files):
            raise GraphError(f"nodes[{self.name!r}].parameters: expected a file name or a non-empty list of them")
        object.__setattr__(self, "parameters", files)
        object.__setattr__(self, "profiles", tuple(self.profiles))
        unknown = [profile for profile in self.profiles if profile not in PROFILES]
        if unknown or not self.profiles:
            raise GraphError(f"nodes[{self.name!r}].profiles: expected a non-empty subset of {PROFILES}, got {unknown}")
        if self.on_exit not in ON_EXIT:
            raise GraphError(f"nodes[{self.name!r}].on_exit: expected one of {ON_EXIT}, got {self.on_exit!r}")
        if isinstance(self.nice, bool) or not isinstance(self.nice, int) or not 0 <= self.nice <= MAX_NICE:
            raise GraphError(f"nodes[{self.name!r}].nice: expected an integer in [0, {MAX_NICE}] "
                             f"(0: the default priority), got {self.nice!r}")
        if self.on_exit == "shutdown":
            for field_name in ("respawn_delay", "max_restarts"):
                if getattr(self, field_name) is not None:
                    raise GraphError(f"nodes[{self.name!r}].{field_name}: only for on_exit: respawn")
            return
        delay = self.respawn_delay
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0.0 <= delay <= 600.0:
            raise GraphError(f"nodes[{self.name!r}].respawn_delay: expected seconds in [0, 600], got {delay!r}")
        object.__setattr__(self, "respawn_delay", float(delay))
        restarts = self.max_restarts
        if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 1:
            raise GraphError(f"nodes[{self.name!r}].max_restarts: expected an integer >= 1, got {restarts!r}")

    @property
    def respawns(self) -> bool:
        return self.on_exit == "respawn"


@dataclass(frozen=True)
class NodeGraph:
    """The nodes, and per profile a parameter file applied to every node after its own.

    Attributes:
        nodes: the nodes.
        config_dir: directory the parameter files are in.
        profile_parameters: {profile: file name}: a ROS 2 parameter file with one section per
            node that the profile configures differently (e.g. the simulated devices' ports).
        shutdown_order: stages of node names, stopped one stage after the other (each stage's
            nodes together); every node is in exactly one stage.
        device_addresses: {node: parameter names}: where the node reaches a device (e.g. the
            state estimator's ``server_address``, Motive's host).
        loopback_profiles: profiles whose devices are on this machine's loopback (the
            simulated driver's); the others refuse a loopback or unset device address unless
            told so (:meth:`check_device_addresses`).
    """

    nodes: tuple[NodeEntry, ...]
    config_dir: Path
    profile_parameters: dict[str, str] = field(default_factory=dict)
    shutdown_order: tuple[tuple[str, ...], ...] = ()
    device_addresses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    loopback_profiles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        stages = tuple(tuple(stage) for stage in self.shutdown_order)
        object.__setattr__(self, "shutdown_order", stages)
        staged = [name for stage in stages for name in stage]
        names = [node.name for node in self.nodes]
        if sorted(staged) != sorted(names) or any(not stage for stage in stages):
            raise GraphError(f"shutdown_order: expected non-empty stages naming every node once ({names}), "
                             f"got {[list(stage) for stage in stages]}")
        unknown = sorted(set(self.device_addresses) - set(names))
        if unknown:
            raise GraphError(f"device_addresses: no node(s) {unknown} in the graph")
        object.__setattr__(self, "loopback_profiles", tuple(self.loopback_profiles))
        if not set(self.loopback_profiles) <= set(PROFILES):
            raise GraphError(f"loopback_profiles: expected a subset of {PROFILES}, got {list(self.loopback_profiles)}")

    def parameter_value(self, node: NodeEntry, profile: str, name: str,
                        overrides: Mapping[str, object] | None = None) -> object | None:
        """The value the node gets for parameter ``name`` (dotted) from its files and ``overrides``.

        Returns None when neither sets it (the node's own default applies).
        """
        value = None
        for path in self.parameter_files(node, profile):
            data = yaml.safe_load(path.read_text()) or {}
            for section in (WILDCARD_SECTION, node.name):  # the node's own section wins
                found = _dotted_value((data.get(section) or {}).get("ros__parameters", {}), name.split("."))
                if found is not None:
                    value = found
        if overrides is not None and name in overrides:
            value = overrides[name]
        return value

    def check_device_addresses(self, profile: str, overrides: Mapping[str, Mapping[str, object]] | None = None,
                               *, allow_loopback: bool = False) -> None:
        """Refuse to run ``profile`` with a device address on loopback (or unset), unless allowed.

        On the robot, a node left on the simulator's 127.0.0.1 talks to nothing (or to a simulator
        left running) and, e.g. for the state estimator, publishes stale states.

        Raises:
            GraphError: naming the node, the parameter and its value, and how to allow it.
        """
        if allow_loopback or profile in self.loopback_profiles:
            return
        overrides = overrides or {}
        for node in self.for_profile(profile):
            for name in self.device_addresses.get(node.name, ()):
                value = self.parameter_value(node, profile, name, overrides.get(node.name))
                if value is None or is_loopback_address(str(value)):
                    shown = "unset (the node's default is the simulator's loopback)" if value is None else repr(value)
                    raise GraphError(
                        f"{node.name}.{name} is {shown} in profile {profile!r}: give the device's address "
                        f"(launch arguments natnet_server:=HOST gripper_address:=ADDRESS, bringup "
                        f"--natnet-server/--gripper-address, or the parameter file), run against the "
                        f"simulated devices (launch argument sim_devices:=true, bringup --sim-devices), or "
                        f"allow loopback explicitly (allow_loopback:=true, bringup --allow-loopback)")

    def stack_nodes(self, profile: str, *, sim_devices: bool = False) -> tuple[NodeEntry, ...]:
        """The nodes of ``profile``; with ``sim_devices``, also the simulated devices' nodes (those
        only in ``loopback_profiles``, e.g. the simulated driver), for a robot profile run against them."""
        nodes = self.for_profile(profile)
        if not sim_devices or profile in self.loopback_profiles:
            return nodes
        return tuple(node for node in self.nodes if node in nodes
                     or (set(node.profiles) <= set(self.loopback_profiles) and profile not in node.profiles))

    def shutdown_stages(self, profile: str, *, sim_devices: bool = False) -> tuple[tuple[NodeEntry, ...], ...]:
        """The nodes of ``profile`` (:meth:`stack_nodes`) in the order they are stopped (stages without
        them left out)."""
        running = {node.name: node for node in self.stack_nodes(profile, sim_devices=sim_devices)}
        stages = (tuple(running[name] for name in stage if name in running) for stage in self.shutdown_order)
        return tuple(stage for stage in stages if stage)

    def for_profile(self, profile: str) -> tuple[NodeEntry, ...]:
        if profile not in PROFILES:
            raise GraphError(f"profile: expected one of {PROFILES}, got {profile!r}")
        return tuple(node for node in self.nodes if profile in node.profiles)

    def parameters_paths(self, node: NodeEntry) -> list[Path]:
        """The node's own parameter files (without the profile's), in the order they apply."""
        return [self.config_dir / name for name in node.parameters]

    def parameter_files(self, node: NodeEntry, profile: str) -> list[Path]:
        """The node's parameter files in the order they apply (later files win)."""
        files = self.parameters_paths(node)
        if profile in self.profile_parameters:
            files.append(self.config_dir / self.profile_parameters[profile])
        return files

    def node(self, name: str) -> NodeEntry:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r} in the graph; nodes: {[n.name for n in self.nodes]}")


def _dotted_value(parameters: object, keys: list[str]) -> object | None:
    """The value of the parameter named by ``keys`` in a ROS parameter mapping, where any run of
    them may be one key with dots (``gripper: {address: ...}`` or ``gripper.address: ...``)."""
    if not keys:
        return parameters
    if not isinstance(parameters, Mapping):
        return None
    for split in range(len(keys), 0, -1):
        key = ".".join(keys[:split])
        if key in parameters:
            found = _dotted_value(parameters[key], keys[split:])
            if found is not None:
                return found
    return None


def is_loopback_address(host: str) -> bool:
    """``host`` (an IP address or a host name) is this machine's loopback (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() in LOOPBACK_HOST_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip()).is_loopback
    except ValueError:
        return False


def config_dir() -> Path:
    """The package's config directory: the source tree's, else the installed share directory."""
    source = Path(__file__).resolve().parents[2] / "config"
    if (source / "graph.yaml").is_file():
        return source
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        candidate = Path(prefix) / "share" / PACKAGE / "config"
        if (candidate / "graph.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"cannot find the {PACKAGE} config directory (source tree or AMENT_PREFIX_PATH)")


def load_graph(path: str | Path | None = None) -> NodeGraph:
    """Read and validate the node graph (default: ``config/graph.yaml``)."""
    path = Path(path) if path is not None else config_dir() / "graph.yaml"
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, Mapping) or not isinstance(data.get("nodes"), list):
        raise GraphError(f"{path}: expected a mapping with a 'nodes' list")
    nodes = []
    for index, item in enumerate(data["nodes"]):
        if not isinstance(item, Mapping):
            raise GraphError(f"{path}: nodes[{index}]: expected a mapping")
        unknown = sorted(set(item) - {entry_field.name for entry_field in fields(NodeEntry)})
        if unknown:
            raise GraphError(f"{path}: nodes[{index}]: unknown field(s) {unknown}")
        try:
            nodes.append(NodeEntry(**item))
        except TypeError as error:
            raise GraphError(f"{path}: nodes[{index}]: {error}") from None
    names = [node.name for node in nodes]
    if len(set(names)) != len(names):
        raise GraphError(f"{path}: duplicate node names in {names}")
    unknown = sorted(set(data) - {"nodes", "profile_parameters", "shutdown_order", "device_addresses",
                                  "loopback_profiles"})
    if unknown:
        raise GraphError(f"{path}: unknown field(s) {unknown}")
    profile_parameters = data.get("profile_parameters") or {}
    if not isinstance(profile_parameters, Mapping) or not set(profile_parameters) <= set(PROFILES):
        raise GraphError(f"{path}: profile_parameters: expected a mapping from {PROFILES} to file names")
    shutdown_order = data.get("shutdown_order")
    if not isinstance(shutdown_order, list) or not all(isinstance(stage, list) for stage in shutdown_order):
        raise GraphError(f"{path}: shutdown_order: expected a list of stages (lists of node names)")
    device_addresses = data.get("device_addresses") or {}
    if not isinstance(device_addresses, Mapping) or not all(
            isinstance(names, list) and all(isinstance(name, str) for name in names)
            for names in device_addresses.values()):
        raise GraphError(f"{path}: device_addresses: expected a mapping from node names to lists of parameter names")
    loopback_profiles = data.get("loopback_profiles") or []
    if not isinstance(loopback_profiles, list):
        raise GraphError(f"{path}: loopback_profiles: expected a list of profiles")
    try:
        return NodeGraph(nodes=tuple(nodes), config_dir=path.parent, profile_parameters=dict(profile_parameters),
                         shutdown_order=tuple(tuple(stage) for stage in shutdown_order),
                         device_addresses={node: tuple(names) for node, names in device_addresses.items()},
                         loopback_profiles=tuple(loopback_profiles))
    except GraphError as error:
        raise GraphError(f"{path}: {error}") from None


def resolve_scene_path(scene_file: str) -> Path:
    """A scene by the stack's one config-file rule (:func:`parapush.yaml_file.config_file`): a
    path, or a bare file name in the package's ``config/scenes/``; empty: :data:`DEFAULT_SCENE`.

    Raises:
        FileNotFoundError: naming ``scene_file`` and what was looked for.
    """
    from parapush.yaml_file import config_file  # not at module level: parapush.yaml_file imports config_dir from here

    try:
        return config_file(scene_file or DEFAULT_SCENE, config_dir() / "scenes")
    except FileNotFoundError as error:
        raise FileNotFoundError(f"scene_file: {error}") from None
