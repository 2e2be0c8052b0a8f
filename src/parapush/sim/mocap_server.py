"""A simulated OptiTrack Motive: a NatNet server streaming rigid-body poses over UDP.

The server answers the command socket like Motive does (CONNECT -> SERVERINFO, REQUEST_MODELDEF
-> MODELDEF, KEEPALIVE and DISCONNECT), remembers unicast clients by the source address of their
CONNECT / KEEPALIVE / REQUEST_MODELDEF and forgets them after ``client_timeout_s`` without one, and
streams FRAMEOFDATA at ``rate_hz``: in unicast to each client's source address (modern NatNet
clients receive frames on their command socket) and/or by multicast to ``multicast_group:data_port``
sent through the interface ``host``.

Poses come from a ``frame_source`` callable the simulated world supplies, so the server does not
know about MuJoCo. The server adds frame numbers (consecutive), the server-clock timestamp (s since
``start``), and high-resolution ticks (``time.monotonic_ns`` scaled to
``high_resolution_clock_frequency``): mid-exposure when the source is sampled, data-received when it
returns, transmit just before the datagram is sent (``latency_s`` later than the sample).

Fault injection, all reproducible from ``rng_seed``: random datagram loss (``drop_probability``),
bodies untracked for a time window (sent with tracking-valid cleared, or omitted), and corrupted
(truncated or garbled) frames on demand.

Usage::

    def poses():
        return [BodySample(id=1, name="box", position=(0.4, 0.0, 0.05), orientation=(0, 0, 0, 1))]

    with MocapServer(poses, settings=MocapServerSettings(command_port=0)) as server:
        host, port = server.command_address
        ...
"""

from __future__ import annotations

import collections
import enum
import logging
import math
import random
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from parapush.background import bound_address, close_sockets, new_udp_socket, stop_thread
from parapush.lifecycle import Service
from parapush.natnet.codec import decode_message, encode_message
from parapush.natnet.errors import NatNetDecodeError
from parapush.natnet.frames import MocapFrame, RigidBody
from parapush.natnet.messages import (
    CommandRequest,
    Connect,
    Disconnect,
    KeepAlive,
    RequestFrameOfData,
    RequestModelDefinitions,
    ServerInfo,
    UnrecognizedRequest,
)
from parapush.natnet.models import ModelDefinitions, RigidBodyDescription
from parapush.natnet.version import SUPPORTED_VERSIONS, NatNetVersion
from parapush.read_only import ReadOnly
from parapush.settings import check_settings, setting
from parapush.validation import check_integer, check_ipv4

__all__ = [
    "BodySample",
    "CorruptionKind",
    "FrameSource",
    "MocapServer",
    "MocapServerSettings",
    "MocapServerStats",
    "UntrackMode",
]

_LOG = logging.getLogger(__name__)

Address = tuple[str, int]

_MAX_CLIENTS = 64
_MAX_COMMANDS_PER_WAKE = 256
_MAX_POLL_S = 0.02
_DROP_LOG_LENGTH = 100_000
_RECEIVE_BYTES = 65536


@dataclass(frozen=True)
class BodySample:
    """Pose of one rigid body, supplied by the world for one frame.

    Attributes:
        id: streaming id (int32).
        name: rigid-body name served in MODELDEF.
        position: (x, y, z) in m, mocap frame.
        orientation: unit quaternion (qx, qy, qz, qw), mocap frame.
        tracking_valid: False if the world considers the body occluded in this frame.
        mean_error: m, mean marker error to report.
    """

    id: int
    name: str
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]
    tracking_valid: bool = True
    mean_error: float = 0.0

    def __post_init__(self) -> None:
        check_integer("BodySample.id", self.id, minimum=-(2**31), maximum=2**31 - 1)
        if not isinstance(self.name, str):
            raise ValueError(f"BodySample.name must be a str, got {type(self.name).__name__}")
        for name, size, what in (("position", 3, "(x, y, z) in m"), ("orientation", 4, "(qx, qy, qz, qw)")):
            if len(getattr(self, name)) != size:
                raise ValueError(f"BodySample.{name}: expected {what}, got {len(getattr(self, name))} values")
        values = (*self.position, *self.orientation, self.mean_error)
        if self.tracking_valid and not all(math.isfinite(float(v)) for v in values):
            raise ValueError(f"BodySample {self.id} ({self.name!r}) is tracked but has a non-finite pose")


FrameSource = Callable[[], Iterable["BodySample | tuple"]]
"""Returns the bodies of one frame: BodySample objects or tuples
``(id, name, position, orientation[, tracking_valid[, mean_error]])``."""


class UntrackMode(enum.Enum):
    """How an untracked body appears in frames."""

    INVALID = "invalid"  # sent with tracking-valid cleared and its last tracked pose
    OMIT = "omit"  # left out of the frame


class CorruptionKind(enum.Enum):
    """How a corrupted frame datagram is damaged."""

    TRUNCATE = "truncate"  # cut short (header still declares the full size): always detectable
    GARBLE = "garble"  # a few payload bytes overwritten: may decode into wrong data


@dataclass(frozen=True)
class MocapServerSettings:
    """Settings of :class:`MocapServer` (each field's meaning, unit and range: its :func:`setting`).

    Attributes:
        natnet_version: bitstream version spoken (3.0, 3.1, 4.0, 4.1 or 4.2); a string like "4.1"
            is accepted.
        application_version: application version reported in SERVERINFO (4 bytes).
    """

    host: str = setting("127.0.0.1", "IPv4 address to bind the command socket to and to send multicast through")
    command_port: int = setting(
        1510, "UDP command port (1510 for Motive; 0: an ephemeral port, see MocapServer.command_address)",
        minimum=0, maximum=65535,
    )
    data_port: int = setting(
        1511, "UDP destination port of the multicast stream (1511 for Motive)", minimum=1, maximum=65535
    )
    multicast_group: str = setting("239.255.42.99", "IPv4 multicast group of the data stream")
    stream_unicast: bool = setting(True, "send frames to registered unicast clients")
    stream_multicast: bool = setting(False, "send frames to multicast_group:data_port")
    multicast_ttl: int = setting(1, "IP TTL of multicast datagrams (1: local network only)", minimum=0, maximum=255)
    rate_hz: float = setting(120.0, "frame rate", unit="Hz", above=0.0, maximum=10_000.0)
    # Not a setting: a NatNetVersion object (a "major.minor" string is converted), checked below.
    natnet_version: NatNetVersion = NatNetVersion(4, 1)
    application_name: str = setting("Motive (parapush simulation)", "name reported in SERVERINFO")
    # Not a setting: 4 integers (bytes; a tuple setting holds real numbers), checked below.
    application_version: tuple[int, int, int, int] = (3, 1, 0, 0)
    high_resolution_clock_frequency: int = setting(
        10_000_000, "tick rate of the server's high-resolution clock", unit="ticks/s", minimum=1, maximum=2**63 - 1
    )
    client_timeout_s: float = setting(
        5.0, "time without CONNECT / KEEPALIVE / REQUEST_MODELDEF after which a unicast client is forgotten",
        unit="s", above=0.0,
    )
    latency_s: float = setting(
        0.0, "time between sampling the frame source (mid-exposure) and sending the frame; shorter than a frame "
        "period", unit="s", minimum=0.0,
    )
    drop_probability: float = setting(
        0.0, "probability that a frame datagram is not sent (per destination)", minimum=0.0, maximum=1.0
    )
    rng_seed: int = setting(0, "seed of the loss and corruption random generator", minimum=0)

    def __post_init__(self) -> None:
        check_settings(self)
        if isinstance(self.natnet_version, str):
            object.__setattr__(self, "natnet_version", NatNetVersion.parse(self.natnet_version))
        if not isinstance(self.natnet_version, NatNetVersion):
            raise ValueError(
                f"natnet_version must be a NatNetVersion or 'major.minor', got {self.natnet_version!r}"
            )
        if self.natnet_version.major_minor not in {v.major_minor for v in SUPPORTED_VERSIONS}:
            supported = ", ".join(f"{v.major}.{v.minor}" for v in SUPPORTED_VERSIONS)
            raise ValueError(f"natnet_version must be one of {supported}, got {self.natnet_version}")
        check_ipv4("host", self.host)
        check_ipv4("multicast_group", self.multicast_group, multicast=True)
        if not (self.stream_unicast or self.stream_multicast):
            raise ValueError("stream_unicast and stream_multicast are both False: nothing would be streamed")
        if len(self.application_version) != 4 or not all(0 <= v <= 255 for v in self.application_version):
            raise ValueError(
                f"application_version must be 4 ints in 0..255, got {self.application_version!r}"
            )
        if len(self.application_name.encode("utf-8")) > 255:
            raise ValueError("application_name must encode to at most 255 UTF-8 bytes")
        if self.latency_s >= 1.0 / self.rate_hz:
            raise ValueError(
                f"latency_s: expected < 1/rate_hz = {1.0 / self.rate_hz:.6f} s, got {self.latency_s}"
            )

    @property
    def frame_period_s(self) -> float:
        """s between frames."""
        return 1.0 / self.rate_hz


@dataclass(frozen=True)
class MocapServerStats:
    """Counters of a :class:`MocapServer` (a snapshot).

    Attributes:
        frames_generated: frames sampled from the source.
        datagrams_sent: frame datagrams sent (unicast and multicast together).
        datagrams_dropped: frame datagrams withheld by ``drop_probability``.
        frames_corrupted: frames damaged on request.
        late_frames: times the stream fell more than one period behind and was re-timed.
        source_errors: frames skipped because the frame source raised or returned bad data.
        send_errors: datagrams the OS refused to send.
        commands_received: command datagrams decoded.
        malformed_commands: command datagrams that did not decode.
        clients: registered unicast client addresses.
    """

    frames_generated: int = 0
    datagrams_sent: int = 0
    datagrams_dropped: int = 0
    frames_corrupted: int = 0
    late_frames: int = 0
    source_errors: int = 0
    send_errors: int = 0
    commands_received: int = 0
    malformed_commands: int = 0
    clients: tuple[Address, ...] = ()


@dataclass
class _Untracking:
    body_id: int
    start_s: float
    end_s: float
    mode: UntrackMode


@dataclass
class _PendingFrame:
    send_at_s: float
    frame: MocapFrame


class MocapServer(Service):
    """NatNet server streaming the poses returned by ``frame_source``; see the module docstring.

    Args:
        frame_source: called once per frame in the server thread; returns the bodies of the frame.
            If it raises, the frame is skipped, counted in ``source_errors`` and logged.
        settings: server settings.
        rigid_body_descriptions: MODELDEF served to clients; by default built from the ids and
            names of the bodies the source last returned (no markers, no parent).
    """

    def __init__(
        self,
        frame_source: FrameSource,
        *,
        settings: MocapServerSettings | None = None,
        rigid_body_descriptions: Sequence[RigidBodyDescription] | None = None,
    ) -> None:
        if not callable(frame_source):
            raise ValueError("frame_source must be callable")
        self._source = frame_source
        self._settings = settings if settings is not None else MocapServerSettings()
        self._fixed_descriptions = None if rigid_body_descriptions is None else tuple(rigid_body_descriptions)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._command_socket: socket.socket | None = None
        self._multicast_socket: socket.socket | None = None
        self._clients: dict[Address, float] = {}
        self._untrackings: list[_Untracking] = []
        self._corruptions: collections.deque[CorruptionKind] = collections.deque()
        self._counts = MocapServerStats()
        self._dropped: collections.deque = collections.deque(maxlen=_DROP_LOG_LENGTH)
        self._rng = random.Random(self._settings.rng_seed)
        self._next_frame_number = 0
        self._start_time_s = 0.0
        self._last_tracked_pose: dict[int, tuple[tuple[float, ...], tuple[float, ...]]] = {}
        self._last_models: tuple[tuple[int, str], ...] | None = None
        self._source_models: tuple[tuple[int, str], ...] = ()

    # ----------------------------------------------------------------- lifecycle

    settings: ReadOnly[MocapServerSettings] = ReadOnly("_settings")

    def start(self) -> MocapServer:
        """Bind the sockets and start streaming; returns self. Raises OSError if a bind fails."""
        if self._thread is not None:
            raise RuntimeError("MocapServer is already running")
        settings = self._settings
        with new_udp_socket() as command_socket:
            command_socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            command_socket.bind((settings.host, settings.command_port))
            command_socket.setblocking(False)
            multicast_socket = self._open_multicast_socket() if settings.stream_multicast else None
        self._command_socket = command_socket
        self._multicast_socket = multicast_socket
        self._stop.clear()
        self._start_time_s = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="MocapServer", daemon=True)
        self._thread.start()
        _LOG.info(
            "NatNet %s mocap server on %s:%d at %.1f Hz (unicast %s, multicast %s)",
            settings.natnet_version,
            *self.command_address,
            settings.rate_hz,
            settings.stream_unicast,
            f"{settings.multicast_group}:{settings.data_port}" if settings.stream_multicast else "off",
        )
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop streaming, join the thread and close the sockets (idempotent)."""
        stop_thread(self._thread, self._stop, timeout_s, "MocapServer thread")
        self._thread = None
        close_sockets(self._command_socket, self._multicast_socket)
        self._command_socket = None
        self._multicast_socket = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def command_address(self) -> Address:
        """(host, port) of the bound command socket (the real port when ``command_port`` is 0)."""
        return bound_address(self._command_socket, "MocapServer")

    @property
    def server_info(self) -> ServerInfo:
        """The SERVERINFO this server answers CONNECT with."""
        settings = self._settings
        return ServerInfo(
            application_name=settings.application_name,
            application_version=settings.application_version,
            natnet_version=settings.natnet_version,
            high_resolution_clock_frequency=settings.high_resolution_clock_frequency,
            data_port=settings.data_port,
            is_multicast=settings.stream_multicast,
            multicast_address=settings.multicast_group,
        )

    def model_definitions(self) -> ModelDefinitions:
        """The MODELDEF this server answers REQUEST_MODELDEF with."""
        if self._fixed_descriptions is not None:
            return ModelDefinitions(rigid_bodies=self._fixed_descriptions)
        with self._lock:
            models = self._source_models
        return ModelDefinitions(rigid_bodies=tuple(RigidBodyDescription(name=n, id=i) for i, n in models))

    def stats(self) -> MocapServerStats:
        with self._lock:
            return replace(self._counts, clients=tuple(self._clients))

    def _count(self, counter: str, amount: int) -> None:
        """Add ``amount`` to one counter of :class:`MocapServerStats`."""
        self._counts = replace(self._counts, **{counter: getattr(self._counts, counter) + amount})

    def dropped_frames(self) -> tuple[tuple[int, Address], ...]:
        """(frame number, destination) of every datagram withheld by ``drop_probability``
        (the last 100000)."""
        with self._lock:
            return tuple(self._dropped)

    # ----------------------------------------------------------------- fault injection

    def untrack(
        self,
        body_id: int,
        *,
        duration_s: float,
        mode: UntrackMode = UntrackMode.INVALID,
        delay_s: float = 0.0,
    ) -> None:
        """Make body ``body_id`` untracked from ``delay_s`` s from now for ``duration_s`` s.

        In ``UntrackMode.INVALID`` the body is sent with tracking-valid cleared and its last
        tracked pose (zeros and identity if it was never tracked); in ``UntrackMode.OMIT`` it is
        left out of the frames.
        """
        if not (math.isfinite(duration_s) and duration_s > 0.0):
            raise ValueError(f"duration_s must be > 0 s, got {duration_s}")
        if not (math.isfinite(delay_s) and delay_s >= 0.0):
            raise ValueError(f"delay_s must be >= 0 s, got {delay_s}")
        if not isinstance(mode, UntrackMode):
            raise ValueError(f"mode must be an UntrackMode, got {mode!r}")
        start = time.monotonic() + delay_s
        with self._lock:
            self._untrackings.append(_Untracking(body_id, start, start + duration_s, mode))

    def set_drop_probability(self, probability: float) -> None:
        """Change ``settings.drop_probability`` while streaming: frame datagrams lost from now on."""
        settings = replace(self._settings, drop_probability=probability)  # validates it
        with self._lock:
            self._settings = settings

    def corrupt_next_frames(self, count: int = 1, *, kind: CorruptionKind = CorruptionKind.TRUNCATE) -> None:
        """Damage the next ``count`` frames (every destination receives the same damaged bytes)."""
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        if not isinstance(kind, CorruptionKind):
            raise ValueError(f"kind must be a CorruptionKind, got {kind!r}")
        with self._lock:
            self._corruptions.extend([kind] * count)

    def send_raw(self, datagram: bytes) -> int:
        """Send ``datagram`` as is to every frame destination, from the server's sockets.

        Used to test clients against arbitrary bytes from the server address. Returns the number
        of datagrams sent.
        """
        if self._command_socket is None:
            raise RuntimeError("MocapServer is not started")
        return self._send_to_destinations(bytes(datagram), frame_number=None)

    # ----------------------------------------------------------------- server thread

    def _open_multicast_socket(self) -> socket.socket:
        settings = self._settings
        with new_udp_socket() as sock:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(settings.host))
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, settings.multicast_ttl)
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            sock.bind((settings.host, 0))
        return sock

    def _run(self) -> None:
        period = self._settings.frame_period_s
        latency = self._settings.latency_s
        next_capture = time.monotonic()
        pending: collections.deque[_PendingFrame] = collections.deque()
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                while pending and pending[0].send_at_s <= now:
                    self._transmit(pending.popleft().frame)
                if now >= next_capture:
                    capture_ns = time.monotonic_ns()
                    frame = self._capture(capture_ns)
                    if frame is not None:
                        if latency > 0.0:
                            pending.append(_PendingFrame(capture_ns * 1e-9 + latency, frame))
                        else:
                            self._transmit(frame)
                    next_capture += period
                    if now - next_capture > period:
                        with self._lock:
                            self._count("late_frames", 1)
                        next_capture = now + period
                self._expire_clients(now)
                deadline = min(next_capture, pending[0].send_at_s if pending else math.inf)
                wait = min(max(deadline - time.monotonic(), 0.0), _MAX_POLL_S)
                readable, _, _ = select.select([self._command_socket], [], [], wait)
                if readable:
                    self._drain_commands()
        except Exception:  # the thread must not die silently
            _LOG.exception("MocapServer thread failed; streaming stopped")
            raise

    def _ticks(self, monotonic_ns: int) -> int:
        return monotonic_ns * self._settings.high_resolution_clock_frequency // 1_000_000_000

    def _capture(self, mid_exposure_ns: int) -> MocapFrame | None:
        """Sample the source; ``mid_exposure_ns`` is the ``time.monotonic_ns()`` of the sample."""
        now_s = mid_exposure_ns * 1e-9
        try:
            samples = [_as_sample(item) for item in self._source()]
        except Exception as exc:  # the world's bug must not kill the stream; it is counted and logged
            with self._lock:
                self._count("source_errors", 1)
                first = self._counts.source_errors == 1
            if first:
                _LOG.exception("MocapServer frame source failed; frames are skipped while it fails")
            else:
                _LOG.debug("MocapServer frame source failed again: %s", exc)
            return None
        received_ns = time.monotonic_ns()
        models = tuple((sample.id, sample.name) for sample in samples)
        models_changed = self._last_models is not None and models != self._last_models
        self._last_models = models
        with self._lock:
            self._source_models = models
            self._untrackings = [u for u in self._untrackings if u.end_s > now_s]
            untracked = {u.body_id: u.mode for u in self._untrackings if u.start_s <= now_s}
            self._count("frames_generated", 1)
        bodies = []
        for sample in samples:
            mode = untracked.get(sample.id)
            if mode is UntrackMode.OMIT:
                continue
            if mode is UntrackMode.INVALID:
                position, orientation = self._last_tracked_pose.get(
                    sample.id, ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
                )
                bodies.append(RigidBody(int(sample.id), position, orientation, 0.0, False))
                continue
            position = tuple(float(v) for v in sample.position)
            orientation = tuple(float(v) for v in sample.orientation)
            if sample.tracking_valid:
                self._last_tracked_pose[sample.id] = (position, orientation)
            bodies.append(
                RigidBody(
                    int(sample.id),
                    position,
                    orientation,
                    float(sample.mean_error),
                    bool(sample.tracking_valid),
                )
            )
        frame_number = self._next_frame_number
        self._next_frame_number = (frame_number + 1) % 2**31
        return MocapFrame(
            frame_number=frame_number,
            rigid_bodies=tuple(bodies),
            timestamp=now_s - self._start_time_s,
            mid_exposure_ticks=self._ticks(mid_exposure_ns),
            data_received_ticks=self._ticks(received_ns),
            params=0x02 if models_changed else 0,
        )

    def _transmit(self, frame: MocapFrame) -> None:
        frame = replace(frame, transmit_ticks=self._ticks(time.monotonic_ns()))
        try:
            datagram = encode_message(frame, version=self._settings.natnet_version)
        except ValueError:
            with self._lock:
                self._count("source_errors", 1)
            _LOG.exception("MocapServer could not encode frame %d; skipped", frame.frame_number)
            return
        with self._lock:
            corruption = self._corruptions.popleft() if self._corruptions else None
            if corruption is not None:
                self._count("frames_corrupted", 1)
        if corruption is CorruptionKind.TRUNCATE:
            datagram = datagram[: self._rng.randrange(1, len(datagram))]
        elif corruption is CorruptionKind.GARBLE:
            damaged = bytearray(datagram)
            for _ in range(self._rng.randint(1, 4)):  # XOR with a non-zero byte: every pick changes
                damaged[self._rng.randrange(4, len(damaged))] ^= self._rng.randrange(1, 256)
            datagram = bytes(damaged)
        self._send_to_destinations(datagram, frame_number=frame.frame_number)

    def _send_to_destinations(self, datagram: bytes, *, frame_number: int | None) -> int:
        settings = self._settings
        destinations: list[tuple[socket.socket, Address]] = []
        with self._lock:
            if settings.stream_unicast and self._command_socket is not None:
                destinations.extend((self._command_socket, address) for address in self._clients)
        if settings.stream_multicast and self._multicast_socket is not None:
            destinations.append((self._multicast_socket, (settings.multicast_group, settings.data_port)))
        sent = 0
        for sock, address in destinations:
            dropped = (
                frame_number is not None
                and settings.drop_probability > 0.0
                and self._rng.random() < settings.drop_probability
            )
            if dropped:
                with self._lock:
                    self._count("datagrams_dropped", 1)
                    self._dropped.append((frame_number, address))
                continue
            try:
                sock.sendto(datagram, address)
            except OSError as exc:
                with self._lock:
                    self._count("send_errors", 1)
                _LOG.debug("MocapServer could not send to %s: %s", address, exc)
                continue
            sent += 1
        if frame_number is not None:
            with self._lock:
                self._count("datagrams_sent", sent)
        return sent

    def _drain_commands(self) -> None:
        sock = self._command_socket
        for _ in range(_MAX_COMMANDS_PER_WAKE):
            try:
                datagram, address = sock.recvfrom(_RECEIVE_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. ICMP errors reported on the socket: keep serving
                _LOG.debug("MocapServer command socket error: %s", exc)
                return
            self._handle_command(datagram, address[:2])

    def _handle_command(self, datagram: bytes, address: Address) -> None:
        try:
            message = decode_message(datagram, version=self._settings.natnet_version)
        except NatNetDecodeError as exc:
            with self._lock:
                self._count("malformed_commands", 1)
            _LOG.debug("MocapServer ignored a malformed command from %s: %s", address, exc)
            return
        with self._lock:
            self._count("commands_received", 1)
        version = self._settings.natnet_version
        if isinstance(message, Connect):
            if (
                message.requested_version is not None
                and message.requested_version.major_minor != version.major_minor
            ):
                _LOG.info(
                    "client %s requested NatNet %s; this server speaks %s only",
                    address,
                    message.requested_version,
                    version,
                )
            self._register(address)
            self._reply(encode_message(self.server_info), address)
        elif isinstance(message, KeepAlive):
            self._register(address)
        elif isinstance(message, RequestModelDefinitions):
            self._register(address)
            self._reply(encode_message(self.model_definitions(), version=version), address)
        elif isinstance(message, Disconnect):
            with self._lock:
                self._clients.pop(address, None)
        elif isinstance(message, (CommandRequest, RequestFrameOfData)):
            self._reply(encode_message(UnrecognizedRequest()), address)
        else:
            _LOG.debug("MocapServer ignored a %s from %s", type(message).__name__, address)

    def _register(self, address: Address) -> None:
        if not self._settings.stream_unicast:
            return
        with self._lock:
            if address not in self._clients and len(self._clients) >= _MAX_CLIENTS:
                _LOG.warning("MocapServer has %d unicast clients; ignoring %s", _MAX_CLIENTS, address)
                return
            if address not in self._clients:
                _LOG.info("unicast NatNet client %s:%d connected", *address)
            self._clients[address] = time.monotonic()

    def _expire_clients(self, now_s: float) -> None:
        timeout = self._settings.client_timeout_s
        with self._lock:
            expired = [address for address, seen in self._clients.items() if now_s - seen > timeout]
            for address in expired:
                del self._clients[address]
        for address in expired:
            _LOG.info("unicast NatNet client %s:%d expired (no keep-alive for %.1f s)", *address, timeout)

    def _reply(self, datagram: bytes, address: Address) -> None:
        try:
            self._command_socket.sendto(datagram, address)
        except OSError as exc:
            with self._lock:
                self._count("send_errors", 1)
            _LOG.debug("MocapServer could not reply to %s: %s", address, exc)


def _as_sample(item: BodySample | tuple) -> BodySample:
    if isinstance(item, BodySample):
        return item
    try:
        return BodySample(*item)
    except TypeError as exc:
        raise ValueError(
            f"frame source returned {item!r}, expected a BodySample or (id, name, position, orientation, ...)"
        ) from exc
