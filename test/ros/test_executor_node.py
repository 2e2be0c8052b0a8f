"""The executor node over real Fast DDS: controls in, safe TwistStamped commands out.

A harness node (test_executor_support.Harness) publishes ``controls``, records the commands
and plays a fake arm that publishes ``scene_state`` at 50 Hz with the pusher following the
commands. Checked: rate, duration, base frame (hand-computed rotations), the stop after a
control, an empty ControlSequence stopping at once, the speed and workspace limits, the
stale-state watchdog (latency measured), ``~/stop`` latching until ``~/reset``, refusals,
diagnostics and parameter validation. Timing bounds allow for a shared, loaded 2-core machine;
the measured numbers are printed (``-s``). On that machine this process is now and then
starved for 50-300 ms (another thread holding the GIL is preempted); measurements whose
commands show such a gap are repeated (``undisturbed``), and each repetition is printed.
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np
import pytest
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticStatus
from parareal_pushing.msg import ControlSequence, PusherControl
from rclpy.qos import DurabilityPolicy, QoSProfile
from test_executor_support import (
    PERIOD,
    RATE_HZ,
    Harness,
    plateau,
    ros_now,
    start_executor,
    undisturbed,
    wait_until,
)

from parapush.execution.frames import RigidTransform
from parapush.graph import config_dir
from parapush.nodes.conversions import seconds_to_time
from parapush.nodes.executor import PARAMETERS, ExecutorNode
from parapush.nodes.parameters import ParameterError, flatten_parameters

pytestmark = pytest.mark.timeout(60)

STALE_TIMEOUT = 0.1
#: Scheduling slack on a loaded machine (other processes share the 2 cores).
JITTER = 0.03


def idle(node) -> bool:
    """No control queued and the last command zero."""
    return node.executor_core.stream.queued == 0 and not node.executor_core.safety_filter.last_velocity.any()


def run_to_end(node, harness, sent: float, timeout: float = 5.0) -> None:
    """Wait for the motion after ``sent`` to start and to end."""
    wait_until(lambda: any(not t.is_zero for t in harness.received(sent)), 5.0, what="motion")
    wait_until(lambda: idle(node), timeout, what="the end of the controls")


@pytest.fixture
def rig(ros_context, spinning):
    """start(table_to_base=..., start=(x, y), **parameters) -> (node, harness); nodes closed after."""
    nodes = []

    def start(table_to_base=(0.5, 0.0, 0.0, 0.0), start=(0.0, 0.0), **parameters):
        node = start_executor(ros_context, spinning, table_to_base=list(table_to_base), **parameters)
        nodes.append(node)
        harness = Harness(ros_context, spinning, table_to_base=RigidTransform.from_parameters(table_to_base),
                          start=start)
        wait_until(lambda: node.diagnostics().status[0].level == b"\x00", 5.0, what="a valid pusher estimate")
        return node, harness

    yield start
    for node in nodes:
        node.close()


# Hand-checked rotations (table -> base):
#  yaw +90 deg:  table x -> base y; (0.05, 0) -> (0, 0.05, 0).
#  yaw -30 deg as a quaternion (0, 0, sin(-15 deg), cos(-15 deg)):
#   (0.04, 0.03) -> (0.04 cos30 + 0.03 sin30, -0.04 sin30 + 0.03 cos30) = (0.049641, 0.005981, 0).
ROTATIONS = [
    pytest.param((0.5, 0.0, 0.0, math.pi / 2), (0.05, 0.0), (0.0, 0.05, 0.0), id="yaw+90"),
    pytest.param((0.5, 0.1, 0.0, 0.0, 0.0, math.sin(math.radians(-15)), math.cos(math.radians(-15))),
                 (0.04, 0.03), (0.049641016, 0.005980762, 0.0), id="quaternion-yaw-30"),
]


@pytest.mark.parametrize(("transform", "control", "expected"), ROTATIONS)
def test_a_control_streams_base_frame_twists_at_the_rate_for_its_duration_then_zero(rig, transform, control,
                                                                                     expected):
    node, harness = rig(table_to_base=transform)
    duration = 0.5

    def attempt():
        harness.place((0.0, 0.0))
        sent = harness.send((*control, duration))
        run_to_end(node, harness, sent)
        time.sleep(0.3)  # the stop repeats, then silence
        return harness.received(sent), harness.pusher()

    twists, moved = undisturbed(attempt, "control stream")
    assert all(twist.frame_id == "base_link" for twist in twists)
    assert all(not twist.angular.any() and twist.linear[2] == 0.0 for twist in twists)
    speed = math.hypot(*control)
    full = plateau(twists, speed)
    assert len(full) >= 10, [t.speed for t in twists]
    for twist in full:
        np.testing.assert_allclose(twist.linear, expected, atol=1e-8)
    # Ends with exactly stop_repeats (3) zero commands, then silence. (The last ramp-down step can
    # leave a float residue of ~1e-18 m/s for one command before the exact zeros.)
    moving = [index for index, twist in enumerate(twists) if twist.speed > 1e-12]
    first, last = moving[0], moving[-1]
    rest = twists[last + 1:]
    assert [twist.is_zero for twist in rest[-3:]] == [True] * 3 and len(rest) <= 4
    assert all(twist.speed <= 1e-12 for twist in rest)
    assert all(twist.speed > 1e-12 for twist in twists[first:last + 1])
    # Rate, in the commands' own clock: count the commands between the first and the last stamp
    # of the motion, against the ticks of the 10 ms grid in that span.
    stamps = [twist.stamp for twist in twists[first:last + 2]]
    intervals = np.diff(stamps)
    median = statistics.median(intervals)
    ticks = (stamps[-1] - stamps[0]) / PERIOD
    sent = len(stamps) - 1
    print(f"\n[rate] {sent} commands in {ticks:.1f} ticks of the {RATE_HZ} Hz grid, median interval "
          f"{median * 1e3:.2f} ms, max interval {max(intervals) * 1e3:.1f} ms")
    # Never faster than the grid (a late tick is not made up, whatever the load; the stamps are
    # taken at publication, the first right after receipt, so one stamp may be up to JITTER off) ...
    assert sent <= ticks + 1 + JITTER / PERIOD, f"{sent} commands in {ticks:.1f} ticks: faster than {RATE_HZ} Hz"
    # ... and slower only by a generous bound for a loaded machine: on the shared 2-core test
    # machine late ticks are skipped (kept on the grid), so up to half of them may be lost (a
    # stalled stream fails undisturbed()'s 50 ms gap and the plateau's 10 commands first).
    assert sent >= 0.5 * ticks, f"generous bound for a loaded machine: {sent} commands in {ticks:.1f} ticks"
    assert median <= 2.0 * PERIOD + 1e-3, f"generous bound for a loaded machine: median {median * 1e3:.1f} ms"
    # Duration: full speed from the end of the ramp-up to the end of the control; the first
    # command comes right after receipt. The ramps change the speed by 1 m/s^2 x 10 ms per
    # command (the acceleration limit): up 0.01, 0.02, ... and down ..., 0.02, 0.01, then 0.
    active = full[-1].stamp - twists[first].stamp + PERIOD
    print(f"[duration] full-speed span + ramp-up {active:.3f} s for a {duration} s control")
    assert active == pytest.approx(duration, abs=2 * PERIOD + JITTER)
    steps = round(speed / 0.01)
    ramp_up = [twist.speed for twist in twists[first:first + steps]]
    ramp_down = [twist.speed for twist in twists[last - steps + 2:last + 2]]
    speeds = [round(twist.speed, 4) for twist in twists]
    np.testing.assert_allclose(ramp_up, [0.01 * (k + 1) for k in range(steps)], atol=1e-12, err_msg=str(speeds))
    np.testing.assert_allclose(ramp_down, [0.01 * (steps - 1 - k) for k in range(steps)], atol=1e-12,
                               err_msg=str(speeds))
    # The fake arm moved the pusher by the commanded displacement (ramps cancel out).
    print(f"[displacement] fake arm {np.round(moved * 1e3, 2)} mm, commanded "
          f"{np.round(np.array(control) * duration * 1e3, 2)} mm")
    np.testing.assert_allclose(moved, np.array(control) * duration, atol=0.003)


def test_an_empty_control_sequence_stops_at_once(rig):
    node, harness = rig()

    def attempt():
        sent = harness.send((0.08, 0.0, 3.0))
        wait_until(lambda: plateau(harness.received(sent), 0.08), 5.0, what="full speed")
        time.sleep(0.1)
        stop_sent = harness.send()
        wait_until(lambda: any(t.is_zero for t in harness.received(stop_sent)), 1.0, what="a zero command")
        time.sleep(0.2)
        return harness.received(stop_sent - 0.1), stop_sent

    twists, stop_sent = undisturbed(attempt, "empty sequence")
    after = [t for t in twists if t.receipt >= stop_sent]
    zero_index = next(index for index, twist in enumerate(after) if twist.is_zero)
    before_zero = [t.speed for t in after[:zero_index]]
    latency = after[zero_index].receipt - stop_sent
    print(f"\n[empty sequence] zero command received {latency * 1e3:.1f} ms after the stop was published; "
          f"{len(before_zero)} command(s) already in flight")
    assert all(speed == pytest.approx(0.08) for speed in before_zero)  # no ramp: straight from 0.08 to 0
    # The latency is DDS + the subscription callback's scheduling (rclpy, loaded machine); the
    # executor's own reaction is immediate: the next command after the message is zero.
    assert latency < 0.1
    assert all(t.is_zero for t in after[zero_index:])
    assert node.executor_core.stream.queued == 0
    assert not node.executor_core.stop_latched  # a planner stop is not a latched stop
    values = harness.executor_values()
    assert int(values["stop_requests"]) >= 1 and values["stop_latched"] == "False"
    # The next control runs normally.
    sent = harness.send((0.05, 0.0, 0.2))
    wait_until(lambda: plateau(harness.received(sent), 0.05), 5.0, what="motion after the stop")


def test_the_speed_limit_scales_fast_controls_down_keeping_the_direction(rig):
    node, harness = rig()
    sent = harness.send((0.3, 0.4, 0.4))  # 0.5 m/s, the limit is 0.1 m/s
    run_to_end(node, harness, sent)
    time.sleep(0.25)
    twists = harness.received(sent)
    assert max(t.speed for t in twists) <= 0.1 + 1e-12
    full = plateau(twists, 0.1)
    assert len(full) >= 10
    for twist in full:
        np.testing.assert_allclose(twist.linear, [0.06, 0.08, 0.0], atol=1e-12)
    values = harness.executor_values()
    assert int(values["limit.speed_limited"]) >= len(full)


X_MAX, STALL_MARGIN = 0.35, 0.015  # the shipped box edge and margin: the filter's wall is at 0.335


def test_the_workspace_limit_stops_the_pusher_before_the_wall(rig):
    node, harness = rig()
    inner = X_MAX - STALL_MARGIN
    harness.place((0.31, 0.0))  # 2.5 cm from the filter's wall
    sent = harness.send((0.1, 0.02, 1.0))
    run_to_end(node, harness, sent)
    time.sleep(0.2)
    twists = harness.received(sent)
    pusher = harness.pusher()
    # The braking envelope assumes each command holds one period. A command that the (loaded)
    # machine delivered late was held longer by the fake arm, as a real arm holds it until the
    # next one (at most its 0.1 s timeout). Far from the wall the filter absorbs that (it brakes
    # from the measured position); in the last 5 mm, that extra travel towards the wall is the
    # only allowed excursion past the filter's wall (and the stall margin keeps it in the box).
    late = sum(max(0.0, a.linear[0]) * max(0.0, min(b.receipt - a.receipt, 0.1) - PERIOD)
               for a, b in zip(twists, twists[1:], strict=False) if a.position[0] > inner - 0.005)
    past = pusher[0] - inner
    print(f"\n[workspace] pusher stopped at x = {pusher[0]:.6f} m: {past * 1e6:.0f} um past the filter's wall "
          f"({inner:.3f} m), travel during late commands {late * 1e6:.0f} um; box edge {X_MAX} m")
    assert pusher[0] <= X_MAX
    assert past <= late + 0.0002
    assert pusher[0] > inner - 0.005  # it did approach the wall
    # x braked to zero near the wall while y kept the control's (speed-limited) 0.0196 m/s.
    assert any(abs(t.linear[0]) < 1e-3 and t.linear[1] == pytest.approx(0.0196, abs=1e-3) for t in twists)
    values = harness.executor_values()
    assert int(values["limit.workspace_limited"]) > 0


def test_a_stalled_executor_still_stops_inside_the_workspace_box(rig):
    """The node freezes for 0.15 s while the pusher runs at full speed 1 cm before the filter's
    wall; the (fake) arm holds the last command for its 0.1 s timeout: the stall margin keeps it
    inside the box."""
    node, harness = rig()
    harness.place((0.28, 0.0))
    harness.send((0.1, 0.0, 1.0))
    wait_until(lambda: harness.pusher()[0] >= X_MAX - STALL_MARGIN - 0.01, 3.0, what="the pusher near the wall")
    with node.control.lock:  # no command, no watchdog: the node is stalled
        speed = harness.received()[-1].linear[0]
        time.sleep(0.15)
    wait_until(lambda: idle(node), 3.0, what="the end of the control")
    time.sleep(0.2)
    pusher = harness.pusher()
    print(f"\n[stall] {speed:.3f} m/s when the node froze for 150 ms; the pusher stopped at x = {pusher[0]:.4f} m "
          f"(box edge {X_MAX} m)")
    assert speed > 0.05
    assert pusher[0] <= X_MAX


def test_a_stale_scene_state_stops_within_one_command_period_of_the_timeout(rig):
    node, harness = rig(**{"limits.stale_state_timeout": STALE_TIMEOUT})

    def attempt():
        with harness.lock:
            harness.publishing = True
        sent = harness.send((0.05, 0.0, 5.0))
        wait_until(lambda: plateau(harness.received(sent), 0.05), 5.0, what="full speed")
        time.sleep(0.1)
        with harness.lock:
            harness.publishing = False  # the estimator dies
            last_state = harness.states[-1]
        wait_until(lambda: any(t.is_zero for t in harness.received(last_state[0])), 1.0, what="a zero command")
        return harness.received(last_state[0] - 0.05), last_state

    twists, last_state = undisturbed(attempt, "stale")
    zero = next(t for t in twists if t.is_zero)
    latency = zero.stamp - last_state[1]  # the zero command's stamp minus the last state's stamp
    print(f"\n[stale] zero command {latency * 1e3:.1f} ms after the last scene_state stamp "
          f"(timeout {STALE_TIMEOUT * 1e3:.0f} ms, command period {PERIOD * 1e3:.0f} ms)")
    assert STALE_TIMEOUT <= latency <= STALE_TIMEOUT + PERIOD + JITTER
    assert all(t.speed == pytest.approx(0.05) for t in twists if t.stamp < zero.stamp)  # no ramp: exact zero
    # The control is aborted, not resumed when the state comes back.
    with harness.lock:
        harness.publishing = True
    time.sleep(0.3)
    assert all(t.is_zero for t in harness.received(zero.receipt))
    values = harness.executor_values()
    assert int(values["controls_aborted"]) >= 1 and int(values["limit.state_stale"]) >= 1


def test_an_invalid_pusher_estimate_stops_at_once(rig):
    node, harness = rig(**{"limits.stale_state_timeout": STALE_TIMEOUT})
    harness.send((0.05, 0.0, 5.0))
    wait_until(lambda: plateau(harness.received(), 0.05), 5.0, what="full speed")
    with harness.lock:
        harness.valid = False
        invalid_from = time.monotonic()
    wait_until(lambda: any(t.is_zero for t in harness.received(invalid_from)), 1.0, what="a zero command")
    zero = next(t for t in harness.received(invalid_from) if t.is_zero)
    print(f"\n[invalid] zero command {(zero.receipt - invalid_from) * 1e3:.1f} ms after the estimate went invalid")
    assert zero.receipt - invalid_from < 0.1  # next state (20 ms) + one tick, plus DDS/scheduling delays


def test_stop_service_latches_zero_until_reset(rig):
    node, harness = rig()
    harness.send((0.05, 0.0, 5.0))
    wait_until(lambda: plateau(harness.received(), 0.05), 5.0, what="full speed")
    called = time.monotonic()
    response = harness.call(harness.stop_client)
    assert response.success, response.message
    wait_until(lambda: any(t.is_zero for t in harness.received(called)), 1.0, what="a zero command")
    zero = next(t for t in harness.received(called) if t.is_zero)
    print(f"\n[stop service] zero command {(zero.receipt - called) * 1e3:.1f} ms after the call")
    assert node.executor_core.stop_latched
    # Controls are refused while latched: nothing moves.
    harness.send((0.05, 0.0, 0.3))
    time.sleep(0.4)
    after = harness.received(zero.receipt)
    assert all(t.is_zero for t in after) and len(after) <= 3  # stop_repeats zeros, then silence
    values = harness.executor_values()
    assert values["stop_latched"] == "True" and values["level"] == 2
    assert values["refused.stop_latched"] == "1" and values["latched_stops.service"] == "1"
    assert "stop service" in values["latch_reason"]
    # Reset, then controls move the pusher again.
    response = harness.call(harness.reset_client)
    assert response.success and "stop cleared" in response.message, response.message
    assert not node.executor_core.stop_latched
    sent = harness.send((0.05, 0.0, 0.2))
    wait_until(lambda: plateau(harness.received(sent), 0.05), 5.0, what="motion after the reset")
    response = harness.call(harness.reset_client)
    assert response.success and response.message == "no stop was latched"


REFUSALS = [
    pytest.param({"frame_id": "base_link"}, (0.05, 0.0, 0.3), "wrong_frame", id="wrong-frame"),
    pytest.param({"stamp_offset": -1.0}, (0.05, 0.0, 0.3), "stale_plan", id="stale-stamp"),
    pytest.param({"stamp_offset": 5.0}, (0.05, 0.0, 0.3), "start_too_late", id="far-future"),
    pytest.param({}, (0.05, 0.0, 0.0), "invalid_control", id="zero-duration"),
    pytest.param({}, (0.05, float("nan"), 0.3), "invalid_control", id="nan"),
    pytest.param({}, (0.05, 0.0, 60.0), "invalid_control", id="too-long"),
]


@pytest.mark.parametrize(("options", "control", "reason"), REFUSALS)
def test_malformed_or_stale_control_sequences_are_refused_and_stop(rig, options, control, reason):
    node, harness = rig()
    harness.send((0.05, 0.0, 5.0))
    wait_until(lambda: plateau(harness.received(), 0.05), 5.0, what="full speed")
    stamp = ros_now(harness.node) + options.get("stamp_offset", 0.0)
    sent = harness.send(control, stamp=stamp, frame_id=options.get("frame_id", "table"))
    wait_until(lambda: any(t.is_zero for t in harness.received(sent)), 1.0, what="a zero command")
    time.sleep(0.1)
    zero = next(t for t in harness.received(sent) if t.is_zero)
    assert all(t.is_zero for t in harness.received(zero.receipt))
    values = harness.executor_values()
    assert values[f"refused.{reason}"] == "1"
    assert not node.executor_core.stop_latched


def test_controls_from_any_other_node_are_refused_counted_and_ignored(rig, ros_context, spinning):
    """Only allowed_publisher (here the harness) moves the robot: a node of another name, and
    one named like this stack's MPC in another namespace, are refused; their stop does not stop it."""
    node, harness = rig()
    intruders = [rclpy.create_node("intruder", context=ros_context),
                 rclpy.create_node("mpc", namespace="/other_stack", context=ros_context)]
    publishers = [intruder.create_publisher(ControlSequence, "/controls", 10) for intruder in intruders]
    spinning.add(*intruders)
    wait_until(lambda: node.count_publishers("/controls") == 3, 5.0, what="the intruders discovered")

    def intrude(*controls):
        message = ControlSequence()
        message.header.frame_id = "table"
        message.header.stamp = seconds_to_time(ros_now(harness.node))
        message.controls = [PusherControl(vx=vx, vy=vy, duration=duration) for vx, vy, duration in controls]
        for publisher in publishers:
            publisher.publish(message)
        return time.monotonic()

    sent = intrude((0.05, 0.0, 0.5))
    time.sleep(0.6)
    assert not any(not t.is_zero for t in harness.received(sent)), "a foreign node moved the pusher"
    np.testing.assert_allclose(harness.pusher(), [0.0, 0.0], atol=1e-9)
    values = harness.executor_values()
    assert values["refused.foreign_publisher"] == "2" and values["controls_accepted"] == "0"
    # This stack's controls run, and a foreign empty sequence (stop) does not stop them.
    sent = harness.send((0.05, 0.0, 0.6))
    wait_until(lambda: plateau(harness.received(sent), 0.05), 5.0, what="full speed")
    stop_sent = intrude()
    time.sleep(0.2)
    assert node.executor_core.stream.queued == 1 and plateau(harness.received(stop_sent), 0.05)
    values = harness.executor_values()
    assert values["refused.foreign_publisher"] == "4" and values["stop_requests"] == "0"


def test_a_dropped_pusher_latches_a_stop_within_one_control_with_the_reason(rig, ros_context, spinning):
    """The fake arm drops the pusher mid-push: the executor stops (latched) well within the
    control, names the fault in /diagnostics and on executor_status (what the MPC can watch)."""
    node, harness = rig()
    statuses = []
    listener = rclpy.create_node("executor_status_listener", context=ros_context)
    listener.create_subscription(DiagnosticStatus, "executor_status", statuses.append,
                                 QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    spinning.add(listener)
    wait_until(lambda: statuses, 5.0, what="the executor_status published at start-up (transient local)")
    assert statuses[-1].level != DiagnosticStatus.ERROR  # WARN until the first estimate
    sent = harness.send((0.05, 0.0, 1.0))
    wait_until(lambda: plateau(harness.received(sent), 0.05), 5.0, what="full speed")
    time.sleep(0.2)
    with harness.lock:
        harness.holding = False
        dropped, position = time.monotonic(), harness.position.copy()
    wait_until(lambda: node.executor_core.stop_latched, 1.0, what="a latched stop")
    latched = time.monotonic()
    # the zero command is sent when the stop latches and reaches the fake arm over DDS a moment later
    wait_until(lambda: any(t.is_zero for t in harness.received(dropped)), 1.0, what="a zero command")
    zero = next(t for t in harness.received(dropped) if t.is_zero)
    print(f"\n[dropped pusher] stop latched {(latched - dropped) * 1e3:.0f} ms, zero command "
          f"{(zero.receipt - dropped) * 1e3:.0f} ms after the drop (control: 1 s at 50 mm/s)")
    assert zero.receipt - dropped < 0.5  # within half the control, with this loaded machine's delays
    np.testing.assert_allclose(harness.pusher(), position)
    values = harness.executor_values()
    assert values["latched_stops.motion_check"] == "1" and values["level"] == 2
    assert values["latch_reason"].startswith("motion_check: pusher does not follow the commanded motion: commanded ")
    wait_until(lambda: statuses[-1].level == DiagnosticStatus.ERROR, 1.0, what="executor_status latched")
    assert "pusher does not follow" in statuses[-1].message
    # The reset clears it and is published too; the pusher, held again, moves.
    with harness.lock:
        harness.holding = True
    assert harness.call(harness.reset_client).success
    wait_until(lambda: statuses[-1].level == DiagnosticStatus.OK, 1.0, what="executor_status cleared")
    sent = harness.send((0.05, 0.0, 0.4))
    wait_until(lambda: plateau(harness.received(sent), 0.05), 5.0, what="motion after the reset")
    time.sleep(0.5)
    assert not node.executor_core.stop_latched


def test_a_future_stamp_delays_the_start(rig):
    node, harness = rig()
    sent = harness.send((0.05, 0.0, 0.2), stamp=ros_now(harness.node) + 0.3)
    wait_until(lambda: any(not t.is_zero for t in harness.received(sent)), 5.0, what="motion")
    first = next(t for t in harness.received(sent) if not t.is_zero)
    print(f"\n[scheduled] first motion {(first.receipt - sent) * 1e3:.0f} ms after a control stamped +300 ms")
    assert 0.3 - PERIOD <= first.receipt - sent <= 0.3 + 0.1  # never early; late by DDS/scheduling delays


def test_appended_controls_run_back_to_back(rig):
    node, harness = rig(queue_mode="append")

    def attempt():
        harness.place((0.0, 0.0))
        sent = harness.send((0.05, 0.0, 0.3))
        harness.send((0.0, 0.05, 0.3))
        run_to_end(node, harness, sent)
        time.sleep(0.2)
        return harness.received(sent), harness.pusher()

    twists, pusher = undisturbed(attempt, "append")
    assert plateau(twists, 0.05)
    assert any(t.linear[1] == pytest.approx(0.05) for t in twists) and any(
        t.linear[0] == pytest.approx(0.05) for t in twists)
    np.testing.assert_allclose(pusher, [0.015, 0.015], atol=0.003)


def test_without_a_pusher_estimate_a_control_is_refused(ros_context, spinning):
    node = start_executor(ros_context, spinning)
    try:
        harness = Harness(ros_context, spinning, table_to_base=RigidTransform.from_parameters([0.5, 0, 0, 0]))
        with harness.lock:
            harness.publishing = False
        time.sleep(0.2)
        sent = harness.send((0.05, 0.0, 0.5))
        time.sleep(0.4)
        assert all(t.is_zero for t in harness.received(sent))
        values = harness.executor_values()
        assert values["controls_aborted"] == "1" and int(values["limit.state_missing"]) >= 1
        assert values["level"] == 1  # WARN: no estimate
    finally:
        node.close()


# -- parameters --------------------------------------------------------------------------------
def test_the_shipped_parameter_file_starts_the_node(ros_context, spinning):
    from rclpy.parameter import Parameter

    data = yaml.safe_load((config_dir() / "executor.yaml").read_text())["executor"]["ros__parameters"]
    values = flatten_parameters(data)
    assert set(values) == {spec.name for spec in PARAMETERS}, "executor.yaml should list every parameter"
    values["gripper_enabled"] = False  # no gripper on this machine; tested against the emulator elsewhere
    node = ExecutorNode(context=ros_context, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])
    try:
        assert node.executor_core.settings.limits.max_speed_m_s == 0.1
        assert node.executor_core.settings.stream.frame_id == "base_link"
    finally:
        node.close()
        node.destroy_node()


BAD_PARAMETERS = [
    ({"limits.x_max": -0.5}, "limits.x_max"),
    ({"limits.max_speed": 0.0}, "limits.max_speed"),
    ({"table_to_base": [0.5, 0.0, 0.0]}, "table_to_base"),
    ({"table_to_base": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]}, "table_to_base"),
    ({"rate": 10.0}, "rate"),  # 0.1 s period > half the 0.1 s command timeout
    ({"queue_mode": "lifo"}, "queue_mode"),
    ({"base_frame": ""}, "base_frame"),
    ({"twist_topic": "not a topic"}, "twist_topic"),
    ({"limits.command_timeout": 0.1, "limits.x_min": 0.5}, "limits.x_max"),
    ({"gripper_enabled": True, "gripper.address": "tcp://localhost"}, "gripper.address"),
    ({"gripper_enabled": True, "gripper.address": "ftp://host:1"}, "gripper.address"),
]


@pytest.mark.parametrize(("overrides", "name"), BAD_PARAMETERS, ids=[name for _, name in BAD_PARAMETERS])
def test_invalid_parameters_name_the_parameter(ros_context, overrides, name):
    with pytest.raises(ParameterError, match=f"parameter '{name}'"):
        start_executor(ros_context, None, **overrides)
