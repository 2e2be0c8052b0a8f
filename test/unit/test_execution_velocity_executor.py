"""The executor core end to end (fake clock): controls in, safe base-frame twists out."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safety_limits_fixtures import box_limits

from parapush.execution.command_stream import CommandStreamSettings, StreamPhase
from parapush.execution.commands import PlanarControl
from parapush.execution.frames import RigidTransform
from parapush.execution.safety import SafetyReason
from parapush.execution.velocity_executor import ExecutorSettings, VelocityExecutor

LIMITS = box_limits(half_x_m=0.4, half_y_m=0.3, max_speed_m_s=0.15, max_acceleration_m_s2=1.5)
RATE_HZ = 100.0
PERIOD = 1.0 / RATE_HZ


class FakeClock:
    def __init__(self, start_s: float = 1000.0) -> None:
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s


def make_executor(yaw: float = 0.0, clock: FakeClock | None = None) -> tuple[VelocityExecutor, FakeClock]:
    clock = clock or FakeClock()
    stream = CommandStreamSettings(
        rate_hz=RATE_HZ, frame_id="base_link", table_to_base=RigidTransform.planar(yaw_rad=yaw, x_m=0.5)
    )
    return VelocityExecutor(ExecutorSettings(stream=stream, limits=LIMITS), clock=clock), clock


def run(executor: VelocityExecutor, clock: FakeClock, pusher: np.ndarray, ticks: int):
    """Tick with a pusher that follows the table-frame command exactly; return the steps."""
    steps = []
    for _ in range(ticks):
        executor.update_pusher(pusher, stamp_s=clock.now_s)
        step = executor.step()
        steps.append(step)
        pusher = pusher + step.safe.velocity * PERIOD
        clock.now_s += PERIOD
    return steps, pusher


def test_a_control_is_executed_ramped_then_stopped_and_silenced():
    executor, clock = make_executor(yaw=math.pi / 2)
    executor.enqueue([PlanarControl(0.1, 0.0, 0.5)])
    steps, pusher = run(executor, clock, np.zeros(2), 80)
    phases = [step.sample.phase for step in steps]
    assert phases[:50] == [StreamPhase.ACTIVE] * 50 and phases[50] is StreamPhase.STOP
    speeds = [step.safe.velocity[0] for step in steps]
    assert speeds[0] == pytest.approx(0.015)  # 1.5 m/s^2 * 10 ms
    assert max(speeds) == pytest.approx(0.1)
    # Yaw +90 deg: table +x is base +y.
    np.testing.assert_allclose(steps[20].command.linear, [0.0, 0.1, 0.0], atol=1e-15)
    assert steps[20].command.frame_id == "base_link"
    # Ramped down after the last control, then exactly zero, published stop_repeats times.
    assert all(later <= earlier + 1e-15 for earlier, later in zip(speeds[50:58], speeds[51:59], strict=True))
    zero_steps = [index for index, step in enumerate(steps) if step.command.is_zero]
    first_zero = zero_steps[0]
    assert [steps[index].publish for index in range(first_zero, first_zero + 5)] == [
        True,
        True,
        True,
        False,
        False,
    ]
    # Displacement: 0.5 s at 0.1 m/s, less the ramp-up, plus the ramp-down.
    assert pusher[0] == pytest.approx(0.05, abs=0.005)


def test_stop_latches_until_reset():
    executor, clock = make_executor()
    executor.enqueue([PlanarControl(0.1, 0.05, 2.0)])
    run(executor, clock, np.zeros(2), 20)
    stop = executor.stop("operator")
    assert stop.command.is_zero and stop.publish and stop.safe.stopped
    assert executor.stream.queued == 0 and executor.stop_latched
    executor.enqueue([PlanarControl(0.1, 0.0, 1.0)])
    steps, _ = run(executor, clock, np.zeros(2), 5)
    assert all(step.command.is_zero and SafetyReason.STOP_LATCHED in step.safe.reasons for step in steps)
    assert executor.reset() is True
    steps, _ = run(executor, clock, np.zeros(2), 5)
    assert steps[-1].safe.velocity[0] > 0 and not steps[-1].safe.stopped


def test_stale_state_stops_and_the_watchdog_catches_silence():
    executor, clock = make_executor()
    executor.enqueue([PlanarControl(0.1, 0.0, 2.0)])
    run(executor, clock, np.zeros(2), 20)
    clock.now_s += 0.2  # no estimate, no tick for 200 ms
    watchdog = executor.watchdog()
    assert watchdog is not None and watchdog.command.is_zero and watchdog.publish
    assert {SafetyReason.COMMAND_TIMEOUT, SafetyReason.STATE_STALE} <= set(watchdog.safe.reasons)
    step = executor.step()
    assert step.command.is_zero and SafetyReason.STATE_STALE in step.safe.reasons


def test_replace_switches_plans_within_the_acceleration_limit():
    executor, clock = make_executor()
    executor.enqueue([PlanarControl(0.1, 0.0, 1.0)])
    steps, pusher = run(executor, clock, np.zeros(2), 30)
    assert executor.replace([PlanarControl(-0.1, 0.0, 0.5)]) == 1
    more, _ = run(executor, clock, pusher, 30)
    velocities = [step.safe.velocity for step in steps + more]
    changes = [np.linalg.norm(b - a) for a, b in zip(velocities, velocities[1:], strict=False)]
    assert max(changes) <= LIMITS.max_acceleration_m_s2 * PERIOD * (1 + 1e-9)
    assert more[-1].safe.velocity[0] == pytest.approx(-0.1)


def test_settings_validation():
    stream = CommandStreamSettings()
    with pytest.raises(ValueError, match="stop_repeats"):
        ExecutorSettings(stream=stream, limits=LIMITS, stop_repeats=0)
    with pytest.raises(ValueError, match="limits"):
        ExecutorSettings(stream=stream, limits=None)


control = st.builds(
    PlanarControl,
    st.floats(-0.4, 0.4),
    st.floats(-0.4, 0.4),
    st.floats(0.01, 0.2),
)


@settings(
    max_examples=1000,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    controls=st.lists(control, min_size=1, max_size=4),
    yaw=st.floats(-math.pi, math.pi),
    start=st.tuples(st.floats(-0.4, 0.4), st.floats(-0.3, 0.3)),
)
def test_random_control_streams_give_safe_base_frame_twists(controls, yaw, start):
    executor, clock = make_executor(yaw=yaw)
    executor.enqueue(controls)
    rotation = RigidTransform.planar(yaw_rad=yaw).rotation
    pusher = np.array(start)
    previous = np.zeros(3)
    total = int(sum(c.duration_s for c in controls) / PERIOD) + 20  # + ramp-down and stop repeats
    low = np.array([LIMITS.x_min_m, LIMITS.y_min_m])
    high = np.array([LIMITS.x_max_m, LIMITS.y_max_m])
    for _ in range(total):
        executor.update_pusher(pusher, stamp_s=clock.now_s)
        step = executor.step()
        linear = step.command.linear
        assert not np.any(step.command.angular)
        assert np.linalg.norm(linear) <= LIMITS.max_speed_m_s * (1 + 1e-9)
        assert np.linalg.norm(linear - previous) <= LIMITS.max_acceleration_m_s2 * PERIOD * (1 + 1e-9) + 1e-15
        # The base-frame command is the rotated table-frame one, and the pusher stays in the box.
        assert np.abs(linear - rotation @ np.append(step.safe.velocity, 0.0)).max() <= 1e-15
        pusher = pusher + step.safe.velocity * PERIOD
        assert np.all(pusher >= low - 1e-12) and np.all(pusher <= high + 1e-12)
        previous = linear
        clock.now_s += PERIOD
    assert step.command.is_zero and not step.publish  # stopped, and silent after the repeats
