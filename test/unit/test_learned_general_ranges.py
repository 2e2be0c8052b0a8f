"""The general learned coarse model refuses scenes outside its trained ranges, naming the field."""

from __future__ import annotations

import pytest
from test_learned_general_support import mixed_scene, random_weights_file

from parapush.learning import GeneralLearnedCoarseModel, ModelMismatchError
from parapush.learning.scene_ranges import SceneRanges
from parapush.scene import scene_from_dict


def _objects(count: int, **changes):
    return [{"name": f"o{index}", "shape": "cylinder", "radius": 0.03,
             "pose": [0.07 * (index % 8) - 0.25, 0.07 * (index // 8) - 0.1, 0.0], **changes} for index in range(count)]


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    return random_weights_file(tmp_path_factory.mktemp("general"))


def test_a_scene_inside_the_ranges_is_accepted(weights):
    GeneralLearnedCoarseModel(mixed_scene(), weights)


@pytest.mark.parametrize(("changes", "message"), [
    ({"objects": _objects(2) + [{"name": "heavy", "mass": 3.0, "radius": 0.03, "pose": [0.2, 0.2, 0.0]}]},
     "objects[2].mass: 3.0 kg outside the trained range [0.2, 2.0]"),
    ({"table": {"friction": 0.1}}, "table.friction: 0.1 outside the trained range [0.2, 1.0]"),
    ({"objects": _objects(1, friction=1.5)}, "objects[0].friction: 1.5 outside the trained range [0.2, 1.0]"),
    ({"pusher": {"friction": 0.9}}, "pusher.friction: 0.9 outside the trained range [0.05, 0.6]"),
    ({"object_friction": 0.9}, "object_friction: 0.9 outside the trained range [0.05, 0.6]"),
    ({"objects": _objects(1, radius=0.1)}, "objects[0].radius: 0.1 m outside the trained range [0.025, 0.065]"),
    ({"objects": [{"name": "long", "shape": "box", "half_extents": [0.03, 0.2]}]},
     "objects[0].half_extents[1]: 0.2 m outside the trained range [0.02, 0.08]"),
    ({"objects": _objects(17)}, "objects: 17 objects outside the trained range [1, 16]"),
    ({"objects": _objects(1, patches=[{"center": [0.0, 0.0], "half_extents": [0.01, 0.01], "mass": 0.1}])},
     "objects[0].patches"),
])
def test_out_of_range_scenes_are_refused_naming_the_field(weights, changes, message):
    with pytest.raises(ModelMismatchError) as caught:
        GeneralLearnedCoarseModel(mixed_scene(**changes), weights)
    assert message in str(caught.value)


def test_an_untrained_shape_is_refused_naming_the_field(tmp_path):
    path = random_weights_file(tmp_path, ranges=SceneRanges(shapes=("cylinder", "box", "ellipse")))
    with pytest.raises(ModelMismatchError, match=r"objects\[3\]\.shape: 'polygon' is not a trained shape"):
        GeneralLearnedCoarseModel(mixed_scene(), path)
    with pytest.raises(ModelMismatchError, match=r"obstacles\[0\]\.shape: 'polygon'"):
        GeneralLearnedCoarseModel(mixed_scene(objects=_objects(2), obstacles=[
            {"name": "p", "shape": "polygon", "vertices": [[0.03, 0.0], [0.0, 0.03], [-0.03, -0.02]],
             "pose": [0.3, 0.3, 0.0]}]), path)


def test_too_fast_controls_and_untrained_durations_are_refused_naming_the_row(weights):
    import numpy as np

    scene = mixed_scene()
    model = GeneralLearnedCoarseModel(scene, weights)
    state = scene.layout.compose(np.array(scene.pusher.position), np.array([spec.pose for spec in scene.objects]))
    states = np.stack([state, state])
    with pytest.raises(ValueError, match=r"controls\[1\]: speed 0.2000 m/s"):
        model.propagate(states, np.array([[0.05, 0.0], [0.2, 0.0]]), np.ones(2))
    with pytest.raises(ValueError, match=r"durations\[0\]: 3.0 s"):
        model.propagate(states, np.zeros((2, 2)), np.array([3.0, 1.0]))


def test_ranges_round_trip_and_validate():
    ranges = SceneRanges()
    assert SceneRanges.from_dict(ranges.to_dict()) == ranges
    with pytest.raises(ValueError, match="mass: expected low <= high"):
        SceneRanges(mass=(2.0, 0.2))
    with pytest.raises(ValueError, match="shapes"):
        SceneRanges(shapes=("sphere",))
    assert scene_from_dict({"name": "x", "objects": [{"name": "a"}]})  # the defaults are inside the ranges
    SceneRanges().check_scene(scene_from_dict({"name": "x", "objects": [{"name": "a"}]}))
