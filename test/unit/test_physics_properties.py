"""Property tests on random valid scenes: projection invariants, state round trips, coarse
model invariants. Derandomized with small example counts so the file stays fast."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.physics.fine import FineModel
from parapush.physics.projection import FeasibilityProjector
from parapush.scene import scene_from_dict

FAST = settings(derandomize=True, max_examples=40, deadline=None)
SLOW = settings(derandomize=True, max_examples=12, deadline=None)

sizes = st.floats(0.02, 0.08)
coordinates = st.floats(-0.15, 0.15)
yaws = st.floats(-np.pi, np.pi)


@st.composite
def objects(draw):
    shape = draw(st.sampled_from(["cylinder", "box"]))
    spec = {"shape": shape, "pose": [draw(coordinates), draw(coordinates), draw(yaws)],
            "mass": draw(st.floats(0.1, 2.0)), "height": draw(st.floats(0.01, 0.05))}
    if shape == "cylinder":
        spec["radius"] = draw(sizes)
    else:
        spec["half_extents"] = [draw(sizes), draw(sizes)]
    return spec


@st.composite
def scenes(draw, max_objects=3):
    specs = draw(st.lists(objects(), min_size=1, max_size=max_objects))
    return scene_from_dict({
        "name": "random",
        "pusher": {"radius": draw(st.floats(0.005, 0.03)), "position": [draw(coordinates), draw(coordinates)]},
        "objects": [dict(spec, name=f"o{i}") for i, spec in enumerate(specs)],
    })


def scene_state(scene, twists_seed: int = 0):
    layout = scene.layout
    poses = np.array([spec.pose for spec in scene.objects])[None]
    twists = np.random.default_rng(twists_seed).normal(size=(1, layout.object_count, 3))
    return layout.compose(np.array([scene.pusher.position]), poses, np.array([[0.01, -0.02]]), twists)


@FAST
@given(scenes())
def test_projection_removes_penetration_moving_only_object_positions(scene):
    projector = FeasibilityProjector(scene, passes=60)
    state = scene_state(scene)
    out = projector.project(state)
    layout = scene.layout
    assert projector.penetration(out)[0] <= 1e-9
    np.testing.assert_array_equal(out[:, layout.pusher_position], state[:, layout.pusher_position])
    np.testing.assert_array_equal(out[:, layout.yaw_indices], state[:, layout.yaw_indices])
    np.testing.assert_array_equal(out[:, layout.pusher_velocity.start:], state[:, layout.pusher_velocity.start:])
    # projecting a feasible state changes nothing
    np.testing.assert_array_equal(projector.project(out), out)


@FAST
@given(scenes(max_objects=1))
def test_single_object_moves_exactly_its_penetration_depth(scene):
    projector = FeasibilityProjector(scene, clearance=0.0)
    state = scene_state(scene)
    depth = projector.penetration(state)[0]
    out = projector.project(state)
    moved = np.linalg.norm(out[0, 2:4] - state[0, 2:4])
    if depth > 1e-12:
        np.testing.assert_allclose(moved, depth, rtol=1e-9, atol=1e-12)
        assert abs(projector.penetration(out)[0]) <= 1e-12  # just touching
    else:
        assert moved == 0.0


@FAST
@given(scenes(), st.floats(-0.2, 0.2), st.floats(-0.2, 0.2), st.floats(0.1, 3.0))
def test_coarse_model_invariants(scene, ux, uy, duration):
    model = AnalyticalCoarseModel(scene, resolve_overlaps=False)
    layout = scene.layout
    state = scene_state(scene)
    control = np.array([[ux, uy]])
    fractions = model.contact_fractions(state, control, [duration])
    out = model.propagate(state, control, [duration])
    assert np.all((fractions >= 0.0) & (fractions <= 1.0))
    np.testing.assert_allclose(out[0, layout.pusher_position], state[0, :2] + control[0] * duration)  # Eq 8
    np.testing.assert_array_equal(out[0, layout.pusher_velocity], control[0])
    poses, new_poses = layout.poses(state)[0], layout.poses(out)[0]
    for index in range(layout.object_count):
        if fractions[0, index] == 0.0:  # Eq 5 and 7 without contact: nothing changes
            np.testing.assert_array_equal(out[0, layout.object_pose(index)], state[0, layout.object_pose(index)])
            np.testing.assert_array_equal(out[0, layout.object_twist(index)], state[0, layout.object_twist(index)])
        else:  # translation along u for the contact fraction of the path
            np.testing.assert_allclose(new_poses[index, :2] - poses[index, :2],
                                       control[0] * duration * fractions[0, index], atol=1e-12)


@SLOW
@given(scenes(), st.integers(0, 2**16))
def test_fine_state_round_trip_on_random_scenes(scene, seed):
    model = FineModel(scene)
    rng = np.random.default_rng(seed)
    states = rng.uniform(-0.4, 0.4, (3, scene.layout.dimension))
    physics = model.to_physics_state(states)
    np.testing.assert_array_equal(model.from_physics_state(physics), states)
    assert np.all(model.rest_heights < 0.0) and np.all(model.rest_heights > -1e-3)
