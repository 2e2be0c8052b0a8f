"""``python -m parapush.programs.identify_recording`` on an MCAP recording of known pushes.

The recording is written as the demo's recorder writes it (CDR messages, ros2msg channels):
``/scene_state`` at 50 Hz from pushes simulated by the fine model with known parameters, and
one ``/controls`` message per push, every stamp on the same clock.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from mcap.writer import Writer
from rclpy.serialization import serialize_message

from parapush.graph import resolve_scene_path
from parapush.identification import ObjectModelVariants, ObjectParameters
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
    assert found["error_m"] < 0.5 * found["initial_error_m"]
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
