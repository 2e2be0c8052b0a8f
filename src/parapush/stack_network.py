"""The ROS network of one stack: its DDS domain, its discovery range, its simulated devices' ports.

ROS-free (the bringup, the demo and the launch files apply it). Two stacks on one domain
discover each other's nodes: the second one's goal reaches the first one's MPC, its executor
the first one's gripper. So each profile's network is explicit (``config/network.yaml``):

* ``sim``: ``domain: auto`` takes the domain the user exported (``ROS_DOMAIN_ID``, and
  ``ROS_AUTOMATIC_DISCOVERY_RANGE`` where exported: :func:`exported_network`), so that the user's
  own terminal sees the stack; where nothing is exported, or where a program asks for it
  (``domain="isolated"``: the demo, the benchmarks, the tests), it reserves a domain no other stack
  of this machine uses, for the life of the run: an exclusive ``flock`` on
  ``<lock_dir>/domain-<d>.lock`` (released by the kernel when the process ends, however it
  ends) and no DDS participant of this machine on it (one holding a discovery port of the
  domain, :func:`domain_ports`); discovery stays on this machine (``LOCALHOST``, unless the
  user exported another range); the simulated devices listen on free ports (:class:`SimDevicePorts`).
* ``real``: a fixed domain and range, the robot's (every computer of the robot's stack uses it).

The RTPS port mapping (DDS-RTPS 2.x, section 9.6.1.1, the same for every DDS vendor): domain
``d``'s discovery multicast port is ``7400 + 250 d``, participant ``i``'s discovery unicast
port ``7400 + 250 d + 10 + 2 i``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import random
import socket
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from parapush.settings import check_settings, setting
from parapush.yaml_file import read_yaml

DISCOVERY_RANGES = ("SUBNET", "LOCALHOST", "OFF", "SYSTEM_DEFAULT")
"""Values of ROS_AUTOMATIC_DISCOVERY_RANGE (ROS 2 Iron and later)."""
DOMAIN_VARIABLE = "ROS_DOMAIN_ID"
RANGE_VARIABLE = "ROS_AUTOMATIC_DISCOVERY_RANGE"
AUTO = "auto"
"""A domain setting: the exported ``ROS_DOMAIN_ID`` where there is one, else an isolated domain."""
ISOLATED = "isolated"
"""A domain setting: a domain of this stack's own (:func:`reserve_domain`), whatever is exported."""
DOMAIN_KEYWORDS = (AUTO, ISOLATED)
MAX_DOMAIN = 232
"""The largest domain whose RTPS ports fit in 16 bits (7400 + 250 d + 250 <= 65535)."""
AUTO_DOMAINS = range(10, 101)
"""Domains ``domain: auto`` chooses from: above the default 0 and the few next to it that people
pick by hand, below 101 (higher domains' ports reach Linux's ephemeral range, 32768+), and apart
from the test suite's 100-199."""
DEFAULT_LOCK_DIR = Path("/tmp/parapush-domains")
PORT_BASE = 7400
DOMAIN_GAIN = 250
PARTICIPANT_GAIN = 2
UNICAST_OFFSET = 10
PROBED_PARTICIPANTS = 8
"""Participant indices whose discovery ports are probed: DDS gives a new participant the lowest
free index, so a domain in use holds index 0 unless its first participants have exited."""
DEVICE_PORT_MODES = ("auto", "fixed")
DEVICE_PORT_OFFSETS = range(2, 10)
"""Offsets in each domain's block of ``DOMAIN_GAIN`` ports that the RTPS mapping leaves unused
(the multicast ports are at 0 and 1, the unicast ports from ``UNICAST_OFFSET`` on): the simulated
devices' auto ports are chosen there, so no DDS participant of any domain binds them."""
EPHEMERAL_PORTS_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_DEVICE_PORT_CHOICE = random.Random(os.getpid())
"""Orders the candidate device ports: seeded by the process id, so that stacks started at once by
different processes try them in different orders."""


class NetworkError(ValueError):
    """Invalid network settings, or no free domain; the message names the field or the domains tried."""


@dataclass(frozen=True)
class StackNetwork:
    """The DDS domain and discovery range of a stack's processes.

    Attributes:
        domain: ROS_DOMAIN_ID, 0-232.
        discovery_range: ROS_AUTOMATIC_DISCOVERY_RANGE, one of :data:`DISCOVERY_RANGES`.
    """

    domain: int
    discovery_range: str

    def __post_init__(self) -> None:
        _check_domain(self.domain, "domain")
        if self.discovery_range not in DISCOVERY_RANGES:
            raise NetworkError(f"discovery_range: expected one of {DISCOVERY_RANGES}, got {self.discovery_range!r}")

    def environment(self) -> dict[str, str]:
        """The environment variables that put a ROS process on this network (read by rcl at init)."""
        return {DOMAIN_VARIABLE: str(self.domain), RANGE_VARIABLE: self.discovery_range}

    def export_line(self) -> str:
        """The shell line that puts a terminal on this network (``ros2 topic list`` then sees the stack)."""
        return "export " + " ".join(f"{name}={value}" for name, value in self.environment().items())

    def describe(self) -> str:
        return f"ROS domain {self.domain}, discovery range {self.discovery_range}"


@dataclass(frozen=True)
class NetworkSettings:
    """One profile's network as configured (``config/network.yaml``; ``device_ports``' meaning
    and choices: its :func:`setting`).

    Attributes:
        domain: a domain 0-232, or "auto" (the exported ``ROS_DOMAIN_ID``, else a free one of this
            machine reserved for the run: :func:`reserve_domain`), or "isolated" (always the latter).
        discovery_range: one of :data:`DISCOVERY_RANGES`.
    """

    # Not settings: both have no default (every profile names its own; a setting has one), and a domain
    # is a number or a keyword (no one kind of setting); checked below.
    domain: int | str
    discovery_range: str
    device_ports: str = setting(
        "fixed", "auto: the simulated devices listen on free ports; fixed: the ports of the profile's parameter "
        "file (only the simulated profile has devices of its own)", choices=DEVICE_PORT_MODES,
    )

    def __post_init__(self) -> None:
        if self.domain not in DOMAIN_KEYWORDS:
            _check_domain(self.domain, "domain")
        if self.discovery_range not in DISCOVERY_RANGES:
            raise NetworkError(f"discovery_range: expected one of {DISCOVERY_RANGES}, got {self.discovery_range!r}")
        try:
            check_settings(self)
        except ValueError as error:
            raise NetworkError(str(error)) from None


def _check_domain(domain: object, name: str) -> None:
    if isinstance(domain, bool) or not isinstance(domain, int) or not 0 <= domain <= MAX_DOMAIN:
        raise NetworkError(f"{name}: expected a ROS domain id in [0, {MAX_DOMAIN}], 'auto' or 'isolated', "
                           f"got {domain!r}")


def parse_domain(text: str | int | None, name: str = "domain") -> int | str | None:
    """A domain setting from a command line or launch argument: a number 0-232, "auto", "isolated",
    or None (empty or None: unset).

    Raises:
        NetworkError: naming ``name``.
    """
    if text is None or isinstance(text, int):
        if text is not None:
            _check_domain(text, name)
        return text
    text = text.strip().lower()
    if not text:
        return None
    if text in DOMAIN_KEYWORDS:
        return text
    return _domain_from_text(text, name, f"a ROS domain id in [0, {MAX_DOMAIN}], 'auto' or 'isolated'")


def _domain_from_text(text: str, name: str, expected: str) -> int:
    """``text`` as a domain id 0-232; a NetworkError naming ``name`` and what was ``expected``."""
    try:
        domain = int(text)
    except ValueError:
        raise NetworkError(f"{name}: expected {expected}, got {text!r}") from None
    _check_domain(domain, name)
    return domain


def exported_network(environ: Mapping[str, str] | None = None) -> tuple[int | None, str | None]:
    """The domain (``ROS_DOMAIN_ID``) and discovery range (``ROS_AUTOMATIC_DISCOVERY_RANGE``) exported
    in ``environ`` (default: this process's environment); None for each one unset or empty.

    Raises:
        NetworkError: an exported value rcl would not accept, naming the variable.
    """
    environ = os.environ if environ is None else environ
    text = environ.get(DOMAIN_VARIABLE, "").strip()
    domain = None
    if text:
        domain = _domain_from_text(text, DOMAIN_VARIABLE, f"a ROS domain id in [0, {MAX_DOMAIN}]")
    discovery_range = environ.get(RANGE_VARIABLE, "").strip() or None
    if discovery_range is not None and discovery_range not in DISCOVERY_RANGES:
        raise NetworkError(f"{RANGE_VARIABLE}: expected one of {DISCOVERY_RANGES}, got {discovery_range!r}")
    return domain, discovery_range


def load_network_settings(path: str | Path) -> dict[str, NetworkSettings]:
    """{profile: settings} from a network file (``config/network.yaml``)."""
    data = read_yaml(path, NetworkError, "network settings")
    if not isinstance(data, Mapping):
        raise NetworkError(f"{path}: expected a mapping from profiles to network settings")
    settings = {}
    for profile, entry in data.items():
        if not isinstance(entry, Mapping):
            raise NetworkError(f"{path}: {profile}: expected a mapping")
        unknown = sorted(set(entry) - {"domain", "discovery_range", "device_ports"})
        if unknown:
            raise NetworkError(f"{path}: {profile}: unknown field(s) {unknown}")
        try:
            settings[profile] = NetworkSettings(**entry)
        except (NetworkError, TypeError) as error:
            raise NetworkError(f"{path}: {profile}.{error}") from None
    return settings


def domain_ports(domain: int, participants: int = PROBED_PARTICIPANTS) -> tuple[int, ...]:
    """The UDP discovery ports of ``domain``: its multicast port, then the unicast ports of its
    first ``participants`` participants (RTPS port mapping)."""
    _check_domain(domain, "domain")
    base = PORT_BASE + DOMAIN_GAIN * domain
    return (base, *(base + UNICAST_OFFSET + PARTICIPANT_GAIN * index for index in range(participants)))


def port_is_held(port: int, kind: int = socket.SOCK_DGRAM) -> bool:
    """Some socket of this machine holds ``port`` of socket type ``kind`` (UDP by default; a bind
    on any address fails). A TCP port left only by closed connections (TIME_WAIT) counts as free,
    as it is for a server that sets SO_REUSEADDR (asyncio's, the gripper emulator's)."""
    with socket.socket(socket.AF_INET, kind) as probe:
        if kind == socket.SOCK_STREAM:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as error:
            if error.errno in (errno.EADDRINUSE, errno.EACCES):
                return True
            raise
    return False


def ephemeral_ports() -> range:
    """The ports the kernel hands out itself (binds to port 0, outgoing sockets); Linux's default
    32768-60999 where ``EPHEMERAL_PORTS_FILE`` cannot be read."""
    try:
        low, high = (int(value) for value in EPHEMERAL_PORTS_FILE.read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def device_port_candidates() -> list[int]:
    """Ports for the simulated devices, ascending: the ``DEVICE_PORT_OFFSETS`` of every domain's
    block (no RTPS port) outside the kernel's ephemeral range (all of them, if it leaves none)."""
    ports = [PORT_BASE + DOMAIN_GAIN * domain + offset
             for domain in range(MAX_DOMAIN + 1) for offset in DEVICE_PORT_OFFSETS]
    ephemeral = ephemeral_ports()
    return [port for port in ports if port not in ephemeral] or ports


def first_free_port(candidates: Iterable[int], kind: int, *, taken: Container[int] = ()) -> int | None:
    """The first of ``candidates`` (in their order) not in ``taken`` that no socket of this machine
    holds as socket type ``kind``; None when there is none."""
    return next((port for port in candidates if port not in taken and not port_is_held(port, kind)), None)


def domain_in_use(domain: int) -> bool:
    """A DDS participant of this machine is on ``domain`` (it holds one of :func:`domain_ports`)."""
    return any(port_is_held(port) for port in domain_ports(domain))


class DomainLease:
    """An exclusive claim on a domain among this machine's stacks: an ``flock`` held until
    :meth:`release` (or the process's end). Attributes: ``domain``, ``path`` (the lock file)."""

    def __init__(self, domain: int, path: Path, descriptor: int) -> None:
        self.domain = domain
        self.path = path
        self._descriptor: int | None = descriptor

    @property
    def held(self) -> bool:
        return self._descriptor is not None

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)  # closing drops the flock
            self._descriptor = None

    def __del__(self) -> None:  # an abandoned lease frees its domain
        self.release()

    def __enter__(self) -> DomainLease:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def try_lease(domain: int, lock_dir: Path = DEFAULT_LOCK_DIR) -> DomainLease | None:
    """The lease of ``domain``, or None when another process holds it."""
    _check_domain(domain, "domain")
    lock_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        lock_dir.chmod(0o1777)  # shared by every user of the machine, as /tmp
    path = lock_dir / f"domain-{domain}.lock"
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    with contextlib.suppress(OSError):
        os.fchmod(descriptor, 0o666)  # the next user's stack opens it too (umask removed the bits)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"{os.getpid()}\n".encode())
    return DomainLease(domain, path, descriptor)


def reserve_domain(candidates: Iterable[int] = AUTO_DOMAINS, lock_dir: Path = DEFAULT_LOCK_DIR) -> DomainLease:
    """The lease of the first domain of ``candidates`` that no other stack of this machine has
    leased and no DDS participant of this machine uses.

    Raises:
        NetworkError: every candidate is taken (naming the range tried).
    """
    candidates = list(candidates)
    for domain in candidates:
        lease = try_lease(domain, lock_dir)
        if lease is None:
            continue
        if domain_in_use(domain):
            lease.release()
            continue
        return lease
    raise NetworkError(f"domain: no free ROS domain among {candidates[0]}-{candidates[-1]} on this machine "
                       f"(leases in {lock_dir}, or DDS participants on them)" if candidates else
                       "domain: no candidate domains")


@dataclass(frozen=True)
class SimDevicePorts:
    """Where the simulated devices listen (loopback) and the stack's nodes reach them.

    Attributes:
        natnet_command: UDP port of the simulated Motive's NatNet command socket (frames go there, unicast).
        natnet_data: UDP port of its data (multicast) stream.
        gripper_tcp: TCP port of the emulated Robotiq 2F-85 (Modbus TCP).
    """

    natnet_command: int
    natnet_data: int
    gripper_tcp: int

    def __post_init__(self) -> None:
        for name in ("natnet_command", "natnet_data", "gripper_tcp"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
                raise NetworkError(f"{name}: expected a port in [1, 65535], got {value!r}")
        if self.natnet_command == self.natnet_data:
            raise NetworkError(f"natnet_data: must differ from natnet_command ({self.natnet_command})")

    @classmethod
    def free(cls, *, order: random.Random | None = None) -> SimDevicePorts:
        """Three different ports (two UDP, one TCP) that no socket of this machine holds now,
        among :func:`device_port_candidates`, tried in the order ``order`` shuffles them into
        (default: a generator seeded by the process id).

        The candidates are ports that nothing else takes by chance before the simulated driver
        binds them: no DDS participant binds them and the kernel does not hand them out. Ports
        the kernel picks itself (a bind to port 0) lie in its ephemeral range, as do the RTPS
        ports of domains 101 and above; a node's DDS socket once took such a port between
        this choice and the driver's bind ("Address already in use").

        Raises:
            NetworkError: every candidate is held.
        """
        candidates = device_port_candidates()
        (order or _DEVICE_PORT_CHOICE).shuffle(candidates)
        chosen: list[int] = []
        for kind in (socket.SOCK_DGRAM, socket.SOCK_DGRAM, socket.SOCK_STREAM):
            port = first_free_port(candidates, kind, taken=chosen)
            if port is None:
                raise NetworkError(f"device ports: all {len(candidates)} candidate ports are held on this machine")
            chosen.append(port)
        return cls(*chosen)

    def overrides(self) -> dict[str, dict[str, object]]:
        """The parameter overrides that give these ports to the simulated driver and to its clients."""
        return {
            "sim_driver": {"natnet_command_port": self.natnet_command, "natnet_data_port": self.natnet_data,
                           "gripper_tcp_port": self.gripper_tcp},
            "state_estimator": {"command_port": self.natnet_command},
            "executor": {"gripper.address": f"tcp://127.0.0.1:{self.gripper_tcp}"},
        }

    def describe(self) -> str:
        return (f"NatNet command UDP {self.natnet_command}, data UDP {self.natnet_data}, "
                f"gripper Modbus TCP {self.gripper_tcp}")
