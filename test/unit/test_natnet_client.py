"""Our NatNet client against our simulated Motive over real UDP on loopback (unicast and multicast)."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from parapush.estimation.natnet_client import NatNetClient, NatNetClientSettings, ReceivedFrame
from parapush.natnet import NatNetTimeoutError, NatNetVersion, RigidBody
from parapush.sim.mocap_server import BodySample, MocapServer, MocapServerSettings, UntrackMode

pytestmark = pytest.mark.timeout(60)

RATE_HZ = 200.0


# float32-exact values: what is sent is what must come back, bit for bit
def f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


BOX = BodySample(
    1,
    "box",
    (f32(0.4125), f32(-0.0375), f32(0.05)),
    (0.0, 0.0, f32(0.3826834261417389), f32(0.9238795042037964)),
    True,
    f32(0.0002),
)
PUSHER = BodySample(2, "pusher", (0.125, 0.75, 0.09375), (0.5, -0.5, 0.5, -0.5))


def as_rigid_body(sample: BodySample) -> RigidBody:
    return RigidBody(sample.id, sample.position, sample.orientation, sample.mean_error, sample.tracking_valid)


def fast_client_settings(port: int, **overrides) -> NatNetClientSettings:
    options = {
        "command_port": port,
        "connect_retry_s": 0.05,
        "silence_timeout_s": 0.3,
        "keepalive_period_s": 0.2,
    }
    options.update(overrides)
    return NatNetClientSettings(**options)


class FrameRecorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.frames: list[ReceivedFrame] = []

    def __call__(self, frame, receive_time):
        with self.lock:
            self.frames.append(ReceivedFrame(frame, receive_time))

    def snapshot(self) -> list[ReceivedFrame]:
        with self.lock:
            return list(self.frames)

    def wait_for(self, count: int, timeout_s: float = 5.0) -> list[ReceivedFrame]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            frames = self.snapshot()
            if len(frames) >= count:
                return frames
            time.sleep(0.01)
        raise AssertionError(f"only {len(self.snapshot())} of {count} frames within {timeout_s} s")


@pytest.fixture
def server():
    with MocapServer(
        lambda: [BOX, PUSHER], settings=MocapServerSettings(command_port=0, rate_hz=RATE_HZ)
    ) as running:
        yield running


@pytest.mark.parametrize("version", ["3.0", "3.1", "4.0", "4.1", "4.2"])
def test_unicast_frames_are_exact(version):
    settings = MocapServerSettings(command_port=0, rate_hz=RATE_HZ, natnet_version=version)
    recorder = FrameRecorder()
    server = MocapServer(lambda: [BOX, PUSHER], settings=settings)
    with server, NatNetClient(fast_client_settings(server.command_address[1]), on_frame=recorder) as client:
        info = client.wait_for_server(2.0)
        assert info.natnet_version == NatNetVersion.parse(version)
        frames = recorder.wait_for(20)
        names = client.request_model_definitions(timeout_s=1.0)
        stats = client.stats()
    for received in frames:
        assert received.frame.rigid_bodies == (as_rigid_body(BOX), as_rigid_body(PUSHER))
    numbers = [r.frame.frame_number for r in frames]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert names.ids_by_name == {"box": 1, "pusher": 2}
    assert stats.malformed_packets == 0 and stats.frames_lost == 0
    assert stats.frames_delivered >= 20


def test_latest_frame_receive_time_and_latency(server):
    assert NatNetClient().latest_frame() is None
    with NatNetClient(fast_client_settings(server.command_address[1])) as client:
        client.wait_for_server(2.0)
        first = client.wait_for_frame(2.0)
        before = time.monotonic()
        second = client.wait_for_frame(2.0, newer_than=first.frame.frame_number)
        assert second.frame.frame_number > first.frame.frame_number
        assert first.receive_time < second.receive_time <= time.monotonic()
        assert second.receive_time >= before - 1.0 / RATE_HZ - 0.05
        latency = client.frame_latency_s(second.frame)
        assert 0.0 <= latency < 0.05
        assert client.server_info.high_resolution_clock_frequency == 10_000_000
        assert client.latest_frame().frame.frame_number >= second.frame.frame_number


def test_multicast_frames_are_exact(free_udp_port):
    data_port = free_udp_port
    settings = MocapServerSettings(
        command_port=0, rate_hz=RATE_HZ, stream_unicast=False, stream_multicast=True, data_port=data_port
    )
    recorder = FrameRecorder()
    with MocapServer(lambda: [BOX, PUSHER], settings=settings) as server:
        client_settings = fast_client_settings(server.command_address[1], multicast=True)
        with NatNetClient(client_settings, on_frame=recorder) as client:
            info = client.wait_for_server(2.0)
            assert (info.is_multicast, info.data_port) == (True, data_port)  # group and port taken from here
            frames = recorder.wait_for(15)
            stats = client.stats()
        assert server.stats().clients == ()
    assert all(r.frame.rigid_bodies == (as_rigid_body(BOX), as_rigid_body(PUSHER)) for r in frames)
    assert stats.keepalives_sent == 0 and stats.malformed_packets == 0


def exposure_s(frame, frequency: int) -> float:
    """The frame's mid-exposure on this process's ``time.monotonic()`` clock: the simulated Motive
    stamps its high-resolution ticks from ``time.monotonic_ns()`` on the same host."""
    return frame.mid_exposure_ticks / frequency


def wait_until(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"{what} not within {timeout_s} s"
        time.sleep(0.01)
    return value


UNTRACKED_S = 0.3


@pytest.mark.parametrize("mode", list(UntrackMode))
def test_untracked_body_is_reported_for_the_window_in_the_frames_clock(server, mode):
    """The window is checked on the frames' own mid-exposure stamps (the server's clock), not by
    counting frames in a wall-clock wait: a loaded machine sends fewer frames, never other ones."""
    recorder = FrameRecorder()
    with NatNetClient(fast_client_settings(server.command_address[1]), on_frame=recorder) as client:
        client.wait_for_server(2.0)
        frequency = client.server_info.high_resolution_clock_frequency
        recorder.wait_for(3)
        called = time.monotonic()
        server.untrack(1, duration_s=UNTRACKED_S, mode=mode)
        returned = time.monotonic()
        # A stalled stream (0 Hz) fails here: no frame exposed after the window within 5 s.
        wait_until(lambda: sum(exposure_s(r.frame, frequency) > returned + UNTRACKED_S
                               for r in recorder.snapshot()) >= 3, 5.0, "3 frames exposed after the window")
    frames = [r.frame for r in recorder.snapshot()]
    exposures = [exposure_s(frame, frequency) for frame in frames]

    def untracked(frame) -> bool:
        return frame.rigid_body(1) is None or not frame.rigid_body(1).tracking_valid

    tick = 2.0 / frequency  # the ticks are floored
    inside = [frame for frame, exposed in zip(frames, exposures, strict=True)
              if returned + tick <= exposed < called + UNTRACKED_S - tick]
    outside = [frame for frame, exposed in zip(frames, exposures, strict=True)
               if exposed < called - tick or exposed >= returned + UNTRACKED_S + tick]
    affected = [frame for frame in frames if untracked(frame)]
    # Exactly the frames exposed in the window are affected, whatever the frame rate was.
    assert all(untracked(frame) for frame in inside), "a frame exposed in the window was tracked"
    assert not any(untracked(frame) for frame in outside), "a frame exposed outside the window was untracked"
    # Generous bound for a loaded machine: one frame of the 60 the window holds at 200 Hz. A
    # fault that untracks nothing fails it; a server that stalls through the whole window too.
    assert inside, f"no frame exposed in the {UNTRACKED_S} s window (stream stalled?)"
    numbers = [frame.frame_number for frame in affected]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # one contiguous window
    # The window lasted its duration in the frames' clock: from the last tracked frame before it
    # to the first tracked frame after it, at least UNTRACKED_S.
    first, last = frames.index(affected[0]), frames.index(affected[-1])
    assert first > 0 and last + 1 < len(frames)
    assert exposures[last + 1] - exposures[first - 1] >= UNTRACKED_S - tick, exposures[first - 1:last + 2]
    for frame in affected:
        body = frame.rigid_body(1)
        if mode is UntrackMode.OMIT:
            assert body is None
        else:
            assert body.tracking_valid is False and body.position == BOX.position
        assert frame.rigid_body(2).tracking_valid
    assert frames[-1].rigid_body(1).tracking_valid  # tracked again after the window


def test_dropped_frames_are_counted_as_gaps():
    settings = MocapServerSettings(command_port=0, rate_hz=RATE_HZ, drop_probability=0.25, rng_seed=5)
    recorder = FrameRecorder()
    server = MocapServer(lambda: [BOX], settings=settings).start()
    try:
        with NatNetClient(fast_client_settings(server.command_address[1]), on_frame=recorder) as client:
            client.wait_for_server(2.0)
            recorder.wait_for(80)
            server.stop()
            time.sleep(0.05)
            stats = client.stats()
            address = client.command_socket_address
    finally:
        server.stop()
    numbers = [r.frame.frame_number for r in recorder.snapshot()]
    first, last = numbers[0], numbers[-1]
    dropped = {n for n, destination in server.dropped_frames() if destination == address and first < n < last}
    assert len(dropped) > 5
    assert stats.frames_lost == len(dropped)
    assert stats.gap_events <= stats.frames_lost
    assert set(range(first, last + 1)) - set(numbers) == dropped


def test_corrupted_frames_are_counted_and_skipped(server):
    recorder = FrameRecorder()
    with NatNetClient(fast_client_settings(server.command_address[1]), on_frame=recorder) as client:
        client.wait_for_server(2.0)
        recorder.wait_for(3)
        server.corrupt_next_frames(10)
        time.sleep(0.15)
        count = len(recorder.snapshot())
        recorder.wait_for(count + 5)
        stats = client.stats()
    assert stats.malformed_packets == 10
    assert "truncated" in stats.last_decode_error
    assert stats.frames_lost >= 10  # the corrupted frame numbers never arrived intact


def test_client_reconnects_when_the_server_restarts_with_another_version():
    recorder = FrameRecorder()
    first = MocapServer(lambda: [BOX], settings=MocapServerSettings(command_port=0, rate_hz=RATE_HZ)).start()
    port = first.command_address[1]
    try:
        with NatNetClient(fast_client_settings(port), on_frame=recorder) as client:
            assert client.wait_for_server(2.0).natnet_version == NatNetVersion(4, 1)
            recorder.wait_for(5)
            first.stop()
            time.sleep(0.5)  # longer than silence_timeout_s
            assert not client.connected
            restarted_settings = MocapServerSettings(
                command_port=port,
                rate_hz=RATE_HZ,
                natnet_version="3.0",
                high_resolution_clock_frequency=1_000_000,
            )
            with MocapServer(lambda: [PUSHER], settings=restarted_settings):
                info = client.wait_for_server(2.0)
                assert info.natnet_version == NatNetVersion(3, 0)
                assert info.high_resolution_clock_frequency == 1_000_000
                deadline = time.monotonic() + 2.0
                while client.latest_frame().frame.rigid_bodies[0].id != PUSHER.id:
                    assert time.monotonic() < deadline, "no frame from the restarted server"
                    time.sleep(0.01)
                stats = client.stats()
    finally:
        first.stop()
    assert stats.silences >= 1 and stats.reconnects >= 1
    assert stats.connects_sent >= 2


def test_keepalive_rate_is_bounded(server):
    """Never more than one KEEPALIVE per period on the client's clock (exact: a loaded machine only
    sends fewer); at least 3 within a generous bound for a loaded machine (10 s for 0.75 s)."""
    period = 0.25
    settings = NatNetClientSettings(command_port=server.command_address[1], keepalive_period_s=period)
    started = time.monotonic()
    with NatNetClient(settings) as client:
        client.wait_for_server(2.0)
        wait_until(lambda: client.stats().keepalives_sent >= 3, 10.0,
                   "3 KEEPALIVEs (generous bound for a loaded machine: 0.75 s of periods in 10 s)")
        time.sleep(4 * period)
        stats = client.stats()
        elapsed = time.monotonic() - started
    # The first goes out on connecting (and again after a reconnect), then one per period at most.
    allowed = 1 + stats.reconnects + elapsed / period
    assert 3 <= stats.keepalives_sent <= allowed, (stats.keepalives_sent, elapsed, stats.reconnects)
    assert server.stats().commands_received <= stats.keepalives_sent + stats.connects_sent + 1


def test_keepalives_keep_the_subscription_past_the_server_timeout():
    """Counted against what the server says it sent and in the frames' clock: the subscription
    outlives the server's 0.3 s client timeout several times over, with no frame withheld."""
    timeout = 0.3
    settings = MocapServerSettings(command_port=0, rate_hz=RATE_HZ, client_timeout_s=timeout)
    recorder = FrameRecorder()
    with MocapServer(lambda: [BOX], settings=settings) as server:
        client_settings = fast_client_settings(server.command_address[1], keepalive_period_s=0.1)
        with NatNetClient(client_settings, on_frame=recorder) as client:
            client.wait_for_server(2.0)
            frequency = client.server_info.high_resolution_clock_frequency
            first = recorder.wait_for(1)[0].frame
            # A stalled stream (0 Hz) fails here: no frame exposed 4 timeouts later within 10 s.
            wait_until(lambda: exposure_s(recorder.snapshot()[-1].frame, frequency)
                       - exposure_s(first, frequency) >= 4 * timeout, 10.0, f"frames spanning {4 * timeout} s")
            server_stats = server.stats()
            address = client.command_socket_address
        stats = client.stats()  # stopped: no frame after the recorder's last
    frames = [r.frame for r in recorder.snapshot()]
    numbers = [frame.frame_number for frame in frames]
    assert stats.silences == 0 and server_stats.clients == (address,)
    # Every frame the server numbered between the first and the last arrived: no expiry gap.
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), "frames missing: the server dropped us"
    assert stats.frames_delivered == len(frames) and server_stats.datagrams_dropped == 0


def test_callback_errors_do_not_stop_delivery(server):
    def failing(frame, receive_time):
        raise RuntimeError("consumer bug")

    with NatNetClient(fast_client_settings(server.command_address[1]), on_frame=failing) as client:
        client.wait_for_server(2.0)
        first = client.wait_for_frame(2.0)
        client.wait_for_frame(2.0, newer_than=first.frame.frame_number)
        time.sleep(0.05)
        stats = client.stats()
    assert stats.callback_errors >= 2
    assert (
        stats.callback_errors == stats.frames_delivered or stats.callback_errors == stats.frames_delivered - 1
    )


def test_packets_from_foreign_addresses_are_ignored(server):
    with NatNetClient(fast_client_settings(server.command_address[1], server_address="127.0.0.1")) as client:
        client.wait_for_server(2.0)
        intruder = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            intruder.bind(("127.0.0.2", 0))
            for _ in range(50):
                intruder.sendto(b"\x01\x00\x00\x00", client.command_socket_address)
            time.sleep(0.1)
        finally:
            intruder.close()
        stats = client.stats()
    assert stats.foreign_packets == 50
    assert stats.malformed_packets == 0


def test_timeouts_without_a_server(free_udp_port):
    port = free_udp_port
    with NatNetClient(NatNetClientSettings(command_port=port, connect_retry_s=0.05)) as client:
        start = time.monotonic()
        with pytest.raises(NatNetTimeoutError, match=f"127.0.0.1:{port}"):
            client.wait_for_server(0.2)
        with pytest.raises(NatNetTimeoutError):
            client.request_model_definitions(timeout_s=0.2)
        with pytest.raises(NatNetTimeoutError, match="no new NatNet frame"):
            client.wait_for_frame(0.1)
        assert time.monotonic() - start < 2.0
        assert client.stats().connects_sent >= 3
        with pytest.raises(RuntimeError, match="clock frequency is unknown"):
            client.frame_latency_s(None)


def test_stop_is_clean_and_the_context_manager_closes_everything(server):
    client = NatNetClient(fast_client_settings(server.command_address[1]))
    with client:
        client.wait_for_server(2.0)
        address = client.command_socket_address
        threads = [t for t in threading.enumerate() if t.name == "NatNetClient"]
        assert threads
    assert not any(t.is_alive() for t in threads)
    assert not client.connected
    client.stop()  # idempotent
    time.sleep(0.05)
    assert address not in server.stats().clients  # DISCONNECT was sent


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"server_address": ""}, "server_address"),
        ({"local_address": "eth0"}, "local_address"),
        ({"multicast_group": "192.168.0.1"}, "multicast_group"),
        ({"command_port": 0}, "command_port"),
        ({"data_port": 0}, "data_port"),
        ({"keepalive_period_s": 0.0}, "keepalive_period_s"),
        ({"silence_timeout_s": float("nan")}, "silence_timeout_s"),
        ({"reorder_window_frames": 0}, "reorder_window_frames"),
        ({"max_gap_frames": 0}, "max_gap_frames"),
        ({"receive_buffer_bytes": 1024}, "receive_buffer_bytes"),
    ],
)
def test_settings_validation_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        NatNetClientSettings(**kwargs)
