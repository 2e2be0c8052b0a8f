"""Where the gripper is: an explicit serial port, or a TCP host:port (Modbus TCP or RTU over TCP).

Addresses as node parameters::

    /dev/ttyUSB0                   Modbus RTU on a serial port (also serial:///dev/ttyUSB0)
    tcp://192.168.1.10:502         Modbus TCP (MBAP header), e.g. a Modbus TCP-RTU gateway
    rtu+tcp://192.168.1.10:54321   RTU frames over TCP, e.g. a UR tool-communication bridge

There is deliberately no automatic port detection: probing serial ports sends Modbus frames
to unrelated devices, and the port must not change silently between runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from parapush.robotiq.registers import DEFAULT_BAUDRATE, DEFAULT_DEVICE_ID
from parapush.validation import check_choice, check_integer, check_not_empty

TCP_FRAMINGS = ("socket", "rtu")
_SCHEME_FRAMING = {"tcp": "socket", "rtu+tcp": "rtu"}


@dataclass(frozen=True)
class SerialEndpoint:
    """Modbus RTU on a serial port, 8 data bits, no parity, 1 stop bit.

    Attributes:
        port: device path, e.g. ``/dev/ttyUSB0`` or a udev ``/dev/serial/by-id/...`` link.
        baudrate: bit/s.
        device_id: Modbus device (slave) id.
    """

    port: str
    baudrate: int = DEFAULT_BAUDRATE
    device_id: int = DEFAULT_DEVICE_ID

    def __post_init__(self) -> None:
        if not isinstance(self.port, str) or not self.port or self.port.lower() == "auto":
            raise ValueError(f"port: expected an explicit serial device path, got {self.port!r}")
        check_integer("baudrate", self.baudrate, minimum=1)
        check_integer("device_id", self.device_id, minimum=1, maximum=247)

    def describe(self) -> str:
        return f"serial {self.port} at {self.baudrate} bit/s 8N1, device id {self.device_id}"


@dataclass(frozen=True)
class TcpEndpoint:
    """Modbus over TCP.

    Attributes:
        host: host name or address.
        port: TCP port.
        framing: ``"socket"`` (Modbus TCP) or ``"rtu"`` (RTU frames over TCP).
        device_id: Modbus device (unit) id.
    """

    host: str
    port: int
    framing: str = "socket"
    device_id: int = DEFAULT_DEVICE_ID

    def __post_init__(self) -> None:
        check_not_empty("host", self.host)
        check_integer("port", self.port, minimum=1, maximum=65535)
        check_choice("framing", self.framing, TCP_FRAMINGS)
        check_integer("device_id", self.device_id, minimum=1, maximum=247)

    def describe(self) -> str:
        kind = "Modbus TCP" if self.framing == "socket" else "Modbus RTU over TCP"
        return f"{kind} {self.host}:{self.port}, device id {self.device_id}"


def parse_endpoint(
    address: str, *, device_id: int = DEFAULT_DEVICE_ID, baudrate: int = DEFAULT_BAUDRATE
) -> SerialEndpoint | TcpEndpoint:
    """An endpoint from an address string (see the module docstring).

    Raises:
        ValueError: naming ``address`` and what is wrong with it.
    """
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"address: expected a serial device path or tcp://host:port, got {address!r}")
    address = address.strip()
    if "://" not in address:
        return SerialEndpoint(address, baudrate=baudrate, device_id=device_id)
    parts = urlsplit(address)
    scheme = parts.scheme.lower()
    if scheme == "serial":
        return SerialEndpoint(parts.path, baudrate=baudrate, device_id=device_id)
    if scheme not in _SCHEME_FRAMING:
        raise ValueError(
            f"address: unknown scheme {parts.scheme!r} in {address!r}; expected serial://, tcp:// or rtu+tcp://"
        )
    try:
        port = parts.port
    except ValueError as error:
        raise ValueError(f"address: invalid port in {address!r}: {error}") from None
    if not parts.hostname or port is None or parts.path not in ("", "/"):
        raise ValueError(f"address: expected {scheme}://host:port, got {address!r}")
    return TcpEndpoint(parts.hostname, port, framing=_SCHEME_FRAMING[scheme], device_id=device_id)
