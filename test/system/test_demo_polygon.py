"""The demo on the shipped polygon scene (``config/scenes/hexagon_clutter.yaml``): the MIT data
set's steel hexagon pushed into the goal past two cylinders, by the whole stack against the
simulated driver, as ``bash scripts/run demo --scene hexagon_clutter.yaml`` runs it (the default
planner, model and world; only the simulated world's seed is fixed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from node_exits import unclean_exits

pytestmark = pytest.mark.slow

SHAPE_POLYGON = 3  # parareal_pushing/msg/ObjectState


@pytest.fixture(scope="module")
def hexagon_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hexagon") / "run"
    command = [sys.executable, "-m", "parapush.programs.demo", "--scene", "hexagon_clutter.yaml", "--out", str(out),
               "--no-video", "--timeout", "150", "--param", "sim_driver.seed=1"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=240, env=dict(os.environ))
    return completed, out


def test_the_demo_pushes_the_hexagon_into_the_goal(hexagon_run):
    completed, out = hexagon_run
    detail = f"exit {completed.returncode}; stdout tail:\n{completed.stdout[-3000:]}\nstderr tail:\n" \
             f"{completed.stderr[-2000:]}\nlogs in {out / 'logs'}"
    assert completed.returncode == 0, detail
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["outcome"] == "SUCCESS" and metrics["final_distance_m"] <= 0.06, (metrics, detail)
    assert not (unclean := unclean_exits(metrics["node_exit_codes"], out / "logs")), unclean


def test_the_estimator_publishes_the_hexagon_s_outline(hexagon_run):
    _, out = hexagon_run
    seen = 0
    with (out / "recording.mcap").open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _, _, _, message in reader.iter_decoded_messages(topics=["/scene_state"]):
            hexagon = next(body for body in message.objects if body.name == "hexagon")
            assert hexagon.shape == SHAPE_POLYGON
            assert len(hexagon.vertices_x) == len(hexagon.vertices_y) == 6
            seen += 1
            if seen >= 20:
                break
    assert seen >= 20
