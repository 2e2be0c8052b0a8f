"""The README's first command, ``python -m parapush.programs.demo``, run as a user runs it.

A short seeded scene (one puck pushed 10 cm past a second object) and a small planner
budget keep the run within about two minutes; the simulated devices get free ports. The
outputs are checked with readers that are not the project's: the MCAP with the ``mcap``
and ``mcap_ros2`` packages (every recorded topic present and decodable), the PNG by its
signature and header, ``metrics.json`` with json.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from test_bringup import short_planner_file

from local_ports import free_port

pytestmark = pytest.mark.slow

SCENE = {
    "name": "system_demo",
    "pusher": {"position": [-0.1, 0.0]},
    "objects": [
        {"name": "puck", "pose": [0.0, 0.0, 0.0]},
        {"name": "bystander", "shape": "box", "half_extents": [0.03, 0.03], "pose": [0.05, 0.2, 0.3]},
    ],
    "goal": {"center": [0.1, 0.0], "radius": 0.04},
    "target": "puck",
}
# The topics the demo promises to record (its docstring and the README), with their types.
RECORDED_TOPICS = {
    "/scene_state": "parareal_pushing/msg/SceneState",
    "/sim/true_state": "parareal_pushing/msg/SceneState",
    "/controls": "parareal_pushing/msg/ControlSequence",
    "/planned_trajectory": "parareal_pushing/msg/PredictedTrajectory",
    "/servo_node/delta_twist_cmds": "geometry_msgs/msg/TwistStamped",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"



@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """Runs the demo once; returns (completed process, run folder)."""
    folder = tmp_path_factory.mktemp("demo")
    out = folder / "run"
    completed = subprocess.run(demo_command(folder, out), capture_output=True, text=True, timeout=240,
                               env=dict(os.environ))
    return completed, out


def demo_command(folder: Path, out: Path) -> list[str]:
    """The demo on SCENE (written to ``folder``) with the short planner file and free device ports."""
    scene_path = folder / "system_demo.yaml"
    scene_path.write_text(yaml.safe_dump(SCENE))
    command_port, gripper_port = free_port(), free_port(socket.SOCK_STREAM)
    return [
        sys.executable, "-m", "parapush.programs.demo", "--scene", str(scene_path), "--out", str(out),
        "--max-controls", "15", "--timeout", "150",
        "--param", f"mpc.planner_config={short_planner_file(folder)}",
        "--param", "sim_driver.seed=3",
        "--param", f"sim_driver.natnet_command_port={command_port}",
        "--param", f"sim_driver.natnet_data_port={free_port()}",
        "--param", f"sim_driver.gripper_tcp_port={gripper_port}",
        "--param", f"state_estimator.command_port={command_port}",
        "--param", f"executor.gripper.address=tcp://127.0.0.1:{gripper_port}",
    ]


def describe(completed: subprocess.CompletedProcess, out: Path) -> str:
    return f"exit {completed.returncode}; stdout tail:\n{completed.stdout[-3000:]}\nstderr tail:\n" \
           f"{completed.stderr[-3000:]}\nlogs in {out / 'logs'}"


def test_demo_exits_0_with_success_in_the_metrics(demo_run):
    completed, out = demo_run
    assert completed.returncode == 0, describe(completed, out)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["outcome"] == "SUCCESS" and metrics["success"] is True, metrics
    assert metrics["final_distance_m"] <= SCENE["goal"]["radius"], metrics
    assert 1 <= metrics["controls_executed"] <= 15, metrics
    assert metrics["node_exit_codes"] and all(code == 0 for code in metrics["node_exit_codes"].values()), metrics
    # the real-time planner (the default) and its times: planning overlaps the motion, waiting does not
    assert metrics["planner"] == "realtime", metrics
    times = {key: metrics[key] for key in ("task_time_s", "planning_time_s", "waiting_time_s", "execution_time_s",
                                           "replan_p50_s", "replan_p95_s")}
    assert all(value >= 0.0 for value in times.values()), times
    assert times["waiting_time_s"] + times["execution_time_s"] <= times["task_time_s"] + 0.5, times
    assert 0.0 < times["replan_p50_s"] <= times["replan_p95_s"], times
    assert "the pusher waited for plans" in completed.stdout and "re-plan p50" in completed.stdout


def test_demo_recording_is_readable_with_every_topic(demo_run):
    completed, out = demo_run
    path = out / "recording.mcap"
    assert path.is_file(), describe(completed, out)
    counts: Counter = Counter()
    types = {}
    with path.open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for schema, channel, _message, decoded in reader.iter_decoded_messages():
            counts[channel.topic] += 1
            types[channel.topic] = schema.name
            if channel.topic == "/scene_state":
                assert {body.name for body in decoded.objects} == {"puck", "bystander"}
            if channel.topic == "/controls":
                assert all(control.duration > 0 for control in decoded.controls)
    missing = sorted(set(RECORDED_TOPICS) - set(counts))
    assert not missing, f"topics with no message in the MCAP: {missing} (recorded: {dict(counts)})"
    for topic, type_name in RECORDED_TOPICS.items():
        assert types[topic].replace("/msg/", "/") == type_name.replace("/msg/", "/"), (topic, types[topic])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["recorded_messages"] == dict(counts)


def test_demo_writes_the_plot(demo_run):
    completed, out = demo_run
    png = (out / "run.png").read_bytes()
    assert png[:8] == PNG_SIGNATURE, describe(completed, out)
    length, chunk, width, height = struct.unpack(">I4sII", png[8:24])
    assert chunk == b"IHDR" and width >= 200 and height >= 200
