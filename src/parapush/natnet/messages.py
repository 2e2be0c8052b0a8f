"""NatNet message types other than frames and model definitions, and the message ids."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import IntEnum

from parapush.natnet.version import NatNetVersion

__all__ = [
    "CommandRequest",
    "CommandResponse",
    "Connect",
    "Disconnect",
    "KeepAlive",
    "MessageId",
    "MessageString",
    "RequestFrameOfData",
    "RequestModelDefinitions",
    "ServerInfo",
    "UnrecognizedRequest",
]


class MessageId(IntEnum):
    """NatNet message ids (uint16 at the start of every datagram)."""

    CONNECT = 0
    SERVERINFO = 1
    REQUEST = 2
    RESPONSE = 3
    REQUEST_MODELDEF = 4
    MODELDEF = 5
    REQUEST_FRAMEOFDATA = 6
    FRAMEOFDATA = 7
    MESSAGESTRING = 8
    DISCONNECT = 9
    KEEPALIVE = 10
    UNRECOGNIZED_REQUEST = 100


@dataclass(frozen=True)
class Connect:
    """Client -> server CONNECT ("Ping").

    Attributes:
        requested_version: bitstream version the client asks for (SDK 4.x clients), None for
            no preference (older clients send only "Ping").
    """

    requested_version: NatNetVersion | None = None


@dataclass(frozen=True)
class ServerInfo:
    """Server -> client SERVERINFO (``sSender_Server`` of the NatNet SDK).

    Attributes:
        application_name: server application name (char[256] on the wire).
        application_version: server application version (4 bytes).
        natnet_version: NatNet bitstream version the server streams.
        high_resolution_clock_frequency: ticks/s of the server's high-resolution clock (3.0+).
        data_port: UDP port of the data (multicast) stream (3.0+).
        is_multicast: True if the server streams frames by multicast (3.0+).
        multicast_address: IPv4 multicast group of the data stream (3.0+).
        connection_info_valid: True if the 3.0+ fields above were on the wire (False for a
            264-byte pre-3.0 SERVERINFO, whose clock frequency, port and group are then 0).
    """

    application_name: str
    application_version: tuple[int, int, int, int]
    natnet_version: NatNetVersion
    high_resolution_clock_frequency: int = 0
    data_port: int = 0
    is_multicast: bool = False
    multicast_address: str = "0.0.0.0"
    connection_info_valid: bool = True

    def __post_init__(self) -> None:
        if len(self.application_version) != 4 or not all(
            isinstance(part, int) and 0 <= part <= 255 for part in self.application_version
        ):
            raise ValueError(
                f"ServerInfo.application_version must be 4 ints in 0..255, got {self.application_version!r}"
            )
        if not 0 <= self.high_resolution_clock_frequency < 2**64:
            raise ValueError(
                "ServerInfo.high_resolution_clock_frequency must be in 0..2**64-1 ticks/s, "
                f"got {self.high_resolution_clock_frequency}"
            )
        if not 0 <= self.data_port <= 65535:
            raise ValueError(f"ServerInfo.data_port must be in 0..65535, got {self.data_port}")
        try:
            ipaddress.IPv4Address(self.multicast_address)
        except ValueError:
            raise ValueError(
                f"ServerInfo.multicast_address must be an IPv4 address, got {self.multicast_address!r}"
            ) from None


@dataclass(frozen=True)
class CommandRequest:
    """Client -> server REQUEST: a Motive command string (e.g. ``"Bitstream"``)."""

    command: str


@dataclass(frozen=True)
class CommandResponse:
    """Server -> client RESPONSE to a REQUEST: raw payload (an int32 result or a string)."""

    payload: bytes


@dataclass(frozen=True)
class RequestModelDefinitions:
    """Client -> server REQUEST_MODELDEF."""


@dataclass(frozen=True)
class RequestFrameOfData:
    """Client -> server REQUEST_FRAMEOFDATA (legacy polling request)."""


@dataclass(frozen=True)
class MessageString:
    """MESSAGESTRING: a free text message."""

    text: str


@dataclass(frozen=True)
class Disconnect:
    """Client -> server DISCONNECT."""


@dataclass(frozen=True)
class KeepAlive:
    """Client -> server KEEPALIVE (keeps a unicast subscription alive)."""


@dataclass(frozen=True)
class UnrecognizedRequest:
    """Server -> client UNRECOGNIZED_REQUEST: the server does not handle the request."""
