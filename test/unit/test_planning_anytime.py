"""Anytime re-plans (issue 28): a planner given a tiny time budget returns a valid plan on time
and says that the budget cut its search. Asserts count predict calls, not wall time."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from test_planning_fixtures import GluedPropagator, glued_model, initial_state, tiny_scene

from parapush.planning import CostFunction, OptimizerSettings, PropagatorRollout, StochasticTrajectoryOptimizer
from parapush.planning.async_world import PropagatorPhysics, VirtualClockWorld
from parapush.planning.multifidelity import MultiFidelityPlanner, MultiFidelitySettings
from parapush.planning.pipelined_mpc import PipelineSettings
from parapush.planning.planner_config import planner_config_from_dict
from parapush.planning.presets import PRESETS
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.planning.task_run import run_task
from parapush.prediction import ModelConfig

GOAL_ONLY = {"goal_distance": {"weight": 1.0}, "smoothness": {"weight": 0.1}}
SLEEP = 0.03
"""s each predict call of the slow model takes."""


class SlowModel:
    """A predictive model that sleeps ``SLEEP`` s per predict call and counts the calls."""

    def __init__(self, model) -> None:
        self.model = model
        self.calls = 0

    def predict(self, initial_state, controls, durations):
        self.calls += 1
        time.sleep(SLEEP)
        return self.model.predict(initial_state, controls, durations)


class Slipping(GluedPropagator):
    """The glued model with the target moving half as far (a corrector the coarse model misjudges,
    so the planner wants a refinement round)."""

    def propagate(self, states, controls, durations):
        before = np.array(states, dtype=float)
        after = super().propagate(states, controls, durations)
        start = self.layout.object_pose(self.target_index).start
        after[:, start : start + 2] = 0.5 * (before[:, start : start + 2] + after[:, start : start + 2])
        return after


def slipping_corrector(scene) -> SlowModel:
    return SlowModel(PropagatorRollout(Slipping(scene.layout, scene.target_index)))


def settings(**overrides) -> OptimizerSettings:
    return OptimizerSettings(**{"samples": 6, "max_iterations": 50, "seed": 0, **overrides})


def test_optimizer_stops_at_its_budget_with_its_best_plan_and_says_so() -> None:
    scene = tiny_scene()
    model = SlowModel(glued_model(scene))
    optimizer = StochasticTrajectoryOptimizer(settings(time_budget=0.05))
    start = np.tile([0.05, 0.0], (4, 1))
    result = optimizer.optimize(initial_state(scene), start, model, CostFunction.from_config(scene, GOAL_ONLY))
    assert result.stop_reason == "time_budget"
    assert model.calls <= 2 and result.iterations == model.calls  # 50 without the budget
    assert np.all(np.isfinite(result.controls)) and np.isfinite(result.cost)
    unlimited = StochasticTrajectoryOptimizer(settings(max_iterations=3)).optimize(
        initial_state(scene), start, glued_model(scene), CostFunction.from_config(scene, GOAL_ONLY))
    assert unlimited.stop_reason == "iterations" and unlimited.iterations == 3


def test_optimizer_deadline_cuts_like_the_budget_and_the_earlier_one_applies() -> None:
    scene = tiny_scene()
    model = SlowModel(glued_model(scene))
    optimizer = StochasticTrajectoryOptimizer(settings(time_budget=10.0))
    result = optimizer.optimize(initial_state(scene), np.zeros((4, 2)), model,
                                CostFunction.from_config(scene, GOAL_ONLY), deadline=time.perf_counter() + 0.05)
    assert result.stop_reason == "time_budget" and model.calls <= 2
    with pytest.raises(ValueError, match="deadline"):
        optimizer.optimize(initial_state(scene), np.zeros((4, 2)), model, CostFunction.from_config(scene, GOAL_ONLY),
                           deadline=float("nan"))


def multifidelity(budget: float | None, coarse_sleeps: bool, **split) -> tuple[MultiFidelityPlanner, SlowModel]:
    scene = tiny_scene()
    coarse = PropagatorRollout(GluedPropagator(scene.layout, scene.target_index))
    coarse = SlowModel(coarse) if coarse_sleeps else coarse
    optimizer = StochasticTrajectoryOptimizer(settings(time_budget=budget, max_iterations=20))
    split = {"elites": 2, "rounds": 3, "refine_iterations": 20, "mismatch_tolerance": 0.0, **split}
    return MultiFidelityPlanner(optimizer, coarse, MultiFidelitySettings(**split)), coarse


def test_multifidelity_planner_returns_a_corrected_plan_within_its_budget_and_says_it_was_cut() -> None:
    scene = tiny_scene()
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    planner, coarse = multifidelity(0.05, coarse_sleeps=True)
    corrector = slipping_corrector(scene)
    result = planner.optimize(initial_state(scene), np.tile([0.05, 0.0], (4, 1)), corrector, cost)
    assert result.stop_reason == "time_budget" and planner.last_report.budget_cut
    # one coarse iteration (the second would end after the budget) and one correction; no refinement round
    assert coarse.calls <= 2 and corrector.calls == 1 and planner.last_report.rounds == 1
    assert np.all(np.isfinite(result.trajectory)) and np.isfinite(result.cost)
    assert result.cost == pytest.approx(cost.evaluate(result.trajectory[None], result.controls[None])[0])


def test_multifidelity_planner_skips_a_round_the_remaining_budget_cannot_fit() -> None:
    scene = tiny_scene()
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    state, start = initial_state(scene), np.tile([0.05, 0.0], (4, 1))
    planner, _ = multifidelity(0.1, coarse_sleeps=False)
    corrector = slipping_corrector(scene)
    planner.optimize(state, start, corrector, cost)  # measures the corrector: ~SLEEP s per correction
    corrector.calls = 0
    # the budget ends before a second correction could: the planner corrects once
    planner.optimizer = StochasticTrajectoryOptimizer(settings(time_budget=1.5 * SLEEP, max_iterations=20))
    result = planner.optimize(state, start, corrector, cost)
    assert corrector.calls == 1 and planner.last_report.rounds == 1
    assert result.stop_reason == "time_budget" and planner.last_report.budget_cut


def test_multifidelity_planner_without_budget_runs_its_rounds_and_is_not_cut() -> None:
    scene = tiny_scene()
    planner, _ = multifidelity(None, coarse_sleeps=False, rounds=2, refine_iterations=2)
    corrector = slipping_corrector(scene)
    result = planner.optimize(initial_state(scene), np.tile([0.05, 0.0], (4, 1)), corrector,
                              CostFunction.from_config(scene, GOAL_ONLY))
    assert result.stop_reason == "iterations" and not planner.last_report.budget_cut
    assert planner.last_report.rounds == 2 and corrector.calls == 2


def test_pipeline_replan_budget_is_the_control_duration_less_the_margin() -> None:
    pipeline = PipelineSettings(replan_margin=0.2)
    assert pipeline.replan_budget(1.0) == pytest.approx(0.8)
    assert pipeline.replan_budget(0.25) == pytest.approx(0.125)  # at least half the control
    with pytest.raises(ValueError, match="replan_margin"):
        PipelineSettings(replan_margin=-0.1)
    assert dataclasses.replace(pipeline, replan_margin=0.0).replan_budget(1.0) == pytest.approx(1.0)


class SlowGlued(GluedPropagator):
    """The glued coarse propagator, ``SLEEP`` s per call (a coarse search that cannot finish in time)."""

    def propagate(self, states, controls, durations):
        time.sleep(SLEEP)
        return super().propagate(states, controls, durations)


@pytest.mark.parametrize("preset_name", sorted(PRESETS))
def test_a_task_reports_the_plans_its_time_budget_cut(preset_name) -> None:
    scene = tiny_scene()
    config = planner_config_from_dict({
        "optimizer": {"max_iterations": 10, "samples": 4, "seed": 0, "control_duration": 0.1, "time_budget": 0.05},
        "mpc": {"max_controls": 3},
        "costs": GOAL_ONLY,
    })
    sources = PlannerSources(planner=config, model=ModelConfig(), preset=PRESETS[preset_name])
    coarse = SlowGlued(scene.layout, scene.target_index)
    built = build_planner(scene, sources, model=PropagatorRollout(coarse), coarse=coarse)
    assert built.planner.settings.time_budget == pytest.approx(0.05)  # the pipelined preset's: max(0.1 - 0.2, 0.05)
    world = VirtualClockWorld(PropagatorPhysics(GluedPropagator(scene.layout, scene.target_index),
                                                initial_state(scene)))
    steps: list = []
    report = run_task(built, world, callback=steps.append, max_controls=3)
    planned = [step for step in steps if not step.fallback]
    assert planned and all(step.budget_cut for step in planned)  # 10 iterations of 0.03 s never fit 0.05 s
    assert report.budget_cuts >= len(planned)
    assert report.optimizer_iterations <= 2 * report.budget_cuts  # each search stopped after 1-2 iterations
