"""The state estimator node over real UDP (NatNet from the simulated Motive) and real DDS.

A :class:`MocapServer` streams a known moving scene at 120 Hz with 0.5 mm / 3 mrad mocap
noise through a calibrated-looking mocap -> table transform; a subscriber node receives
``scene_state`` and ``/diagnostics`` over Fast DDS and compares them with the truth:

* pose and speed errors after settling (RMS < 1 mm, < 5 mm/s), object order, names, flags;
* an untracked object goes stale within 2 frames of its timeout, ages grow, it recovers;
* truncated and garbage datagrams are counted (in /diagnostics) and dropped while the
  states stay correct; garbled frames do not stop the node; a lost stream is published
  as stale bodies.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from test_state_estimator_support import (
    RATE_HZ,
    SCENE,
    MovingScene,
    Topics,
    all_valid,
    pose_errors,
    ros_minus_monotonic,
    start_estimator,
    write_transform,
)

from parapush.estimation.table_frame import load_table_transform
from parapush.nodes.conversions import msg_to_snapshot, time_to_seconds
from parapush.sim.mocap_server import CorruptionKind, MocapServer, MocapServerSettings, UntrackMode

pytestmark = pytest.mark.timeout(60)

SETTLE_S = 0.5
FRAME_S = 1.0 / RATE_HZ


@pytest.fixture
def streaming(tmp_path, ros_context, spinning):
    """(server, moving scene, estimator node, topics, ROS - monotonic offset); all stopped after."""
    transform_path = write_transform(tmp_path)
    scene = MovingScene(load_table_transform(transform_path), seed=5)
    server = MocapServer(scene, settings=MocapServerSettings(command_port=0, rate_hz=RATE_HZ, rng_seed=1)).start()
    node = None
    try:
        topics = Topics(ros_context, spinning)
        node = start_estimator(ros_context, spinning, server.command_address[1],
                               table_transform_file=str(transform_path))
        topics.wait_for(all_valid, what="a state with every body valid")
        yield server, scene, node, topics, ros_minus_monotonic()
    finally:
        if node is not None:
            node.close()
        server.stop()


def stamp(message) -> float:
    return time_to_seconds(message.header.stamp)


def settled(messages, since: float):
    return [m for m in messages if stamp(m) >= since]


def test_moving_scene_is_estimated_within_1_mm_and_5_mm_per_s(streaming):
    server, scene, node, topics, offset = streaming
    start = stamp(topics.wait_for(all_valid))
    time.sleep(SETTLE_S + 2.5)
    messages = settled(topics.snapshot(), start + SETTLE_S)
    errors = pose_errors(messages, scene, offset)
    print(f"\nmoving scene: {errors.describe()}")
    assert len(messages) >= 0.9 * 2.5 * RATE_HZ, f"only {len(messages)} states in 2.5 s at {RATE_HZ} Hz"
    assert errors.position_rms < 1e-3, errors.describe()
    assert errors.speed_rms < 5e-3, errors.describe()
    assert errors.yaw_rms < 5e-3, errors.describe()
    for message in messages:
        assert message.header.frame_id == "table"
        assert message.pusher.name == "pusher" and message.pusher.valid
        assert [body.name for body in message.objects] == list(SCENE.object_names)
        assert all(body.valid and 0.0 <= body.age < 2 * FRAME_S + 0.005 for body in message.objects)
        assert [body.radius for body in message.objects] == [spec.radius for spec in SCENE.objects]
        msg_to_snapshot(message, SCENE, require_valid=True)  # finite, complete, valid
    stamps = np.array([stamp(m) for m in messages])
    assert np.all(np.diff(stamps) > 0.0), "stamps must increase"
    assert np.median(np.diff(stamps)) == pytest.approx(FRAME_S, rel=0.05)
    # Stamps are mid-exposure times: the truth at the stamp, not at the receipt, is matched
    # (checked above); their distance to the receipt is the small latency.
    status = topics.latest_stream_status(after=len(topics.diagnostics))
    assert status["level"] == 0, status
    assert float(status["update_rate_hz"]) == pytest.approx(RATE_HZ, rel=0.1)
    assert status["malformed_packets"] == "0" and status["frames_lost"] == "0"
    assert status["unknown_ids"] == "" and status["stale_bodies"] == ""
    assert status["rigid_body_ids"] == "pusher=1,target=2,clutter_a=3,clutter_b=4,clutter_c=5"
    assert status["ids_from"] == "model definitions"
    assert float(status["latency_mean_ms"]) >= 0.0


@pytest.mark.parametrize("mode", list(UntrackMode))
def test_untracked_object_is_stale_within_two_frames_of_the_timeout_and_recovers(streaming, mode):
    server, scene, node, topics, offset = streaming
    timeout = node.stale_timeout
    index = SCENE.object_index("target")
    topics.wait_for(all_valid)
    before = len(topics.snapshot())
    server.untrack(2, duration_s=0.4, mode=mode)
    time.sleep(0.4 + 0.8)
    messages = topics.snapshot()[before:]
    targets = [m.objects[index] for m in messages]
    first_stale = next(i for i, body in enumerate(targets) if not body.valid)
    last_observation = stamp(messages[first_stale - 1]) - targets[first_stale - 1].age
    # The last valid state before it was within the timeout; the first stale one within 2 frames past it.
    assert stamp(messages[first_stale - 1]) - last_observation <= timeout + 0.002
    delay = stamp(messages[first_stale]) - last_observation
    assert timeout - FRAME_S <= delay <= timeout + 2 * FRAME_S + 0.002, f"stale {delay:.4f} s after the last frame"
    recovered = next(i for i in range(first_stale, len(targets)) if targets[i].valid)
    stale = messages[first_stale:recovered]
    ages = np.array([m.objects[index].age for m in stale])
    assert len(stale) >= 0.25 * RATE_HZ, f"only {len(stale)} stale states"
    assert np.all(np.diff(ages) > 0.0), "the age of a stale body must grow"
    np.testing.assert_allclose(ages, [stamp(m) - last_observation for m in stale], atol=0.003)
    kept = np.array([(m.objects[index].x, m.objects[index].y, m.objects[index].vx, m.objects[index].vy)
                     for m in stale])
    assert np.all(kept[:, :2] == kept[0, :2]) and np.all(kept[:, 2:] == 0.0), "stale: last pose, zero velocity"
    # Only the target went stale; everything else stayed valid and accurate.
    assert all(m.pusher.valid and all(b.valid for i, b in enumerate(m.objects) if i != index) for m in messages)
    # Recovery: valid again with a fresh age, and accurate after settling.
    assert targets[recovered].age < FRAME_S + 0.003
    assert 0.4 - 2 * FRAME_S <= stamp(messages[recovered]) - last_observation <= 0.4 + 3 * FRAME_S
    after = settled(messages, stamp(messages[recovered]) + SETTLE_S)
    errors = pose_errors(after, scene, offset)
    print(f"\nafter recovery ({mode.value}): {errors.describe()}")
    assert len(after) > 0.4 * RATE_HZ
    assert errors.position_rms < 1e-3 and errors.speed_rms < 5e-3, errors.describe()
    diagnostics = node.diagnostics()
    target = next(s for s in diagnostics if s.name.endswith("body target"))
    values = {pair.key: pair.value for pair in target.values}
    assert int(values["missed_frames"]) >= 0.35 * RATE_HZ


def test_malformed_packets_are_counted_and_dropped_and_states_stay_correct(streaming):
    server, scene, node, topics, offset = streaming
    topics.wait_for(all_valid)
    baseline = node.client.stats()
    before = len(topics.snapshot())
    burst_start = time.monotonic() + offset
    garbage = [b"", b"\x07", b"\x07\x00", b"\x07\x00\xff\x7f" + bytes(20), b"\xff\xff\x00\x00",
               b"\x01\x00\x10\x00short"]
    rng = np.random.default_rng(11)
    garbage += [bytes(rng.integers(0, 256, int(rng.integers(5, 700)), dtype=np.uint8)) for _ in range(30)]
    server.corrupt_next_frames(12, kind=CorruptionKind.TRUNCATE)
    for datagram in garbage:
        assert server.send_raw(datagram) == 1
        time.sleep(0.002)
    time.sleep(0.6)
    # Truncated frames and garbage: all counted, none decoded into a state.
    stats = node.client.stats()
    assert stats.malformed_packets - baseline.malformed_packets >= 12 + 6
    assert stats.frames_lost - baseline.frames_lost >= 12  # the truncated frames are missing frame numbers
    assert stats.callback_errors == 0 and stats.last_decode_error
    messages = settled(topics.snapshot()[before:], burst_start)
    errors = pose_errors(messages, scene, offset)
    print(f"\nduring truncated/garbage burst: {errors.describe()}")
    assert len(messages) >= 0.8 * 0.6 * RATE_HZ, f"{len(messages)} states during the burst"
    assert all(all_valid(m) for m in messages)
    assert errors.position_rms < 1e-3 and errors.position.max() < 2e-3, errors.describe()
    assert errors.speed_rms < 5e-3, errors.describe()
    status = topics.latest_stream_status(after=len(topics.diagnostics))
    assert int(status["malformed_packets"]) >= 18 and int(status["frames_lost"]) >= 12, status
    assert status["last_decode_error"], status

    # Garbled frames may decode into wrong numbers (NatNet has no checksum): the node must
    # keep running and be correct again once they stop.
    server.corrupt_next_frames(20, kind=CorruptionKind.GARBLE)
    time.sleep(0.3)
    resumed = time.monotonic() + offset
    time.sleep(SETTLE_S + 0.6)
    after = settled(topics.snapshot(), resumed + SETTLE_S)
    errors = pose_errors(after, scene, offset)
    print(f"after garbled frames: {errors.describe()}; malformed {node.client.stats().malformed_packets}")
    assert len(after) >= 0.8 * 0.6 * RATE_HZ
    assert all(all_valid(m) for m in after)
    assert errors.position_rms < 1e-3 and errors.speed_rms < 5e-3, errors.describe()

    # The stream stops: states keep coming (heartbeat), every body goes stale, ages grow.
    last_stamp = stamp(topics.snapshot()[-1])
    server.stop()
    time.sleep(0.6)
    tail = [m for m in topics.snapshot() if not m.pusher.valid]
    assert len(tail) >= 3, "no stale states published after the stream stopped"
    assert all(not any(b.valid for b in m.objects) for m in tail)
    assert all(stamp(m) == pytest.approx(last_stamp, abs=1e-6) for m in tail)  # no new measurement
    ages = [m.pusher.age for m in tail]
    assert ages == sorted(ages) and ages[-1] > 0.3 and all(math.isfinite(a) for a in ages)
    status = node.diagnostics()[0]
    assert status.level == b"\x02" or status.level == 2, status  # ERROR: no frames
