"""Message <-> core conversions: round trips and errors that name the field."""

import math

import numpy as np
import pytest
from parareal_pushing.msg import ControlSequence, PusherControl

from parapush.nodes.conversions import (
    MessageError,
    controls_to_msg,
    msg_to_snapshot,
    sequences_from_msgs,
    state_to_msg,
    trajectory_from_msg,
    trajectory_to_msg,
)
from parapush.scene import scene_from_dict

SCENE = scene_from_dict(
    {
        "name": "two",
        "objects": [
            {"name": "box", "shape": "box", "half_extents": [0.05, 0.03], "pose": [0.1, 0.0, 0.2]},
            {"name": "can", "pose": [-0.1, 0.1, 0.0]},
        ],
    }
)


def random_state(seed=0):
    rng = np.random.default_rng(seed)
    state = rng.uniform(-0.3, 0.3, SCENE.layout.dimension)
    state[SCENE.layout.yaw_indices] = rng.uniform(-np.pi, np.pi, 2)
    return state


def test_state_round_trip_is_exact_and_carries_geometry():
    state = random_state()
    message = state_to_msg(state, SCENE, stamp=12.5, object_valid=[True, False], object_age=[0.0, 0.7])
    assert message.objects[0].shape == message.objects[0].SHAPE_BOX
    assert message.objects[0].half_extent_y == pytest.approx(0.03)
    assert message.objects[1].radius == pytest.approx(0.0512)
    assert message.pusher.radius == pytest.approx(0.0145)
    snapshot = msg_to_snapshot(message, SCENE)
    np.testing.assert_array_equal(snapshot.state, state)
    assert snapshot.stamp == pytest.approx(12.5)
    assert list(snapshot.object_valid) == [True, False]
    assert snapshot.object_age[1] == pytest.approx(0.7)


def test_objects_are_matched_by_name_not_order():
    state = random_state(1)
    message = state_to_msg(state, SCENE)
    message.objects = list(reversed(message.objects))
    np.testing.assert_array_equal(msg_to_snapshot(message, SCENE).state, state)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda m: setattr(m.objects[0], "name", "ghost"), r"objects\[0\].name: unknown object 'ghost'"),
        (lambda m: m.objects.pop(), r"objects: missing \['can'\]"),
        (lambda m: m.objects.append(m.objects[0]), r"objects\[2\].name: duplicate"),
        (lambda m: setattr(m.objects[1], "yaw", math.nan), r"objects\[1\].yaw: must be finite"),
        (lambda m: setattr(m.pusher, "vx", math.inf), r"pusher.vx: must be finite"),
    ],
)
def test_bad_scene_states_name_the_field(mutate, match):
    message = state_to_msg(random_state(), SCENE)
    mutate(message)
    with pytest.raises(MessageError, match=match):
        msg_to_snapshot(message, SCENE)


def test_stale_bodies_are_refused_when_validity_is_required():
    message = state_to_msg(random_state(), SCENE, object_valid=[True, False])
    msg_to_snapshot(message, SCENE)
    with pytest.raises(MessageError, match=r"objects\[1\].valid: object 'can' is not tracked"):
        msg_to_snapshot(message, SCENE, require_valid=True)


def test_sequences_round_trip():
    controls = np.array([[0.01, 0.02], [0.03, -0.01], [0.0, 0.025]])
    messages = [controls_to_msg(controls, 1.5), controls_to_msg(-controls, [1.0, 2.0, 0.5])]
    values, durations = sequences_from_msgs(messages, max_sequences=4, max_speed=0.1)
    np.testing.assert_array_equal(values[0], controls)
    np.testing.assert_array_equal(values[1], -controls)
    np.testing.assert_array_equal(durations, [[1.5, 1.5, 1.5], [1.0, 2.0, 0.5]])


def sequence(*controls):
    return ControlSequence(controls=[PusherControl(vx=vx, vy=vy, duration=d) for vx, vy, d in controls])


@pytest.mark.parametrize(
    ("sequences", "match"),
    [
        ([], "at least one"),
        ([sequence((0, 0, 1))] * 5, "5 sequences, at most 4"),
        ([sequence((0, 0, 1)), sequence((0, 0, 1), (0, 0, 1))], r"same length, got lengths \[1, 2\]"),
        ([sequence()], "empty"),
        ([sequence((0, math.nan, 1))], r"sequences\[0\].controls\[0\].vy: must be finite"),
        ([sequence((0, 0, 1), (0, 0, 0))], r"sequences\[0\].controls\[1\].duration: must be > 0"),
        ([sequence((0, 0, 1)), sequence((0.2, 0, 1))], r"sequences\[1\].controls\[0\]: speed 0.2 m/s exceeds"),
    ],
)
def test_bad_sequences_name_the_field(sequences, match):
    with pytest.raises(MessageError, match=match):
        sequences_from_msgs(sequences, max_sequences=4, max_speed=0.1)


def test_trajectory_round_trip_marks_exact_states_and_times():
    states = np.stack([random_state(seed) for seed in range(4)])
    message = trajectory_to_msg(states, SCENE, exact_states=2, start_stamp=10.0, durations=[1.0, 1.0, 0.5], cost=3.0)
    assert list(message.exact) == [True, True, False, False]
    assert message.states[3].header.stamp.sec == 12 and message.states[3].header.stamp.nanosec == 500_000_000
    back = trajectory_from_msg(message, SCENE)
    yaws = SCENE.layout.yaw_indices
    np.testing.assert_allclose(back[:, yaws], np.angle(np.exp(1j * states[:, yaws])))
    np.testing.assert_array_equal(np.delete(back, SCENE.layout.yaw_indices, axis=1),
                                  np.delete(states, SCENE.layout.yaw_indices, axis=1))
