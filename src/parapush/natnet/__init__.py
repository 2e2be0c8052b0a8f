"""NatNet, the OptiTrack Motive streaming protocol: data model and codec (no sockets here).

Protocol note
-------------
Versions followed: NatNet bitstream 3.0, 3.1, 4.0, 4.1 and 4.2 (Motive 2.x to 3.x), all
little-endian UDP datagrams ``uint16 message id, uint16 payload size, payload``.

Sources (layouts were written from these descriptions, no code copied):

* OptiTrack NatNet SDK documentation and headers: ``NatNetTypes.h`` (SDK 3.0+: message ids,
  ``sSender`` / ``sSender_Server`` packed structs, i.e. SERVERINFO = char[256] name, uint8[4] app
  version, uint8[4] NatNet version, uint64 high-resolution clock frequency, uint16 data port,
  bool multicast, uint8[4] multicast group), and the direct-depacketization sample
  ``PacketClient.cpp`` (SDK 4.1: per-block byte sizes, assets, frame suffix).
* OptiTrack's Python sample ``NatNetClient.py`` (PyPI ``natnetsdk`` 4.1.1): CONNECT as a 271-byte
  payload "Ping" with the requested version in bytes 265-268; 4.x suffix precision timestamp.
* The NatNet 4.2 change to rigid-body descriptions (a quaternion after the offset), as read by
  PyPI ``natnet`` 0.3.0.
* ``/work/shared/devices.md`` of this project (summary of the above).

Per version (what changes the byte layout):

* 3.0+: rigid bodies 38 bytes (int32 id, 3 f32 position, 4 f32 quaternion qx qy qz qw, f32 mean
  error, int16 params with bit0 = tracking valid); labelled markers 26 bytes; frame suffix with
  three uint64 high-resolution stamps; marker positions moved to MODELDEF.
* 4.0+: MODELDEF rigid bodies end with marker names; frame suffix has a uint32 precision-seconds
  and a uint32 fraction before the int16 params (ambiguous in 4.0: decoded either way).
* 4.1+: every FRAMEOFDATA block is ``int32 count, int32 byte size, items``; an asset block
  follows skeletons; every MODELDEF entry is ``int32 type, int32 byte size, entry``.
* 4.2+: MODELDEF rigid bodies carry a quaternion after the offset.

Decoding is strict: any truncated or malformed datagram raises :class:`NatNetDecodeError` naming
the message, the field and the byte offset. Frames keep rigid bodies and suffix; other blocks
(marker sets, other markers, skeletons, assets, labelled markers, force plates, devices) are
parsed to be skipped and, in 4.1+, checked against their declared byte sizes.

Units: positions in m, orientations as unit quaternions (qx, qy, qz, qw), both in the mocap frame;
timestamps in s (server clock), high-resolution stamps in ticks of the server clock whose
frequency (ticks/s) SERVERINFO announces.
"""

from parapush.natnet.codec import decode_message, encode_message, peek_message_id
from parapush.natnet.errors import NatNetDecodeError, NatNetTimeoutError
from parapush.natnet.frames import MocapFrame, RigidBody, frame_latency_s
from parapush.natnet.messages import (
    CommandRequest,
    CommandResponse,
    Connect,
    Disconnect,
    KeepAlive,
    MessageId,
    MessageString,
    RequestFrameOfData,
    RequestModelDefinitions,
    ServerInfo,
    UnrecognizedRequest,
)
from parapush.natnet.models import (
    DescriptionType,
    ModelDefinitions,
    RigidBodyDescription,
    RigidBodyMarkerDescription,
)
from parapush.natnet.version import SUPPORTED_VERSIONS, NatNetVersion

__all__ = [
    "SUPPORTED_VERSIONS",
    "CommandRequest",
    "CommandResponse",
    "Connect",
    "DescriptionType",
    "Disconnect",
    "KeepAlive",
    "MessageId",
    "MessageString",
    "MocapFrame",
    "ModelDefinitions",
    "NatNetDecodeError",
    "NatNetTimeoutError",
    "NatNetVersion",
    "RequestFrameOfData",
    "RequestModelDefinitions",
    "RigidBody",
    "RigidBodyDescription",
    "RigidBodyMarkerDescription",
    "ServerInfo",
    "UnrecognizedRequest",
    "decode_message",
    "encode_message",
    "frame_latency_s",
    "peek_message_id",
]
