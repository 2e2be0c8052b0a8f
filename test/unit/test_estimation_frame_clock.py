"""Server timestamps -> local measurement times: jitter removal, drift, restarts, fallback."""

import math

import numpy as np
import pytest

from parapush.estimation.frame_clock import FrameClock

PERIOD = 1.0 / 120.0


def test_without_server_timestamps_the_local_stamp_is_used():
    clock = FrameClock()
    assert clock.measurement_time(0.0, 12.5) == 12.5
    assert clock.measurement_time(math.nan, 13.0) == 13.0
    assert clock.offset is None


def test_receive_jitter_is_removed():
    """Local stamps = exposure + 2 ms fixed delay + exponential jitter (mean 2 ms, up to ~15 ms):
    the mapped times are within 0.1 ms of exposure + 2 ms once the window has filled, and never
    later than the local stamp."""
    rng = np.random.default_rng(5)
    clock = FrameClock(window=2.0)
    server_start, local_start = 1000.0, 50.0  # the clocks disagree by 950 s
    errors = []
    for frame in range(1200):
        exposure = local_start + frame * PERIOD
        local_stamp = exposure + 0.002 + rng.exponential(0.002)
        mapped = clock.measurement_time(server_start + frame * PERIOD, local_stamp)
        assert mapped <= local_stamp
        if frame >= 240:
            errors.append(mapped - (exposure + 0.002))
    assert np.max(np.abs(errors)) < 1e-4
    # The raw stamps would have been off by 2 ms on average with 2 ms std.


def test_follows_a_drifting_clock():
    # The local clock runs 100 ppm fast: over 60 s the offset moves by 6 ms; the mapping
    # stays within 100 ppm * window = 0.2 ms of it (plus rounding).
    clock = FrameClock(window=2.0)
    for frame in range(7200):
        server = 10.0 + frame * PERIOD
        local = 3.0 + frame * PERIOD * (1 + 1e-4)
        mapped = clock.measurement_time(server, local)
        assert local - 2.001e-4 <= mapped <= local


def test_server_restart_starts_the_map_again():
    clock = FrameClock(restart_jump=1.0)
    for frame in range(10):
        clock.measurement_time(500.0 + frame * PERIOD, 20.0 + frame * PERIOD)
    assert clock.offset == pytest.approx(-480.0)
    mapped = clock.measurement_time(0.5, 21.0)  # Motive restarted: its clock starts again at 0.5 s
    assert clock.restarts == 1
    assert mapped == pytest.approx(21.0)
    assert clock.offset == pytest.approx(20.5)


def test_out_of_order_frames_do_not_move_the_offset():
    clock = FrameClock()
    clock.measurement_time(10.0, 1.0)
    clock.measurement_time(10.0 + PERIOD, 1.0 + PERIOD)
    assert clock.measurement_time(10.0 - PERIOD, 1.0 + 2 * PERIOD) == pytest.approx(1.0 - PERIOD)
    assert clock.offset == pytest.approx(-9.0)


@pytest.mark.parametrize(("name", "value"), [("window", 0.0), ("window", math.inf), ("restart_jump", -1.0)])
def test_settings_are_validated(name, value):
    with pytest.raises(ValueError, match=name):
        FrameClock(**{name: value})
