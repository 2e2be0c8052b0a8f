"""Message <-> core conversions: round trips and errors that name the field."""

import math

import numpy as np
import pytest
from parareal_pushing.msg import ControlSequence, PusherControl, SceneState
from rclpy.serialization import deserialize_message, serialize_message

from parapush.nodes.conversions import (
    MessageError,
    controls_to_msg,
    geometry_from_msg,
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


HEXAGON = [(0.0605 * math.cos(k * math.pi / 3), 0.0605 * math.sin(k * math.pi / 3)) for k in range(6)]
OUTLINES = scene_from_dict(
    {
        "name": "outlines",
        "objects": [
            {"name": "oval", "shape": "ellipse", "half_extents": [0.06, 0.035], "pose": [0.1, 0.0, 0.2]},
            {"name": "nut", "shape": "polygon", "vertices": [list(v) for v in HEXAGON], "pose": [-0.1, 0.1, 0.0]},
            {"name": "ell", "shape": "polygon", "vertices": [[0, 0], [0.08, 0], [0.08, 0.03], [0.03, 0.03],
                                                             [0.03, 0.08], [0, 0.08]], "pose": [0.2, -0.1, 1.0]},
        ],
    }
)


def test_ellipses_and_polygons_round_trip_with_their_outlines():
    rng = np.random.default_rng(4)
    state = rng.uniform(-0.3, 0.3, OUTLINES.layout.dimension)
    state[OUTLINES.layout.yaw_indices] = rng.uniform(-np.pi, np.pi, 3)
    message = state_to_msg(state, OUTLINES)
    oval, nut, ell = message.objects
    assert oval.shape == oval.SHAPE_ELLIPSE == 2
    assert (oval.half_extent_x, oval.half_extent_y, oval.radius) == (0.06, 0.035, 0.0)
    assert len(oval.vertices_x) == len(oval.vertices_y) == 0
    assert nut.shape == nut.SHAPE_POLYGON == 3 and (nut.half_extent_x, nut.radius) == (0.0, 0.0)
    np.testing.assert_array_equal(np.column_stack([nut.vertices_x, nut.vertices_y]), HEXAGON)
    np.testing.assert_array_equal(np.column_stack([ell.vertices_x, ell.vertices_y]), OUTLINES.objects[2].vertices)
    np.testing.assert_array_equal(msg_to_snapshot(message, OUTLINES).state, state)
    assert geometry_from_msg(oval) == {"shape": "ellipse", "half_extents": (0.06, 0.035)}
    assert geometry_from_msg(ell) == {"shape": "polygon", "vertices": OUTLINES.objects[2].vertices}
    # the outline travels through the wire format too (serialised, then read back)
    wire = deserialize_message(serialize_message(message), SceneState)
    assert list(wire.objects[1].vertices_x) == list(nut.vertices_x)
    np.testing.assert_array_equal(msg_to_snapshot(wire, OUTLINES).state, state)


def test_a_body_without_an_outline_takes_the_scene_s():
    message = state_to_msg(np.zeros(OUTLINES.layout.dimension), OUTLINES)
    for body in message.objects:  # what a client that fills only the pose sends (the README's example)
        body.shape, body.half_extent_x, body.half_extent_y, body.vertices_x, body.vertices_y = 0, 0.0, 0.0, [], []
    assert geometry_from_msg(message.objects[1]) is None
    msg_to_snapshot(message, OUTLINES)


def set_vertex(message, index, value):
    vertices = list(message.objects[1].vertices_x)
    vertices[index] = value
    message.objects[1].vertices_x = vertices


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda m: setattr(m.objects[0], "shape", 1), r"objects\[0\].shape: box for object 'oval', the scene's "
                                                      r"shape is ellipse"),
        (lambda m: setattr(m.objects[0], "half_extent_y", 0.04), r"objects\[0\].half_extent_y: 0.04 m for object "
                                                                 r"'oval', the scene's ellipse has 0.035 m"),
        (lambda m: setattr(m.objects[0], "half_extent_x", -0.06), r"objects\[0\].half_extent_x: must be > 0 "
                                                                  r"for shape ellipse"),
        (lambda m: setattr(m.objects[0], "shape", 9), r"objects\[0\].shape: unknown shape 9"),
        (lambda m: setattr(m.objects[1], "shape", 0), r"objects\[1\].radius: must be > 0 for shape cylinder"),
        (lambda m: set_vertex(m, 2, 0.5), r"objects\[1\].vertices_x/_y\[2\]: \(0.5, 0.0523\d*\) m for object 'nut'"),
        (lambda m: set_vertex(m, 2, math.nan), r"objects\[1\].vertices_x\[2\]: must be finite"),
        (lambda m: setattr(m.objects[1], "vertices_y", [0.0] * 5), r"objects\[1\].vertices_y: 5 values for 6"),
        (lambda m: (setattr(m.objects[1], "vertices_x", [0.0] * 5), setattr(m.objects[1], "vertices_y", [0.0] * 5)),
         r"objects\[1\].vertices_x: 5 vertices for object 'nut', the scene's polygon has 6"),
        (lambda m: (setattr(m.objects[2], "vertices_x", [0.0] * 2), setattr(m.objects[2], "vertices_y", [0.0] * 2)),
         r"objects\[2\].vertices_x: a polygon needs at least 3 vertices"),
    ],
)
def test_an_outline_other_than_the_scene_s_is_refused_naming_the_field(mutate, match):
    message = state_to_msg(np.zeros(OUTLINES.layout.dimension), OUTLINES)
    mutate(message)
    with pytest.raises(MessageError, match=match):
        msg_to_snapshot(message, OUTLINES)
