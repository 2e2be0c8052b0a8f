"""The recorded real pushes (../shared/real_pushes, the MIT pushing data set) as the benches replay
them: bench/mit_pushes.py's conversion puts the pusher at contact, cuts the path into 10 mm
controls and keeps the recorded poses; bench/real_pushes.py replays them open loop."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
import mit_pushes  # noqa: E402
import real_pushes  # noqa: E402
from parapush.physics.fine import FineModel  # noqa: E402
from parapush.physics.planar_geometry import rotate  # noqa: E402


@pytest.fixture(scope="module")
def recorded():
    assert (mit_pushes.DATA / "mit_push_abs.npz").is_file(), (
        f"the recorded pushes are missing: {mit_pushes.DATA} (../shared/real_pushes beside the repository)")
    raw = mit_pushes.read_raw_pushes()
    return {name: mit_pushes.convert_object(name, raw=raw) for name in mit_pushes.OBJECTS}


def test_every_object_and_push_is_converted(recorded):
    counts = {name: len(pushes.pushes) for name, pushes in recorded.items()}
    assert counts == {"rect1": 9, "ellip1": 9, "ellip3": 7, "hex": 10, "butter": 27}
    shapes = {name: pushes.scene.objects[0].shape for name, pushes in recorded.items()}
    assert shapes == {"rect1": "box", "ellip1": "cylinder", "ellip3": "ellipse", "hex": "polygon", "butter": "polygon"}


def test_the_replay_puts_the_pusher_at_contact(recorded):
    for name, pushes in recorded.items():
        scene = pushes.scene
        for push in pushes.pushes:
            first = push.record.states[0]
            gap = float(scene.objects[0].outline.signed_distance(rotate(first[:2] - first[2:4], -first[4])))
            assert gap == pytest.approx(scene.pusher.radius, abs=2e-5), f"{name} {push.name}"
            # the object starts at rest at the origin; the pusher starts at rest
            np.testing.assert_array_equal(first[2:4], 0.0)
            np.testing.assert_array_equal(first[5:], 0.0)


def test_the_path_is_cut_into_controls_of_about_10_mm_on_the_time_grid(recorded):
    for pushes in recorded.values():
        for push in pushes.pushes:
            steps = push.record.durations / mit_pushes.TIME_GRID
            np.testing.assert_allclose(steps, np.round(steps), atol=1e-6)
            travel = np.diff(push.pusher_travel)
            # every piece but the last is 10 mm of travel, up to the time grid at both ends (25 ms at <= 150 mm/s)
            np.testing.assert_allclose(travel[:-1], mit_pushes.SEGMENT_TRAVEL, atol=3.8e-3)
            assert 0.5 * mit_pushes.SEGMENT_TRAVEL <= travel[-1] < 1.6 * mit_pushes.SEGMENT_TRAVEL
            assert 0.035 < push.pusher_travel[-1] < 0.065  # "about 50 mm"


def test_a_replayed_push_moves_the_object_from_the_first_control(recorded):
    pushes = recorded["hex"]
    model = FineModel(pushes.scene)
    for push in pushes.pushes[:3]:
        predicted = real_pushes.replay(real_pushes.fine_step(model), push.record)
        assert np.linalg.norm(predicted[1, 2:4]) > 0.001, push.name  # an 80 deg push moves it 1.6 mm
        position, yaw = real_pushes.pose_errors(predicted, push.record, 0)
        assert position[0] == 0.0 and yaw[0] == 0.0


def test_yaw_flips_of_a_quarter_turn_are_removed_and_real_turns_kept():
    turn = np.linspace(0.0, 0.3, 50)
    flipped = turn.copy()
    flipped[20:] += 0.5 * np.pi
    flipped[35:] -= np.pi
    np.testing.assert_allclose(mit_pushes._unflipped_yaw(flipped), turn, atol=1e-12)
    fast = np.array([0.0, 0.2, 0.4, 0.6])  # a fast but real turn: steps far from a quarter turn
    np.testing.assert_array_equal(mit_pushes._unflipped_yaw(fast), fast)
