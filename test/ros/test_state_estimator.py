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
from diagnostic_msgs.msg import DiagnosticStatus
from test_state_estimator_support import (
    RATE_HZ,
    SCENE,
    MovingScene,
    Topics,
    all_valid,
    frame_states,
    largest_gap,
    pose_errors,
    ros_minus_monotonic,
    settled_states,
    start_estimator,
    wait_for_frames,
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
        node = start_estimator(ros_context, spinning, server.command_address[1], topics,
                               table_transform_file=str(transform_path))
        topics.wait_for(all_valid, what="a state with every body valid")
        time.sleep(SETTLE_S)  # the filters converge
        yield server, scene, node, topics, ros_minus_monotonic()
    finally:
        if node is not None:
            node.close()
        server.stop()


def stamp(message) -> float:
    return time_to_seconds(message.header.stamp)


def settled(messages, since: float):
    return [m for m in messages if stamp(m) >= since]


def assert_nothing_lost(node, topics) -> None:
    """Every frame the client delivered was used by the tracker and published, and every
    published state reached the subscriber."""
    deadline = time.monotonic() + 3.0
    while len(topics.snapshot()) < node._published - 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(topics.snapshot()) >= node._published - 1, (len(topics.snapshot()), node._published)
    stats = node.client.stats()
    tracker = node.tracking.tracker.diagnostics(time.monotonic())
    assert stats.frames_lost == 0 and stats.stale_frames == 0 and stats.malformed_packets == 0, stats
    assert tracker.frames_used == tracker.frames_received >= stats.frames_delivered - 1, tracker.summary()
    assert node._published >= tracker.frames_used - 1, (node._published, tracker.frames_used)  # 1 in flight


def test_moving_scene_is_estimated_within_1_mm_and_5_mm_per_s(streaming):
    server, scene, node, topics, offset = streaming
    start = stamp(topics.wait_for(all_valid))
    delivered = node.client.stats().frames_delivered
    wait_for_frames(node, 300, at_least=2.5, at_most=8.0)
    delivered = node.client.stats().frames_delivered - delivered
    published = settled(topics.snapshot(), start)
    # The simulated Motive and this test share a Python process (the GIL) on a machine that
    # may be loaded: the server then sends fewer than 120 frames/s (late_frames), and a stall
    # longer than the stale timeout is (rightly) published as stale bodies. Every state is
    # checked for consistency; accuracy is taken over the states with every body valid,
    # settled (0.5 s after the start or a stall of the stream).
    messages = settled_states(published)
    errors = pose_errors(messages, scene, offset)
    print(f"\nmoving scene: {errors.describe()}; {len(published) - len(messages)} states left out "
          f"(settling), largest frame gap {1e3 * largest_gap(published):.1f} ms, "
          f"server late frames {server.stats().late_frames}")
    # Counted against the frames the client delivered, not per wall second (a loaded machine
    # delivers fewer); 50 of the 300 awaited is a generous bound for a loaded machine (8 s at most).
    assert len(published) >= 0.95 * delivered, (len(published), delivered)
    assert delivered > 50, f"generous bound for a loaded machine: {delivered} frames delivered in at most 8 s"
    assert len(messages) >= 50, "too few settled states (the stream stalled too often)"
    assert errors.position_rms < 1e-3, errors.describe()
    assert errors.speed_rms < 5e-3, errors.describe()
    assert errors.yaw_rms < 5e-3, errors.describe()
    previous = -math.inf
    for position, message in enumerate(published):
        context = [(round(stamp(m) - stamp(published[0]), 4), round(m.pusher.age, 4))
                   for m in published[max(0, position - 3):position + 2]]
        assert message.header.frame_id == "table"
        assert message.pusher.name == "pusher"
        assert [body.name for body in message.objects] == list(SCENE.object_names)
        assert [body.radius for body in message.objects] == [spec.radius for spec in SCENE.objects]
        for body in (message.pusher, *message.objects):
            assert body.valid == (0.0 <= body.age <= node.stale_timeout), body
        if stamp(message) > previous:  # published on a new frame (not a heartbeat in a stall)
            # Every body was in the frame: the same age, the frame's age at publication (valid
            # unless the frame itself arrived later than the timeout, a stall on a loaded machine).
            assert all(body.age == message.pusher.age for body in message.objects), (position, context)
            if message.pusher.age <= node.stale_timeout:
                msg_to_snapshot(message, SCENE, require_valid=True)  # finite, complete, valid
        assert stamp(message) >= previous, "stamps must not go back"
        previous = stamp(message)
    stamps = np.array([stamp(m) for m in messages])
    assert np.all(np.diff(stamps) > 0.0), "stamps of frames must increase"
    # OK when no body is stale (a stall of the simulated stream on a loaded machine is a WARN).
    status = topics.latest_stream_status(after=len(topics.diagnostics), where=lambda v: not v["stale_bodies"])
    assert status["level"] == 0, status
    # The rate over the diagnostics' 1 s window of receive times (a wall-clock window: frames
    # queued in a stall arrive in a burst, so no exact upper bound), below the stream's 120 Hz
    # only by a generous bound for a loaded machine (a quarter); a stalled stream reports 0.
    assert float(status["update_rate_hz"]) > 0.25 * RATE_HZ, f"generous bound for a loaded machine: {status}"
    assert status["malformed_packets"] == "0" and status["frames_lost"] == "0"
    assert status["unknown_ids"] == "" and status["stale_bodies"] == ""
    assert status["rigid_body_ids"] == "pusher=1,target=2,clutter_a=3,clutter_b=4,clutter_c=5"
    assert status["ids_from"] == "model definitions"
    assert 0.0 <= float(status["latency_mean_ms"]) < FRAME_S * 1e3
    assert_nothing_lost(node, topics)
    publishers = topics.node.get_publishers_info_by_topic(topics.state_topic)
    assert [info.node_name for info in publishers] == ["state_estimator"]


def observed_in_frame(message, index: int) -> bool:
    """Whether the object was in the frame of ``message``: its last observation is the frame's
    measurement, as for the pusher (observed in every frame), so both ages are equal."""
    return message.pusher.valid and message.objects[index].age == message.pusher.age


@pytest.mark.parametrize("mode", list(UntrackMode))
def test_untracked_object_is_stale_within_two_frames_of_the_timeout_and_recovers(streaming, mode):
    server, scene, node, topics, offset = streaming
    timeout = node.stale_timeout
    index = SCENE.object_index("target")
    before = len(topics.snapshot())
    server.untrack(2, duration_s=0.4, mode=mode)
    wait_for_frames(node, 200, at_least=1.7, at_most=6.0)
    messages = topics.snapshot()[max(0, before - 5):]
    stamps = np.array([stamp(m) for m in messages])
    targets = [m.objects[index] for m in messages]
    first_stale = next(i for i, body in enumerate(targets) if not body.valid)
    last_seen = max(i for i in range(first_stale) if observed_in_frame(messages[i], index))
    last_observation = stamps[last_seen]
    since = stamps - last_observation
    # The age is taken at publication, a little after the stamp (the frame's exposure): valid
    # exactly while it is within the timeout, and never less than the time since the last
    # observation. Not early, and (the stream's own gap at that point, a loaded machine,
    # aside) within 2 frames of the timeout.
    recovered = next(i for i in range(first_stale, len(targets)) if targets[i].valid)
    window = range(last_seen, recovered)
    assert all(targets[i].valid == (targets[i].age <= timeout) for i in window)
    assert all(targets[i].age >= since[i] - 1e-4 for i in window)
    assert all(not targets[i].valid for i in window if timeout < since[i] < 0.35)
    gap = since[first_stale] - since[first_stale - 1]
    print(f"\nstale {since[first_stale] * 1e3:.1f} ms after the last observation (age "
          f"{1e3 * targets[first_stale].age:.1f} ms, timeout {1e3 * timeout:.0f} ms, frame gap {1e3 * gap:.1f} ms)")
    assert targets[first_stale - 1].age <= timeout < targets[first_stale].age
    assert since[first_stale] <= timeout + 2 * FRAME_S + max(0.0, gap - FRAME_S) + 0.002
    stale = messages[first_stale:recovered]
    ages = np.array([m.objects[index].age for m in stale])
    assert np.all(np.diff(ages) > 0.0), "the age of a stale body must grow"
    lag = ages - since[first_stale:recovered]  # publication delay after the frame's exposure
    assert np.all(lag >= -1e-4) and np.median(lag) < 0.1, lag  # (ms, unless the machine is overloaded)
    kept = np.array([(m.objects[index].x, m.objects[index].y, m.objects[index].vx, m.objects[index].vy)
                     for m in stale])
    assert np.all(kept[:, :2] == kept[0, :2]) and np.all(kept[:, 2:] == 0.0), "stale: last pose, zero velocity"
    # Only the target went stale: in every state published on a new frame the others were in
    # the frame (their age is the pusher's) and are valid unless that frame itself was late.
    for message in frame_states(messages):
        others = [message.pusher, *(b for i, b in enumerate(message.objects) if i != index)]
        assert all(b.age == message.pusher.age and b.valid == (b.age <= timeout) for b in others), message
    late = [m for m in frame_states(messages) if not m.pusher.valid]
    print(f"{len(late)} of {len(messages)} states from frames that arrived later than the timeout (stalls)")
    # Recovery: valid again at the first frame with the target, fresh age, accurate after settling.
    assert observed_in_frame(messages[recovered], index)
    # The window is 0.4 s of server time from the untrack() call, between two frames; the
    # stream's own gaps at either end (a loaded machine) add to it.
    first_gap = min(t for t in since if t > 0.0)
    recovery_gap = stamps[recovered] - stamps[:recovered].max()
    assert 0.4 - 2 * FRAME_S <= since[recovered] <= 0.4 + max(first_gap, FRAME_S) + max(recovery_gap, FRAME_S) + 0.005
    after = settled_states(settled(messages, stamps[recovered]))
    errors = pose_errors(after, scene, offset)
    print(f"after recovery ({mode.value}): {errors.describe()}")
    assert len(after) >= 5, "too few settled states after the recovery (the stream stalled)"
    assert errors.position_rms < 1e-3 and errors.speed_rms < 5e-3, errors.describe()
    diagnostics = node.diagnostics()
    target = next(s for s in diagnostics if s.name.endswith("body target"))
    values = {pair.key: pair.value for pair in target.values}
    assert int(values["missed_frames"]) >= 0.5 * (recovered - first_stale)
    stale_reports = [a for a in topics.diagnostics for s in a.status
                     if s.name.endswith("mocap stream") and any(v.key == "stale_bodies" and v.value == "target"
                                                                 for v in s.values)]
    assert stale_reports, "the stale target never appeared in /diagnostics"


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
    for burst in range(3):  # 4 frames (33 ms) at a time: shorter than the stale timeout
        server.corrupt_next_frames(4, kind=CorruptionKind.TRUNCATE)
        for datagram in garbage[burst::3]:
            assert server.send_raw(datagram) == 1
            time.sleep(0.002)
        time.sleep(0.15)
    deadline = time.monotonic() + 5.0
    while server.stats().frames_corrupted < 12 and time.monotonic() < deadline:
        time.sleep(0.02)
    wait_for_frames(node, 20, at_least=0.15, at_most=3.0)
    # Truncated frames and garbage: all counted, none decoded into a state.
    stats = node.client.stats()
    assert stats.malformed_packets - baseline.malformed_packets >= 12 + 6
    assert stats.frames_lost - baseline.frames_lost >= 12  # the truncated frames are missing frame numbers
    assert stats.callback_errors == 0 and stats.last_decode_error
    messages = settled(topics.snapshot()[before:], burst_start)
    accurate = settled(settled_states(topics.snapshot()), burst_start)
    errors = pose_errors(accurate, scene, offset)
    print(f"\nduring truncated/garbage burst: {errors.describe()}")
    delivered = stats.frames_delivered - baseline.frames_delivered
    assert len(messages) >= 0.9 * delivered - 3 and delivered > 20, f"{len(messages)} states for {delivered} frames"
    assert len(accurate) >= 10, "too few settled states (the stream stalled)"
    # Published on a frame: every body in it, valid (4 lost frames are 33 ms, within the
    # timeout) unless the frame itself came later than the timeout (a stall).
    for message in frame_states(messages):
        assert all(body.age == message.pusher.age for body in message.objects)
        assert all_valid(message) == (message.pusher.age <= node.stale_timeout)
    assert errors.position_rms < 1e-3 and errors.position.max() < 2e-3, errors.describe()
    assert errors.speed_rms < 5e-3, errors.describe()
    status = topics.latest_stream_status(after=len(topics.diagnostics))
    assert int(status["malformed_packets"]) >= 18 and int(status["frames_lost"]) >= 12, status
    assert status["last_decode_error"], status

    # Garbled frames may decode into wrong numbers (NatNet has no checksum): the node must
    # keep running and be correct again once they stop.
    server.corrupt_next_frames(20, kind=CorruptionKind.GARBLE)
    deadline = time.monotonic() + 5.0
    while server.stats().frames_corrupted < 32 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.05)
    resumed = time.monotonic() + offset
    wait_for_frames(node, 130, at_least=SETTLE_S + 0.6, at_most=5.0)
    after = settled_states(settled(topics.snapshot(), resumed))
    errors = pose_errors(after, scene, offset)
    rejected = {pair.key: pair.value for pair in node.diagnostics()[0].values if pair.key.startswith("frames_rej")}
    print(f"after garbled frames: {errors.describe()}; malformed {node.client.stats().malformed_packets}, "
          f"rejected {rejected}")
    assert len(after) >= 10
    assert errors.position_rms < 1e-3 and errors.speed_rms < 5e-3, errors.describe()

    # The stream stops: states keep coming (heartbeat), every body goes stale, ages grow.
    server.stop()
    stopped = len(topics.snapshot())
    time.sleep(0.6)
    received = topics.snapshot()
    final = stamp(received[-1])
    assert final == max(stamp(m) for m in received)  # the last measurement's stamp, kept
    tail = [m for m in received[stopped:] if stamp(m) == final]  # heartbeats (same measurement: same stamp)
    assert len(tail) >= 3, "no states published after the stream stopped"
    stale = [m for m in tail if not m.pusher.valid]
    assert len(stale) >= 2 and all(not any(b.valid for b in m.objects) for m in stale)
    ages = [m.pusher.age for m in tail]
    assert ages == sorted(ages) and ages[-1] > 0.3 and all(math.isfinite(a) for a in ages)
    status = node.diagnostics()[0]
    assert status.level == DiagnosticStatus.ERROR and status.message.startswith("no mocap frames"), status
