"""``python -m parapush.programs.identify_recording`` on an MCAP recording of known pushes.

The recording is written as the demo's recorder writes it (CDR messages, ros2msg channels):
``/scene_state`` at 50 Hz from pushes simulated by the fine model with known parameters, and
one ``/controls`` message per push, every stamp on the same clock.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from mcap.writer import Writer
from rclpy.serialization import serialize_message

from parapush.graph import resolve_scene_path
from parapush.identification import ObjectModelVariants, ObjectParameters, PushRecord
from parapush.identification.recorded_pushes import RecordedPush, RecordedPushes, save_recorded_pushes
from parapush.nodes.conversions import controls_to_msg, seconds_to_time, state_to_msg
from parapush.physics.backends import ThreadBackend
from parapush.physics.fine import FineModel
from parapush.programs.identify_recording import main
from parapush.scene import load_scene

SCENE_FILE = "isrr_obstacle.yaml"
TRUTH = ObjectParameters(mass=0.8, support_friction=0.7, pusher_friction=0.45, com_offset=(0.01, -0.008))


def write_recording(path, scene, pushes: int) -> None:
    fine = FineModel(scene)
    model = ObjectModelVariants(fine, 0).make(TRUTH)
    reach = scene.objects[0].radius + scene.pusher.radius + 0.001
    rng = np.random.default_rng(3)
    with path.open("wb") as stream, ThreadBackend(fine, threads=1) as backend:
        writer = Writer(stream)
        writer.start(profile="ros2", library="test")
        schemas = {name: writer.register_schema(name=f"parareal_pushing/msg/{name}", encoding="ros2msg", data=b"")
                   for name in ("SceneState", "ControlSequence")}
        states_channel = writer.register_channel("/scene_state", "cdr", schemas["SceneState"])
        controls_channel = writer.register_channel("/controls", "cdr", schemas["ControlSequence"])
        clock = 100.0
        for _ in range(pushes):
            state = scene.layout.compose(np.array([0.1 - reach, 0.2 + rng.uniform(-0.03, 0.03)]),
                                         np.array([[0.1, 0.2, rng.uniform(-np.pi, np.pi)]]))
            control = np.array([0.06, rng.uniform(-0.01, 0.01)])
            sequence = controls_to_msg(control[None], 1.0)
            sequence.header.stamp = seconds_to_time(clock)
            nanoseconds = int(clock * 1e9)
            writer.add_message(controls_channel, log_time=nanoseconds, publish_time=nanoseconds,
                               data=serialize_message(sequence))
            for step in range(51):  # 50 Hz over the 1 s push, from its start
                if step:
                    state = backend.propagate(state[None], control[None], np.array([0.02]), models=[model])[0]
                stamp = clock + 0.02 * step
                nanoseconds = int(stamp * 1e9)
                writer.add_message(states_channel, log_time=nanoseconds, publish_time=nanoseconds,
                                   data=serialize_message(state_to_msg(state, scene, stamp=stamp)))
            clock += 3.0
        writer.finish()


def test_a_recording_of_known_pushes_is_identified(tmp_path, capsys):
    scene = load_scene(resolve_scene_path(SCENE_FILE))
    recording, result = tmp_path / "recording.mcap", tmp_path / "identified.json"
    write_recording(recording, scene, pushes=3)
    code = main([str(recording), "--scene", SCENE_FILE, "--object", "slider", "--iterations", "4",
                 "--population", "8", "--json", str(result)])
    output = capsys.readouterr().out
    print(output)
    assert code == 0
    assert "153 states, 3 control messages -> 3 pushes" in output
    found = json.loads(result.read_text())
    assert found["pushes"] == 3 and found["object"] == "slider"
    assert found["error_m"] < 0.6 * found["initial_error_m"]  # a short search (4 x 8): 2.7 -> 1.4 mm
    assert found["scene_file_parameters"]["pusher_friction"] == scene.pusher.friction


def test_method_grid_gives_cell_maps(tmp_path, capsys):
    scene = load_scene(resolve_scene_path(SCENE_FILE))
    recording, result = tmp_path / "recording.mcap", tmp_path / "identified.json"
    write_recording(recording, scene, pushes=2)
    code = main([str(recording), "--scene", SCENE_FILE, "--object", "slider", "--method", "grid", "--iterations", "6",
                 "--json", str(result)])
    output = capsys.readouterr().out
    print(output)
    assert code == 0 and "(grid, " in output
    found = json.loads(result.read_text())
    cells = found["cells"]
    assert found["method"] == "grid" and len(cells["mass_kg"]) == len(cells["x_m"]) > 50
    assert sum(cells["mass_kg"]) == pytest.approx(found["parameters"]["mass"])
    assert found["error_m"] < found["initial_error_m"]


def write_pushes_file(path, scene_file: str, pushes: int) -> None:
    """A recorded-pushes file (parapush.identification.recorded_pushes) of pushes simulated with TRUTH."""
    scene = load_scene(resolve_scene_path(scene_file))
    fine = FineModel(scene)
    model = ObjectModelVariants(fine, 0).make(TRUTH)
    reach = scene.objects[0].radius + scene.pusher.radius + 0.001
    rng = np.random.default_rng(5)
    records = []
    with ThreadBackend(fine, threads=1) as backend:
        for number in range(pushes):
            state = scene.layout.compose(np.array([0.1 - reach, 0.2 + rng.uniform(-0.03, 0.03)]),
                                         np.array([[0.1, 0.2, rng.uniform(-np.pi, np.pi)]]))
            controls = np.tile([0.06, rng.uniform(-0.01, 0.01)], (2, 1))
            states = [state]
            for control in controls:
                states.append(backend.propagate(states[-1][None], control[None], np.array([0.5]), models=[model])[0])
            records.append(RecordedPush(f"push{number}", PushRecord(np.array(states), controls, np.full(2, 0.5))))
    data = yaml.safe_load(resolve_scene_path(scene_file).read_text())
    save_recorded_pushes(path, RecordedPushes(scene_data=data, object_name="slider", pushes=tuple(records),
                                              source="simulated with known parameters"))


def test_a_recorded_pushes_file_is_identified(tmp_path, capsys):
    pushes, result = tmp_path / "slider.json", tmp_path / "identified.json"
    write_pushes_file(pushes, SCENE_FILE, pushes=3)
    code = main([str(pushes), "--iterations", "4", "--population", "8", "--json", str(result)])
    output = capsys.readouterr().out
    print(output)
    assert code == 0 and "3 recorded pushes of 'slider' (simulated with known parameters)" in output
    found = json.loads(result.read_text())
    assert found["pushes"] == 3 and found["object"] == "slider"
    assert found["error_m"] < 0.8 * found["initial_error_m"]  # a short search (4 x 8): 2.9 -> 1.9 mm
    code = main([str(pushes), "--method", "grid", "--iterations", "4", "--json", str(result)])
    assert code == 0 and "(grid, " in capsys.readouterr().out
    assert json.loads(result.read_text())["error_m"] < json.loads(result.read_text())["initial_error_m"]


@pytest.mark.parametrize(("arguments", "message"), [
    (["--scene", SCENE_FILE], "--scene: a recorded-pushes file carries its own scene"),
    (["--object", "other"], "--object: the file holds pushes of 'slider', not 'other'"),
    (["--support-friction", "0.05", "0.5"], "--support-friction: the scene's value 1.0 is outside (0.05, 0.5)"),
])
def test_a_recorded_pushes_file_refuses_contradicting_options(tmp_path, capsys, arguments, message):
    pushes = tmp_path / "slider.json"
    write_pushes_file(pushes, SCENE_FILE, pushes=1)
    with pytest.raises(SystemExit) as exited:
        main([str(pushes), *arguments])
    assert exited.value.code == 2 and message in capsys.readouterr().err


def test_real_recorded_pushes_are_identified(tmp_path, capsys):
    """The MIT data set's square plate (../shared/real_pushes, converted by bench/mit_pushes.py): the
    search fits its frictions and centre of mass to three real pushes."""
    bench = Path(__file__).resolve().parents[2] / "bench"
    sys.path.insert(0, str(bench))
    try:
        import mit_pushes
    finally:
        sys.path.remove(str(bench))
    recorded = mit_pushes.convert_object("rect1")
    pushes, result = tmp_path / "rect1.json", tmp_path / "identified.json"
    save_recorded_pushes(pushes, dataclasses.replace(recorded, pushes=recorded.pushes[:3]))
    code = main([str(pushes), "--iterations", "4", "--population", "8", "--support-friction", "0.05", "0.5",
                 "--json", str(result)])
    print(capsys.readouterr().out)
    found = json.loads(result.read_text())
    assert code == 0 and found["pushes"] == 3 and found["object"] == "rect1"
    assert found["error_m"] < found["initial_error_m"]
