"""The learned coarse model as a Propagator: scene checks, gate, invariances, shipped weights.

Runs on numpy alone (no torch). The held-out pushes are generated here with seed 424242,
distinct from the shipped model's training seed (1) and model-card test seed (20261122).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from parapush.learning.coarse_learned import (
    FINE_SETTINGS_BEFORE_RECORDED,
    FineSettingsMismatchWarning,
    LearnedCoarseModel,
    fine_settings_mismatches,
    shipped_weights_path,
)
from parapush.learning.dataset import DatasetConfig, default_geometry, generate_dataset
from parapush.learning.evaluation import evaluate_one_step
from parapush.learning.geometry import ModelMismatchError
from parapush.learning.sampling import PushSamplingConfig
from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.physics.fine_settings import FineSettings
from parapush.physics.propagator import Propagator
from parapush.scene import scene_from_dict

pytestmark = pytest.mark.skipif(not shipped_weights_path().is_file(), reason="shipped weights not present")

TOUCH = 0.0145 + 0.0512
HELD_OUT_SEED = 424242


def scene_with(count, **overrides):
    objects = [dict({"name": f"s{i}", "shape": "cylinder", "radius": 0.0512}, **overrides) for i in range(count)]
    return scene_from_dict({"name": "learned", "objects": objects})


def rotate(vectors, angle):
    c, s = np.cos(angle), np.sin(angle)
    return vectors @ np.array([[c, s], [-s, c]])


@pytest.fixture(scope="module")
def one_slider():
    return LearnedCoarseModel(scene_with(1))


def test_is_a_propagator_with_the_scene_layout(one_slider):
    assert isinstance(one_slider, Propagator)
    assert one_slider.layout == scene_with(1).layout


@pytest.mark.parametrize(
    ("scene", "message"),
    [
        (scene_with(1, shape="box"), r"shape: the learned model was trained for cylinders only"),
        (scene_with(5), r"objects: the scene has 5 objects but the model was trained for at most 4"),
        (scene_with(2, radius=0.06), r"objects\[s0\]\.radius"),
        (scene_with(1, mass=2.0), r"objects\[s0\]\.mass"),
        (scene_with(1, friction=0.5), r"objects\[s0\]\.friction"),
        (scene_with(1, height=0.05), r"objects\[s0\]\.height"),
        (scene_from_dict({"name": "p", "pusher": {"radius": 0.03}, "objects": [{"name": "s"}]}), r"pusher\.radius"),
    ],
)
def test_refuses_scenes_it_was_not_trained_for(scene, message):
    with pytest.raises(ModelMismatchError, match=message):
        LearnedCoarseModel(scene)


def test_obstacles_are_refused_unless_ignored_explicitly():
    scene = scene_from_dict({"name": "o", "objects": [{"name": "s"}], "obstacles": [{"name": "post"}]})
    with pytest.raises(ModelMismatchError, match="obstacles"):
        LearnedCoarseModel(scene)
    assert LearnedCoarseModel(scene, ignore_obstacles=True).layout.object_count == 1


def test_a_fine_timestep_other_than_the_trained_one_warns_naming_the_field():
    with pytest.warns(FineSettingsMismatchWarning, match=r"fine_settings\.timestep: 0\.002 \(trained: 0\.001\)"):
        model = LearnedCoarseModel(scene_with(1), fine_settings=FineSettings(timestep=0.002))
    assert model.fine_settings.timestep == 0.002


def test_every_mismatching_fine_setting_is_named():
    settings = FineSettings(timestep=0.005, integrator="implicitfast", cone="pyramidal")
    with pytest.warns(FineSettingsMismatchWarning) as record:
        LearnedCoarseModel(scene_with(2), fine_settings=settings)
    message = str(record[0].message)
    for field in ("timestep", "integrator", "cone"):
        assert f"fine_settings.{field}:" in message
    assert "pusher_collider" not in message


@pytest.mark.parametrize("settings", [None, FineSettings(), FineSettings(speed_limit=5.0)])
def test_the_trained_fine_settings_load_silently(settings):
    """None means the defaults (as for FineModel); speed_limit only marks unstable rows."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LearnedCoarseModel(scene_with(1), fine_settings=settings)


def test_a_caller_can_refuse_mismatched_fine_settings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FineSettingsMismatchWarning)
        with pytest.raises(FineSettingsMismatchWarning, match="integrator"):
            LearnedCoarseModel(scene_with(1), fine_settings=FineSettings(integrator="rk4"))


def test_weights_without_recorded_fine_settings_count_as_a_mismatch():
    assert fine_settings_mismatches(None, FineSettings()) == [
        "fine_settings: the weights' metadata records no dataset.fine_settings"
    ]
    recorded = {"timestep": 0.001, "integrator": "euler"}
    mismatches = fine_settings_mismatches(recorded, FineSettings())
    assert "fine_settings.cone: 'elliptic' (trained: not recorded)" in mismatches
    with pytest.raises(TypeError, match="fine_settings"):
        fine_settings_mismatches(recorded, {"timestep": 0.001})


def test_accepts_the_authors_slider_radius():
    LearnedCoarseModel(scene_with(2, radius=0.05115))


def test_missing_weights_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="weights_path"):
        LearnedCoarseModel(scene_with(1), tmp_path / "absent.npz")


def test_refuses_speeds_and_durations_outside_the_trained_ranges(one_slider):
    state = one_slider.layout.compose(np.zeros((1, 2)), np.array([[[0.2, 0.0, 0.0]]]))
    with pytest.raises(ValueError, match=r"controls\[0\]: speed 0.2000 m/s"):
        one_slider.propagate(state, np.array([[0.2, 0.0]]), np.array([1.0]))
    with pytest.raises(ValueError, match=r"durations\[0\]: 0.1 s lies outside"):
        one_slider.propagate(state, np.array([[0.05, 0.0]]), np.array([0.1]))


def test_a_push_that_misses_keeps_objects_and_zeroes_their_velocities(one_slider):
    layout = one_slider.layout
    state = layout.compose(np.zeros((1, 2)), np.array([[[0.2, 0.0, 0.4]]]), np.array([[0.01, 0.0]]),
                           np.array([[[0.02, -0.01, 0.3]]]))
    out = one_slider.propagate(state, np.array([[0.0, 0.05]]), np.array([1.0]))[0]
    np.testing.assert_allclose(out[layout.pusher_position], [0.0, 0.05])
    np.testing.assert_allclose(out[layout.pusher_velocity], [0.0, 0.05])
    np.testing.assert_array_equal(out[layout.object_pose(0)], [0.2, 0.0, 0.4])
    np.testing.assert_array_equal(out[layout.object_twist(0)], [0.0, 0.0, 0.0])


def test_a_head_on_push_moves_the_slider_forward(one_slider):
    layout = one_slider.layout
    state = layout.compose(np.zeros((1, 2)), np.array([[[TOUCH + 0.001, 0.0, 0.0]]]))
    out = one_slider.propagate(state, np.array([[0.05, 0.0]]), np.array([1.0]))[0]
    dx, dy, _ = out[layout.object_pose(0)] - state[0, layout.object_pose(0)]
    assert 0.035 < dx < 0.055  # the pusher travels 5 cm and starts 1 mm from the slider
    assert abs(dy) < 0.005


def test_non_finite_rows_give_nan_rows_and_leave_the_others_alone(one_slider):
    layout = one_slider.layout
    states = layout.compose(np.zeros((2, 2)), np.array([[[TOUCH, 0.0, 0.0]], [[TOUCH, 0.0, 0.0]]]))
    states[1, 0] = np.nan
    controls = np.array([[0.05, 0.0], [0.05, 0.0]])
    out = one_slider.propagate(states, controls, np.array([1.0, 1.0]))
    assert np.all(np.isnan(out[1]))
    np.testing.assert_array_equal(out[0], one_slider.propagate(states[:1], controls[:1], np.array([1.0]))[0])


def random_cluster(rng, count, sliders):
    pusher = rng.uniform(-0.1, 0.1, (count, 2))
    poses = np.zeros((count, sliders, 3))
    for row in range(count):
        placed = [pusher[row] + (TOUCH + rng.uniform(0, 0.02)) * np.array([1.0, 0.0])]
        while len(placed) < sliders:
            candidate = placed[rng.integers(len(placed))] + (0.1024 + rng.uniform(0, 0.03)) * np.array(
                [np.cos(a := rng.uniform(-np.pi, np.pi)), np.sin(a)])
            if all(np.linalg.norm(candidate - p) > 0.1024 for p in placed) and np.linalg.norm(
                    candidate - pusher[row]) > TOUCH:
                placed.append(candidate)
        poses[row, :, :2] = placed
    poses[..., 2] = rng.uniform(-np.pi, np.pi, (count, sliders))
    angles = rng.uniform(-0.6, 0.6, count)
    controls = 0.08 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return pusher, poses, controls


def test_predictions_rotate_with_the_scene():
    model = LearnedCoarseModel(scene_with(3))
    layout = model.layout
    rng = np.random.default_rng(7)
    pusher, poses, controls = random_cluster(rng, 20, 3)
    durations = np.full(20, 1.0)
    first = model.propagate(layout.compose(pusher, poses), controls, durations)
    angle, shift = 1.1, np.array([0.05, -0.12])
    turned = poses.copy()
    turned[..., :2] = rotate(poses[..., :2], angle) + shift
    turned[..., 2] += angle
    second = model.propagate(layout.compose(rotate(pusher, angle) + shift, turned), rotate(controls, angle), durations)
    first_poses, second_poses = layout.poses(first), layout.poses(second)
    np.testing.assert_allclose(second_poses[..., :2], rotate(first_poses[..., :2], angle) + shift, atol=1e-9)
    np.testing.assert_allclose(second_poses[..., 2], first_poses[..., 2] + angle, atol=1e-9)
    assert np.abs(first_poses[..., :2] - poses[..., :2]).max() > 0.01  # something was pushed


def test_object_order_does_not_matter_and_far_objects_are_ignored():
    rng = np.random.default_rng(8)
    pusher, poses, controls = random_cluster(rng, 10, 3)
    durations = np.full(10, 1.5)
    order = [2, 0, 1]
    # the network's prediction is exactly equivariant; the overlap projection resolves pairs in
    # object order, which moves the result by a fraction of the residual penetration
    for resolve_overlaps, tolerance in ((False, 1e-12), (True, 2e-3)):
        model = LearnedCoarseModel(scene_with(3), resolve_overlaps=resolve_overlaps)
        forward = model.layout.poses(model.propagate(model.layout.compose(pusher, poses), controls, durations))
        permuted = model.layout.poses(model.propagate(model.layout.compose(pusher, poses[:, order]), controls,
                                                      durations))
        np.testing.assert_allclose(permuted, forward[:, order], atol=tolerance)
    three = LearnedCoarseModel(scene_with(3))
    forward = three.layout.poses(three.propagate(three.layout.compose(pusher, poses), controls, durations))
    # a fourth slider far from the push changes nothing: the model for fewer sliders is the same model
    four = LearnedCoarseModel(scene_with(4))
    far = np.concatenate([poses, np.zeros((10, 1, 3)) + np.array([0.0, 0.4, 0.0])], axis=1)
    far[:, 3, :2] += pusher + np.array([-0.3, 0.0])
    with_far = four.layout.poses(four.propagate(four.layout.compose(pusher, far), controls, durations))
    np.testing.assert_allclose(with_far[:, :3], forward, atol=1e-12)
    np.testing.assert_array_equal(with_far[:, 3], far[:, 3])


@pytest.fixture(scope="module")
def held_out():
    sampling = PushSamplingConfig(slider_count_weights=(1.0, 0.0, 1.0, 0.0), contact_fraction=1.0)
    config = DatasetConfig(samples=160, seed=HELD_OUT_SEED, sampling=sampling, backend="serial", batch_size=80)
    return generate_dataset(config, progress=False)


@pytest.mark.parametrize("slider_count", [1, 3])
def test_shipped_weights_beat_the_analytical_model_one_step(held_out, slider_count):
    learned = evaluate_one_step(LearnedCoarseModel, "learned", held_out, slider_count)
    analytical = evaluate_one_step(AnalyticalCoarseModel, "analytical", held_out, slider_count)
    assert learned.moved_sliders > 30
    assert learned.moved_position_mean_mm < 0.7 * analytical.moved_position_mean_mm
    assert learned.position_rms_mm < analytical.position_rms_mm
    assert learned.moved_yaw_mean_deg < analytical.moved_yaw_mean_deg


def test_drives_parareal_to_the_fine_solution():
    from parapush.parareal import PararealOptions, PararealSolver
    from parapush.physics.backends import make_backend
    from parapush.physics.fine import FineModel

    scene = scene_with(1)
    layout = scene.layout
    initial = layout.compose(np.array([[-TOUCH - 0.005, 0.01]]), np.zeros((1, 1, 3)))
    controls = np.array([[[0.05, 0.0], [0.05, 0.02], [0.04, -0.03], [0.05, 0.0]]])
    durations = np.ones(4)
    with make_backend("serial", FineModel(scene)) as fine:
        solver = PararealSolver(coarse=LearnedCoarseModel(scene), fine=fine)
        result = solver.solve(initial, controls, durations, PararealOptions(iterations=4, keep_iterates=True))
        reference = solver.predict_fine(initial, controls, durations).trajectories
    errors = [np.abs(iterate[..., layout.object_poses] - reference[..., layout.object_poses])[..., :2].max()
              for iterate in result.iterates]
    assert errors[-1] < 1e-9
    assert errors[1] < errors[0]


def test_shipped_weights_were_trained_on_the_current_fine_model_and_scene_defaults():
    """Fails when the fine model's defaults or the scene's default bodies change: retrain then
    (python -m parapush.learning.dataset / train, see src/parapush/data/learned_coarse_model.md)."""
    from dataclasses import asdict

    from parapush.learning.numpy_network import load_network
    from parapush.physics.fine_settings import FineSettings

    metadata = load_network(shipped_weights_path()).metadata
    # fields added since (FINE_SETTINGS_BEFORE_RECORDED) count with the value they stand for
    assert fine_settings_mismatches(metadata["dataset"]["fine_settings"], FineSettings()) == []
    assert set(metadata["dataset"]["fine_settings"]) | set(FINE_SETTINGS_BEFORE_RECORDED) == set(asdict(FineSettings()))
    assert metadata["geometry"] == default_geometry(4).to_dict()
