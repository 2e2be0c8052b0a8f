"""build_planner's robust planning: the planner file's robust section and a bench's robust overrides."""

from __future__ import annotations

import numpy as np
import pytest

from parapush.identification import ObjectModelVariants
from parapush.identification.parameters import ObjectParameters
from parapush.physics.fine import FineModel
from parapush.planning.async_world import PropagatorPhysics, VirtualClockWorld
from parapush.planning.planner_config import PlannerConfigError, planner_config_from_dict
from parapush.planning.stack_planner import PlannerSources, build_planner, corrector_parameters
from parapush.scene import load_scene

SCENE = "config/scenes/isrr_obstacle_1.yaml"


def test_the_files_planner_is_nominal_and_a_robust_override_builds_robust_scoring() -> None:
    scene = load_scene(SCENE)
    sources = PlannerSources.load()
    assert sources.planner.robust.samples == 1
    with build_planner(scene, sources) as nominal:
        assert nominal.robust is None and nominal.planner.robust is None
        assert nominal.settings()["robust"] is None
    robust_sources = sources.with_overrides({"robust": {"samples": 3, "risk": {"kind": "worst"}}})
    assert robust_sources.planner.robust.risk.kind == "worst"
    assert robust_sources.planner.robust.risk.alpha == sources.planner.robust.risk.alpha  # merged, not replaced
    with build_planner(scene, robust_sources) as robust:
        assert robust.planner.robust is robust.robust.scoring
        assert robust.settings()["robust"]["samples"] == 3
        assert robust.robust.target == 0
    state = scene.layout.compose(scene.pusher.position, [spec.pose for spec in scene.objects])
    with pytest.raises(RuntimeError, match="close"):  # its fine-model threads were closed with the planner
        robust.robust.identifier.propagate(state[None], [[0.05, 0.0]], [1.0], [[0.5, 1.0, 0.2, 0.0, 0.0]])


def test_robust_settings_errors_name_the_field() -> None:
    sources = PlannerSources.load()
    with pytest.raises(ValueError, match="robust.risk.kind"):
        sources.with_overrides({"robust": {"risk": {"kind": "median"}}})
    with pytest.raises(ValueError, match="robust.samples"):
        build_planner(load_scene(SCENE), sources.with_overrides({"preset": "isrr2019", "robust": {"samples": 2}}))
    with pytest.raises(PlannerConfigError, match="robust.spread.mass"):
        planner_config_from_dict({"costs": {"goal_distance": {"weight": 1.0}}, "robust": {"spread": {"mass": 1.5}}})


def test_robust_planning_adapts_a_local_corrector_and_gives_its_parameters_back() -> None:
    scene = load_scene(SCENE)
    sources = PlannerSources.load().with_overrides({"preset": "realtime", "robust": {"samples": 2}})
    state = scene.layout.compose(scene.pusher.position, [spec.pose for spec in scene.objects])
    truth = ObjectParameters(mass=0.5, support_friction=1.0, pusher_friction=0.3, com_offset=(0.0, 0.015))
    with build_planner(scene, sources) as built:
        engine = built.model.engine
        nominal = engine.object_parameters(scene.target)
        world_model = FineModel(scene, built.model_config.fine)
        ObjectModelVariants(world_model, 0).apply(world_model.mj_model, truth)
        world_model.parameters_changed()
        recording = built.robust.attach(built.loop, VirtualClockWorld(PropagatorPhysics(world_model, state),
                                                                      clock=lambda: 0.0))
        push = state[2:4] - state[:2]
        for _ in range(2):  # two pushes, each observed before the next plan
            recording.observe()
            recording.wait_until(recording.start(0.08 * push / np.linalg.norm(push), 1.0) + 1.0)
            recording.observe()
            built.loop.before_plan(built.loop)  # starts the update beside the plan's coarse search
        assert built.planner.before_correction == built.robust.settle
        built.planner.before_correction()  # the plan's first correction waits for the update
        assert built.robust.belief.updates >= 1 and len(built.robust.history) == 1 + built.robust.belief.updates
        np.testing.assert_allclose(engine.object_parameters(scene.target).as_vector(), built.robust.estimate())
        assert engine.object_parameters(scene.target).com_offset[1] > 0.003  # towards the truth's side
        built.robust.close()  # the task's end: the engine predicts with the scene's parameters again
        np.testing.assert_allclose(engine.object_parameters(scene.target).as_vector(), nominal.as_vector())
    with build_planner(scene, sources.with_overrides({"robust": {"adapt": False}})) as built:
        assert built.robust.corrector is None
    assert corrector_parameters(object(), scene) is None  # a service's predictor: its fine model lives elsewhere
