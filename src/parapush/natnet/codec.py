"""Whole NatNet datagrams: the 4-byte header (uint16 message id, uint16 payload size) and payloads.

``encode_message`` / ``decode_message`` cover CONNECT, SERVERINFO, REQUEST, RESPONSE,
REQUEST_MODELDEF, MODELDEF, REQUEST_FRAMEOFDATA, FRAMEOFDATA, MESSAGESTRING, DISCONNECT, KEEPALIVE
and UNRECOGNIZED_REQUEST. Decoding raises only :class:`NatNetDecodeError`.

Header rule: the declared payload size must fit in the datagram; bytes after it are ignored (the
OptiTrack SDK samples send a NUL after empty requests without counting it).
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Union

import parapush.natnet.messages as messages
from parapush.natnet.errors import NatNetDecodeError
from parapush.natnet.frame_codec import decode_frame_payload, encode_frame_payload
from parapush.natnet.frames import MocapFrame
from parapush.natnet.model_codec import decode_model_definitions_payload, encode_model_definitions_payload
from parapush.natnet.models import ModelDefinitions
from parapush.natnet.version import NatNetVersion
from parapush.natnet.wire import PayloadReader, PayloadWriter

__all__ = [
    "HEADER_BYTES",
    "MAX_PAYLOAD_BYTES",
    "Message",
    "decode_message",
    "encode_message",
    "peek_message_id",
]

Message = Union[  # noqa: UP007 (runtime alias, Python 3.10 compatible)
    messages.Connect,
    messages.ServerInfo,
    messages.CommandRequest,
    messages.CommandResponse,
    messages.RequestModelDefinitions,
    ModelDefinitions,
    messages.RequestFrameOfData,
    MocapFrame,
    messages.MessageString,
    messages.Disconnect,
    messages.KeepAlive,
    messages.UnrecognizedRequest,
]

HEADER_BYTES = 4
MAX_PAYLOAD_BYTES = 0xFFFF
_HEADER = struct.Struct("<HH")
_NAME_BYTES = 256  # MAX_NAMELENGTH
# CONNECT as sent by NatNet SDK 4.x clients: sSender (name "Ping", 2 x 4 version bytes) followed by
# sConnectionOptions (bool subscribedDataOnly, uint8 BitstreamVersion[4]), padded to 271 bytes.
_CONNECT_PAYLOAD_BYTES = 271
_CONNECT_VERSION_OFFSET = 265
_SERVERINFO_LEGACY_BYTES = _NAME_BYTES + 4 + 4
_SERVERINFO_BYTES = _SERVERINFO_LEGACY_BYTES + 8 + 2 + 1 + 4

_EMPTY_MESSAGES: dict[type, messages.MessageId] = {
    messages.RequestModelDefinitions: messages.MessageId.REQUEST_MODELDEF,
    messages.RequestFrameOfData: messages.MessageId.REQUEST_FRAMEOFDATA,
    messages.Disconnect: messages.MessageId.DISCONNECT,
    messages.KeepAlive: messages.MessageId.KEEPALIVE,
    messages.UnrecognizedRequest: messages.MessageId.UNRECOGNIZED_REQUEST,
}


def encode_message(message: Message, *, version: NatNetVersion | None = None) -> bytes:
    """Encode ``message`` as one datagram.

    Args:
        message: any NatNet message object (a :class:`MocapFrame` encodes as FRAMEOFDATA,
            :class:`ModelDefinitions` as MODELDEF).
        version: bitstream version; required for FRAMEOFDATA and MODELDEF.

    Raises:
        ValueError: a field does not fit, the payload exceeds 65535 bytes, or ``version`` is missing.
    """
    message_id, payload = _encode_payload(message, version)
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise ValueError(
            f"{message_id.name} payload of {len(payload)} bytes exceeds the {MAX_PAYLOAD_BYTES}-byte limit"
        )
    return _HEADER.pack(message_id, len(payload)) + payload


def peek_message_id(datagram: bytes) -> int:
    """The message id of ``datagram`` (any uint16); raises NatNetDecodeError if shorter than 4 bytes."""
    if len(datagram) < HEADER_BYTES:
        raise NatNetDecodeError(f"datagram of {len(datagram)} bytes is shorter than the 4-byte NatNet header")
    return _HEADER.unpack_from(datagram)[0]


def decode_message(datagram: bytes, *, version: NatNetVersion | None) -> Message:
    """Decode one datagram.

    Args:
        datagram: the received bytes.
        version: the server's bitstream version (from SERVERINFO); needed for FRAMEOFDATA and
            MODELDEF, ignored otherwise.

    Raises:
        NatNetDecodeError: anything wrong with the bytes (unknown id, truncation, bad fields), or a
            FRAMEOFDATA / MODELDEF while ``version`` is None.
    """
    raw_id = peek_message_id(datagram)
    declared = _HEADER.unpack_from(datagram)[1]
    try:
        message_id = messages.MessageId(raw_id)
    except ValueError:
        raise NatNetDecodeError(f"unknown NatNet message id {raw_id}") from None
    available = len(datagram) - HEADER_BYTES
    if declared > available:
        raise NatNetDecodeError(
            f"{message_id.name}: truncated datagram, header declares {declared} payload bytes, "
            f"{available} present"
        )
    payload = bytes(datagram[HEADER_BYTES : HEADER_BYTES + declared])
    return _decode_payload(message_id, payload, version)


def _encode_payload(message: Message, version: NatNetVersion | None) -> tuple[messages.MessageId, bytes]:
    if isinstance(message, MocapFrame):
        return messages.MessageId.FRAMEOFDATA, encode_frame_payload(message, _need_version(version, "FRAMEOFDATA"))
    if isinstance(message, ModelDefinitions):
        return messages.MessageId.MODELDEF, encode_model_definitions_payload(
            message, _need_version(version, "MODELDEF")
        )
    if isinstance(message, messages.Connect):
        payload = bytearray(_CONNECT_PAYLOAD_BYTES)
        payload[0:4] = b"Ping"
        if message.requested_version is not None:
            payload[_CONNECT_VERSION_OFFSET : _CONNECT_VERSION_OFFSET + 4] = (
                message.requested_version.as_bytes()
            )
        return messages.MessageId.CONNECT, bytes(payload)
    if isinstance(message, messages.ServerInfo):
        return messages.MessageId.SERVERINFO, _encode_server_info(message)
    if isinstance(message, messages.CommandRequest):
        writer = PayloadWriter()
        writer.cstring(message.command, "CommandRequest.command")
        return messages.MessageId.REQUEST, writer.getvalue()
    if isinstance(message, messages.CommandResponse):
        return messages.MessageId.RESPONSE, bytes(message.payload)
    if isinstance(message, messages.MessageString):
        writer = PayloadWriter()
        writer.cstring(message.text, "MessageString.text")
        return messages.MessageId.MESSAGESTRING, writer.getvalue()
    message_id = _EMPTY_MESSAGES.get(type(message))
    if message_id is None:
        raise ValueError(f"cannot encode {type(message).__name__} as a NatNet message")
    return message_id, b""


def _need_version(version: NatNetVersion | None, message: str) -> NatNetVersion:
    if version is None:
        raise ValueError(f"encoding {message} needs the NatNet version (version=...)")
    return version


def _encode_server_info(info: messages.ServerInfo) -> bytes:
    writer = PayloadWriter()
    writer.fixed_cstring(info.application_name, _NAME_BYTES, "ServerInfo.application_name")
    writer.raw(bytes(info.application_version))
    writer.raw(info.natnet_version.as_bytes())
    if info.connection_info_valid:
        writer.uint64(info.high_resolution_clock_frequency, "ServerInfo.high_resolution_clock_frequency")
        writer.uint16(info.data_port, "ServerInfo.data_port")
        writer.raw(b"\x01" if info.is_multicast else b"\x00")
        writer.raw(ipaddress.IPv4Address(info.multicast_address).packed)
    return writer.getvalue()


def _decode_payload(message_id: messages.MessageId, payload: bytes, version: NatNetVersion | None) -> Message:
    if message_id == messages.MessageId.FRAMEOFDATA:
        if version is None:
            raise NatNetDecodeError("FRAMEOFDATA: cannot decode before the server's NatNet version is known")
        return decode_frame_payload(payload, version)
    if message_id == messages.MessageId.MODELDEF:
        if version is None:
            raise NatNetDecodeError("MODELDEF: cannot decode before the server's NatNet version is known")
        return decode_model_definitions_payload(payload, version)
    if message_id == messages.MessageId.SERVERINFO:
        return _decode_server_info(payload)
    if message_id == messages.MessageId.CONNECT:
        requested = None
        if len(payload) >= _CONNECT_VERSION_OFFSET + 4:
            raw = payload[_CONNECT_VERSION_OFFSET : _CONNECT_VERSION_OFFSET + 4]
            if any(raw):
                requested = NatNetVersion(*raw)
        return messages.Connect(requested_version=requested)
    if message_id == messages.MessageId.REQUEST:
        return messages.CommandRequest(command=_decode_terminated_text(payload, "REQUEST"))
    if message_id == messages.MessageId.RESPONSE:
        return messages.CommandResponse(payload=payload)
    if message_id == messages.MessageId.MESSAGESTRING:
        return messages.MessageString(text=_decode_terminated_text(payload, "MESSAGESTRING"))
    empty_types = {value: key for key, value in _EMPTY_MESSAGES.items()}
    return empty_types[message_id]()


def _decode_terminated_text(payload: bytes, message: str) -> str:
    reader = PayloadReader(payload, message)
    return reader.cstring("text")


def _decode_server_info(payload: bytes) -> messages.ServerInfo:
    reader = PayloadReader(payload, "SERVERINFO")
    if len(payload) != _SERVERINFO_LEGACY_BYTES and len(payload) < _SERVERINFO_BYTES:
        raise reader.error(
            f"payload of {len(payload)} bytes is neither the {_SERVERINFO_LEGACY_BYTES}-byte pre-3.0 form "
            f"nor the {_SERVERINFO_BYTES}-byte 3.0+ form"
        )
    name = reader.fixed_cstring(_NAME_BYTES, "application name")
    application_version = tuple(reader.raw(4, "application version"))
    natnet_version = NatNetVersion(*reader.raw(4, "NatNet version"))
    if len(payload) == _SERVERINFO_LEGACY_BYTES:
        return messages.ServerInfo(
            application_name=name,
            application_version=application_version,
            natnet_version=natnet_version,
            connection_info_valid=False,
        )
    frequency = reader.uint64("high-resolution clock frequency")
    data_port = reader.uint16("data port")
    is_multicast = reader.raw(1, "multicast flag") != b"\x00"
    group = str(ipaddress.IPv4Address(reader.raw(4, "multicast address")))
    # Bytes after the 3.0+ fields are ignored: a newer server may append fields.
    return messages.ServerInfo(
        application_name=name,
        application_version=application_version,
        natnet_version=natnet_version,
        high_resolution_clock_frequency=frequency,
        data_port=data_port,
        is_multicast=is_multicast,
        multicast_address=group,
        connection_info_valid=True,
    )
