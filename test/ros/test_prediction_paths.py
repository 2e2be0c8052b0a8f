"""The MPC predicts alike through its local engine and through the prediction service.

Both MPC nodes and the service read one ``model:`` file (a ROS parameter file with a
wildcard section, as config/model.yaml); the same planner call (initial state, S control
sequences, durations) through ``prediction_source: local`` and ``prediction_source: service``
must give identical trajectories (np.array_equal) for the fine, Parareal and coarse models.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from rclpy.parameter import Parameter

from parapush.graph import config_dir, resolve_scene_path
from parapush.nodes.mpc import MpcNode
from parapush.nodes.prediction_client import ServicePrediction
from parapush.nodes.prediction_service import PredictionServiceNode
from parapush.planning.engine_prediction import EnginePrediction
from parapush.prediction import load_model_config
from parapush.scene import load_scene

SCENE_FILE = "clutter_fig1.yaml"  # cylinders, no obstacles: `coarse_model: auto` can resolve to the learned model
SCENE = load_scene(resolve_scene_path(SCENE_FILE))


def model_file(tmp_path, name: str):
    """config/model.yaml with ``name``, K = 2, two workers and the Parareal schedule (``auto``
    picks by measured timings, which two processes need not measure alike)."""
    data = yaml.safe_load((config_dir() / "model.yaml").read_text())
    data["/**"]["ros__parameters"]["model"].update(name=name, iterations=2, workers=2, schedule="parareal")
    path = tmp_path / f"model_{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def node_arguments(path, node_name: str) -> list[str]:
    return ["--ros-args", "-r", f"__node:={node_name}", "--params-file", str(path)]


def planner_call(samples: int = 5, horizon: int = 4):
    """What the optimizer asks: initial state (D,), controls (S, N, 2) m/s, durations (N,) s."""
    layout = SCENE.layout
    initial = layout.compose(SCENE.pusher.position, np.array([spec.pose for spec in SCENE.objects]))
    rng = np.random.default_rng(11)
    target = layout.poses(initial)[SCENE.target_index, :2]
    direction = (target - initial[:2]) / np.linalg.norm(target - initial[:2])
    controls = 0.04 * direction + rng.normal(0.0, 0.01, (samples, horizon, 2))
    return initial, controls, np.full(horizon, 1.0)


@pytest.mark.parametrize("name", ["fine", "parareal", "coarse"])
def test_local_and_service_predictions_are_identical(ros_context, spinning, tmp_path, name):
    path = model_file(tmp_path, name)
    scene = [Parameter("scene_file", value=SCENE_FILE)]
    service = PredictionServiceNode(context=ros_context, cli_args=node_arguments(path, "prediction_service"),
                                    parameter_overrides=scene)
    local = MpcNode(context=ros_context, cli_args=node_arguments(path, "mpc_local"),
                    parameter_overrides=[*scene, Parameter("prediction_source", value="local")])
    remote = MpcNode(context=ros_context, cli_args=node_arguments(path, "mpc_service"),
                     parameter_overrides=[*scene, Parameter("prediction_source", value="service")])
    spinning.add(service, local, remote)
    try:
        config = load_model_config(path)
        assert local.model_config == remote.model_config == service.engine.config == config
        assert config.name == name and config.coarse_model == "auto"
        assert isinstance(local.models.predictor, EnginePrediction)
        assert isinstance(remote.models.predictor, ServicePrediction)
        assert local.models.predictor.engine.default_coarse == service.engine.default_coarse  # `auto` resolved alike
        assert remote.models.predictor.wait_until_ready(10.0)
        initial, controls, durations = planner_call()
        through_service = remote.models.predictor.predict(initial, controls, durations)
        locally = local.models.predictor.predict(initial, controls, durations)
        assert through_service.shape == (5, 5, SCENE.layout.dimension)
        assert np.all(np.isfinite(locally))
        assert np.array_equal(locally, through_service)
        outcome, response = local.models.predictor.last_outcome, remote.models.predictor.last_response
        assert (outcome.model, outcome.iterations_used, outcome.exact_states, outcome.schedule) == (
            name, response.iterations_used, response.exact_states, response.schedule)
        assert outcome.exact_states == {"fine": 5, "parareal": 3, "coarse": 1}[name]
    finally:
        for node in (local, remote, service):
            node.close()
