"""Recorded-pushes files (parapush.identification.recorded_pushes): round trip and refusals, no ROS."""

from __future__ import annotations

import json

import numpy as np
import pytest

from parapush.identification import PushRecord
from parapush.identification.recorded_pushes import (
    FORMAT,
    RecordedPush,
    RecordedPushes,
    RecordedPushesError,
    load_recorded_pushes,
    recorded_pushes_from_dict,
    recorded_pushes_to_dict,
    save_recorded_pushes,
)
from parapush.physics.fine import FineModel

SCENE = {
    "name": "one_box",
    "table": {"friction": 0.14},
    "pusher": {"radius": 0.005, "friction": 0.25, "position": [-0.2, 0.0]},
    "objects": [{"name": "plate", "shape": "box", "half_extents": [0.045, 0.045], "height": 0.013, "mass": 0.84,
                 "friction": 0.14}],
}


def simulated_pushes(count: int = 2) -> RecordedPushes:
    """``count`` pushes of the box, 3 x 0.2 s at 5 cm/s from the pusher touching its -x face."""
    recorded = RecordedPushes(scene_data=SCENE, object_name="plate", pushes=(
        RecordedPush("placeholder", PushRecord(np.zeros((2, 10)), np.zeros((1, 2)), np.ones(1))),))
    model = FineModel(recorded.scene)
    pushes = []
    for number in range(count):
        state = model.layout.compose(np.array([-0.05, 0.01 * number]), np.zeros((1, 3)))
        controls, durations = np.tile([0.05, 0.0], (3, 1)), np.full(3, 0.2)
        states = [state]
        for control, duration in zip(controls, durations, strict=True):
            states.append(model.propagate(states[-1][None], control[None], np.array([duration]))[0])
        pushes.append(RecordedPush(f"push{number}", PushRecord(np.array(states), controls, durations)))
    return RecordedPushes(scene_data=SCENE, object_name="plate", pushes=tuple(pushes), source="simulated")


def test_a_file_round_trip_keeps_the_pushes_and_the_scene(tmp_path):
    recorded = simulated_pushes()
    path = tmp_path / "plate.json"
    save_recorded_pushes(path, recorded)
    loaded = load_recorded_pushes(path)
    assert loaded.scene == recorded.scene
    assert loaded.object_name == "plate" and loaded.source == "simulated"
    assert [push.name for push in loaded.pushes] == ["push0", "push1"]
    for original, read in zip(recorded.pushes, loaded.pushes, strict=True):
        np.testing.assert_allclose(read.record.states, original.record.states, atol=1e-9)
        np.testing.assert_array_equal(read.record.controls, original.record.controls)
        np.testing.assert_array_equal(read.record.durations, original.record.durations)
    assert loaded.pushes[0].pusher_travel == pytest.approx([0.0, 0.01, 0.02, 0.03])
    # the pushes moved the plate: the file holds real motion, not the initial state repeated
    assert loaded.pushes[0].record.states[-1, 2] > 0.01


def _data() -> dict:
    return recorded_pushes_to_dict(simulated_pushes(1))


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(format="something"), "format: expected"),
    (lambda d: d.update(version=2), "version: this reader knows version 1"),
    (lambda d: d.update(extra=1), "unknown field(s) ['extra']"),
    (lambda d: d.update(object="ghost"), "unknown object 'ghost'"),
    (lambda d: d.update(pushes=[]), "pushes: at least one push"),
    (lambda d: d["pushes"][0].update(durations=[0.2, 0.2, 0.2005]), "pushes[0].durations: each must be a positive"),
    (lambda d: d["pushes"][0].update(controls=[[0.05, 0.0]] * 2), "pushes[0].durations: expected shape (2,)"),
    (lambda d: d["pushes"][0]["states"][1].__setitem__(0, float("nan")), "pushes[0].states: every number"),
    (lambda d: d["pushes"][0].update(states=[row[:4] for row in d["pushes"][0]["states"]]),
     "pushes[push0].states: rows of 4 values, the scene's state has 10"),
    (lambda d: d["pushes"].append(dict(d["pushes"][0])), "pushes: duplicate names ['push0']"),
    (lambda d: d["scene"]["objects"][0].update(mass=-1.0), "objects[plate].mass"),
])
def test_a_malformed_file_is_refused_naming_the_field(change, message):
    data = _data()
    change(data)
    with pytest.raises(RecordedPushesError) as caught:
        recorded_pushes_from_dict(data)
    assert message in str(caught.value)


def test_load_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{")
    with pytest.raises(RecordedPushesError, match="recorded pushes .*broken.json: not JSON"):
        load_recorded_pushes(path)
    path.write_text(json.dumps({"format": FORMAT, "version": 1, "pushes": "no"}))
    with pytest.raises(RecordedPushesError, match="broken.json: pushes: expected a list"):
        load_recorded_pushes(path)
    with pytest.raises(RecordedPushesError, match="missing.json: cannot read"):
        load_recorded_pushes(tmp_path / "missing.json")
