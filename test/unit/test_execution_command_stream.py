"""Command stream timing (fake clock), queueing, stop, and the frame of the emitted twists."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parapush.execution.command_stream import CommandStream, CommandStreamSettings, StreamPhase
from parapush.execution.commands import PlanarControl, TwistCommand
from parapush.execution.frames import RigidTransform


class FakeClock:
    def __init__(self, start_s: float = 100.0) -> None:
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


def tick(stream: CommandStream, clock: FakeClock, count: int, period_s: float):
    samples = []
    for _ in range(count):
        samples.append(stream.sample())
        clock.advance(period_s)
    return samples


def test_each_control_gets_duration_times_rate_commands_then_a_stop():
    clock = FakeClock()
    stream = CommandStream(CommandStreamSettings(rate_hz=50.0), clock=clock)
    stream.enqueue([PlanarControl(0.1, 0.0, 0.5), PlanarControl(0.0, -0.05, 0.2)])
    samples = tick(stream, clock, 40, 0.02)
    phases = [sample.phase for sample in samples]
    assert phases[:35] == [StreamPhase.ACTIVE] * 35  # 0.5 s * 50 Hz + 0.2 s * 50 Hz
    assert phases[35] is StreamPhase.STOP and phases[36:] == [StreamPhase.IDLE] * 4
    assert [sample.control_number for sample in samples[:35]] == [0] * 25 + [1] * 10
    np.testing.assert_array_equal(samples[24].velocity, [0.1, 0.0])
    np.testing.assert_array_equal(samples[25].velocity, [0.0, -0.05])
    assert all(not np.any(sample.velocity) for sample in samples[35:])
    assert samples[10].control_elapsed_s == pytest.approx(0.2)


def test_float_accumulated_tick_times_do_not_lose_or_gain_a_command():
    clock = FakeClock(start_s=12345.678)
    stream = CommandStream(CommandStreamSettings(rate_hz=100.0), clock=clock)
    stream.enqueue([PlanarControl(0.05, 0.05, 0.3)] * 7)
    samples = tick(stream, clock, 300, 0.01)
    active = [sample for sample in samples if sample.phase is StreamPhase.ACTIVE]
    assert len(active) == 210
    assert [sum(1 for sample in active if sample.control_number == index) for index in range(7)] == [30] * 7


def test_schedule_follows_the_clock_not_the_number_of_calls():
    clock = FakeClock()
    stream = CommandStream(CommandStreamSettings(rate_hz=100.0), clock=clock)
    stream.enqueue([PlanarControl(0.1, 0.0, 1.0), PlanarControl(0.2, 0.0, 1.0)])
    assert stream.sample().control_number == 0
    clock.advance(1.25)  # a late timer does not stretch the schedule
    sample = stream.sample()
    assert sample.control_number == 1 and sample.control_elapsed_s == pytest.approx(0.25)
    clock.advance(0.75)
    assert stream.sample().phase is StreamPhase.STOP


def test_start_time_delays_the_sequence():
    clock = FakeClock()
    stream = CommandStream(CommandStreamSettings(rate_hz=10.0), clock=clock)
    stream.enqueue([PlanarControl(0.1, 0.0, 0.3)], start_time_s=clock.now_s + 0.2)
    phases = [sample.phase for sample in tick(stream, clock, 7, 0.1)]
    assert phases == [StreamPhase.WAITING] * 2 + [StreamPhase.ACTIVE] * 3 + [
        StreamPhase.STOP,
        StreamPhase.IDLE,
    ]


def test_enqueue_appends_after_the_active_control():
    clock = FakeClock()
    stream = CommandStream(CommandStreamSettings(rate_hz=10.0), clock=clock)
    stream.enqueue([PlanarControl(0.1, 0.0, 0.3)])
    tick(stream, clock, 2, 0.1)
    stream.enqueue([PlanarControl(0.0, 0.1, 0.2)], start_time_s=0.0)  # start ignored: queue busy
    assert stream.queued == 2
    assert stream.remaining_s() == pytest.approx(0.3)
    numbers = [sample.control_number for sample in tick(stream, clock, 4, 0.1)]
    assert numbers == [0, 1, 1, None]


def test_replace_and_clear_drop_the_queue_and_stop():
    clock = FakeClock()
    stream = CommandStream(CommandStreamSettings(rate_hz=10.0), clock=clock)
    stream.enqueue([PlanarControl(0.1, 0.0, 1.0)] * 3)
    tick(stream, clock, 3, 0.1)
    assert stream.replace([PlanarControl(-0.1, 0.0, 0.2)]) == 3
    sample = stream.sample()
    assert sample.phase is StreamPhase.ACTIVE and sample.velocity[0] == -0.1 and sample.control_number == 3
    assert stream.clear() == 1
    assert stream.sample().phase is StreamPhase.STOP
    assert stream.sample().phase is StreamPhase.IDLE
    assert stream.clear() == 0
    assert stream.sample().phase is StreamPhase.IDLE


def test_twists_are_in_the_base_frame():
    clock = FakeClock()
    settings = CommandStreamSettings(
        rate_hz=100.0,
        frame_id="base_link",
        table_to_base=RigidTransform.planar(yaw_rad=math.pi / 2, x_m=0.6, y_m=0.0, z_m=-0.1),
    )
    stream = CommandStream(settings, clock=clock)
    stream.enqueue([PlanarControl(0.1, 0.02, 0.1)])
    sample, twist = stream.command()
    assert isinstance(twist, TwistCommand)
    assert twist.frame_id == "base_link" and twist.stamp_s == clock.now_s == sample.time_s
    # +90 deg: table (0.1, 0.02) -> base (-0.02, 0.1); translation does not affect velocities.
    np.testing.assert_allclose(twist.linear, [-0.02, 0.1, 0.0], atol=1e-15)
    np.testing.assert_array_equal(twist.angular, [0.0, 0.0, 0.0])
    clock.advance(0.1)
    _, stop = stream.command()
    assert stop.is_zero


def test_invalid_inputs_are_rejected():
    stream = CommandStream()
    with pytest.raises(ValueError, match=r"controls\[1\]"):
        stream.enqueue([PlanarControl(0.1, 0.0, 0.1), (0.1, 0.0, 0.1)])
    with pytest.raises(ValueError, match="start_time_s"):
        stream.enqueue([PlanarControl(0.1, 0.0, 0.1)], start_time_s=math.nan)
    with pytest.raises(ValueError, match="now_s"):
        stream.sample(math.inf)
    with pytest.raises(ValueError, match="velocity"):
        stream.to_twist(np.zeros(3), stamp_s=0.0)
    with pytest.raises(ValueError, match="duration_s"):
        PlanarControl(0.1, 0.0, 0.0)
    with pytest.raises(ValueError, match="vx_m_s"):
        PlanarControl(math.nan, 0.0, 1.0)
    with pytest.raises(ValueError, match="rate_hz"):
        CommandStreamSettings(rate_hz=0.0)
    with pytest.raises(ValueError, match="frame_id"):
        CommandStreamSettings(frame_id="")
    with pytest.raises(ValueError, match="linear"):
        TwistCommand(stamp_s=0.0, frame_id="base", linear=np.zeros(2), angular=np.zeros(3))
