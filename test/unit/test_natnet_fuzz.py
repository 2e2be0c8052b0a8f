"""Fuzzing: random, truncated and mutated datagrams into the decoder and into running clients.

Every case must either decode or raise NatNetDecodeError; a running client must count what it
drops, never raise, and keep delivering good frames afterwards. All generators are seeded.
"""

from __future__ import annotations

import math
import random
import socket
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parapush.estimation.natnet_client import NatNetClient, NatNetClientSettings
from parapush.natnet import (
    SUPPORTED_VERSIONS,
    Connect,
    KeepAlive,
    MessageId,
    MessageString,
    MocapFrame,
    ModelDefinitions,
    NatNetDecodeError,
    NatNetVersion,
    RigidBody,
    RigidBodyDescription,
    RigidBodyMarkerDescription,
    ServerInfo,
    decode_message,
    encode_message,
)
from parapush.sim.mocap_server import BodySample, MocapServer, MocapServerSettings

pytestmark = pytest.mark.timeout(120)

BOX = BodySample(1, "box", (0.5, -0.25, 0.0625), (0.0, 0.0, 0.0, 1.0))
PUSHER = BodySample(2, "pusher", (0.125, 0.75, 0.09375), (0.5, 0.5, 0.5, 0.5))
KNOWN_IDS = [int(message_id) for message_id in MessageId]


def seed_datagrams(version: NatNetVersion, rng: random.Random) -> list[bytes]:
    """Valid datagrams of every kind, as starting points for mutation."""
    seeds = []
    for _ in range(6):
        bodies = tuple(
            RigidBody(
                rng.randrange(-5, 50),
                (rng.uniform(-2, 2), rng.uniform(-2, 2), rng.uniform(0, 1)),
                (0.0, 0.0, 0.0, 1.0),
                rng.uniform(0, 1e-3),
                rng.random() < 0.8,
            )
            for _ in range(rng.randrange(0, 6))
        )
        frame = MocapFrame(
            rng.randrange(2**31), bodies, timestamp=rng.uniform(0, 1e4), transmit_ticks=rng.randrange(2**40)
        )
        seeds.append(encode_message(frame, version=version))
    definitions = ModelDefinitions(
        (
            RigidBodyDescription("box", 1, markers=(RigidBodyMarkerDescription((0.01, 0.0, 0.0), 0, "m"),)),
            RigidBodyDescription("pusher", 2, 1, (0.1, 0.0, 0.0)),
        )
    )
    seeds.append(encode_message(definitions, version=version))
    seeds.append(
        encode_message(ServerInfo("Motive", (3, 1, 0, 0), version, 10_000_000, 1511, True, "239.255.42.99"))
    )
    seeds.append(encode_message(Connect(requested_version=version)))
    seeds.append(encode_message(MessageString("hello")))
    seeds.append(encode_message(KeepAlive()))
    return seeds


def mutate(datagram: bytes, rng: random.Random) -> bytes:
    """One random mutation of ``datagram``."""
    kind = rng.randrange(8)
    data = bytearray(datagram)
    if kind == 0:  # cut the datagram (header now over-declares)
        return bytes(data[: rng.randrange(0, len(data) + 1)])
    if kind == 1:  # cut the payload and make the header consistent
        payload = data[4 : 4 + rng.randrange(0, max(1, len(data) - 4))]
        return bytes(data[:2]) + struct.pack("<H", len(payload)) + bytes(payload)
    if kind == 2:  # flip bytes anywhere
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if kind == 3:  # overwrite an aligned int32 (counts and sizes) with an extreme value
        if len(data) >= 8:
            offset = 4 + 4 * rng.randrange((len(data) - 4) // 4)
            value = rng.choice([-1, -(2**31), 2**31 - 1, 0x7FFF, 1000, 3, 0])
            data[offset : offset + 4] = struct.pack("<i", value)[: len(data) - offset]
        return bytes(data)
    if kind == 4:  # insert or delete bytes, header fixed up
        position = rng.randrange(4, len(data) + 1) if len(data) > 4 else len(data)
        if rng.random() < 0.5:
            data[position:position] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        else:
            del data[position : position + rng.randint(1, 16)]
        if len(data) >= 4:
            data[2:4] = struct.pack("<H", min(len(data) - 4, 0xFFFF))
        return bytes(data)
    if kind == 5:  # random bytes
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
    if kind == 6:  # known id, random payload, consistent header
        payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        return struct.pack("<HH", rng.choice(KNOWN_IDS), len(payload)) + payload
    # payload of one message under the header of another
    return struct.pack("<H", rng.choice(KNOWN_IDS)) + bytes(data[2:])


def decode_or_none(datagram: bytes, version: NatNetVersion):
    try:
        return decode_message(datagram, version=version)
    except NatNetDecodeError:
        return None


@pytest.mark.parametrize(
    "version", SUPPORTED_VERSIONS, ids=[f"{v.major}.{v.minor}" for v in SUPPORTED_VERSIONS]
)
def test_decoder_survives_thousands_of_mutations(version):
    rng = random.Random(1000 + version.major * 10 + version.minor)
    seeds = seed_datagrams(version, rng)
    decoded = failed = 0
    for _ in range(4000):
        datagram = mutate(rng.choice(seeds), rng)
        try:
            message = decode_message(datagram, version=version)
        except NatNetDecodeError as exc:
            assert str(exc)  # every error says what was wrong
            failed += 1
            continue
        decoded += 1
        if isinstance(message, MocapFrame) and all(
            math.isfinite(v)
            for b in message.rigid_bodies
            for v in (*b.position, *b.orientation, b.mean_error)
        ):
            # whatever decodes is a well-formed frame: it re-encodes and decodes to itself
            assert decode_message(encode_message(message, version=version), version=version) == message
    assert failed > 1000 and decoded > 100  # both paths were exercised


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=700), version=st.sampled_from(SUPPORTED_VERSIONS))
def test_decoder_on_arbitrary_bytes(data, version):
    decode_or_none(data, version)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    message_id=st.sampled_from(KNOWN_IDS),
    payload=st.binary(max_size=700),
    version=st.sampled_from(SUPPORTED_VERSIONS),
)
def test_decoder_on_arbitrary_payloads_with_valid_headers(message_id, payload, version):
    decode_or_none(struct.pack("<HH", message_id, len(payload)) + payload, version)


def _send_paced(send, datagrams: list[bytes]) -> None:
    for index, datagram in enumerate(datagrams):
        send(datagram)
        if index % 25 == 24:
            time.sleep(0.002)


def _wait_for_good_frames(client: NatNetClient, expected: tuple[RigidBody, ...], count: int) -> None:
    seen = 0
    last = None
    deadline = time.monotonic() + 5.0
    while seen < count:
        assert time.monotonic() < deadline, f"only {seen} good frames after the fuzz"
        received = client.wait_for_frame(2.0, newer_than=last)
        last = received.frame.frame_number
        if received.frame.rigid_bodies == expected:
            seen += 1


def _expected_bodies() -> tuple[RigidBody, ...]:
    return tuple(
        RigidBody(b.id, b.position, b.orientation, b.mean_error, b.tracking_valid) for b in (BOX, PUSHER)
    )


@pytest.mark.parametrize("version_text", ["3.0", "4.1"])
def test_running_unicast_client_survives_fuzz_from_the_server_address(version_text):
    version = NatNetVersion.parse(version_text)
    rng = random.Random(77)
    seeds = seed_datagrams(version, rng)
    fuzz = [mutate(rng.choice(seeds), rng) for _ in range(3000)]
    expected_malformed = sum(decode_or_none(d, version) is None for d in fuzz)
    server_settings = MocapServerSettings(command_port=0, rate_hz=200.0, natnet_version=version)
    with MocapServer(lambda: [BOX, PUSHER], settings=server_settings) as server:
        client_settings = NatNetClientSettings(command_port=server.command_address[1], silence_timeout_s=0.5)
        with NatNetClient(client_settings) as client:
            client.wait_for_server(2.0)
            _wait_for_good_frames(client, _expected_bodies(), 5)
            before = client.stats()
            _send_paced(server.send_raw, fuzz)
            time.sleep(0.2)
            _wait_for_good_frames(client, _expected_bodies(), 20)
            after = client.stats()
            assert client.connected
    assert after.packets_received - before.packets_received >= len(fuzz), "datagrams were lost in the kernel"
    assert after.malformed_packets - before.malformed_packets == expected_malformed
    assert after.last_decode_error
    assert after.callback_errors == 0


def test_running_multicast_client_survives_fuzz_on_the_group(free_udp_port):
    data_port = free_udp_port
    server_settings = MocapServerSettings(
        command_port=0, rate_hz=200.0, stream_unicast=False, stream_multicast=True, data_port=data_port
    )
    version = server_settings.natnet_version
    rng = random.Random(99)
    seeds = seed_datagrams(version, rng)
    fuzz = [mutate(rng.choice(seeds), rng) for _ in range(1000)]
    # frames must be decodable to count as malformed; other ids decode independently of the socket
    expected_malformed = sum(decode_or_none(d, version) is None for d in fuzz)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    try:
        with MocapServer(lambda: [BOX, PUSHER], settings=server_settings) as server:
            client_settings = NatNetClientSettings(command_port=server.command_address[1], multicast=True)
            with NatNetClient(client_settings) as client:
                client.wait_for_server(2.0)
                _wait_for_good_frames(client, _expected_bodies(), 5)
                before = client.stats()
                _send_paced(lambda d: sender.sendto(d, ("239.255.42.99", data_port)), fuzz)
                time.sleep(0.2)
                _wait_for_good_frames(client, _expected_bodies(), 20)
                after = client.stats()
    finally:
        sender.close()
    assert after.packets_received - before.packets_received >= len(fuzz), "datagrams were lost in the kernel"
    assert after.malformed_packets - before.malformed_packets == expected_malformed


def test_foreign_fuzz_never_reaches_the_decoder():
    rng = random.Random(5)
    seeds = seed_datagrams(NatNetVersion(4, 1), rng)
    fuzz = [mutate(rng.choice(seeds), rng) for _ in range(1000)]
    server = MocapServer(lambda: [BOX], settings=MocapServerSettings(command_port=0, rate_hz=200.0))
    intruder = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        intruder.bind(("127.0.0.3", 0))
        with server, NatNetClient(NatNetClientSettings(command_port=server.command_address[1])) as client:
            client.wait_for_server(2.0)
            _send_paced(lambda d: intruder.sendto(d, client.command_socket_address), fuzz)
            time.sleep(0.2)
            stats = client.stats()
            assert client.connected
    finally:
        intruder.close()
    assert stats.foreign_packets == 1000
    assert stats.malformed_packets == 0
