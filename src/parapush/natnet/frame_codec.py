"""FRAMEOFDATA payload layout for NatNet 3.0, 3.1, 4.0, 4.1 and 4.2.

Layout (little-endian), following the OptiTrack NatNet SDK 4.1 ``PacketClient.cpp`` and the
OptiTrack Python sample ``NatNetClient.py`` (PyPI ``natnetsdk`` 4.1.1)::

    int32 frame number
    block marker sets       : per set   name\\0, int32 n, n x 3 f32
    block other markers     : per item  3 f32                       (12 bytes)
    block rigid bodies      : per item  int32 id, 3 f32 pos, 4 f32 quat, f32 mean error,
                                        int16 params (bit0 tracking valid)   (38 bytes)
    block skeletons         : per item  int32 id, int32 n, n x rigid body (38 bytes)
    block assets (4.1+)     : per item  int32 id, int32 n, n x rigid body (38 bytes),
                                        int32 m, m x marker (26 bytes)
    block labelled markers  : per item  int32 id, 3 f32 pos, f32 size, int16 params, f32 residual
    block force plates      : per item  int32 id, int32 channels, per channel int32 n, n x f32
    block devices           : as force plates
    suffix: uint32 timecode, uint32 subframe, f64 timestamp, uint64 mid-exposure, uint64
            data received, uint64 transmit, [4.x: uint32 precision s, uint32 fraction], int16 params

A block is ``int32 count`` followed (4.1+ only) by ``int32 byte size`` of its items. NatNet 4.0
servers are ambiguous about the precision timestamp: the decoder accepts the suffix with or without
it (the frame params are the payload's last int16), the encoder writes it.

Our server encodes every block except rigid bodies as empty; the decoder parses every block of a
real Motive frame (checking sizes and, in 4.1+, that each block's items fill its byte size exactly)
and keeps only the rigid bodies and the suffix.
"""

from __future__ import annotations

import math

from parapush.natnet.errors import NatNetDecodeError
from parapush.natnet.frames import MocapFrame, RigidBody
from parapush.natnet.version import NatNetVersion
from parapush.natnet.wire import PayloadReader, PayloadWriter

__all__ = ["decode_frame_payload", "encode_frame_payload"]

RIGID_BODY_BYTES = 38
LABELED_MARKER_BYTES = 26
MARKER_POSITION_BYTES = 12
_SUFFIX_FIXED_BYTES = 4 + 4 + 8 + 3 * 8
_PRECISION_TIMESTAMP_BYTES = 8
_PARAMS_BYTES = 2
_TRACKING_VALID = 0x01
_NEWEST_KNOWN = (4, 2)
_MESSAGE = "FRAMEOFDATA"


def encode_frame_payload(frame: MocapFrame, version: NatNetVersion) -> bytes:
    """Encode ``frame`` as a FRAMEOFDATA payload (without the 4-byte header) for ``version``.

    Raises:
        ValueError: a field does not fit its wire type (the message names the field), a rigid body
            is not 3-D / its quaternion not 4-D, or a tracked body has a non-finite pose.
    """
    _require_supported(version)
    writer = PayloadWriter()
    writer.int32(frame.frame_number, "frame_number")
    for block in ("marker sets", "other markers"):
        _write_empty_block(writer, version, block)
    writer.int32(len(frame.rigid_bodies), "rigid body count")
    if version.has_block_byte_sizes:
        writer.int32(RIGID_BODY_BYTES * len(frame.rigid_bodies), "rigid body block size")
    for index, body in enumerate(frame.rigid_bodies):
        _write_rigid_body(writer, body, f"rigid_bodies[{index}]")
    _write_empty_block(writer, version, "skeletons")
    if version.has_assets:
        _write_empty_block(writer, version, "assets")
    for block in ("labeled markers", "force plates", "devices"):
        _write_empty_block(writer, version, block)
    writer.uint32(frame.timecode, "timecode")
    writer.uint32(frame.timecode_subframe, "timecode_subframe")
    writer.float64(frame.timestamp, "timestamp")
    writer.uint64(frame.mid_exposure_ticks, "mid_exposure_ticks")
    writer.uint64(frame.data_received_ticks, "data_received_ticks")
    writer.uint64(frame.transmit_ticks, "transmit_ticks")
    if version.has_precision_timestamp:
        writer.uint32(0, "precision timestamp seconds")
        writer.uint32(0, "precision timestamp fraction")
    writer.int16(frame.params, "params")
    return writer.getvalue()


def decode_frame_payload(payload: bytes, version: NatNetVersion) -> MocapFrame:
    """Decode a FRAMEOFDATA payload (without the 4-byte header) sent in ``version``.

    Raises:
        NatNetDecodeError: the payload is truncated, has trailing bytes, a negative or impossible
            count, a 4.1+ block whose byte size disagrees with its items, a non-finite timestamp, or
            a tracked rigid body with a non-finite pose.
    """
    if version.major < 3:
        raise NatNetDecodeError(f"{_MESSAGE}: NatNet {version} is not supported (3.0 or newer needed)")
    reader = PayloadReader(payload, _MESSAGE)
    frame_number = reader.int32("frame number")
    _read_block(reader, version, "marker sets", _skip_marker_set, min_item_bytes=1 + 4)
    _read_block(reader, version, "other markers", _skip_fixed(MARKER_POSITION_BYTES), MARKER_POSITION_BYTES)
    rigid_bodies: list[RigidBody] = []
    _read_block(
        reader,
        version,
        "rigid bodies",
        lambda r, i: rigid_bodies.append(_read_rigid_body(r, f"rigid body {i}")),
        RIGID_BODY_BYTES,
    )
    _read_block(reader, version, "skeletons", _skip_skeleton, min_item_bytes=8)
    if version.has_assets:
        _read_block(reader, version, "assets", _skip_asset, min_item_bytes=12)
    _read_block(reader, version, "labeled markers", _skip_fixed(LABELED_MARKER_BYTES), LABELED_MARKER_BYTES)
    _read_block(reader, version, "force plates", _skip_analog_item, min_item_bytes=8)
    _read_block(reader, version, "devices", _skip_analog_item, min_item_bytes=8)

    timecode = reader.uint32("suffix timecode")
    timecode_subframe = reader.uint32("suffix timecode subframe")
    timestamp = reader.float64("suffix timestamp")
    if not math.isfinite(timestamp):
        reader.offset -= 8
        raise reader.error(f"suffix timestamp is not finite ({timestamp})")
    mid_exposure = reader.uint64("suffix mid-exposure ticks")
    data_received = reader.uint64("suffix data-received ticks")
    transmit = reader.uint64("suffix transmit ticks")
    if version.major_minor >= (4, 1) or (version.major == 4 and reader.remaining > _PARAMS_BYTES):
        reader.skip(_PRECISION_TIMESTAMP_BYTES, "suffix precision timestamp")
    params = reader.int16("suffix params")
    reader.expect_end()
    return MocapFrame(
        frame_number=frame_number,
        rigid_bodies=tuple(rigid_bodies),
        timecode=timecode,
        timecode_subframe=timecode_subframe,
        timestamp=timestamp,
        mid_exposure_ticks=mid_exposure,
        data_received_ticks=data_received,
        transmit_ticks=transmit,
        params=params,
    )


def _require_supported(version: NatNetVersion) -> None:
    if version.major < 3 or version.major_minor > _NEWEST_KNOWN:
        raise ValueError(f"cannot encode NatNet {version}: supported are 3.0 to 4.2")


def _write_empty_block(writer: PayloadWriter, version: NatNetVersion, block: str) -> None:
    writer.int32(0, f"{block} count")
    if version.has_block_byte_sizes:
        writer.int32(0, f"{block} block size")


def _write_rigid_body(writer: PayloadWriter, body: RigidBody, field: str) -> None:
    position = tuple(body.position)
    orientation = tuple(body.orientation)
    if body.tracking_valid and not all(math.isfinite(v) for v in (*position, *orientation, body.mean_error)):
        raise ValueError(f"{field} (id {body.id}) is tracked but has a non-finite pose or mean_error")
    writer.int32(body.id, f"{field}.id")
    writer.floats(position, 3, f"{field}.position")
    writer.floats(orientation, 4, f"{field}.orientation")
    writer.float32(body.mean_error, f"{field}.mean_error")
    writer.int16(_TRACKING_VALID if body.tracking_valid else 0, f"{field}.params")


def _read_rigid_body(reader: PayloadReader, field: str) -> RigidBody:
    body_id = reader.int32(f"{field} id")
    position = reader.vec3(f"{field} position")
    orientation = reader.vec4(f"{field} orientation")
    mean_error = reader.float32(f"{field} mean error")
    params = reader.int16(f"{field} params")
    tracking_valid = bool(params & _TRACKING_VALID)
    if tracking_valid and not all(math.isfinite(v) for v in (*position, *orientation, mean_error)):
        raise reader.error(f"{field} (id {body_id}) is tracked but has a non-finite pose or mean error")
    return RigidBody(
        id=body_id,
        position=position,
        orientation=orientation,
        mean_error=mean_error,
        tracking_valid=tracking_valid,
    )


def _read_block(
    reader: PayloadReader, version: NatNetVersion, block: str, read_item, min_item_bytes: int
) -> None:
    """Read one block: count, [4.1+ byte size], then ``count`` items through ``read_item``."""
    count = reader.count(f"{block} count", min_item_size=min_item_bytes)
    if not version.has_block_byte_sizes:
        for index in range(count):
            read_item(reader, index)
        return
    size = reader.int32(f"{block} block size")
    if size < 0:
        raise reader.error(f"{block} block size is negative ({size})")
    reader.require(size, f"{block} block of {size} bytes")
    if count * min_item_bytes > size:
        raise reader.error(f"{block} block size {size} is too small for {count} items")
    start = reader.offset
    if version.major_minor > _NEWEST_KNOWN and block != "rigid bodies":
        reader.skip(size, f"{block} block")  # newer layout than ours: trust the server's size
        return
    for index in range(count):
        read_item(reader, index)
    used = reader.offset - start
    if used != size:
        raise NatNetDecodeError(
            f"{_MESSAGE}: {block} block declares {size} bytes but its {count} items take {used} "
            f"(block starts at payload byte {start})"
        )


def _skip_fixed(item_bytes: int):
    def skip(reader: PayloadReader, index: int) -> None:
        reader.skip(item_bytes, f"item {index}")

    return skip


def _skip_marker_set(reader: PayloadReader, index: int) -> None:
    reader.cstring_bytes(f"marker set {index} name")
    markers = reader.count(f"marker set {index} marker count", min_item_size=MARKER_POSITION_BYTES)
    reader.skip(markers * MARKER_POSITION_BYTES, f"marker set {index} markers")


def _skip_skeleton(reader: PayloadReader, index: int) -> None:
    reader.int32(f"skeleton {index} id")
    bones = reader.count(f"skeleton {index} rigid body count", min_item_size=RIGID_BODY_BYTES)
    reader.skip(bones * RIGID_BODY_BYTES, f"skeleton {index} rigid bodies")


def _skip_asset(reader: PayloadReader, index: int) -> None:
    reader.int32(f"asset {index} id")
    bodies = reader.count(f"asset {index} rigid body count", min_item_size=RIGID_BODY_BYTES)
    reader.skip(bodies * RIGID_BODY_BYTES, f"asset {index} rigid bodies")
    markers = reader.count(f"asset {index} marker count", min_item_size=LABELED_MARKER_BYTES)
    reader.skip(markers * LABELED_MARKER_BYTES, f"asset {index} markers")


def _skip_analog_item(reader: PayloadReader, index: int) -> None:
    reader.int32(f"analog device {index} id")
    channels = reader.count(f"analog device {index} channel count", min_item_size=4)
    for channel in range(channels):
        samples = reader.count(f"analog device {index} channel {channel} sample count", min_item_size=4)
        reader.skip(samples * 4, f"analog device {index} channel {channel} samples")
