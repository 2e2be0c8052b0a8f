"""Production NatNet client: receives rigid-body frames from OptiTrack Motive (or our simulator).

One receive thread owns the sockets. It

* sends CONNECT and retries every ``connect_retry_s`` until SERVERINFO arrives (SERVERINFO gives
  the bitstream version the frames are decoded with and the high-resolution clock frequency used
  for latency),
* in unicast sends one KEEPALIVE every ``keepalive_period_s`` (frames arrive on the command
  socket, sent by the server to its source address),
* in multicast joins ``multicast_group:data_port`` (by default as announced in SERVERINFO) on the
  interface ``local_address``,
* decodes every datagram; anything that does not decode is counted and dropped, never raised,
* delivers each new frame with its local receive time (``time.monotonic()``, s) to the
  ``on_frame`` callback and to :meth:`NatNetClient.latest_frame`,
* counts lost frames from gaps in frame numbers, drops stale/duplicate frames (a frame number at
  most ``reorder_window_frames`` behind the newest), and treats larger jumps as a stream restart,
* after ``silence_timeout_s`` without a decodable frame or reply, considers the server gone and
  re-CONNECTs until a server answers again (a restarted server is picked up with its new
  version and clock).

Only packets whose source IP is the server's are accepted on the command socket.

Usage::

    settings = NatNetClientSettings(server_address="192.168.1.10", local_address="192.168.1.20")
    with NatNetClient(settings, on_frame=tracker.add_measurement) as client:
        info = client.wait_for_server(timeout_s=2.0)
        names = client.request_model_definitions(timeout_s=1.0).ids_by_name
"""

from __future__ import annotations

import logging
import math
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import NamedTuple

from parapush.background import bound_address, close_sockets, new_udp_socket, stop_thread
from parapush.lifecycle import Service
from parapush.natnet.codec import decode_message, encode_message, peek_message_id
from parapush.natnet.errors import NatNetDecodeError, NatNetTimeoutError
from parapush.natnet.frames import MocapFrame, frame_latency_s
from parapush.natnet.messages import (
    Connect,
    Disconnect,
    KeepAlive,
    MessageId,
    MessageString,
    RequestModelDefinitions,
    ServerInfo,
    UnrecognizedRequest,
)
from parapush.natnet.models import ModelDefinitions
from parapush.natnet.version import NatNetVersion
from parapush.read_only import LockedReadOnly, ReadOnly
from parapush.settings import check_settings, setting
from parapush.validation import check_instance, check_ipv4, check_not_empty

__all__ = ["NatNetClient", "NatNetClientSettings", "NatNetClientStats", "ReceivedFrame"]

_LOG = logging.getLogger(__name__)

_DEFAULT_MULTICAST_GROUP = "239.255.42.99"
_DEFAULT_DATA_PORT = 1511
_POLL_S = 0.05
_MAX_DATAGRAMS_PER_WAKE = 512
_RECEIVE_BYTES = 65536
_MODELDEF_RESEND_S = 0.25

FrameCallback = Callable[[MocapFrame, float], None]


class ReceivedFrame(NamedTuple):
    """A frame and its local receive time (``time.monotonic()`` in s, taken when the datagram was read)."""

    frame: MocapFrame
    receive_time: float


@dataclass(frozen=True)
class NatNetClientSettings:
    """Settings of :class:`NatNetClient`.

    Attributes:
        server_address: Motive host (IPv4 address or host name).
        command_port: server command port (1510 for Motive).
        local_address: IPv4 address of the local interface facing the server: the command socket
            binds to it and multicast is joined on it ("0.0.0.0" = any).
        multicast: receive frames by multicast instead of unicast.
        multicast_group: multicast group; None = the one announced in SERVERINFO (NatNet 3.0+),
            239.255.42.99 for older servers.
        data_port: multicast data port; None = the one announced in SERVERINFO, 1511 for older
            servers.
        requested_version: bitstream version asked for in CONNECT; None = the server's choice.
            Frames are always decoded with the version SERVERINFO reports.
        keepalive_period_s: s between KEEPALIVEs in unicast.
        connect_retry_s: s between CONNECTs while no server answers.
        silence_timeout_s: s without a decodable frame after which the server is considered gone
            and the client re-CONNECTs.
        reorder_window_frames: a frame up to this many frame numbers behind the newest is stale
            and dropped; further behind means the stream restarted.
        max_gap_frames: a forward jump of more than this many frame numbers is counted as a
            stream restart, not as lost frames.
        receive_buffer_bytes: socket receive buffer size requested from the OS.
    """

    server_address: str = setting("127.0.0.1", "Motive host: IPv4 address or host name")
    command_port: int = setting(1510, "Motive command port (UDP)", minimum=1, maximum=65535)
    local_address: str = setting("127.0.0.1", "IPv4 address of the local interface facing the server (0.0.0.0: any)")
    multicast: bool = setting(False, "receive frames by multicast (else unicast, on the command socket)")
    multicast_group: str | None = setting(None, "multicast group", kind=str,
                                          none="the one the server announces (239.255.42.99 before NatNet 3.0)",
                                          ros_none="")
    data_port: int | None = setting(None, "multicast data port (UDP)", kind=int, minimum=1, maximum=65535,
                                    none="the one the server announces (1511 before NatNet 3.0)", ros_none=0)
    requested_version: NatNetVersion | None = None
    keepalive_period_s: float = setting(1.0, "time between KEEPALIVEs in unicast", unit="s", above=0.0)
    connect_retry_s: float = setting(0.5, "time between CONNECTs while no server answers", unit="s", above=0.0)
    silence_timeout_s: float = setting(1.0, "time without a decodable frame after which the client re-CONNECTs",
                                       unit="s", above=0.0)
    reorder_window_frames: int = setting(8, "frames up to this many frame numbers behind the newest are stale",
                                         minimum=1)
    max_gap_frames: int = setting(1200, "a forward jump of more frame numbers is a stream restart", minimum=1)
    receive_buffer_bytes: int = setting(4 * 1024 * 1024, "socket receive buffer size requested from the OS",
                                        unit="B", minimum=65536)

    def __post_init__(self) -> None:
        check_settings(self)
        # requested_version is a parsed value, not a setting: EstimatorSettings.natnet_version declares it.
        if isinstance(self.requested_version, str):
            object.__setattr__(self, "requested_version", NatNetVersion.parse(self.requested_version))
        if self.requested_version is not None:
            check_instance("requested_version", self.requested_version, NatNetVersion)
        check_not_empty("server_address", self.server_address)
        check_ipv4("local_address", self.local_address)
        if self.multicast_group is not None:
            check_ipv4("multicast_group", self.multicast_group, multicast=True)


@dataclass(frozen=True)
class NatNetClientStats:
    """Counters of a :class:`NatNetClient` (a snapshot).

    Attributes:
        packets_received: datagrams read from the sockets.
        frames_received: FRAMEOFDATA datagrams decoded.
        frames_delivered: frames passed on (callback / latest frame).
        frames_lost: frames missing from gaps in frame numbers.
        gap_events: number of gaps (a gap of k frames counts once here, k times in frames_lost).
        stale_frames: decoded frames dropped as duplicate or out of order.
        stream_resets: frame-number discontinuities treated as a stream restart.
        malformed_packets: datagrams that did not decode (truncated, bad fields, unknown id).
        frames_before_server_info: frames dropped because no SERVERINFO (version) was known.
        foreign_packets: command-socket datagrams from an address other than the server's.
        unsolicited_packets: SERVERINFO / MODELDEF that nobody was waiting for.
        ignored_packets: other decodable datagrams not used (e.g. unicast frames in multicast mode).
        connects_sent: CONNECT requests sent.
        keepalives_sent: KEEPALIVEs sent.
        silences: times the server fell silent for ``silence_timeout_s``.
        reconnects: times a server answered again after a silence.
        callback_errors: exceptions raised by the ``on_frame`` callback (caught and logged).
        last_decode_error: text of the last decode error ("" if none).
    """

    packets_received: int = 0
    frames_received: int = 0
    frames_delivered: int = 0
    frames_lost: int = 0
    gap_events: int = 0
    stale_frames: int = 0
    stream_resets: int = 0
    malformed_packets: int = 0
    frames_before_server_info: int = 0
    foreign_packets: int = 0
    unsolicited_packets: int = 0
    ignored_packets: int = 0
    connects_sent: int = 0
    keepalives_sent: int = 0
    silences: int = 0
    reconnects: int = 0
    callback_errors: int = 0
    last_decode_error: str = ""


_COUNTER_NAMES = tuple(f.name for f in fields(NatNetClientStats) if f.name != "last_decode_error")


class NatNetClient(Service):
    """NatNet client; see the module docstring.

    Args:
        settings: client settings (defaults: unicast to 127.0.0.1:1510).
        on_frame: called in the receive thread as ``on_frame(frame, receive_time)`` for every new
            frame; keep it short. Exceptions it raises are caught, counted and logged.
    """

    def __init__(
        self, settings: NatNetClientSettings | None = None, *, on_frame: FrameCallback | None = None
    ):
        self._settings = settings if settings is not None else NatNetClientSettings()
        self._on_frame = on_frame
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._command_socket: socket.socket | None = None
        self._data_socket: socket.socket | None = None
        self._data_endpoint: tuple[str, int] | None = None
        self._server_ip = ""
        self._counts = dict.fromkeys(_COUNTER_NAMES, 0)
        self._last_decode_error = ""
        self._reset_session_state()

    def _reset_session_state(self) -> None:
        self._server_info: ServerInfo | None = None
        self._connected = False
        self._ever_connected = False
        self._last_alive_s = 0.0
        self._last_connect_s = -math.inf
        self._last_keepalive_s = -math.inf
        self._last_frame_number: int | None = None
        self._latest: ReceivedFrame | None = None
        self._model_definitions: ModelDefinitions | None = None
        self._modeldef_generation = 0
        self._modeldef_waiters = 0
        self._callback_error_logged = False
        self._bad_version_logged: NatNetVersion | None = None

    # ----------------------------------------------------------------- lifecycle

    settings: ReadOnly[NatNetClientSettings] = ReadOnly("_settings")

    def start(self) -> NatNetClient:
        """Open the command socket and start the receive thread (returns at once; see
        :meth:`wait_for_server`). Raises OSError if the server name does not resolve or the bind fails.
        """
        if self._thread is not None:
            raise RuntimeError("NatNetClient is already running")
        settings = self._settings
        self._server_ip = socket.gethostbyname(settings.server_address)
        with new_udp_socket() as command_socket:
            command_socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, settings.receive_buffer_bytes)
            command_socket.bind((settings.local_address, 0))
            command_socket.setblocking(False)
        self._command_socket = command_socket
        with self._lock:
            self._reset_session_state()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="NatNetClient", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        """Send DISCONNECT (unicast), stop the receive thread and close the sockets (idempotent)."""
        if self._thread is not None:
            stop_thread(self._thread, self._stop, timeout_s, "NatNetClient receive thread")
            # after the thread (no keep-alive can follow and re-subscribe us)
            if not self._settings.multicast and self.connected:
                self._send(Disconnect())
        self._thread = None
        close_sockets(self._command_socket, self._data_socket)
        self._command_socket = None
        self._data_socket = None
        self._data_endpoint = None
        with self._changed:
            self._connected = False
            self._changed.notify_all()

    # ----------------------------------------------------------------- queries

    @property
    def command_socket_address(self) -> tuple[str, int]:
        """(address, port) the command socket is bound to (where unicast frames arrive)."""
        return bound_address(self._command_socket, "NatNetClient")

    server_info: LockedReadOnly[ServerInfo | None] = LockedReadOnly(
        "_server_info", "SERVERINFO of the current server (version, ``high_resolution_clock_frequency``...), or None."
    )

    connected: LockedReadOnly[bool] = LockedReadOnly(
        "_connected", "True while a server has answered and has not been silent for ``silence_timeout_s``."
    )

    model_definitions: LockedReadOnly[ModelDefinitions | None] = LockedReadOnly(
        "_model_definitions", "The last MODELDEF received, or None."
    )

    def latest_frame(self) -> ReceivedFrame | None:
        """The newest delivered frame and its receive time, or None."""
        with self._lock:
            return self._latest

    def stats(self) -> NatNetClientStats:
        with self._lock:
            return NatNetClientStats(**self._counts, last_decode_error=self._last_decode_error)

    def frame_latency_s(self, frame: MocapFrame) -> float:
        """Server-side latency of ``frame`` in s (transmit - mid-exposure ticks / clock frequency).

        Raises:
            RuntimeError: no SERVERINFO yet, or the server did not report a clock frequency.
            ValueError: the frame carries no high-resolution stamps.
        """
        info = self.server_info
        if info is None or info.high_resolution_clock_frequency <= 0:
            raise RuntimeError(
                "the server's high-resolution clock frequency is unknown (no NatNet 3.0+ SERVERINFO)"
            )
        return frame_latency_s(frame, info.high_resolution_clock_frequency)

    def wait_for_server(self, timeout_s: float) -> ServerInfo:
        """Block until a server has answered CONNECT; returns its SERVERINFO.

        Raises:
            NatNetTimeoutError: no answer within ``timeout_s`` s.
        """
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not self._connected:
                remaining = deadline - time.monotonic()
                if self._thread is None:
                    raise RuntimeError("NatNetClient is not started (use start() or a with block)")
                if remaining <= 0.0:
                    raise NatNetTimeoutError(
                        f"no NatNet server answered CONNECT at {self._settings.server_address}:"
                        f"{self._settings.command_port} within {timeout_s} s"
                    )
                self._changed.wait(remaining)
            return self._server_info

    def wait_for_frame(self, timeout_s: float, *, newer_than: int | None = None) -> ReceivedFrame:
        """Block until a frame is delivered (with a frame number other than ``newer_than`` if given).

        Raises:
            NatNetTimeoutError: no such frame within ``timeout_s`` s.
        """
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self._latest is None or (
                newer_than is not None and self._latest.frame.frame_number == newer_than
            ):
                remaining = deadline - time.monotonic()
                if remaining <= 0.0:
                    raise NatNetTimeoutError(f"no new NatNet frame within {timeout_s} s")
                self._changed.wait(remaining)
            return self._latest

    def request_model_definitions(self, timeout_s: float = 1.0) -> ModelDefinitions:
        """Ask the server for its model definitions (resent every 0.25 s until answered).

        Returns the decoded MODELDEF; ``.ids_by_name`` / ``.names_by_id`` map rigid-body names and
        streaming ids.

        Raises:
            NatNetTimeoutError: no server or no MODELDEF within ``timeout_s`` s.
        """
        deadline = time.monotonic() + timeout_s
        self.wait_for_server(timeout_s)
        with self._changed:
            generation = self._modeldef_generation
            self._modeldef_waiters += 1
        try:
            while True:
                self._send(RequestModelDefinitions())
                resend_at = min(deadline, time.monotonic() + _MODELDEF_RESEND_S)
                with self._changed:
                    while self._modeldef_generation == generation:
                        remaining = resend_at - time.monotonic()
                        if remaining <= 0.0:
                            break
                        self._changed.wait(remaining)
                    if self._modeldef_generation != generation:
                        return self._model_definitions
                if time.monotonic() >= deadline:
                    raise NatNetTimeoutError(
                        f"NatNet server {self._settings.server_address} sent no MODELDEF within {timeout_s} s"
                    )
        finally:
            with self._changed:
                self._modeldef_waiters -= 1

    # ----------------------------------------------------------------- receive thread

    def _count(self, name: str, amount: int = 1) -> None:
        self._counts[name] += amount

    def _send(self, message) -> None:
        sock = self._command_socket
        if sock is None:
            return
        try:
            sock.sendto(encode_message(message), (self._server_ip, self._settings.command_port))
        except OSError as exc:
            _LOG.debug("NatNetClient could not send %s: %s", type(message).__name__, exc)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._maintain(time.monotonic())
                sockets = [s for s in (self._command_socket, self._data_socket) if s is not None]
                readable, _, _ = select.select(sockets, [], [], _POLL_S)
                for sock in readable:
                    self._drain(sock)
            except Exception:  # never let the receive thread die: log and keep receiving
                _LOG.exception("NatNetClient receive loop error; continuing")
                self._stop.wait(_POLL_S)

    def _maintain(self, now: float) -> None:
        settings = self._settings
        send_connect = send_keepalive = False
        with self._changed:
            if self._connected and now - self._last_alive_s > settings.silence_timeout_s:
                self._connected = False
                self._last_frame_number = None
                self._count("silences")
                _LOG.warning(
                    "NatNet server %s silent for %.2f s; reconnecting",
                    settings.server_address,
                    now - self._last_alive_s,
                )
                self._changed.notify_all()
            if not self._connected and now - self._last_connect_s >= settings.connect_retry_s:
                self._last_connect_s = now
                self._count("connects_sent")
                send_connect = True
            if (
                self._connected
                and not settings.multicast
                and now - self._last_keepalive_s >= settings.keepalive_period_s
            ):
                self._last_keepalive_s = now
                self._count("keepalives_sent")
                send_keepalive = True
            info = self._server_info
        if send_connect:
            self._send(Connect(requested_version=settings.requested_version))
        if send_keepalive:
            self._send(KeepAlive())
        if settings.multicast and info is not None:
            self._ensure_data_socket(info)

    def _ensure_data_socket(self, info: ServerInfo) -> None:
        settings = self._settings
        group = settings.multicast_group or (
            info.multicast_address if info.connection_info_valid else _DEFAULT_MULTICAST_GROUP
        )
        port = settings.data_port or (info.data_port if info.connection_info_valid else _DEFAULT_DATA_PORT)
        if self._data_endpoint == (group, port):
            return
        if self._data_socket is not None:
            self._data_socket.close()
            self._data_socket = None
        try:
            with new_udp_socket() as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if hasattr(socket, "SO_REUSEPORT"):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, settings.receive_buffer_bytes)
                sock.bind((group, port))
                membership = socket.inet_aton(group) + socket.inet_aton(settings.local_address)
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
                sock.setblocking(False)
        except OSError as exc:  # new_udp_socket has closed it
            self._data_endpoint = (group, port)  # do not retry the same failing endpoint every poll
            _LOG.error(
                "NatNetClient cannot join multicast %s:%d on %s: %s", group, port, settings.local_address, exc
            )
            return
        self._data_socket = sock
        self._data_endpoint = (group, port)
        _LOG.info("NatNetClient joined multicast %s:%d on %s", group, port, settings.local_address)

    def _drain(self, sock: socket.socket) -> None:
        from_data_socket = sock is self._data_socket
        for _ in range(_MAX_DATAGRAMS_PER_WAKE):
            try:
                datagram, address = sock.recvfrom(_RECEIVE_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                _LOG.debug("NatNetClient receive error: %s", exc)
                return
            receive_time = time.monotonic()
            self._handle(datagram, address[0], from_data_socket, receive_time)

    def _handle(self, datagram: bytes, source_ip: str, from_data_socket: bool, receive_time: float) -> None:
        with self._lock:
            self._count("packets_received")
            if not from_data_socket and source_ip != self._server_ip:
                self._count("foreign_packets")
                return
            version = self._server_info.natnet_version if self._server_info is not None else None
        try:
            message_id = peek_message_id(datagram)
            if message_id == MessageId.FRAMEOFDATA:
                if self._settings.multicast and not from_data_socket:
                    with self._lock:
                        self._count("ignored_packets")
                    return
                if version is None:
                    with self._lock:
                        self._count("frames_before_server_info")
                    return
            message = decode_message(datagram, version=version)
        except NatNetDecodeError as exc:
            with self._lock:
                self._count("malformed_packets")
                self._last_decode_error = str(exc)
            _LOG.debug("NatNetClient dropped a malformed datagram from %s: %s", source_ip, exc)
            return
        if isinstance(message, MocapFrame):
            self._handle_frame(message, receive_time)
        elif isinstance(message, ServerInfo):
            self._handle_server_info(message, receive_time)
        elif isinstance(message, ModelDefinitions):
            with self._changed:
                if self._modeldef_waiters == 0:
                    self._count("unsolicited_packets")
                    return
                self._model_definitions = message
                self._modeldef_generation += 1
                self._last_alive_s = receive_time
                self._changed.notify_all()
        elif isinstance(message, MessageString):
            _LOG.info("NatNet server message: %s", message.text)
        elif isinstance(message, UnrecognizedRequest):
            _LOG.debug("NatNet server did not recognise a request")
        else:
            with self._lock:
                self._count("ignored_packets")

    def _handle_server_info(self, info: ServerInfo, receive_time: float) -> None:
        if self._data_socket is None:
            self._data_endpoint = None  # retry a multicast join that failed earlier
        with self._changed:
            if self._connected:
                self._count("unsolicited_packets")
                return
            if info.natnet_version.major not in (3, 4):
                if self._bad_version_logged != info.natnet_version:
                    self._bad_version_logged = info.natnet_version
                    _LOG.error(
                        "NatNet server %r speaks NatNet %s; this client decodes 3.x and 4.x only",
                        info.application_name,
                        info.natnet_version,
                    )
                self._count("unsolicited_packets")
                return
            if self._ever_connected:
                self._count("reconnects")
            self._server_info = info
            self._connected = True
            self._ever_connected = True
            self._last_alive_s = receive_time
            self._last_keepalive_s = -math.inf
            self._last_frame_number = None
            self._changed.notify_all()
        _LOG.info(
            "connected to NatNet server %r %s (NatNet %s, clock %d Hz, %s)",
            info.application_name,
            ".".join(map(str, info.application_version)),
            info.natnet_version,
            info.high_resolution_clock_frequency,
            f"multicast {info.multicast_address}:{info.data_port}" if info.is_multicast else "unicast",
        )

    def _handle_frame(self, frame: MocapFrame, receive_time: float) -> None:
        settings = self._settings
        with self._changed:
            self._count("frames_received")
            self._last_alive_s = receive_time
            last = self._last_frame_number
            if last is not None:
                delta = frame.frame_number - last
                if -settings.reorder_window_frames < delta <= 0:
                    self._count("stale_frames")
                    return
                if delta <= -settings.reorder_window_frames or delta > settings.max_gap_frames + 1:
                    self._count("stream_resets")
                elif delta > 1:
                    self._count("frames_lost", delta - 1)
                    self._count("gap_events")
            self._last_frame_number = frame.frame_number
            self._latest = ReceivedFrame(frame, receive_time)
            self._count("frames_delivered")
            self._changed.notify_all()
        if self._on_frame is None:
            return
        try:
            self._on_frame(frame, receive_time)
        except Exception:
            with self._lock:
                self._count("callback_errors")
                log_it = not self._callback_error_logged
                self._callback_error_logged = True
            if log_it:
                _LOG.exception("NatNetClient on_frame callback raised (logged once; counted in stats)")
