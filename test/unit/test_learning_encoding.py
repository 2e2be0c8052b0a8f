"""The learned model's gate and pusher-centred encoding: hand-built pushes and invariances."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parapush.learning.dataset import default_geometry
from parapush.learning.encoding import PARK_DISTANCE, EncodingSpec, PusherFrameEncoder
from parapush.learning.gating import GATE_PENETRATION, involved_sliders, path_contacts

GEOMETRY = default_geometry(4)
TOUCH = GEOMETRY.contact_distance  # 0.0657 m
ENCODER = PusherFrameEncoder(EncodingSpec(4), GEOMETRY)


def test_gate_needs_more_than_the_threshold_overlap():
    slider = np.array([[[0.2, 0.0]]])
    active = np.ones((1, 1), bool)
    start = np.zeros((1, 2))
    # the path ends 0.2 - TOUCH short of touching -> no contact; just past the threshold -> contact
    short = np.array([[0.2 - TOUCH, 0.0]])
    deep = np.array([[0.2 - TOUCH + 2 * GATE_PENETRATION, 0.0]])
    assert not path_contacts(start, short, slider, active, TOUCH)[0, 0]
    assert path_contacts(start, deep, slider, active, TOUCH)[0, 0]
    # a path passing beside the slider at exactly touching distance does not count
    beside = np.array([[[0.1, TOUCH]]])
    assert not path_contacts(start, np.array([[0.2, 0.0]]), beside, active, TOUCH)[0, 0]
    assert not path_contacts(start, deep, slider, np.zeros((1, 1), bool), TOUCH)[0, 0]


def test_involvement_follows_chains_but_not_far_sliders():
    radius = GEOMETRY.slider_radius
    # pusher pushes slider 0 along +x by 5 cm; slider 1 touches slider 0 ahead, slider 2 is 1 cm further,
    # slider 3 is far away
    sliders = np.array([[[TOUCH + 0.001, 0.0], [TOUCH + 0.001 + 2 * radius, 0.0],
                         [TOUCH + 0.001 + 4 * radius + 0.01, 0.0], [0.0, 0.8]]])
    involved = involved_sliders(np.zeros((1, 2)), np.array([[0.05, 0.0]]), sliders, np.ones((1, 4), bool),
                                GEOMETRY.pusher_radius, radius)
    assert involved.tolist() == [[True, True, True, False]]
    # moving away from every slider involves none of them
    away = involved_sliders(np.zeros((1, 2)), np.array([[-0.05, 0.0]]), sliders, np.ones((1, 4), bool),
                            GEOMETRY.pusher_radius, radius)
    assert not away.any()


def random_pushes(rng, count):
    pusher = rng.uniform(-0.2, 0.2, (count, 2))
    angles = rng.uniform(-np.pi, np.pi, (count, 3))
    poses = np.zeros((count, 3, 3))
    poses[..., 0] = pusher[:, :1] + (TOUCH + 0.03 * np.arange(1, 4)) * np.cos(angles) * 1.5
    poses[..., 1] = pusher[:, 1:] + (TOUCH + 0.03 * np.arange(1, 4)) * np.sin(angles) * 1.5
    poses[..., 2] = rng.uniform(-np.pi, np.pi, (count, 3))
    controls = rng.uniform(-0.07, 0.07, (count, 2))
    durations = rng.uniform(0.5, 2.0, count)
    return pusher, poses, controls, durations


def rotate(vectors, angle):
    c, s = np.cos(angle), np.sin(angle)
    return vectors @ np.array([[c, s], [-s, c]])


@settings(max_examples=25, deadline=None)
@given(angle=st.floats(-np.pi, np.pi), shift=st.tuples(st.floats(-0.3, 0.3), st.floats(-0.3, 0.3)),
       seed=st.integers(0, 2**16))
def test_features_are_invariant_to_rotating_and_shifting_the_scene(angle, shift, seed):
    pusher, poses, controls, durations = random_pushes(np.random.default_rng(seed), 16)
    active = np.ones(poses.shape[:2], bool)
    first = ENCODER.encode(pusher, poses, active, controls, durations)
    moved = poses.copy()
    moved[..., :2] = rotate(poses[..., :2], angle) + np.array(shift)
    moved[..., 2] += angle
    second = ENCODER.encode(rotate(pusher, angle) + np.array(shift), moved, active, rotate(controls, angle), durations)
    np.testing.assert_allclose(second.features, first.features, atol=1e-9)
    np.testing.assert_array_equal(second.slot_sliders, first.slot_sliders)


def test_slots_hold_involved_sliders_nearest_first_and_parked_otherwise():
    # three sliders in a row ahead of the pusher (pushed along +x), listed far to near; a 4th slot is unused
    pusher = np.zeros((1, 2))
    poses = np.array([[[TOUCH + 0.205, 0.0, 0.0], [TOUCH + 0.1025, 0.0, 0.0], [TOUCH + 0.001, 0.0, 0.3]]])
    encoded = ENCODER.encode(pusher, poses, np.ones((1, 3), bool), np.array([[0.05, 0.0]]), np.array([1.0]))
    assert encoded.slot_sliders.tolist() == [[2, 1, 0, -1]]
    features = encoded.features[0]
    names = EncodingSpec(4).input_names
    assert features[names.index("slot0_x")] == pytest.approx(TOUCH + 0.001)
    assert features[names.index("slot0_y")] == pytest.approx(0.0, abs=1e-12)
    assert features[names.index("slot0_sin_yaw")] == pytest.approx(np.sin(0.3))
    assert features[names.index("slot3_x")] == pytest.approx(PARK_DISTANCE + 3 * 0.25)
    assert features[names.index("u_x")] == pytest.approx(0.05)
    assert features[names.index("travel_x")] == pytest.approx(0.05)


def test_decoding_the_targets_reproduces_the_observed_motion():
    rng = np.random.default_rng(4)
    pusher, poses, controls, durations = random_pushes(rng, 64)
    active = np.ones(poses.shape[:2], bool)
    encoded = ENCODER.encode(pusher, poses, active, controls, durations)
    next_poses = poses + rng.normal(0.0, 0.01, poses.shape) * encoded.involved[..., None]
    next_twists = rng.normal(0.0, 0.05, poses.shape) * encoded.involved[..., None]
    targets = ENCODER.targets(encoded, poses, next_poses, next_twists)
    decoded_poses, decoded_twists = ENCODER.decode(encoded, targets, poses)
    np.testing.assert_allclose(decoded_poses, next_poses, atol=1e-12)
    np.testing.assert_allclose(decoded_twists, next_twists, atol=1e-12)


def test_mirroring_the_scene_flips_exactly_the_mirror_signed_features():
    rng = np.random.default_rng(5)
    pusher, poses, controls, durations = random_pushes(rng, 32)
    active = np.ones(poses.shape[:2], bool)
    first = ENCODER.encode(pusher, poses, active, controls, durations)
    mirrored_poses = poses * np.array([1.0, -1.0, -1.0])
    second = ENCODER.encode(pusher * np.array([1.0, -1.0]), mirrored_poses, active, controls * np.array([1.0, -1.0]),
                            durations)
    input_signs, _ = EncodingSpec(4).mirror_signs()
    np.testing.assert_allclose(second.features, first.features * input_signs, atol=1e-9)
