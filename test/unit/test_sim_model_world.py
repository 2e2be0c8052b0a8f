"""ModelWorld: a World that executes controls with a propagator (the fine model by default)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_planning_fixtures import GluedPropagator, glued_model, tiny_scene

from parapush.physics.fine import FineModel
from parapush.planning import (
    MpcLoop,
    MpcOutcome,
    MpcSettings,
    OptimizerSettings,
    StochasticTrajectoryOptimizer,
    World,
    load_planner_config,
)
from parapush.prediction import ModelConfig, PredictionEngine, PredictionRequest
from parapush.scene import load_scene
from parapush.sim.model_world import ModelWorld, ModelWorldDivergedError, scene_initial_state

ROOT = Path(__file__).resolve().parents[2]


class NanPropagator:
    def __init__(self, layout) -> None:
        self.layout = layout

    def propagate(self, states, controls, durations):
        return np.full_like(np.asarray(states, dtype=float), np.nan)


def test_initial_state_and_observe_return_copies() -> None:
    scene = tiny_scene()
    world = ModelWorld(scene, GluedPropagator(scene.layout))
    assert isinstance(world, World)
    expected = scene.layout.compose(np.array(scene.pusher.position), np.array([[-0.15, 0.0, 0.0]]))
    np.testing.assert_array_equal(scene_initial_state(scene), expected)
    observed = world.observe()
    np.testing.assert_array_equal(observed, expected)
    observed[:] = 1.0
    np.testing.assert_array_equal(world.observe(), expected)


def test_execute_advances_state_and_simulated_time() -> None:
    scene = tiny_scene()
    world = ModelWorld(scene, GluedPropagator(scene.layout))
    start = world.observe()
    world.execute(np.array([0.05, 0.0]), 1.0)
    world.execute(np.array([0.0, 0.02]), 0.5)
    state = world.observe()
    np.testing.assert_allclose(state[scene.layout.pusher_position], start[:2] + [0.05, 0.01])
    assert world.simulated_time == pytest.approx(1.5)
    assert world.controls_executed == 2
    assert len(world.history) == 3
    np.testing.assert_allclose(state[scene.layout.pusher_velocity], [0.0, 0.02])
    world.stop()
    np.testing.assert_array_equal(world.observe()[scene.layout.pusher_velocity], [0.0, 0.0])
    assert world.stops == 1


def test_invalid_arguments_and_divergence_leave_the_state_unchanged() -> None:
    scene = tiny_scene()
    world = ModelWorld(scene, GluedPropagator(scene.layout))
    before = world.observe()
    with pytest.raises(ValueError, match="control"):
        world.execute(np.array([np.nan, 0.0]), 1.0)
    with pytest.raises(ValueError, match="duration"):
        world.execute(np.array([0.01, 0.0]), 0.0)
    with pytest.raises(ValueError, match="initial_state"):
        ModelWorld(scene, GluedPropagator(scene.layout), initial_state=np.zeros(3))
    with pytest.raises(TypeError, match="propagator"):
        ModelWorld(scene, object())
    diverging = ModelWorld(scene, NanPropagator(scene.layout))
    with pytest.raises(ModelWorldDivergedError):
        diverging.execute(np.array([0.01, 0.0]), 1.0)
    np.testing.assert_array_equal(diverging.observe(), before)
    assert diverging.simulated_time == 0.0
    np.testing.assert_array_equal(world.observe(), before)


def test_default_world_is_the_fine_model_bit_for_bit() -> None:
    scene = load_scene(ROOT / "config" / "scenes" / "isrr_obstacle.yaml")
    world = ModelWorld(scene)
    assert isinstance(world.propagator, FineModel)
    state = world.observe()
    controls = np.array([[0.08, 0.0], [0.05, 0.02]])
    request = PredictionRequest(state, controls[None], np.array([[0.5, 0.3]]), model="fine")
    with PredictionEngine(scene, ModelConfig(backend="serial")) as engine:
        predicted = engine.predict(request).trajectories[0]
    world.execute(controls[0], 0.5)
    world.execute(controls[1], 0.3)
    np.testing.assert_array_equal(world.observe(), predicted[-1])
    slider = scene.layout.poses(world.observe())[0]
    assert slider[0] > scene.objects[0].pose[0] + 0.01  # the pusher reached and pushed the slider


def test_mpc_loop_runs_on_a_model_world() -> None:
    scene = tiny_scene()
    config = load_planner_config(ROOT / "config" / "planner.yaml")
    optimizer = StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=3, seed=1))
    world = ModelWorld(scene, GluedPropagator(scene.layout, scene.target_index))
    loop = MpcLoop(scene, optimizer, glued_model(scene), config.cost_function(scene), MpcSettings())
    result = loop.run(world)
    assert result.outcome is MpcOutcome.SUCCESS, result.failure_reason
    assert world.controls_executed == result.controls_executed
    assert world.simulated_time == pytest.approx(result.controls_executed * 1.0)
    assert world.stops == 1
    np.testing.assert_array_equal(scene.layout.poses(result.final_state), scene.layout.poses(world.observe()))
