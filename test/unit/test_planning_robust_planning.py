"""RobustPlanning: a task's belief, its narrowing as the loop runs, and the planner's robust scoring."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from parapush.identification.parameter_belief import ParameterBelief
from parapush.identification.parameters import ObjectParameters
from parapush.physics.fine import FineModel
from parapush.planning.async_world import PropagatorPhysics, VirtualClockWorld
from parapush.planning.robust_planning import RobustPlanning
from parapush.planning.robust_scoring import RobustSettings
from parapush.prediction.config import ModelConfig
from parapush.scene import ObjectPatch, load_scene
from parapush.scene.uncertainty import ParameterSpread

SCENE = "config/scenes/isrr_obstacle_1.yaml"


class Loop:
    def __init__(self) -> None:
        self.hooked = 0
        self.before_plan = self.hook

    def hook(self, loop) -> None:
        self.hooked += 1


def push_then_plan(recording, loop, state: np.ndarray, controls: int) -> None:
    """``controls`` pushes of 1 s from the pusher towards the object, each observed, then the loop's plan hook."""
    push = state[2:4] - state[:2]
    control = 0.08 * push / np.linalg.norm(push)
    for _ in range(controls):
        recording.observe()
        recording.wait_until(recording.start(control, 1.0) + 1.0)
        recording.observe()
        loop.before_plan(loop)


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
        push_then_plan(recording, loop, state, 3)
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


class Corrector:
    """A corrector's parameters of the target: what it predicts with, and every change."""

    def __init__(self, parameters: ObjectParameters) -> None:
        self.history = [parameters]

    def current(self) -> ObjectParameters:
        return self.history[-1]

    def apply(self, parameters: ObjectParameters) -> ObjectParameters:
        self.history.append(parameters)
        return self.history[-2]


@pytest.mark.parametrize("adapt", [True, False])
def test_each_narrowing_gives_the_corrector_the_estimate_and_closing_gives_back_its_parameters(adapt) -> None:
    scene = load_scene(SCENE)
    fine = FineModel(scene, ModelConfig().fine)
    state = scene.layout.compose(np.asarray(scene.pusher.position), np.array([spec.pose for spec in scene.objects]))
    world = VirtualClockWorld(PropagatorPhysics(fine, state), clock=lambda: 0.0)
    loop = Loop()
    identified = ObjectParameters(mass=0.6, support_friction=0.9, pusher_friction=0.25, com_offset=(0.004, 0.0))
    corrector = Corrector(identified)  # e.g. identification's result, which the service predicts with
    with RobustPlanning(scene, RobustSettings(samples=3, adapt=adapt), ModelConfig().fine, workers=2,
                        corrector=corrector) as robust:
        centred = ParameterBelief.from_spread(identified, RobustSettings().spread)  # the prior is centred there
        np.testing.assert_allclose(robust.estimate(), centred.estimate())
        assert not np.allclose(robust.estimate(), ParameterBelief.from_spread(
            ObjectParameters.from_scene(scene, 0), RobustSettings().spread).estimate())
        recording = robust.attach(loop, world)
        loop.before_plan(loop)  # nothing observed yet: nothing applied
        assert len(corrector.history) == 1 and robust.applied is None
        push_then_plan(recording, loop, state, 2)
        if adapt:
            assert len(corrector.history) == 1 + robust.belief.updates >= 2
            np.testing.assert_array_equal(corrector.current().as_vector(), robust.estimate())
            assert robust.applied is corrector.current()
        else:
            assert len(corrector.history) == 1 and robust.applied is None
    assert corrector.current() is identified  # closed: the corrector has its own parameters back


def test_the_target_s_uncertainty_in_the_scene_is_the_belief_s_prior_instead_of_the_file_s_spread() -> None:
    scene = load_scene(SCENE)
    spec = scene.objects[0]
    narrow = dataclasses.replace(scene, objects=(dataclasses.replace(
        spec, uncertainty=ParameterSpread(mass=0.1, support_friction=0.05, com_offset=0.004)),))
    settings = RobustSettings(samples=2)
    with RobustPlanning(scene, settings, ModelConfig().fine, workers=1) as from_file, \
            RobustPlanning(narrow, settings, ModelConfig().fine, workers=1) as from_scene:
        nominal = ObjectParameters.from_scene(scene, 0)
        expected_file = ParameterBelief.from_spread(nominal, settings.spread, settings.belief).spread()
        expected_scene = ParameterBelief.from_spread(nominal, narrow.objects[0].uncertainty, settings.belief).spread()
        np.testing.assert_allclose(from_file.spread(), expected_file)
        np.testing.assert_allclose(from_scene.spread(), expected_scene)
        assert np.all(from_scene.spread()[[0, 1, 3, 4]] < 0.5 * from_file.spread()[[0, 1, 3, 4]])


def test_a_corrector_with_a_cell_map_keeps_it_and_the_prior_centres_on_the_scene() -> None:
    scene = load_scene(SCENE)
    nominal = ObjectParameters.from_scene(scene, 0)
    patch = ObjectPatch(center=(0.0, 0.0), half_extents=(0.01, 0.01), mass=0.1, friction=0.6)
    mapped = dataclasses.replace(nominal, patches=(patch,))  # e.g. identified by the grid method
    corrector = Corrector(mapped)
    fine = FineModel(scene, ModelConfig().fine)
    state = scene.layout.compose(np.asarray(scene.pusher.position), np.array([spec.pose for spec in scene.objects]))
    with RobustPlanning(scene, RobustSettings(samples=2), ModelConfig().fine, workers=1,
                        corrector=corrector) as robust:
        assert robust.corrector is None
        np.testing.assert_allclose(robust.estimate(), ParameterBelief.from_spread(
            nominal, RobustSettings().spread).estimate())
        loop = Loop()
        recording = robust.attach(loop, VirtualClockWorld(PropagatorPhysics(fine, state), clock=lambda: 0.0))
        push_then_plan(recording, loop, state, 2)
        assert robust.belief.updates >= 1  # the belief narrows; the corrector's map stays
    assert corrector.history == [mapped]


class FailingCorrector(Corrector):
    def apply(self, parameters: ObjectParameters) -> ObjectParameters:
        raise ConnectionError("the prediction service is gone")


def test_an_update_that_fails_raises_in_the_planning_thread() -> None:
    scene = load_scene(SCENE)
    fine = FineModel(scene, ModelConfig().fine)
    state = scene.layout.compose(np.asarray(scene.pusher.position), np.array([spec.pose for spec in scene.objects]))
    loop = Loop()
    with RobustPlanning(scene, RobustSettings(samples=2), ModelConfig().fine, workers=1,
                        corrector=FailingCorrector(ObjectParameters.from_scene(scene, 0))) as robust:
        recording = robust.attach(loop, VirtualClockWorld(PropagatorPhysics(fine, state), clock=lambda: 0.0))
        with pytest.raises(ConnectionError, match="gone"):
            push_then_plan(recording, loop, state, 1)
        robust.settle()  # raised once
        assert len(robust.history) == 1 + robust.belief.updates == 2
