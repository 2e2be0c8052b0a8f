"""MODELDEF payload layout (data descriptions) for NatNet 3.0 to 4.2.

Layout (little-endian), following the OptiTrack NatNet SDK 4.1 ``PacketClient.cpp`` / Python
``NatNetClient.py`` and, for the 4.2 rigid-body quaternion, the NatNet 4.2 SDK notes::

    int32 entry count
    per entry: int32 type, [4.1+: int32 byte size of the entry], entry
    rigid body (type 1): name\\0, int32 id, int32 parent id, 3 f32 offset, [4.2+: 4 f32 quaternion],
                         int32 n, n x 3 f32 marker offsets, n x int32 active labels,
                         [4.0+: n x marker name\\0]

Other entry types (marker set 0, skeleton 2, force plate 3, device 4, camera 5, asset 6) are
skipped: by their byte size in 4.1+, by parsing their layout in 3.x/4.0. Our server only writes
rigid bodies.
"""

from __future__ import annotations

import math

from parapush.natnet.errors import NatNetDecodeError
from parapush.natnet.models import (
    DescriptionType,
    ModelDefinitions,
    RigidBodyDescription,
    RigidBodyMarkerDescription,
)
from parapush.natnet.version import NatNetVersion
from parapush.natnet.wire import PayloadReader, PayloadWriter

__all__ = ["decode_model_definitions_payload", "encode_model_definitions_payload"]

_MESSAGE = "MODELDEF"
_FORCE_PLATE_CALIBRATION_FLOATS = 12 * 12
_FORCE_PLATE_CORNER_FLOATS = 4 * 3


def encode_model_definitions_payload(definitions: ModelDefinitions, version: NatNetVersion) -> bytes:
    """Encode the rigid-body definitions as a MODELDEF payload (without header) for ``version``.

    ``skipped_description_types`` is not encoded (it only reports what a decoder skipped).

    Raises:
        ValueError: a field does not fit its wire type; the message names the field.
    """
    if version.major < 3:
        raise ValueError(f"cannot encode NatNet {version}: supported are 3.0 to 4.2")
    writer = PayloadWriter()
    writer.int32(len(definitions.rigid_bodies), "description count")
    for index, body in enumerate(definitions.rigid_bodies):
        entry = _encode_rigid_body(body, version, f"rigid_bodies[{index}]")
        writer.int32(DescriptionType.RIGID_BODY, f"rigid_bodies[{index}] type")
        if version.has_block_byte_sizes:
            writer.int32(len(entry), f"rigid_bodies[{index}] byte size")
        writer.raw(entry)
    return writer.getvalue()


def decode_model_definitions_payload(payload: bytes, version: NatNetVersion) -> ModelDefinitions:
    """Decode a MODELDEF payload (without header) sent in ``version``.

    Raises:
        NatNetDecodeError: truncated or malformed payload, an entry whose byte size disagrees with
            its rigid-body layout, or (3.x/4.0) an entry type that cannot be skipped.
    """
    if version.major < 3:
        raise NatNetDecodeError(f"{_MESSAGE}: NatNet {version} is not supported (3.0 or newer needed)")
    reader = PayloadReader(payload, _MESSAGE)
    entry_header_bytes = 8 if version.has_block_byte_sizes else 4
    count = reader.count("description count", min_item_size=entry_header_bytes)
    rigid_bodies: list[RigidBodyDescription] = []
    skipped: list[int] = []
    for index in range(count):
        entry_type = reader.int32(f"description {index} type")
        if version.has_block_byte_sizes:
            size = reader.int32(f"description {index} byte size")
            if size < 0:
                raise reader.error(f"description {index} byte size is negative ({size})")
            reader.require(size, f"description {index} ({size} bytes)")
            if entry_type != DescriptionType.RIGID_BODY:
                reader.skip(size, f"description {index}")
                skipped.append(entry_type)
                continue
            start = reader.offset
            rigid_bodies.append(_read_rigid_body(reader, version, f"rigid body description {index}"))
            if reader.offset - start != size:
                raise NatNetDecodeError(
                    f"{_MESSAGE}: rigid body description {index} declares {size} bytes but its "
                    f"layout takes {reader.offset - start} (entry starts at payload byte {start})"
                )
            continue
        if entry_type == DescriptionType.RIGID_BODY:
            rigid_bodies.append(_read_rigid_body(reader, version, f"rigid body description {index}"))
        else:
            _skip_legacy_entry(reader, version, entry_type, f"description {index}")
            skipped.append(entry_type)
    reader.expect_end()
    return ModelDefinitions(rigid_bodies=tuple(rigid_bodies), skipped_description_types=tuple(skipped))


def _encode_rigid_body(body: RigidBodyDescription, version: NatNetVersion, field: str) -> bytes:
    writer = PayloadWriter()
    writer.cstring(body.name, f"{field}.name")
    writer.int32(body.id, f"{field}.id")
    writer.int32(body.parent_id, f"{field}.parent_id")
    writer.floats(body.offset, 3, f"{field}.offset")
    if version.has_description_orientation:
        writer.floats(body.orientation, 4, f"{field}.orientation")
    writer.int32(len(body.markers), f"{field} marker count")
    for index, marker in enumerate(body.markers):
        writer.floats(marker.position, 3, f"{field}.markers[{index}].position")
    for index, marker in enumerate(body.markers):
        writer.int32(marker.active_label, f"{field}.markers[{index}].active_label")
    if version.has_marker_names:
        for index, marker in enumerate(body.markers):
            writer.cstring(marker.name, f"{field}.markers[{index}].name")
    return writer.getvalue()


def _read_rigid_body(reader: PayloadReader, version: NatNetVersion, field: str) -> RigidBodyDescription:
    name = reader.cstring(f"{field} name")
    body_id = reader.int32(f"{field} id")
    parent_id = reader.int32(f"{field} parent id")
    offset = reader.vec3(f"{field} offset")
    orientation = (
        reader.vec4(f"{field} orientation") if version.has_description_orientation else (0.0, 0.0, 0.0, 1.0)
    )
    per_marker_bytes = 12 + 4 + (1 if version.has_marker_names else 0)
    marker_count = reader.count(f"{field} marker count", min_item_size=per_marker_bytes)
    positions = [reader.vec3(f"{field} marker {i} position") for i in range(marker_count)]
    labels = [reader.int32(f"{field} marker {i} active label") for i in range(marker_count)]
    names = (
        [reader.cstring(f"{field} marker {i} name") for i in range(marker_count)]
        if version.has_marker_names
        else [""] * marker_count
    )
    values = [*offset, *orientation, *(v for position in positions for v in position)]
    if not all(math.isfinite(v) for v in values):
        raise reader.error(f"{field} ({name!r}, id {body_id}) has a non-finite offset, orientation or marker")
    return RigidBodyDescription(
        name=name,
        id=body_id,
        parent_id=parent_id,
        offset=offset,
        orientation=orientation,
        markers=tuple(
            RigidBodyMarkerDescription(position=p, active_label=label, name=marker_name)
            for p, label, marker_name in zip(positions, labels, names, strict=True)
        ),
    )


def _skip_legacy_entry(reader: PayloadReader, version: NatNetVersion, entry_type: int, field: str) -> None:
    """Skip a non-rigid-body entry of a 3.x/4.0 MODELDEF (no byte size) by parsing its layout."""
    if entry_type == DescriptionType.MARKER_SET:
        reader.cstring_bytes(f"{field} marker set name")
        names = reader.count(f"{field} marker set marker count", min_item_size=1)
        for index in range(names):
            reader.cstring_bytes(f"{field} marker set marker {index} name")
    elif entry_type == DescriptionType.SKELETON:
        reader.cstring_bytes(f"{field} skeleton name")
        reader.int32(f"{field} skeleton id")
        bones = reader.count(f"{field} skeleton bone count", min_item_size=1 + 4 + 4 + 12 + 4)
        for index in range(bones):
            _read_rigid_body(reader, version, f"{field} skeleton bone {index}")
    elif entry_type == DescriptionType.FORCE_PLATE:
        reader.int32(f"{field} force plate id")
        reader.cstring_bytes(f"{field} force plate serial number")
        reader.skip(4 * (2 + 3), f"{field} force plate size and origin")
        reader.skip(4 * _FORCE_PLATE_CALIBRATION_FLOATS, f"{field} force plate calibration matrix")
        reader.skip(4 * _FORCE_PLATE_CORNER_FLOATS, f"{field} force plate corners")
        reader.skip(4 * 2, f"{field} force plate type and channel data type")
        _skip_channel_names(reader, f"{field} force plate")
    elif entry_type == DescriptionType.DEVICE:
        reader.int32(f"{field} device id")
        reader.cstring_bytes(f"{field} device name")
        reader.cstring_bytes(f"{field} device serial number")
        reader.skip(4 * 2, f"{field} device type and channel data type")
        _skip_channel_names(reader, f"{field} device")
    elif entry_type == DescriptionType.CAMERA:
        reader.cstring_bytes(f"{field} camera name")
        reader.skip(4 * (3 + 4), f"{field} camera pose")
    else:
        raise reader.error(
            f"{field} has type {entry_type}, which NatNet {version.major}.{version.minor} cannot carry "
            "(no byte size to skip it)"
        )


def _skip_channel_names(reader: PayloadReader, field: str) -> None:
    channels = reader.count(f"{field} channel count", min_item_size=1)
    for index in range(channels):
        reader.cstring_bytes(f"{field} channel {index} name")
