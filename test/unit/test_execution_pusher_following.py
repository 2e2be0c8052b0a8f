"""The pusher-follows-the-commands check against a simulated arm (ROS-free, simulated time).

The simulation: the executor sends a command every 10 ms with up to +-5 ms of jitter (10 ms
spread), its velocity ramped at the safety filter's 1 m/s^2; the arm receives each command
20-30 ms later, tracks it at its own 1 m/s^2 and halts 0.1 s after the last one (Servo); the
estimator measures the pusher every 8.3 ms (120 Hz mocap) with 0.2 mm noise and stamps it with up
to +-5 ms of error. Faults: the pusher stops moving with the arm (dropped), or the arm halts
(protective stop, decelerating at 1 m/s^2).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from parapush.execution.pusher_following import FollowingSettings, PusherFollowingCheck
from parapush.settings import SettingsError, settings_from_mapping

STEP = 0.001  # s, simulation step
ACCELERATION = 1.0  # m/s^2, the safety filter's and the arm's
HOLD = 0.1  # s, the arm's command timeout


def simulate(controls, *, seed=0, fault_at=None, fault="dropped", arm_latency=(0.02, 0.03), settings=None):
    """Run ``controls`` [(vx, vy, duration)] through the executor, arm and estimator model above.

    Returns (problems [(time, message)], fault time or None)."""
    generator = np.random.default_rng(seed)
    check = PusherFollowingCheck(settings or FollowingSettings(), command_hold_s=HOLD)
    schedule, start = [], 0.1
    for vx, vy, duration in controls:
        schedule.append((start, start + duration, np.array([vx, vy])))
        start += duration
    end = start + 0.5
    commanded = np.zeros(2)
    in_flight: list[tuple[float, np.ndarray]] = []  # (arrival time at the arm, velocity)
    arm_target, arm_velocity, last_arrival = np.zeros(2), np.zeros(2), -math.inf
    pusher, held = np.zeros(2), True
    next_command, next_estimate = 0.0, 0.0
    problems = []
    for tick in range(int(end / STEP)):
        now = tick * STEP
        if now >= next_command:  # the executor: desired velocity, ramped at the acceleration limit
            desired = next((v for a, b, v in schedule if a <= now < b), np.zeros(2))
            change = desired - commanded
            limit = ACCELERATION * 0.01
            if np.linalg.norm(change) > limit:
                change *= limit / np.linalg.norm(change)
            commanded = commanded + change
            check.command(now, commanded)
            in_flight.append((now + generator.uniform(*arm_latency), commanded.copy()))
            next_command += 0.01 + generator.uniform(-0.005, 0.005)
        while in_flight and in_flight[0][0] <= now:
            last_arrival, arm_target = in_flight.pop(0)
        faulted = fault_at is not None and now >= fault_at
        target = arm_target if now - last_arrival <= HOLD and not (faulted and fault == "protective_stop") else 0.0
        change = target - arm_velocity
        if np.linalg.norm(change) > ACCELERATION * STEP:
            change *= ACCELERATION * STEP / np.linalg.norm(change)
        arm_velocity = arm_velocity + change
        held = held and not (faulted and fault == "dropped")
        if held:
            pusher = pusher + arm_velocity * STEP
        if now >= next_estimate:
            measured = pusher + generator.normal(0.0, 0.0002, 2)
            stamp = now + generator.uniform(-0.005, 0.005)
            problem = check.observe(measured, stamp_s=stamp, valid=True)
            if problem is not None:
                problems.append((now, problem))
            next_estimate += 1.0 / 120.0
    return problems


#: Pushes as the MPC sends them (1 s controls, up to the 0.1 m/s speed limit), turns, reversals,
#: stop and go, and slow ones.
NORMAL_PUSHES = [
    pytest.param([(0.05, 0.0, 1.0), (0.03, 0.04, 1.0), (-0.02, 0.05, 1.0)], id="mpc-like"),
    pytest.param([(0.1, 0.0, 1.0), (0.0, -0.1, 1.0), (-0.1, 0.0, 0.5)], id="full-speed-turns"),
    pytest.param([(0.05, 0.0, 0.3), (0.0, 0.0, 0.3), (0.05, 0.0, 0.3), (-0.05, 0.0, 0.3)], id="stop-and-go"),
    pytest.param([(0.08, 0.0, 0.12), (-0.08, 0.0, 0.12)] * 5, id="back-and-forth"),
    pytest.param([(0.012, 0.0, 2.0)], id="slow"),
]


@pytest.mark.parametrize("controls", NORMAL_PUSHES)
@pytest.mark.parametrize("seed", range(3))
def test_no_false_positive_on_normal_pushes_with_acceleration_limits_and_jitter(controls, seed):
    assert simulate(controls, seed=seed) == []


@pytest.mark.parametrize("seed", range(3))
def test_no_false_positive_with_the_arm_latency_at_the_configured_delay_and_more(seed):
    assert simulate([(0.05, 0.0, 1.0), (0.0, 0.05, 1.0)], seed=seed, arm_latency=(0.05, 0.1)) == []


#: config/profile_sim.yaml's looser values (a simulated world that lags on a loaded machine).
SIM_PROFILE = FollowingSettings(min_displacement=0.02, min_fraction=0.25, actuation_delay=0.2, max_estimate_gap=0.3)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("controls", [
    pytest.param([(0.08, 0.0, 1.0)], id="push-then-stop"),
    pytest.param([(0.08, 0.0, 0.27)], id="short-fallback-then-stop"),
    pytest.param([(0.05, 0.05, 0.6), (0.0, 0.0, 0.5), (0.08, 0.0, 0.4)], id="stop-and-go"),
])
def test_no_false_positive_when_the_arm_is_quicker_than_the_configured_delay(controls, seed):
    # The stack's demo latched "commanded 20.0 mm, moved 4.6 mm in 0.27 s" when a control queue ran
    # out: the simulated arm stops within ~15 ms while the window assumed the profile's 0.2 s delay
    assert simulate(controls, seed=seed, arm_latency=(0.005, 0.015), settings=SIM_PROFILE) == []


@pytest.mark.parametrize("fault", ["dropped", "protective_stop"])
def test_the_sim_profile_still_catches_a_pusher_that_stops_following(fault):
    problems = simulate([(0.05, 0.0, 1.0), (0.0, 0.05, 1.0)], fault_at=0.7, fault=fault, settings=SIM_PROFILE)
    assert problems and 0.7 < problems[0][0] <= 0.7 + 0.8, problems


@pytest.mark.parametrize("fault", ["dropped", "protective_stop"])
@pytest.mark.parametrize(("speed", "within"), [(0.05, 0.25), (0.1, 0.15), (0.02, 0.5)])
def test_a_pusher_that_stops_following_is_detected_within_one_control(fault, speed, within):
    fault_at = 0.1 + 0.6
    problems = simulate([(speed, 0.0, 1.0), (0.0, speed, 1.0)], fault_at=fault_at, fault=fault)
    assert problems, "not detected"
    detected, message = problems[0]
    print(f"\n[following] {fault} at {speed} m/s detected {(detected - fault_at) * 1e3:.0f} ms after: {message}")
    assert detected > fault_at
    assert detected - fault_at <= within  # well within the MPC's 1 s control
    assert message.startswith("pusher does not follow the commanded motion: commanded ")
    match = re.search(r"commanded ([-\d.]+) mm, moved ([-\d.]+) mm along it in ([\d.]+) s", message)
    commanded, moved = float(match[1]), float(match[2])
    assert commanded >= 10.0 and moved < 0.5 * commanded


def test_motion_slower_than_the_window_allows_is_not_judged():
    # 5 mm/s: 5 mm of commanded path in the 1 s window, below the 10 mm needed for a judgement.
    assert simulate([(0.005, 0.0, 2.0)], fault_at=0.5) == []


def test_an_invalid_estimate_or_a_gap_restarts_the_window():
    check = PusherFollowingCheck(FollowingSettings(), command_hold_s=HOLD)
    for tick in range(100):  # 0.05 m/s commanded for 1 s; the pusher does not move
        check.command(tick * 0.01, (0.05, 0.0))
    # Estimates every 10 ms, each 0.2 s window interrupted by an invalid one: never judged.
    for tick in range(100):
        assert check.observe((0.0, 0.0), stamp_s=tick * 0.01, valid=tick % 15 != 14) is None
    # With gaps longer than max_estimate_gap (0.15 s) between estimates: never judged either.
    check.clear()
    for tick in range(150):
        check.command(tick * 0.01, (0.05, 0.0))
    for stamp in np.arange(0.0, 1.0, 0.2):
        assert check.observe((0.0, 0.0), stamp_s=float(stamp), valid=True) is None
    # Consecutive valid estimates: judged, once; then everything is forgotten.
    problems = [check.observe((0.0, 0.0), stamp_s=1.0 + tick * 0.01, valid=True) for tick in range(30)]
    assert sum(problem is not None for problem in problems) == 1


def test_commands_are_held_at_most_the_arm_timeout():
    check = PusherFollowingCheck(FollowingSettings(actuation_delay=0.0), command_hold_s=HOLD)
    check.command(0.0, (0.1, 0.0))  # one command, then silence: the arm moves 10 mm, then halts
    stamps = np.arange(0.0, 1.0, 0.01)
    results = [check.observe((min(stamp, HOLD) * 0.1, 0.0), stamp_s=float(stamp), valid=True) for stamp in stamps]
    assert results == [None] * len(stamps)


@pytest.mark.parametrize(
    ("data", "path"),
    [({"min_fraction": 1.0}, "min_fraction"), ({"min_displacement": 0.0}, "min_displacement"),
     ({"max_window": 0.0}, "max_window"), ({"actuation_delay": -0.1}, "actuation_delay")],
)
def test_invalid_settings_name_the_field(data, path):
    with pytest.raises(SettingsError) as raised:
        settings_from_mapping(FollowingSettings, data)
    assert raised.value.path == path
