"""An emulated Robotiq 2F-85 speaking Modbus RTU on a pseudo-terminal and/or Modbus over TCP.

The device behaviour is :class:`parapush.robotiq.device_model.GripperDeviceModel`; this module
puts it behind pymodbus servers (pinned: ``pymodbus==3.16.*``, whose ``SimDevice`` datastore
this uses) running on an asyncio loop in a background thread, with a periodic step of the
finger dynamics.

Serial: ``socat`` makes a pty pair in a private temporary directory; the server opens one end
and clients open :attr:`GripperEmulator.serial_port` (115200 8N1 by default, device id 9). The
server locks its end exclusively; the client end can be opened by one pymodbus client at a time
(pymodbus locks it), or by clients that do not lock (minimalmodbus) concurrently.

TCP: ``tcp_framing="socket"`` is standard Modbus TCP (MBAP header); ``"rtu"`` sends RTU frames
(with CRC) over the socket, like a UR robot's tool-communication RS485 bridge that
pyrobotiqgripper's ``RTU_VIA_TCP`` mode talks to. Port 0 picks an ephemeral port
(:attr:`GripperEmulator.tcp_address`).

Registers: one block shared by every function code (FC3/FC4 reads, FC6/FC16 writes, FC23
read-write), 1000-1007 (commands; 1003-1007 reserved) and 2000-2007 (status, read-only: a write
there gets an ILLEGAL ADDRESS exception; 2003-2007 reserved). The model is the single source of
truth: every access first brings the block up to date from the model, and a write is decoded from
the request itself (the datastore applies it only after the access callback returns).

Requests for another device id are ignored (no answer), like on an RS485 bus; so are all
requests while :meth:`GripperEmulator.set_responding` is False (the device stopped answering:
writes are not applied either).

Owner (one client drives it): the client that activates the gripper (writes rACT=1 while no
client owns it) owns it until it deactivates it (rACT=0) or closes its connection; a write to
the command registers from any other client is refused with Modbus exception 0x06 (SLAVE DEVICE
BUSY) and not applied, so a second stack that connects to this gripper cannot open or close the
fingers (nor reset or re-activate it); reads stay open to everyone
(:attr:`GripperEmulator.requests_refused` counts the refusals). A client is one TCP connection;
the serial line is one client, whoever opens the pty (a serial bus cannot tell its masters
apart). This is a policy of the emulated driver, not of the device: a real 2F-85 obeys every
Modbus master that reaches it, so on the robot it is the one executor holding the serial port
(or the tool-communication bridge's connection) that keeps others out.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pymodbus import FramerType
from pymodbus.constants import ExcCodes
from pymodbus.pdu import ModbusPDU
from pymodbus.server import ModbusSerialServer, ModbusTcpServer
from pymodbus.server.requesthandler import ServerRequestHandler
from pymodbus.simulator import DataType, SimData, SimDevice

from parapush.lifecycle import Service
from parapush.read_only import LockedReadOnly, ReadOnly
from parapush.robotiq.device_model import DeviceModelSettings, GripperDeviceModel
from parapush.robotiq.registers import (
    COMMAND_ADDRESS,
    DEFAULT_BAUDRATE,
    DEFAULT_DEVICE_ID,
    REGISTER_BLOCK_LENGTH,
    STATUS_ADDRESS,
    USED_REGISTER_COUNT,
    GripperCommand,
    GripperStatus,
)
from parapush.settings import check_settings, setting

_LOGGER = logging.getLogger(__name__)
TCP_FRAMINGS = ("socket", "rtu")
_FRAMER_OF_TCP_FRAMING = {"socket": FramerType.SOCKET, "rtu": FramerType.RTU}
_SERVER_LINK = "gripper-server"
_CLIENT_LINK = "gripper-client"
#: The connection whose request is being handled (set per request task on the loop thread).
_REQUESTING_CLIENT: contextvars.ContextVar[object | None] = contextvars.ContextVar("gripper_client", default=None)


class _ClientConnection(ServerRequestHandler):
    """One client's connection; its requests run with :data:`_REQUESTING_CLIENT` set to it, and
    closing it gives up the gripper if it owned it."""

    on_closed: Callable[[object], None] = staticmethod(lambda client: None)

    async def handle_request(self) -> None:
        token = _REQUESTING_CLIENT.set(self)
        try:
            await super().handle_request()
        finally:
            _REQUESTING_CLIENT.reset(token)

    def callback_disconnected(self, exc: Exception | None) -> None:
        super().callback_disconnected(exc)
        self.on_closed(self)


class _ClientTracking:
    """Server mixin: every connection is a :class:`_ClientConnection` reporting its closing."""

    on_client_closed: Callable[[object], None]

    def callback_new_connection(self) -> _ClientConnection:
        connection = _ClientConnection(self, self.trace_packet, self.trace_pdu, self.trace_connect)
        connection.on_closed = self.on_client_closed
        return connection


class _TcpServer(_ClientTracking, ModbusTcpServer):
    pass


class _SerialServer(_ClientTracking, ModbusSerialServer):
    pass


class GripperEmulatorError(RuntimeError):
    """The emulator could not start or stop; the message says which part and why."""


@dataclass(frozen=True)
class GripperEmulatorSettings:
    """How the emulated gripper is reached, and how it behaves (each field's meaning, unit and
    range: its :func:`setting`).

    Attributes:
        device: behaviour of the gripper (activation time, latency, object width, ...).
    """

    device: DeviceModelSettings = field(default_factory=DeviceModelSettings)
    device_id: int = setting(DEFAULT_DEVICE_ID, "Modbus device (slave) id", minimum=1, maximum=247)
    serial: bool = setting(True, "serve Modbus RTU on a socat pty pair")
    baudrate: int = setting(DEFAULT_BAUDRATE, "serial speed (8 data bits, no parity, 1 stop bit)", unit="bit/s",
                            minimum=1)
    tcp: bool = setting(False, "serve Modbus over TCP")
    tcp_host: str = setting("127.0.0.1", "address to listen on (keep loopback in tests)")
    tcp_port: int = setting(0, "TCP port; 0 picks an ephemeral port", minimum=0, maximum=65535)
    tcp_framing: str = setting("socket", "socket: Modbus TCP; rtu: RTU frames over TCP", choices=TCP_FRAMINGS)
    step_period_s: float = setting(0.005, "period of the dynamics step", unit="s", above=0.0)
    startup_timeout_s: float = setting(
        5.0, "limit for socat and the servers to come up, and for stopping", unit="s", above=0.0
    )
    socat_executable: str = setting("socat", "the socat program")

    def __post_init__(self) -> None:
        if not isinstance(self.device, DeviceModelSettings):
            raise ValueError(f"device: expected a DeviceModelSettings, got {self.device!r}")
        check_settings(self)
        if not (self.serial or self.tcp):
            raise ValueError("serial, tcp: at least one transport must be enabled")
        for name in ("tcp_host", "socat_executable"):
            if not getattr(self, name):
                raise ValueError(f"{name}: expected a non-empty string, got {getattr(self, name)!r}")


class GripperEmulator(Service):
    """A running emulated 2F-85; use as a context manager (or :meth:`start` / :meth:`stop`).

    Every public method is thread-safe.
    """

    def __init__(self, settings: GripperEmulatorSettings | None = None) -> None:
        self._settings = settings if settings is not None else GripperEmulatorSettings()
        self._lock = threading.Lock()
        self._model = GripperDeviceModel(self._settings.device, now_s=time.monotonic())
        self._command_image = [0] * REGISTER_BLOCK_LENGTH
        self._responding = True
        self._requests_answered = 0
        self._requests_ignored = 0
        self._requests_refused = 0
        self._owner: object | None = None  # the connection that activated the gripper
        self._temporary_directory: Path | None = None
        self._socat: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._serial_port: str | None = None
        self._tcp_address: tuple[str, int] | None = None

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> GripperEmulator:
        """Start socat (serial), the servers and the dynamics; return once they serve requests.

        Raises:
            GripperEmulatorError: socat or a server did not come up within ``startup_timeout_s``.
        """
        if self._thread is not None:
            raise GripperEmulatorError("start: the emulator is already started")
        try:
            self._startup_error = None
            server_link = self._start_socat() if self._settings.serial else None
            self._ready.clear()
            self._thread = threading.Thread(
                target=self._run_loop, args=(server_link,), name="gripper-emulator", daemon=True
            )
            self._thread.start()
            if not self._ready.wait(self._settings.startup_timeout_s):
                raise GripperEmulatorError(
                    f"start: the Modbus servers did not come up within {self._settings.startup_timeout_s} s"
                )
            if self._startup_error is not None:
                raise GripperEmulatorError(f"start: {self._startup_error}") from self._startup_error
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the servers, the loop thread and socat; remove the temporary directory. Idempotent."""
        timeout = self._settings.startup_timeout_s
        problems = []
        if self._thread is not None:
            if self._loop is not None and self._stop_requested is not None:
                with contextlib.suppress(RuntimeError):  # the loop has already closed
                    self._loop.call_soon_threadsafe(self._stop_requested.set)
            self._thread.join(timeout)
            if self._thread.is_alive():
                problems.append(f"the emulator thread did not stop within {timeout} s")
            self._thread = None
        if self._socat is not None:
            self._socat.terminate()
            try:
                self._socat.wait(timeout)
            except subprocess.TimeoutExpired:
                self._socat.kill()
                self._socat.wait(timeout)
            self._socat = None
        if self._temporary_directory is not None:
            shutil.rmtree(self._temporary_directory, ignore_errors=True)
            self._temporary_directory = None
        self._serial_port = None
        self._tcp_address = None
        if problems:
            raise GripperEmulatorError("stop: " + "; ".join(problems))

    # -- endpoints -----------------------------------------------------------------------
    settings: ReadOnly[GripperEmulatorSettings] = ReadOnly("_settings")

    @property
    def serial_port(self) -> str:
        """The client end of the pty pair (a symlink to /dev/pts/N)."""
        if self._serial_port is None:
            raise GripperEmulatorError("serial_port: serial is not enabled, or the emulator is not running")
        return self._serial_port

    @property
    def tcp_address(self) -> tuple[str, int]:
        """(host, port) the TCP server listens on."""
        if self._tcp_address is None:
            raise GripperEmulatorError("tcp_address: TCP is not enabled, or the emulator is not running")
        return self._tcp_address

    # -- observation and fault injection (thread-safe) -------------------------------------
    def status(self) -> GripperStatus:
        """The status registers now."""
        with self._lock:
            self._model.advance(time.monotonic())
            return self._model.status()

    def command(self) -> GripperCommand:
        """The command in effect now."""
        with self._lock:
            self._model.advance(time.monotonic())
            return self._model.command

    def finger_position(self) -> float:
        """Finger position now, counts (real-valued)."""
        with self._lock:
            self._model.advance(time.monotonic())
            return self._model.position

    requests_answered: LockedReadOnly[int] = LockedReadOnly(
        "_requests_answered", "Requests for this device answered so far."
    )

    requests_ignored: LockedReadOnly[int] = LockedReadOnly(
        "_requests_ignored", "Requests dropped (other device id, or not responding)."
    )

    requests_refused: LockedReadOnly[int] = LockedReadOnly(
        "_requests_refused", "Writes refused because another client owns the gripper (see the module docstring)."
    )

    @property
    def owned(self) -> bool:
        """Whether a client owns the gripper (it activated it and is still connected)."""
        with self._lock:
            return self._owner is not None

    def inject_fault(self, code: int) -> None:
        """Report gFLT = ``code`` (see :class:`GripperDeviceModel`); e.g. 0x08, 0x0A, 0x0E."""
        with self._lock:
            self._model.inject_fault(code, now_s=time.monotonic())

    def clear_fault(self) -> None:
        """Clear an injected fault (cause gone: cooled down, power back)."""
        with self._lock:
            self._model.clear_fault(now_s=time.monotonic())

    def set_controller_fault(self, code: int) -> None:
        """Report kFLT = ``code`` (0-15)."""
        with self._lock:
            self._model.set_controller_fault(code, now_s=time.monotonic())

    def set_object_width(self, width_m: float | None) -> None:
        """Put an object of ``width_m`` (m) between the fingers, or remove it (None)."""
        with self._lock:
            self._model.set_object_width(width_m, now_s=time.monotonic())

    def set_responding(self, responding: bool) -> None:
        """False: drop every request without applying it, as a disconnected or crashed device."""
        with self._lock:
            self._responding = bool(responding)

    # -- internals -----------------------------------------------------------------------
    def _start_socat(self) -> str:
        executable = shutil.which(self._settings.socat_executable)
        if executable is None:
            raise GripperEmulatorError(
                f"socat_executable: {self._settings.socat_executable!r} not found on PATH (install socat)"
            )
        self._temporary_directory = Path(tempfile.mkdtemp(prefix="parapush-gripper-"))
        server_link = self._temporary_directory / _SERVER_LINK
        client_link = self._temporary_directory / _CLIENT_LINK
        log_path = self._temporary_directory / "socat.log"
        with log_path.open("wb") as log:
            self._socat = subprocess.Popen(
                [
                    executable,
                    "-d",
                    "-d",
                    f"pty,raw,echo=0,link={server_link}",
                    f"pty,raw,echo=0,link={client_link}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + self._settings.startup_timeout_s
        while not (server_link.exists() and client_link.exists()):
            if self._socat.poll() is not None:
                log_text = log_path.read_text(errors="replace")
                raise GripperEmulatorError(f"socat exited with status {self._socat.returncode}: {log_text}")
            if time.monotonic() > deadline:
                raise GripperEmulatorError(
                    f"socat did not create the pty pair within {self._settings.startup_timeout_s} s"
                )
            time.sleep(0.005)
        self._serial_port = str(client_link)
        return str(server_link)

    def _run_loop(self, server_link: str | None) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(server_link))
        except BaseException as error:  # noqa: BLE001 - reported to start() or logged
            if not self._ready.is_set():
                self._startup_error = error
                self._ready.set()
            else:
                _LOGGER.exception("gripper emulator loop failed")
        finally:
            loop.close()
            self._loop = None

    def _make_device(self) -> SimDevice:
        return SimDevice(
            id=self._settings.device_id,
            simdata=[
                SimData(COMMAND_ADDRESS, count=REGISTER_BLOCK_LENGTH, values=0, datatype=DataType.REGISTERS),
                SimData(
                    STATUS_ADDRESS,
                    count=REGISTER_BLOCK_LENGTH,
                    values=0,
                    datatype=DataType.REGISTERS,
                    readonly=True,
                ),
            ],
            action=self._on_register_access,
        )

    async def _serve(self, server_link: str | None) -> None:
        self._stop_requested = asyncio.Event()
        servers: list[ModbusSerialServer | ModbusTcpServer] = []
        stepper: asyncio.Task[None] | None = None
        try:
            if server_link is not None:
                serial_server = _SerialServer(
                    self._make_device(),
                    framer=FramerType.RTU,
                    port=server_link,
                    baudrate=self._settings.baudrate,
                    bytesize=8,
                    parity="N",
                    stopbits=1,
                    trace_pdu=self._trace_pdu,
                )
                serial_server.on_client_closed = self._client_closed
                servers.append(serial_server)
                await serial_server.serve_forever(background=True)
            if self._settings.tcp:
                tcp_server = _TcpServer(
                    self._make_device(),
                    framer=_FRAMER_OF_TCP_FRAMING[self._settings.tcp_framing],
                    address=(self._settings.tcp_host, self._settings.tcp_port),
                    trace_pdu=self._trace_pdu,
                )
                tcp_server.on_client_closed = self._client_closed
                servers.append(tcp_server)
                await tcp_server.serve_forever(background=True)
                host, port = tcp_server.transport.sockets[0].getsockname()[:2]  # type: ignore[union-attr]
                self._tcp_address = (host, port)
            stepper = asyncio.create_task(self._step_forever())
            self._ready.set()
            await self._stop_requested.wait()
        finally:
            if stepper is not None:
                stepper.cancel()
            for server in servers:
                await server.shutdown()

    async def _step_forever(self) -> None:
        while True:
            with self._lock:
                self._model.advance(time.monotonic())
            await asyncio.sleep(self._settings.step_period_s)

    def _trace_pdu(self, sending: bool, pdu: ModbusPDU) -> ModbusPDU | None:
        if sending:
            return pdu
        with self._lock:
            if not self._responding or pdu.dev_id != self._settings.device_id:
                self._requests_ignored += 1
                return None  # pymodbus drops a request whose traced PDU is None: no answer
            self._requests_answered += 1
        return pdu

    def _client_closed(self, client: object) -> None:
        with self._lock:
            if self._owner is client:
                self._owner = None

    async def _on_register_access(
        self,
        function_code: int,
        start_address: int,
        address: int,
        count: int,
        registers: list[int],
        set_values: list[int] | list[bool] | None,
    ) -> ExcCodes | None:
        """pymodbus calls this before every access to the block; it runs on the loop thread.
        A write from a client that does not own the gripper is refused (SLAVE DEVICE BUSY)."""
        with self._lock:
            now = time.monotonic()
            self._model.advance(now)
            if set_values is not None:
                client = _REQUESTING_CLIENT.get()
                if self._owner is not None and client is not self._owner:
                    self._requests_refused += 1
                    return ExcCodes.DEVICE_BUSY
                for index, value in enumerate(set_values):
                    register = address - COMMAND_ADDRESS + index
                    if 0 <= register < REGISTER_BLOCK_LENGTH:
                        self._command_image[register] = int(value)
                command = GripperCommand.from_registers(self._command_image[:USED_REGISTER_COUNT])
                self._model.write_command(command, now_s=now)
                self._owner = client if command.activate else None
            command_offset = COMMAND_ADDRESS - start_address
            registers[command_offset : command_offset + REGISTER_BLOCK_LENGTH] = self._command_image
            status_offset = STATUS_ADDRESS - start_address
            registers[status_offset : status_offset + USED_REGISTER_COUNT] = (
                self._model.status().to_registers()
            )
        return None
