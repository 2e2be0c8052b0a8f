"""The shipped general learned weights load and predict finite states for the scene format's variety."""

from __future__ import annotations

import warnings
from dataclasses import asdict

import numpy as np
import pytest
from test_learned_general_support import mixed_scene

from parapush.learning import FineSettingsMismatchWarning, GeneralLearnedCoarseModel, shipped_general_weights_path
from parapush.learning.graph_network_numpy import load_graph_network
from parapush.learning.scene_ranges import SceneRanges
from parapush.physics.fine_settings import FineSettings
from parapush.scene import scene_from_dict


def _predict(scene, controls, durations, twists=None):
    model = GeneralLearnedCoarseModel(scene)
    poses = np.array([spec.pose for spec in scene.objects])
    state = scene.layout.compose(np.array(scene.pusher.position), poses, None, twists)
    states = np.repeat(state[None], len(controls), axis=0)
    return model.propagate(states, np.asarray(controls, dtype=float), np.asarray(durations, dtype=float)), states


def test_the_shipped_weights_are_small_and_record_their_ranges_and_fine_settings():
    path = shipped_general_weights_path()
    assert path.stat().st_size < 2_000_000
    network = load_graph_network(path)
    assert SceneRanges.from_dict(network.metadata["trained_ranges"]).max_objects >= 16
    assert network.metadata["dataset"]["fine_settings"] == asdict(FineSettings()), \
        "the fine model's defaults changed since training: retrain (learned_general_coarse_model.md)"


def test_a_box_scene_is_pushed_along():
    scene = scene_from_dict({"name": "box", "pusher": {"position": [-0.1, 0.0]},
                             "objects": [{"name": "box", "shape": "box", "half_extents": [0.0545, 0.077]}]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", FineSettingsMismatchWarning)
        predicted, states = _predict(scene, [[0.05, 0.0], [0.1, 0.0]], [1.0, 1.0])
    assert np.all(np.isfinite(predicted))
    moved = scene.layout.poses(predicted)[:, 0, 0] - scene.layout.poses(states)[:, 0, 0]
    # the pusher starts 3.1 cm from the box's face and travels 5 / 10 cm: the box moves forward
    assert moved[0] > 0.005 and moved[1] > moved[0]


def test_a_sixteen_object_scene_predicts_finite_states():
    objects = [{"name": f"o{index}", "shape": ("cylinder", "box", "ellipse", "polygon")[index % 4], "radius": 0.03,
                "half_extents": [0.03, 0.025], "mass": 0.3 + 0.1 * index,
                "vertices": [[0.03, 0.0], [0.0, 0.03], [-0.03, 0.0], [0.0, -0.03]] if index % 4 == 3 else [],
                "pose": [-0.2 + 0.075 * (index % 4), -0.12 + 0.075 * (index // 4), 0.2 * index]}
               for index in range(16)]
    scene = scene_from_dict({"name": "sixteen", "pusher": {"position": [-0.27, -0.12]}, "objects": objects})
    twists = np.zeros((16, 3))
    twists[5] = [0.03, 0.0, 0.5]
    predicted, _ = _predict(scene, [[0.1, 0.0], [0.05, 0.05], [0.0, -0.1]], [1.0, 2.0, 0.5], twists)
    assert predicted.shape == (3, scene.layout.dimension)
    assert np.all(np.isfinite(predicted))


def test_a_scene_with_an_obstacle_predicts_finite_states():
    scene = mixed_scene()
    predicted, _ = _predict(scene, [[0.08, 0.0], [0.05, 0.01]], [1.5, 1.0])
    assert np.all(np.isfinite(predicted))


def test_other_fine_settings_warn_naming_the_field():
    scene = mixed_scene()
    with pytest.warns(FineSettingsMismatchWarning, match="fine_settings.timestep"):
        GeneralLearnedCoarseModel(scene, fine_settings=FineSettings(timestep=0.002))
