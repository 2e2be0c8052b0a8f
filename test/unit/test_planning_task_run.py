"""run_task: both planner presets on the glued toy system, reported with one set of definitions."""

from __future__ import annotations

import numpy as np
import pytest
from test_planning_fixtures import GluedPropagator, glued_model, initial_state, tiny_scene

from parapush.planning import MpcOutcome
from parapush.planning.async_world import PropagatorPhysics, VirtualClockWorld
from parapush.planning.planner_config import planner_config_from_dict
from parapush.planning.presets import PRESETS
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.planning.task_run import PlanRecorder, run_task
from parapush.prediction import ModelConfig

CONFIG = planner_config_from_dict({
    "optimizer": {"max_iterations": 3, "samples": 8, "seed": 0},
    "mpc": {"max_controls": 20},
    "costs": {"goal_distance": {"weight": 1.0}, "smoothness": {"weight": 0.1}},
})


def run(preset_name: str, steps: list | None = None, **options):
    scene = tiny_scene()
    glued = GluedPropagator(scene.layout, scene.target_index)
    sources = PlannerSources(planner=CONFIG, model=ModelConfig(), preset=PRESETS[preset_name])
    built = build_planner(scene, sources, model=glued_model(scene), coarse=glued)
    world = VirtualClockWorld(PropagatorPhysics(glued, initial_state(scene)))
    steps = [] if steps is None else steps
    report = run_task(built, world, callback=steps.append, **options)
    assert not isinstance(built.loop.optimizer, PlanRecorder), "run_task left its recorder in the loop"
    return scene, report, steps


@pytest.mark.parametrize("preset_name", sorted(PRESETS))
def test_both_loops_report_steps_and_times_alike(preset_name) -> None:
    scene, report, steps = run(preset_name)
    assert report.outcome is MpcOutcome.SUCCESS and report.preset == preset_name
    assert len(steps) == report.controls_executed >= 1
    assert [step.step for step in steps] == list(range(len(steps)))
    assert report.waiting_time == pytest.approx(sum(step.waiting_time for step in steps))
    assert steps[0].waiting_time > 0.0  # the first plan is made standing still
    assert len(report.replan_times) >= len(steps) - report.fallbacks
    assert report.planning_time == pytest.approx(float(np.sum(report.replan_times)))
    assert report.replan_p50 <= report.replan_p95
    assert report.task_time >= report.execution_time > 0.0
    assert [step.task_time for step in steps] == sorted(step.task_time for step in steps)
    assert report.optimizer_iterations >= len(report.replan_times)
    horizon = CONFIG.optimizer.horizon
    for step in steps:
        if not step.fallback:
            assert step.planned_controls.shape == (horizon, 2)
            assert step.predicted_trajectory.shape == (horizon + 1, scene.layout.dimension)
            np.testing.assert_array_equal(step.control, step.planned_controls[0])
    assert report.final_distance <= scene.goal.radius
    coarse_model = "none" if PRESETS[preset_name].coarse is None else "given:GluedPropagator"
    assert report.coarse_model == coarse_model and {step.coarse_model for step in steps} == {coarse_model}
    assert report.interface_values()["coarse_model"] == steps[0].interface_values()["coarse_model"] == coarse_model
    if preset_name == "isrr2019":  # plan, then execute: the pusher stands still for every plan
        assert report.waiting_time >= report.planning_time
        assert report.fallbacks == 0 and report.replans_from_observation == 0


@pytest.mark.parametrize("preset_name", sorted(PRESETS))
def test_a_task_cancelled_after_its_first_control_ends_canceled(preset_name) -> None:
    steps: list = []
    _scene, report, _steps = run(preset_name, steps, should_cancel=lambda: len(steps) >= 1)
    assert report.outcome is MpcOutcome.CANCELED, report.failure_reason
    assert report.controls_executed <= 1  # the sequential loop cancels before executing it


def test_a_robust_planner_reports_the_target_s_belief_narrowing_as_it_pushes() -> None:
    from parapush.physics.fine import FineModel

    scene = tiny_scene()
    fine = FineModel(scene, ModelConfig().fine)
    robust_config = planner_config_from_dict({
        "optimizer": {"max_iterations": 3, "samples": 8, "seed": 0}, "mpc": {"max_controls": 4},
        "costs": {"goal_distance": {"weight": 1.0}, "smoothness": {"weight": 0.1}},
        "robust": {"samples": 3, "risk": {"kind": "cvar", "alpha": 0.5}},
    })
    sources = PlannerSources(planner=robust_config, model=ModelConfig(), preset=PRESETS["realtime"])
    built = build_planner(scene, sources, model=glued_model(scene), coarse=GluedPropagator(scene.layout))
    steps: list = []
    with built:
        prior = built.robust.spread()
        world = VirtualClockWorld(PropagatorPhysics(fine, initial_state(scene)), clock=lambda: 0.0)  # whole steps
        report = run_task(built, world,
                          callback=steps.append)
        assert built.robust.belief.updates >= 1  # pushes of the world (the fine model) moved the belief
    assert len(steps) >= 2 and all(step.parameter_estimate.shape == (5,) for step in steps)
    np.testing.assert_allclose(steps[0].parameter_spread, prior)  # the first control: nothing observed yet
    assert report.parameter_estimate.shape == (5,) and not np.allclose(report.parameter_spread, prior)
    _, nominal, nominal_steps = run("realtime")
    assert nominal.parameter_estimate.shape == (0,) and nominal_steps[0].parameter_spread.shape == (0,)


@pytest.mark.parametrize("preset_name", sorted(PRESETS))
def test_a_blocker_clearing_is_reported_in_the_steps_events(preset_name) -> None:
    """Both loops report the clearing's start and end in the feedback's ``event``."""
    scene = tiny_scene(others=((0.03, 0.03),))  # on the target's line to the goal, near it
    glued = GluedPropagator(scene.layout, scene.target_index)
    sources = PlannerSources(planner=CONFIG, model=ModelConfig(), preset=PRESETS[preset_name]).with_overrides(
        {"mpc": {"max_controls": 6, "clear_blockers": True, "blocker_clear_controls": 2}})
    steps = []
    with build_planner(scene, sources, model=glued_model(scene), coarse=glued) as built:
        report = run_task(built, VirtualClockWorld(PropagatorPhysics(glued, initial_state(scene))),
                          callback=steps.append)
    assert report.outcome is not MpcOutcome.ERROR, report.failure_reason
    assert "blocker clearing: 'other_0' stands on the target's line near the goal" in steps[0].event
    assert any("blocker clearing: 'other_0' done (after 2 controls)" in step.event for step in steps[1:])


def test_a_back_off_is_reported_in_its_steps_event_with_no_stale_plan() -> None:
    """When no plan could be predicted the realtime loop backs off; the feedback says so and
    carries no plan (the recorder's last one is not this control's)."""
    from parapush.planning import AllPredictionsFailedError

    scene = tiny_scene()
    glued = GluedPropagator(scene.layout, scene.target_index)
    sources = PlannerSources(planner=CONFIG, model=ModelConfig(), preset=PRESETS["realtime"])
    steps: list = []
    with build_planner(scene, sources, model=glued_model(scene), coarse=glued) as built:
        optimize, calls = built.loop.optimizer.optimize, []

        def first_fails(*args, **kwargs):
            calls.append(None)
            if len(calls) == 1:
                raise AllPredictionsFailedError("no corrected elite could be predicted (8 tried, 8 unstable)")
            return optimize(*args, **kwargs)

        built.loop.optimizer.optimize = first_fails
        report = run_task(built, VirtualClockWorld(PropagatorPhysics(glued, initial_state(scene))),
                          callback=steps.append)
    assert report.outcome is MpcOutcome.SUCCESS, report.failure_reason
    assert "backed off: no plan could be predicted" in steps[0].event
    assert steps[0].planned_controls.shape == (0, 2) and steps[0].control[0] < 0.0
    assert not any("backed off" in step.event for step in steps[1:])
