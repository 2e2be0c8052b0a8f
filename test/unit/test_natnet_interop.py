"""Our simulated Motive against independent NatNet implementations, over real UDP on loopback.

* PyPI ``natnet`` 0.3.0 (a complete third-party client): connect handshake, frames and model
  definitions, unicast and multicast. Known bugs of that library (``/work/shared/devices.md``): it
  does not read the 4.x precision timestamp, so it misreads the 4.x frame-suffix params (we do not
  compare params for 4.x), and it sends a keep-alive before every receive.
* PyPI ``natnetsdk`` 4.1.1 (OptiTrack's Python sample): datagrams captured from our running server
  are unpacked with its ``_NatNetClient__unpack_mocap_data`` and must give the same rigid bodies and
  suffix as our decoder, consuming every byte.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import natnet
import pytest
from natnet_fixtures import assert_suffix_matches
from natnetsdk.NatNetClient import NatNetClient as SdkClient

from parapush.estimation.natnet_client import NatNetClient, NatNetClientSettings
from parapush.natnet import (
    Connect,
    MocapFrame,
    NatNetVersion,
    RigidBodyDescription,
    RigidBodyMarkerDescription,
    decode_message,
    encode_message,
)
from parapush.sim.mocap_server import BodySample, MocapServer, MocapServerSettings

pytestmark = pytest.mark.timeout(60)

RATE_HZ = 200.0
VERSIONS = ["3.0", "3.1", "4.0", "4.1", "4.2"]


def f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


BODIES = (
    BodySample(
        3,
        "box",
        (f32(0.4125), f32(-0.0375), f32(0.05)),
        (0.0, 0.0, f32(0.38268343), f32(0.9238795)),
        True,
        f32(0.0002),
    ),
    BodySample(8, "pusher", (0.125, 0.75, 0.09375), (0.5, -0.5, 0.5, -0.5), False, 0.0),
)
DESCRIPTIONS = (
    RigidBodyDescription(
        "box",
        3,
        -1,
        (0.0, 0.0, 0.015625),
        (0.0, 0.0, f32(0.70710677), f32(0.70710677)),
        (
            RigidBodyMarkerDescription((0.03125, 0.0, 0.0), 0, "box_1"),
            RigidBodyMarkerDescription((0.0, 0.03125, 0.0), 7, "box_2"),
        ),
    ),
    RigidBodyDescription("pusher", 8, 3, (0.25, 0.0, 0.0)),
)


class PypiNatNetRecorder:
    """Collects what the ``natnet`` 0.3.0 client delivers (called from its threads)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.frames = {}
        self.descriptions = []

    def on_frame(self, data_frame):
        with self.lock:
            self.frames[data_frame.prefix.frame_number] = data_frame

    def on_descriptions(self, descriptions):
        with self.lock:
            self.descriptions.append(descriptions)

    def wait(self, predicate, timeout_s: float = 5.0, what: str = "data"):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if predicate(self):
                    return
            time.sleep(0.01)
        raise AssertionError(f"natnet 0.3.0 delivered no {what} within {timeout_s} s")


def _start_pypi_client(
    server: MocapServer, recorder: PypiNatNetRecorder, *, multicast: bool, data_port: int = 1511
):
    client = natnet.NatNetClient(
        server_ip_address="127.0.0.1",
        local_ip_address="127.0.0.1",
        command_port=server.command_address[1],
        data_port=data_port,
        use_multicast=multicast,
    )
    client.on_data_frame_received_event.handlers.append(recorder.on_frame)
    client.on_data_description_received_event.handlers.append(recorder.on_descriptions)
    client.connect(timeout=3.0)
    client.run_async()
    return client


class OurFrames:
    """The frames our NatNetClient received, by frame number (its ``on_frame`` callback)."""

    def __init__(self) -> None:
        self.frames: dict[int, MocapFrame] = {}
        self.lock = threading.Lock()

    def __call__(self, frame: MocapFrame, receive_time: float) -> None:
        with self.lock:
            self.frames[frame.frame_number] = frame

    def snapshot(self) -> dict[int, MocapFrame]:
        with self.lock:
            return dict(self.frames)


def _wait_for_overlap(ours: OurFrames, recorder: PypiNatNetRecorder, count: int = 20) -> None:
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        with ours.lock, recorder.lock:
            if len(set(ours.frames) & set(recorder.frames)) >= count:
                return
        time.sleep(0.01)
    raise AssertionError(f"our client and natnet 0.3.0 did not share {count} frames within 5 s")


def _compare_frames(ours: dict[int, MocapFrame], theirs: dict, version: NatNetVersion) -> int:
    common = sorted(set(ours) & set(theirs))
    for number in common:
        frame, pypi = ours[number], theirs[number]
        assert len(pypi.rigid_bodies) == len(frame.rigid_bodies)
        for body, pypi_body in zip(frame.rigid_bodies, pypi.rigid_bodies, strict=True):
            assert pypi_body.id_num == body.id
            assert tuple(pypi_body.pos) == body.position
            assert tuple(pypi_body.rot) == body.orientation
            assert pypi_body.marker_error == body.mean_error
            assert pypi_body.tracking_valid == body.tracking_valid
        # natnet 0.3.0 misreads the 4.x suffix params (precision timestamp)
        assert_suffix_matches(pypi.suffix, frame, params=version.major == 3)
        assert pypi.skeletons == () and pypi.labeled_markers == ()
        if version.has_assets:
            assert pypi.assets == ()
    return len(common)


@pytest.mark.parametrize("version_text", VERSIONS)
def test_pypi_natnet_client_unicast(version_text):
    version = NatNetVersion.parse(version_text)
    settings = MocapServerSettings(command_port=0, rate_hz=RATE_HZ, natnet_version=version)
    recorder = PypiNatNetRecorder()
    ours = OurFrames()

    with MocapServer(lambda: BODIES, settings=settings, rigid_body_descriptions=DESCRIPTIONS) as server:
        pypi_client = _start_pypi_client(server, recorder, multicast=False)
        try:
            assert pypi_client.server_info.application_name == "Motive (parapush simulation)"
            assert pypi_client.protocol_version.components == (version.major, version.minor, 0, 0)
            with NatNetClient(
                NatNetClientSettings(command_port=server.command_address[1]), on_frame=ours
            ):
                _wait_for_overlap(ours, recorder)
                pypi_client.request_modeldef()
                recorder.wait(lambda r: r.descriptions, what="model definitions")
                time.sleep(0.05)
        finally:
            pypi_client.shutdown()
    compared = _compare_frames(ours.snapshot(), dict(recorder.frames), version)
    assert compared >= 20
    described = recorder.descriptions[0].rigid_bodies
    # natnet 0.3.0 reads the int32 parent id as uint32 (-1 arrives as 0xFFFFFFFF)
    assert [(d.name, d.id_num, d.parent_id) for d in described] == [("box", 3, 0xFFFFFFFF), ("pusher", 8, 3)]
    assert tuple(described[0].pos) == DESCRIPTIONS[0].offset
    assert [tuple(m.pos) for m in described[0].markers] == [m.position for m in DESCRIPTIONS[0].markers]
    assert [m.active_label for m in described[0].markers] == [0, 7]
    if version.has_marker_names:
        assert [m.name for m in described[0].markers] == ["box_1", "box_2"]
    if version.has_description_orientation:
        assert tuple(described[0].quat) == DESCRIPTIONS[0].orientation


def test_pypi_natnet_client_multicast(free_udp_port):
    version = NatNetVersion(4, 1)
    data_port = free_udp_port
    settings = MocapServerSettings(
        command_port=0, rate_hz=RATE_HZ, stream_unicast=False, stream_multicast=True, data_port=data_port
    )
    recorder = PypiNatNetRecorder()
    ours = OurFrames()

    with MocapServer(lambda: BODIES, settings=settings) as server:
        pypi_client = _start_pypi_client(server, recorder, multicast=True, data_port=data_port)
        try:
            client_settings = NatNetClientSettings(command_port=server.command_address[1], multicast=True)
            with NatNetClient(client_settings, on_frame=ours):
                _wait_for_overlap(ours, recorder)
                pypi_client.request_modeldef()
                recorder.wait(lambda r: r.descriptions, what="model definitions")
        finally:
            pypi_client.shutdown()
    assert _compare_frames(ours.snapshot(), dict(recorder.frames), version) >= 20
    assert [d.name for d in recorder.descriptions[0].rigid_bodies] == ["box", "pusher"]


@pytest.mark.parametrize("version_text", VERSIONS)
def test_natnetsdk_unpacks_datagrams_from_our_running_server(version_text):
    version = NatNetVersion.parse(version_text)
    settings = MocapServerSettings(command_port=0, rate_hz=RATE_HZ, natnet_version=version)
    datagrams = []
    with MocapServer(lambda: BODIES, settings=settings) as server:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind(("127.0.0.1", 0))
            sock.settimeout(1.0)
            sock.sendto(encode_message(Connect()), server.command_address)
            while len(datagrams) < 12:
                datagram = sock.recv(65536)
                if struct.unpack_from("<H", datagram)[0] == 7:
                    datagrams.append(datagram)
        finally:
            sock.close()
    sdk = SdkClient()
    for datagram in datagrams:
        ours = decode_message(datagram, version=version)
        payload = datagram[4:]
        consumed, mocap = sdk._NatNetClient__unpack_mocap_data(
            payload, len(payload), version.major, version.minor
        )
        assert consumed == len(payload)
        assert mocap.prefix_data.frame_number == ours.frame_number
        sdk_bodies = [
            (b.id_num, tuple(b.pos), tuple(b.rot), b.error, b.tracking_valid)
            for b in mocap.rigid_body_data.rigid_body_list
        ]
        assert sdk_bodies == [
            (b.id, b.position, b.orientation, b.mean_error, b.tracking_valid) for b in ours.rigid_bodies
        ]
        suffix = mocap.suffix_data
        assert (suffix.timestamp, suffix.stamp_camera_mid_exposure, suffix.stamp_transmit, suffix.param) == (
            ours.timestamp,
            ours.mid_exposure_ticks,
            ours.transmit_ticks,
            ours.params,
        )
