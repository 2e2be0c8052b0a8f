"""The MPC where it is used: the planner predicts with the project's default model
(config/model.yaml, as the MPC node builds it: Parareal on the fine MuJoCo model) while the
world is the noisy simulated world of config/sim_world.yaml (per-push friction and centre of
friction drawn from a seeded generator, the arm's acceleration limit and command timeout).

The world is driven as the executor drives the robot: table-frame twists streamed every
50 ms through the simulated arm, then a halt. Budgets are cut down (fewer samples and
iterations per re-plan) so each scene runs in well under a minute; everything is seeded.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from parapush.graph import config_dir, resolve_scene_path
from parapush.planning import MpcLoop, MpcOutcome, StochasticTrajectoryOptimizer, load_planner_config
from parapush.planning.engine_prediction import EnginePrediction
from parapush.prediction import load_model_config
from parapush.scene import load_scene
from parapush.sim.arm import TwistCommand
from parapush.sim.driver_settings import load_driver_settings
from parapush.sim.world import SimWorld

pytestmark = pytest.mark.slow

COMMAND_PERIOD = 0.05  # s, the executor's twist stream
SETTLE = 0.1  # s after each control: the arm halts and the objects come to rest


class SimulatedRobot:
    """A :class:`parapush.planning.World` over :class:`SimWorld` in manual stepping: each
    control is a stream of table-frame twists for its duration, as the executor sends them.

    Attributes:
        world: the simulated world.
        executed: the (control (2,) m/s, duration s) pairs executed.
        stops: number of ``stop`` calls.
    """

    def __init__(self, world: SimWorld) -> None:
        self.world = world
        self.executed: list[tuple[np.ndarray, float]] = []
        self.stops = 0

    def observe(self) -> np.ndarray:
        return self.world.true_state()

    def _stream(self, velocity: tuple[float, float], duration: float) -> None:
        elapsed = 0.0
        while elapsed < duration - 1e-9:
            stamp = self.world.time
            self.world.command(TwistCommand(stamp_s=stamp, frame_id="table", linear=(*velocity, 0.0)))
            step = min(COMMAND_PERIOD, duration - elapsed)
            self.world.step(step)
            elapsed += step

    def execute(self, control: np.ndarray, duration: float) -> None:
        self._stream((float(control[0]), float(control[1])), duration)
        self._stream((0.0, 0.0), SETTLE)
        self.executed.append((np.array(control, dtype=float), duration))

    def stop(self) -> None:
        self.stops += 1
        self._stream((0.0, 0.0), SETTLE)


def run_scene(scene_name: str, *, world_seed: int, max_controls: int):
    scene = load_scene(resolve_scene_path(scene_name))
    config = load_planner_config(config_dir() / "planner.yaml")
    model_config = dataclasses.replace(load_model_config(config_dir() / "model.yaml"), workers=2)
    assert model_config.name == "parareal"  # the project's default predictive model
    optimizer_settings = dataclasses.replace(config.optimizer, samples=12, max_iterations=3, time_budget=None, seed=1)
    world_settings = dataclasses.replace(load_driver_settings(config_dir() / "sim_world.yaml").world, seed=world_seed)
    assert world_settings.push_noise.enabled
    robot = SimulatedRobot(SimWorld(scene, world_settings))
    model = EnginePrediction.build(scene, model_config)
    try:
        loop = MpcLoop(scene, StochasticTrajectoryOptimizer(optimizer_settings), model,
                       config.cost_function(scene), config.mpc)
        result = loop.run(robot, max_controls=max_controls)
    finally:
        model.close()
    return scene, robot, result


def test_obstacle_scene_keeps_the_slider_clear_of_the_obstacle_under_model_mismatch():
    """With a short budget the planner does not get around the obstacle within 10 controls
    (measured: isrr_obstacle_1 with 20 samples x 6 iterations was still 12 cm from the goal
    after 20 controls, 143 s), so this checks what must hold at any budget: the true path of
    the slider never touches the obstacle, nothing leaves the table, the loop ends cleanly."""
    scene, robot, result = run_scene("isrr_obstacle.yaml", world_seed=4, max_controls=10)
    assert result.outcome in (MpcOutcome.SUCCESS, MpcOutcome.MAX_CONTROLS), (result.outcome, result.failure_reason)
    assert len(robot.executed) == result.controls_executed == 10 or result.outcome is MpcOutcome.SUCCESS
    assert robot.stops == 1
    obstacle = scene.obstacles[0]
    target = scene.objects[scene.target_index]
    slider = scene.layout.poses(result.states)[:, scene.target_index, :2]
    clearance = np.hypot(*(slider - np.array(obstacle.pose[:2])).T) - obstacle.radius - target.radius
    assert clearance.min() > 0.0, f"the slider touched the obstacle (clearance {clearance.min():.4f} m)"
    assert all(scene.table.contains(*position) for position in scene.layout.poses(robot.observe())[:, :2])


def test_clutter_scene_reaches_the_goal_under_model_mismatch():
    """The demo's scene (clutter_fig1): the target into the goal, no other object in it."""
    scene, robot, result = run_scene("clutter_fig1.yaml", world_seed=4, max_controls=12)
    assert result.outcome is MpcOutcome.SUCCESS, (result.outcome, result.failure_reason, result.final_distance)
    assert robot.stops == 1 and len(robot.executed) == result.controls_executed
    final = scene.layout.poses(robot.observe())
    assert scene.goal.contains(*final[scene.target_index, :2])
    others = [index for index in range(len(scene.objects)) if index != scene.target_index]
    assert not any(scene.goal.contains(*final[index, :2]) for index in others)
