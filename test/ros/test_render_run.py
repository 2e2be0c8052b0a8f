"""Rendering a run folder's video from its MCAP: the states and plans read back on the recording's clock."""

from __future__ import annotations

import json

import numpy as np
import pytest
from mcap.writer import Writer
from rclpy.serialization import serialize_message

from parapush.nodes.conversions import state_to_msg, trajectory_to_msg
from parapush.nodes.recorder import message_definition
from parapush.programs.render_run import main, read_recording
from parapush.scene import GoalRegion, ObjectSpec, Scene

SCENE = Scene(name="rendered", objects=(ObjectSpec("puck", pose=(0.0, 0.0, 0.0)),),
              goal=GoalRegion(center=(0.2, 0.0), radius=0.04))


def state(step: int) -> np.ndarray:
    return SCENE.layout.compose(np.array([-0.1 + 0.01 * step, 0.0]), np.array([[0.01 * step, 0.0, 0.0]]))


def write_recording(path, *, with_true_state: bool = True) -> None:
    """1 s of states at 20 Hz (log times from 50 s) and two plans, as the demo's recorder writes them."""
    with path.open("wb") as stream:
        writer = Writer(stream)
        writer.start(profile="ros2")
        channels = {}
        for topic, type_name in (("/sim/true_state", "SceneState"), ("/scene_state", "SceneState"),
                                 ("/planned_trajectory", "PredictedTrajectory")):
            name = f"parareal_pushing/msg/{type_name}"
            schema = writer.register_schema(name=name, encoding="ros2msg", data=message_definition(name).encode())
            channels[topic] = writer.register_channel(topic=topic, message_encoding="cdr", schema_id=schema)
        for step in range(21):
            log_time = 50_000_000_000 + step * 50_000_000
            estimated = state(step) + [0.0, 0.0, 0.001, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
            topics = [("/scene_state", estimated)] + ([("/sim/true_state", state(step))] if with_true_state else [])
            for topic, values in topics:
                data = serialize_message(state_to_msg(values, SCENE, stamp=log_time * 1e-9))
                writer.add_message(channels[topic], log_time=log_time, data=data, publish_time=log_time)
            if step in (2, 12):
                plan = trajectory_to_msg(np.stack([state(step + k) for k in range(4)]), SCENE)
                writer.add_message(channels["/planned_trajectory"], log_time=log_time,
                                   data=serialize_message(plan), publish_time=log_time)
        writer.finish()


def test_read_recording_prefers_the_true_state(tmp_path):
    write_recording(tmp_path / "recording.mcap")
    run = read_recording(tmp_path / "recording.mcap", SCENE)
    assert run.state_topic == "/sim/true_state"
    assert run.state_times == pytest.approx(50.0 + 0.05 * np.arange(21))
    assert run.states == pytest.approx(np.stack([state(step) for step in range(21)]))
    assert run.plan_times == pytest.approx([50.1, 50.6])
    assert run.plans[1][0] == pytest.approx(state(12))


def test_read_recording_falls_back_to_the_estimate(tmp_path):
    write_recording(tmp_path / "recording.mcap", with_true_state=False)
    run = read_recording(tmp_path / "recording.mcap", SCENE)
    assert run.state_topic == "/scene_state" and run.states[0, 2] == pytest.approx(0.001)


def test_main_renders_the_folder(tmp_path, monkeypatch):
    write_recording(tmp_path / "recording.mcap")
    scene_file = tmp_path / "scene.yaml"
    scene_file.write_text(json.dumps({"name": "rendered", "objects": [{"name": "puck"}],
                                      "goal": {"center": [0.2, 0.0], "radius": 0.04}}))
    (tmp_path / "metrics.json").write_text(json.dumps({"scene_file": str(scene_file), "outcome": "SUCCESS"}))
    assert main([str(tmp_path), "--frame-period", "0.1"]) == 0
    from PIL import Image

    with Image.open(tmp_path / "run.gif") as image:
        assert image.n_frames == 11  # 1 s at 0.1 s + the first frame
    assert main([str(tmp_path / "missing")]) == 2
