"""RobustPlanning: a task's belief, its narrowing as the loop runs, and the planner's robust scoring."""

from __future__ import annotations

import numpy as np
import pytest

from parapush.identification.parameters import ObjectParameters
from parapush.physics.fine import FineModel
from parapush.planning.async_world import PropagatorPhysics, VirtualClockWorld
from parapush.planning.robust_planning import RobustPlanning
from parapush.planning.robust_scoring import RobustSettings
from parapush.prediction.config import ModelConfig
from parapush.scene import load_scene

SCENE = "config/scenes/isrr_obstacle_1.yaml"


class Loop:
    def __init__(self) -> None:
        self.hooked = 0
        self.before_plan = self.hook

    def hook(self, loop) -> None:
        self.hooked += 1


def test_the_attached_world_narrows_the_belief_before_each_plan_and_keeps_the_loop_s_hook() -> None:
    scene = load_scene(SCENE)
    fine = FineModel(scene, ModelConfig().fine)
    state = scene.layout.compose(np.asarray(scene.pusher.position), np.array([spec.pose for spec in scene.objects]))
    world = VirtualClockWorld(PropagatorPhysics(fine, state), clock=lambda: 0.0)
    loop = Loop()
    with RobustPlanning(scene, RobustSettings(samples=3), ModelConfig().fine, workers=2) as robust:
        assert robust.target == 0 and robust.scoring.settings.samples == 3
        np.testing.assert_allclose(robust.estimate(), robust.belief.estimate())
        before = robust.spread()
        recording = robust.attach(loop, world)
        push = state[2:4] - state[:2]
        control = 0.08 * push / np.linalg.norm(push)
        for _ in range(3):
            recording.observe()
            begin = recording.start(control, 1.0)
            recording.wait_until(begin + 1.0)
            recording.observe()
            loop.before_plan(loop)
        assert loop.hooked == 3  # the loop's own hook still runs, after the narrowing
        assert robust.belief.updates >= 2 and robust.online.observed_controls == 3
        assert not np.allclose(robust.spread(), before)


def test_robust_planning_needs_several_models_and_a_target() -> None:
    scene = load_scene(SCENE)
    with pytest.raises(ValueError, match="samples"):
        RobustPlanning(scene, RobustSettings(samples=1), ModelConfig().fine)
    identified = (ObjectParameters(mass=0.7, support_friction=0.9, pusher_friction=0.2), np.full(5, 0.01))
    with RobustPlanning(scene, RobustSettings(samples=2), ModelConfig().fine, identified=identified,
                        workers=1) as robust:
        np.testing.assert_allclose(robust.estimate()[:3], [0.7, 0.9, 0.2])
