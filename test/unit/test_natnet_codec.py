"""NatNet codec: round trips per version, strict decoding, real-Motive layouts, natnetsdk cross-check.

The "Motive" frames and model definitions below are built byte by byte in this file (independently
of ``parapush.natnet``) with every block non-empty, and are checked against OptiTrack's own Python
parser (``natnetsdk`` 4.1.1, ``_NatNetClient__unpack_mocap_data`` /
``_NatNetClient__unpack_data_descriptions``) before being used to test our decoder.
"""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from natnet_fixtures import assert_suffix_matches
from natnetsdk.NatNetClient import NatNetClient as SdkClient

from parapush.natnet import (
    SUPPORTED_VERSIONS,
    CommandRequest,
    CommandResponse,
    Connect,
    DescriptionType,
    Disconnect,
    KeepAlive,
    MessageId,
    MessageString,
    MocapFrame,
    ModelDefinitions,
    NatNetDecodeError,
    NatNetVersion,
    RequestFrameOfData,
    RequestModelDefinitions,
    RigidBody,
    RigidBodyDescription,
    RigidBodyMarkerDescription,
    ServerInfo,
    UnrecognizedRequest,
    decode_message,
    encode_message,
    frame_latency_s,
    peek_message_id,
)

VERSION_IDS = [f"{v.major}.{v.minor}" for v in SUPPORTED_VERSIONS]


def f32(value: float) -> float:
    """``value`` rounded to the nearest float32 (exactly representable on the wire)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def sample_frame(frame_number: int = 4711) -> MocapFrame:
    return MocapFrame(
        frame_number=frame_number,
        rigid_bodies=(
            RigidBody(
                1,
                (f32(0.4125), f32(-0.0375), f32(0.0512)),
                (0.0, 0.0, f32(0.38268343), f32(0.9238795)),
                f32(0.00021),
                True,
            ),
            RigidBody(7, (f32(1.5), f32(2.25), f32(-3.0)), (0.5, 0.5, 0.5, 0.5), 0.0, False),
            RigidBody(-3, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), f32(1e-4), True),
        ),
        timecode=0x01020304,
        timecode_subframe=17,
        timestamp=123.456789012345,
        mid_exposure_ticks=98_765_432_100,
        data_received_ticks=98_765_450_000,
        transmit_ticks=98_765_470_123,
        params=0x03,
    )


def sample_definitions(third_marker_name: str = "box_ä") -> ModelDefinitions:
    """Two rigid bodies; natnetsdk 4.1.1 miscounts non-ASCII marker names (str length, not bytes),
    so the cross-checks pass an ASCII ``third_marker_name``."""
    return ModelDefinitions(
        rigid_bodies=(
            RigidBodyDescription(
                name="box",
                id=1,
                parent_id=-1,
                offset=(f32(0.01), 0.0, f32(-0.02)),
                orientation=(0.0, 0.0, f32(0.70710677), f32(0.70710677)),
                markers=(
                    RigidBodyMarkerDescription((f32(0.03), 0.0, 0.0), 0, "box_1"),
                    RigidBodyMarkerDescription((0.0, f32(0.04), 0.0), 12, "box_2"),
                    RigidBodyMarkerDescription((0.0, 0.0, f32(0.05)), 0, third_marker_name),
                ),
            ),
            RigidBodyDescription(name="pusher", id=2, parent_id=1),
        )
    )


def project_definitions(definitions: ModelDefinitions, version: NatNetVersion) -> ModelDefinitions:
    """What a decoder can see of ``definitions`` in ``version`` (fields absent on the wire default)."""
    bodies = []
    for body in definitions.rigid_bodies:
        markers = tuple(
            RigidBodyMarkerDescription(m.position, m.active_label, m.name if version.has_marker_names else "")
            for m in body.markers
        )
        orientation = body.orientation if version.has_description_orientation else (0.0, 0.0, 0.0, 1.0)
        bodies.append(
            RigidBodyDescription(body.name, body.id, body.parent_id, body.offset, orientation, markers)
        )
    return ModelDefinitions(rigid_bodies=tuple(bodies))


# --------------------------------------------------------------------------- independent builders


def _block(version: NatNetVersion, count: int, items: bytes) -> bytes:
    if version.major_minor >= (4, 1):
        return struct.pack("<ii", count, len(items)) + items
    return struct.pack("<i", count) + items


def _rigid_body_bytes(body_id, position, orientation, error, params) -> bytes:
    return struct.pack("<i3f4ffh", body_id, *position, *orientation, error, params)


def build_motive_frame(
    version: NatNetVersion, frame: MocapFrame, *, precision_timestamp_in_40: bool = True
) -> bytes:
    """A FRAMEOFDATA datagram as Motive sends it, every block non-empty, from ``frame``'s bodies."""
    marker_sets = (
        b"crate\0"
        + struct.pack("<i", 2)
        + struct.pack("<6f", 1, 2, 3, 4, 5, 6)
        + b"all\0"
        + struct.pack("<i", 1)
        + struct.pack("<3f", 7, 8, 9)
    )
    other_markers = struct.pack("<6f", 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
    bodies = b"".join(
        _rigid_body_bytes(b.id, b.position, b.orientation, b.mean_error, 1 if b.tracking_valid else 0)
        for b in frame.rigid_bodies
    )
    bone = _rigid_body_bytes(65537, (1, 1, 1), (0, 0, 0, 1), 0.001, 1)
    skeletons = struct.pack("<ii", 3, 2) + bone + bone
    asset_marker = struct.pack("<i3ffhf", 9, 0.1, 0.2, 0.3, 0.014, 0x22, 0.0002)
    assets = struct.pack("<ii", 5, 1) + bone + struct.pack("<i", 2) + asset_marker + asset_marker
    labeled = b"".join(struct.pack("<i3ffhf", (1 << 16) | i, i, i, i, 0.012, 0x08, 0.0001) for i in range(3))
    force_plate = struct.pack("<ii", 1, 3) + b"".join(struct.pack("<i2f", 2, c, -c) for c in range(3))
    device = struct.pack("<ii", 2, 2) + struct.pack("<i1f", 1, 5.0) + struct.pack("<i1f", 1, 6.0)
    payload = struct.pack("<i", frame.frame_number)
    payload += _block(version, 2, marker_sets)
    payload += _block(version, 2, other_markers)
    payload += _block(version, len(frame.rigid_bodies), bodies)
    payload += _block(version, 1, skeletons)
    if version.major_minor >= (4, 1):
        payload += _block(version, 1, assets)
    payload += _block(version, 3, labeled)
    payload += _block(version, 1, force_plate)
    payload += _block(version, 1, device)
    payload += struct.pack(
        "<IIdQQQ",
        frame.timecode,
        frame.timecode_subframe,
        frame.timestamp,
        frame.mid_exposure_ticks,
        frame.data_received_ticks,
        frame.transmit_ticks,
    )
    if version.major_minor >= (4, 1) or (version.major == 4 and precision_timestamp_in_40):
        payload += struct.pack("<II", 1_700_000_000, 123456)
    payload += struct.pack("<h", frame.params)
    return struct.pack("<HH", 7, len(payload)) + payload


def _rb_description_bytes(version: NatNetVersion, body: RigidBodyDescription) -> bytes:
    data = body.name.encode() + b"\0" + struct.pack("<ii3f", body.id, body.parent_id, *body.offset)
    if version.major_minor >= (4, 2):
        data += struct.pack("<4f", *body.orientation)
    data += struct.pack("<i", len(body.markers))
    data += b"".join(struct.pack("<3f", *m.position) for m in body.markers)
    data += b"".join(struct.pack("<i", m.active_label) for m in body.markers)
    if version.major >= 4:
        data += b"".join(m.name.encode() + b"\0" for m in body.markers)
    return data


def build_motive_model_definitions(version: NatNetVersion, definitions: ModelDefinitions) -> bytes:
    """A MODELDEF datagram with marker set, skeleton, force plate, device and camera entries
    around the rigid bodies (plus an asset in 4.1+)."""
    entries: list[tuple[int, bytes]] = []
    entries.append((0, b"crate\0" + struct.pack("<i", 2) + b"crate_1\0crate_2\0"))
    for body in definitions.rigid_bodies:
        entries.append((1, _rb_description_bytes(version, body)))
    bone = RigidBodyDescription("hip", 1, -1, (0.0, 0.9, 0.0))
    entries.append((2, b"walker\0" + struct.pack("<ii", 4, 1) + _rb_description_bytes(version, bone)))
    entries.append(
        (
            3,
            struct.pack("<i", 1)
            + b"FP-0001\0"
            + struct.pack("<2f3f", 0.4, 0.6, 0, 0, 0)
            + struct.pack("<144f", *range(144))
            + struct.pack("<12f", *range(12))
            + struct.pack("<iii", 4, 0, 2)
            + b"Fx\0Fy\0",
        )
    )
    entries.append((4, struct.pack("<i", 2) + b"NIDAQ\0SN-9\0" + struct.pack("<iii", 1, 0, 1) + b"ai0\0"))
    entries.append((5, b"Cam 1\0" + struct.pack("<3f4f", 1, 2, 3, 0, 0, 0, 1)))
    if version.major_minor >= (4, 1):
        asset_marker = b"tip\0" + struct.pack("<i3ffh", 3, 0.0, 0.0, 0.1, 0.014, 0)
        entries.append(
            (
                6,
                b"probe\0"
                + struct.pack("<iii", 1, 6, 1)
                + _rb_description_bytes(version, bone)
                + struct.pack("<i", 1)
                + asset_marker,
            )
        )
    payload = struct.pack("<i", len(entries))
    for entry_type, data in entries:
        payload += struct.pack("<i", entry_type)
        if version.major_minor >= (4, 1):
            payload += struct.pack("<i", len(data))
        payload += data
    return struct.pack("<HH", 5, len(payload)) + payload


def sdk_unpack_frame(datagram: bytes, version: NatNetVersion):
    """(bytes consumed, MoCapData) from OptiTrack's Python parser."""
    payload = datagram[4:]
    return SdkClient()._NatNetClient__unpack_mocap_data(payload, len(payload), version.major, version.minor)


def sdk_rigid_bodies(mocap_data) -> list[RigidBody]:
    return [
        RigidBody(b.id_num, tuple(b.pos), tuple(b.rot), b.error, b.tracking_valid)
        for b in mocap_data.rigid_body_data.rigid_body_list
    ]


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=VERSION_IDS)
def test_frame_round_trip_is_exact(version):
    frame = sample_frame()
    datagram = encode_message(frame, version=version)
    assert peek_message_id(datagram) == MessageId.FRAMEOFDATA
    assert decode_message(datagram, version=version) == frame


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=VERSION_IDS)
def test_frame_without_bodies_round_trips(version):
    frame = MocapFrame(frame_number=0, rigid_bodies=())
    assert decode_message(encode_message(frame, version=version), version=version) == frame


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=VERSION_IDS)
def test_model_definitions_round_trip_keeps_what_the_version_carries(version):
    definitions = sample_definitions()
    decoded = decode_message(encode_message(definitions, version=version), version=version)
    assert decoded == project_definitions(definitions, version)
    assert decoded.ids_by_name == {"box": 1, "pusher": 2}
    assert decoded.names_by_id == {1: "box", 2: "pusher"}


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=VERSION_IDS)
@pytest.mark.parametrize(
    "message",
    [
        Connect(),
        Connect(requested_version=NatNetVersion(4, 1)),
        ServerInfo("Motive", (3, 1, 2, 0), NatNetVersion(4, 1), 10_000_000, 1511, True, "239.255.42.99"),
        ServerInfo("Motive", (2, 3, 0, 0), NatNetVersion(3, 1), connection_info_valid=False),
        CommandRequest("Bitstream"),
        CommandResponse(b"\x00\x00\x00\x00"),
        MessageString("Motive says hälló"),
        RequestModelDefinitions(),
        RequestFrameOfData(),
        Disconnect(),
        KeepAlive(),
        UnrecognizedRequest(),
    ],
    ids=lambda m: type(m).__name__,
)
def test_every_other_message_round_trips(message, version):
    assert decode_message(encode_message(message, version=version), version=version) == message


def test_connect_matches_the_sdk_41_layout():
    datagram = encode_message(Connect(requested_version=NatNetVersion(4, 1)))
    assert struct.unpack_from("<HH", datagram) == (0, 271)
    assert datagram[4:8] == b"Ping"
    assert datagram[4 + 265 : 4 + 269] == bytes((4, 1, 0, 0))


def test_connect_from_other_clients_decodes():
    # natnet 0.3.0 sends "Ping\0"; natnetsdk sends keep-alives with an uncounted trailing NUL.
    assert decode_message(struct.pack("<HH", 0, 5) + b"Ping\0", version=None) == Connect()
    assert decode_message(struct.pack("<HH", 10, 0) + b"\0", version=None) == KeepAlive()


def test_server_info_layout_is_the_packed_sdk_struct():
    info = ServerInfo(
        "Motive", (3, 1, 0, 0), NatNetVersion(4, 2, 1, 0), 3_000_000, 1511, True, "239.255.42.99"
    )
    datagram = encode_message(info)
    assert struct.unpack_from("<HH", datagram) == (1, 279)
    payload = datagram[4:]
    assert payload[:7] == b"Motive\0"
    assert payload[256:264] == bytes((3, 1, 0, 0, 4, 2, 1, 0))
    assert struct.unpack_from("<QHB4B", payload, 264) == (3_000_000, 1511, 1, 239, 255, 42, 99)
    # OptiTrack's parser reads the common part of it.
    sdk = SdkClient()
    assert sdk._NatNetClient__unpack_server_info(payload, len(payload), 0, 0) == 264
    assert sdk.get_application_name() == "Motive"
    assert sdk.get_nat_net_version_server() == [4, 2, 1, 0]


def test_server_info_accepts_appended_fields_from_newer_servers():
    datagram = encode_message(
        ServerInfo("M", (1, 0, 0, 0), NatNetVersion(4, 1), 1000, 1511, False, "239.1.2.3")
    )
    payload = datagram[4:] + b"\x01\x02\x03"
    decoded = decode_message(struct.pack("<HH", 1, len(payload)) + payload, version=None)
    assert decoded.high_resolution_clock_frequency == 1000
    assert decoded.multicast_address == "239.1.2.3"


def test_frame_latency_helper():
    frame = sample_frame()
    assert frame_latency_s(frame, 10_000_000) == pytest.approx((98_765_470_123 - 98_765_432_100) / 1e7)
    with pytest.raises(ValueError, match="frequency"):
        frame_latency_s(frame, 0)
    with pytest.raises(ValueError, match="no high-resolution"):
        frame_latency_s(MocapFrame(1, ()), 1000)
    assert sample_frame().models_changed and sample_frame().is_recording
    assert sample_frame().rigid_body(7).tracking_valid is False
    assert sample_frame().rigid_body(99) is None


finite_f32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
bodies_strategy = st.builds(
    RigidBody,
    id=st.integers(-(2**31), 2**31 - 1),
    position=st.tuples(finite_f32, finite_f32, finite_f32),
    orientation=st.tuples(finite_f32, finite_f32, finite_f32, finite_f32),
    mean_error=finite_f32,
    tracking_valid=st.booleans(),
)
frames_strategy = st.builds(
    MocapFrame,
    frame_number=st.integers(-(2**31), 2**31 - 1),
    rigid_bodies=st.lists(bodies_strategy, max_size=12).map(tuple),
    timecode=st.integers(0, 2**32 - 1),
    timecode_subframe=st.integers(0, 2**32 - 1),
    timestamp=st.floats(allow_nan=False, allow_infinity=False),
    mid_exposure_ticks=st.integers(0, 2**64 - 1),
    data_received_ticks=st.integers(0, 2**64 - 1),
    transmit_ticks=st.integers(0, 2**64 - 1),
    params=st.integers(-(2**15), 2**15 - 1),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=frames_strategy, version=st.sampled_from(SUPPORTED_VERSIONS))
def test_any_frame_round_trips(frame, version):
    assert decode_message(encode_message(frame, version=version), version=version) == frame


# --------------------------------------------------------------------------- cross-check with natnetsdk


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=VERSION_IDS)
def test_natnetsdk_reads_our_frames_byte_for_byte(version):
    frame = sample_frame()
    datagram = encode_message(frame, version=version)
    consumed, mocap = sdk_unpack_frame(datagram, version)
    assert consumed == len(datagram) - 4
    assert mocap.prefix_data.frame_number == frame.frame_number
    assert sdk_rigid_bodies(mocap) == list(frame.rigid_bodies)
    assert_suffix_matches(mocap.suffix_data, frame)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=VERSION_IDS)
def test_motive_frame_with_every_block_decodes(version):
    frame = sample_frame()
    datagram = build_motive_frame(version, frame)
    # The builder agrees with OptiTrack's parser on the whole layout ...
    consumed, mocap = sdk_unpack_frame(datagram, version)
    assert consumed == len(datagram) - 4
    assert mocap.skeleton_data.get_skeleton_count() == 1
    assert mocap.labeled_marker_data.get_labeled_marker_count() == 3
    assert len(mocap.force_plate_data.force_plate_list) == 1
    assert len(mocap.device_data.device_list) == 1
    assert sdk_rigid_bodies(mocap) == list(frame.rigid_bodies)
    # ... and our decoder skips the other blocks and keeps bodies and suffix.
    assert decode_message(datagram, version=version) == frame


def test_natnet_40_suffix_with_or_without_precision_timestamp():
    version = NatNetVersion(4, 0)
    frame = sample_frame()
    for with_precision in (True, False):
        datagram = build_motive_frame(version, frame, precision_timestamp_in_40=with_precision)
        assert decode_message(datagram, version=version) == frame


def test_natnet_41_requires_the_precision_timestamp():
    version = NatNetVersion(4, 1)
    datagram = build_motive_frame(NatNetVersion(4, 0), sample_frame(), precision_timestamp_in_40=False)
    # a 4.0-without-precision suffix is short by 8 bytes for 4.1 (and has no asset block either)
    with pytest.raises(NatNetDecodeError):
        decode_message(datagram, version=version)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=VERSION_IDS)
def test_motive_model_definitions_skip_other_entries(version):
    definitions = sample_definitions("box_3")
    datagram = build_motive_model_definitions(version, definitions)
    decoded = decode_message(datagram, version=version)
    assert decoded.rigid_bodies == project_definitions(definitions, version).rigid_bodies
    expected_skipped = (0, 2, 3, 4, 5, 6) if version.has_block_byte_sizes else (0, 2, 3, 4, 5)
    assert decoded.skipped_description_types == expected_skipped
    if version.major_minor <= (4, 1):  # natnetsdk 4.1.1 predates the 4.2 description quaternion
        payload = datagram[4:]
        consumed, sdk_descriptions = SdkClient()._NatNetClient__unpack_data_descriptions(
            payload, len(payload), version.major, version.minor
        )
        assert consumed == len(payload)
        assert [(d.sz_name.decode(), d.id_num) for d in sdk_descriptions.rigid_body_list] == [
            ("box", 1),
            ("pusher", 2),
        ]


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS[:4], ids=VERSION_IDS[:4])
def test_natnetsdk_reads_our_model_definitions(version):
    payload = encode_message(sample_definitions("box_3"), version=version)[4:]
    consumed, descriptions = SdkClient()._NatNetClient__unpack_data_descriptions(
        payload, len(payload), version.major, version.minor
    )
    assert consumed == len(payload)
    box = descriptions.rigid_body_list[0]
    assert (box.sz_name, box.id_num, box.parent_id) == (b"box", 1, -1)
    assert [tuple(m.pos) for m in box.rb_marker_list] == [
        m.position for m in sample_definitions().rigid_bodies[0].markers
    ]
    if version.has_marker_names:
        assert [m.marker_name for m in box.rb_marker_list] == ["box_1", "box_2", "box_3"]


# --------------------------------------------------------------------------- strict decoding


def _with_payload(message_id: int, payload: bytes) -> bytes:
    return struct.pack("<HH", message_id, len(payload)) + payload


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=VERSION_IDS)
def test_every_truncation_of_a_frame_is_a_decode_error(version):
    for datagram in (
        encode_message(sample_frame(), version=version),
        build_motive_frame(version, sample_frame()),
    ):
        payload = datagram[4:]
        for cut in range(len(payload)):
            if version.major_minor == (4, 0) and cut == len(payload) - 8:
                # Inherent 4.0 ambiguity: dropping the last 8 bytes leaves a valid suffix without the
                # precision timestamp (whose first 2 bytes become the params).
                continue
            # consistent header: the payload parser itself must notice
            with pytest.raises(NatNetDecodeError):
                decode_message(_with_payload(7, payload[:cut]), version=version)
            # header declares more than the datagram holds
            with pytest.raises(NatNetDecodeError, match="truncated"):
                decode_message(datagram[: 4 + cut], version=version)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=VERSION_IDS)
def test_every_truncation_of_model_definitions_is_a_decode_error(version):
    payload = build_motive_model_definitions(version, sample_definitions())[4:]
    for cut in range(len(payload)):
        with pytest.raises(NatNetDecodeError):
            decode_message(_with_payload(5, payload[:cut]), version=version)


def test_decode_errors_name_what_is_wrong():
    version = NatNetVersion(4, 1)
    payload = encode_message(sample_frame(), version=version)[4:]
    with pytest.raises(NatNetDecodeError, match="shorter than the 4-byte"):
        decode_message(b"\x07\x00", version=version)
    with pytest.raises(NatNetDecodeError, match="unknown NatNet message id 77"):
        decode_message(_with_payload(77, b""), version=version)
    with pytest.raises(NatNetDecodeError, match="trailing"):
        decode_message(_with_payload(7, payload + b"\0"), version=version)
    with pytest.raises(NatNetDecodeError, match="before the server's NatNet version"):
        decode_message(_with_payload(7, payload), version=None)
    negative = bytearray(payload)
    struct.pack_into("<i", negative, 4 + 8 + 8, -1)  # rigid body count after two empty 4.1 blocks
    with pytest.raises(NatNetDecodeError, match="rigid bodies count is negative"):
        decode_message(_with_payload(7, bytes(negative)), version=version)
    huge = bytearray(payload)
    struct.pack_into("<i", huge, 4 + 8 + 8, 10_000_000)
    with pytest.raises(NatNetDecodeError, match="truncated"):
        decode_message(_with_payload(7, bytes(huge)), version=version)
    wrong_size = bytearray(payload)
    struct.pack_into("<i", wrong_size, 4 + 8 + 8 + 4, 38 * 3 + 2)
    with pytest.raises(NatNetDecodeError, match="declares 116 bytes but its 3 items take 114"):
        decode_message(_with_payload(7, bytes(wrong_size)), version=version)
    with pytest.raises(NatNetDecodeError, match="neither the 264-byte"):
        decode_message(_with_payload(1, bytes(270)), version=None)
    with pytest.raises(NatNetDecodeError, match="no NUL terminator"):
        decode_message(_with_payload(8, b"hello"), version=None)


def test_non_finite_pose_is_rejected_only_for_tracked_bodies():
    version = NatNetVersion(3, 0)
    tracked = _with_payload(
        7,
        struct.pack("<ii", 1, 0)
        + struct.pack("<i", 0)
        + struct.pack("<i", 1)
        + _rigid_body_bytes(1, (math.nan, 0, 0), (0, 0, 0, 1), 0, 1)
        + struct.pack("<iiii", 0, 0, 0, 0)
        + struct.pack("<IIdQQQh", 0, 0, 0.0, 0, 0, 0, 0),
    )
    with pytest.raises(NatNetDecodeError, match="non-finite"):
        decode_message(tracked, version=version)
    untracked = bytearray(tracked)
    struct.pack_into("<h", untracked, 4 + 4 + 4 + 4 + 4 + 36, 0)
    decoded = decode_message(bytes(untracked), version=version)
    assert decoded.rigid_bodies[0].tracking_valid is False
    assert math.isnan(decoded.rigid_bodies[0].position[0])


def test_model_definitions_errors():
    v30 = NatNetVersion(3, 0)
    with pytest.raises(NatNetDecodeError, match="type 6, which NatNet 3.0 cannot carry"):
        decode_message(_with_payload(5, struct.pack("<ii", 1, 6) + b"x\0"), version=v30)
    bad_name = struct.pack("<ii", 1, 1) + b"\xff\xfe\0" + struct.pack("<ii3fi", 1, -1, 0, 0, 0, 0)
    with pytest.raises(NatNetDecodeError, match="not valid UTF-8"):
        decode_message(_with_payload(5, bad_name), version=v30)
    # 4.1+: an unknown future entry type is skipped by its size
    v41 = NatNetVersion(4, 1)
    future = struct.pack("<iii", 1, 42, 3) + b"abc"
    assert decode_message(_with_payload(5, future), version=v41).skipped_description_types == (42,)
    body = _rb_description_bytes(v41, RigidBodyDescription("b", 3))
    wrong = struct.pack("<iii", 1, 1, len(body) + 1) + body + b"\0"
    with pytest.raises(NatNetDecodeError, match="declares"):
        decode_message(_with_payload(5, wrong), version=v41)


def test_bytes_after_the_declared_payload_are_ignored():
    version = NatNetVersion(4, 1)
    datagram = encode_message(sample_frame(), version=version)
    assert decode_message(datagram + b"\0\0", version=version) == sample_frame()


# --------------------------------------------------------------------------- encode errors


def test_encode_errors_name_the_field():
    version = NatNetVersion(4, 1)
    body = sample_frame().rigid_bodies[0]
    with pytest.raises(ValueError, match="frame_number"):
        encode_message(MocapFrame(2**31, ()), version=version)
    with pytest.raises(ValueError, match=r"rigid_bodies\[0\].position must have 3"):
        encode_message(MocapFrame(1, (RigidBody(1, (0.0, 0.0), (0, 0, 0, 1), 0.0, True),)), version=version)
    with pytest.raises(ValueError, match="transmit_ticks"):
        encode_message(MocapFrame(1, (), transmit_ticks=-1), version=version)
    with pytest.raises(ValueError, match="non-finite"):
        encode_message(
            MocapFrame(1, (RigidBody(1, (math.inf, 0, 0), (0, 0, 0, 1), 0.0, True),)), version=version
        )
    with pytest.raises(ValueError, match="overflows float32"):
        encode_message(MocapFrame(1, (RigidBody(1, (1e39, 0, 0), (0, 0, 0, 1), 0.0, True),)), version=version)
    with pytest.raises(ValueError, match="65535-byte limit"):
        encode_message(MocapFrame(1, (body,) * 2000), version=version)
    with pytest.raises(ValueError, match="needs the NatNet version"):
        encode_message(sample_frame())
    with pytest.raises(ValueError, match="cannot encode NatNet 2.9"):
        encode_message(sample_frame(), version=NatNetVersion(2, 9))
    with pytest.raises(ValueError, match=r"rigid_bodies\[0\].name must not contain NUL"):
        encode_message(ModelDefinitions((RigidBodyDescription("a\0b", 1),)), version=version)
    with pytest.raises(ValueError, match="application_name must encode to at most 255"):
        encode_message(ServerInfo("x" * 256, (1, 0, 0, 0), version))


def test_message_and_version_validation():
    with pytest.raises(ValueError, match="NatNetVersion.minor"):
        NatNetVersion(4, 256)
    with pytest.raises(ValueError, match="major.minor"):
        NatNetVersion.parse("four")
    assert NatNetVersion.parse("4.2") == NatNetVersion(4, 2, 0, 0)
    with pytest.raises(ValueError, match="ServerInfo.multicast_address"):
        ServerInfo("M", (1, 0, 0, 0), NatNetVersion(4, 1), multicast_address="nope")
    with pytest.raises(ValueError, match="ServerInfo.data_port"):
        ServerInfo("M", (1, 0, 0, 0), NatNetVersion(4, 1), data_port=70000)
    with pytest.raises(ValueError, match="RigidBodyDescription.offset"):
        RigidBodyDescription("a", 1, offset=(0.0, 0.0))


def test_description_type_names_cover_the_sdk_codes():
    assert DescriptionType.NAMES[DescriptionType.RIGID_BODY] == "rigid body"
    assert sorted(DescriptionType.NAMES) == list(range(7))
