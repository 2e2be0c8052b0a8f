"""The pipelined MPC loop and the virtual-clock world, on the glued toy system with a fake clock.

The planner is wrapped so that each plan "takes" a chosen time on the fake clock: the tests
are deterministic and contain no wall-time assertions.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from test_planning_fixtures import GluedPropagator, glued_model, initial_state, tiny_scene

from parapush.planning import (
    AllPredictionsFailedError,
    CostFunction,
    MpcOutcome,
    MpcSettings,
    OptimizationResult,
    OptimizerSettings,
    StochasticTrajectoryOptimizer,
)
from parapush.planning.async_world import BlockingWorld, PropagatorPhysics, VirtualClockWorld
from parapush.planning.pipelined_mpc import PipelinedMpcLoop, PipelineSettings
from parapush.scene import Obstacle

GOAL_ONLY = {"goal_distance": {"weight": 1.0}, "smoothness": {"weight": 0.1}}


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class SlowPlanner:
    """The stochastic optimizer, taking ``durations[k]`` (default ``default``) of fake-clock time
    for its k-th plan; records the world time at which each plan was ready."""

    def __init__(self, clock: FakeClock, world_time, default: float, durations: dict[int, float] | None = None):
        self.inner = StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=3, seed=0))
        self.settings = self.inner.settings
        self.clock = clock
        self.world_time = world_time
        self.default = default
        self.durations = durations or {}
        self.ready_at: list[float] = []
        self.plans: list[OptimizationResult] = []

    def optimize(self, state, controls, model, cost, *, proposals=None):
        result = self.inner.optimize(state, controls, model, cost, proposals=proposals)
        self.clock.now += self.durations.get(len(self.plans), self.default)
        self.ready_at.append(self.world_time())
        self.plans.append(result)
        return result


def setup(scene, *, plan_time, durations=None, world_propagator=None, pipeline=None, max_controls=20):
    clock = FakeClock()
    propagator = world_propagator or GluedPropagator(scene.layout, scene.target_index)
    world = VirtualClockWorld(PropagatorPhysics(propagator, initial_state(scene)), clock=clock)
    planner = SlowPlanner(clock, world.time, plan_time, durations)
    loop = PipelinedMpcLoop(
        scene,
        planner,
        glued_model(scene),
        CostFunction.from_config(scene, GOAL_ONLY),
        MpcSettings(max_controls=max_controls),
        pipeline or PipelineSettings(),
    )
    return loop, world, planner


def test_the_next_control_is_planned_before_the_current_one_ends_and_follows_without_a_gap() -> None:
    scene = tiny_scene()
    loop, world, planner = setup(scene, plan_time=0.3)
    result = loop.run(world)
    assert result.outcome is MpcOutcome.SUCCESS and result.controls_executed >= 3
    steps = result.steps
    duration = planner.settings.control_duration
    # plan k+1 (made while control k runs) was ready before control k ended
    for index, step in enumerate(steps[:-1]):
        assert planner.ready_at[index + 1] < step.start_time + duration
        assert steps[index + 1].start_time == pytest.approx(step.start_time + duration)
        assert steps[index + 1].waiting_time == 0.0
    # only the first plan made the pusher wait; the task took the motion plus that plan
    assert steps[0].waiting_time == pytest.approx(0.3)
    assert result.waiting_time == pytest.approx(0.3)
    assert result.execution_time == pytest.approx(duration * len(steps))
    assert result.task_time == pytest.approx(0.3 + duration * len(steps))
    assert result.fallbacks == 0 and result.replans_from_observation == 0
    assert all(not step.fallback for step in steps)
    assert len(result.replan_times) == len(steps)  # one plan per control (wall time, not asserted)


def test_a_late_plan_runs_the_previous_plans_next_control_for_one_period_when_it_is_safe() -> None:
    scene = tiny_scene()
    # plan 0: the first (blocking); plan 1 (during control 0) is late: 1.5 s > 1 s
    loop, world, planner = setup(scene, plan_time=0.2, durations={1: 1.5})
    result = loop.run(world)
    steps = result.steps
    assert result.fallbacks == 1
    assert steps[1].fallback and not steps[0].fallback
    np.testing.assert_allclose(steps[1].control, planner.plans[0].controls[1])  # P_0's second control
    assert steps[1].start_time == pytest.approx(steps[0].start_time + 1.0)
    # the plan made while the fallback ran was on time: no standing still at all after the first plan
    assert [step.waiting_time for step in steps[1:]] == [0.0] * (len(steps) - 1)
    assert steps[2].start_time == pytest.approx(steps[0].start_time + 2.0)
    assert result.outcome is MpcOutcome.SUCCESS


def test_a_late_plan_stops_the_pusher_when_the_fallback_is_not_predicted_safe() -> None:
    scene = tiny_scene()
    # a clearance no state can keep (the table is 0.8 m long): every fallback is unsafe
    loop, world, _planner = setup(
        scene, plan_time=0.2, durations={1: 1.5}, pipeline=PipelineSettings(fallback_clearance=0.5)
    )
    result = loop.run(world)
    steps = result.steps
    assert result.fallbacks == 0 and not any(step.fallback for step in steps)
    # the pusher stopped at the end of control 0 and waited 0.5 s for the late plan
    assert steps[1].waiting_time == pytest.approx(0.5)
    assert steps[1].start_time == pytest.approx(steps[0].start_time + 1.5)
    assert result.execution_time == pytest.approx(1.0 * len(steps))


def test_fallback_for_refuses_a_plan_that_is_predicted_to_hit_an_obstacle() -> None:
    obstacle = Obstacle(name="post", pose=(0.0, 0.0, 0.0), radius=0.03)
    scene = tiny_scene(target_position=(-0.15, 0.2), obstacles=(obstacle,))
    loop, _world, _planner = setup(scene, plan_time=0.1)
    state = initial_state(scene)
    controls = np.array([[0.02, 0.0], [0.03, 0.0], [0.0, 0.0], [0.0, 0.0]])
    trajectory = glued_model(scene).predict(state, controls[None], np.ones(4))[0]

    def plan(trajectory):
        return OptimizationResult(controls, 0.0, trajectory, 1, np.zeros(1), 0.0, 0, "iterations")

    np.testing.assert_allclose(loop.fallback_for(plan(trajectory)), controls[1])
    hitting = trajectory.copy()
    layout = scene.layout
    hitting[2, layout.object_pose(0)] = (0.0, 0.05, 0.0)  # target 2 cm into the post after P[1]
    assert loop.fallback_for(plan(hitting)) is None


def test_an_observation_that_disagrees_with_the_prediction_makes_the_loop_replan_from_it() -> None:
    scene = tiny_scene()

    class Drifting(GluedPropagator):
        """The world: while the pusher moves, the target drifts 2 cm per second sideways (the model
        does not know)."""

        def propagate(self, states, controls, durations):
            after = super().propagate(states, controls, durations)
            moving = np.linalg.norm(controls, axis=1) > 0.0
            after[:, self.layout.object_pose(0).start + 1] += 0.02 * durations * moving
            return after

    loop, world, _planner = setup(scene, plan_time=0.2, world_propagator=Drifting(scene.layout), max_controls=6)
    result = loop.run(world)
    checked = [step for step in result.steps[1:] if not step.fallback]
    assert checked and all(step.replanned_from_observation for step in checked)
    assert all(step.prediction_error == pytest.approx(0.02, abs=1e-6) for step in checked)
    assert result.replans_from_observation == len(checked)
    # re-planning from the observation makes the pusher wait for that plan
    assert all(step.waiting_time == pytest.approx(0.2) for step in checked)
    agreeing_loop, agreeing_world, _ = setup(scene, plan_time=0.2)
    assert agreeing_loop.run(agreeing_world).replans_from_observation == 0


class DivergingEndStates:
    """The glued model, whose one-control predictions (the loop's ``predict_one``) diverge (NaN)
    on the calls listed in ``diverging``; its plans' predictions (many sequences) stay finite."""

    def __init__(self, scene, diverging: set[int]) -> None:
        self.inner = glued_model(scene)
        self.diverging = diverging
        self.end_state_calls = 0

    def predict(self, initial_state, controls, durations):
        trajectories = self.inner.predict(initial_state, controls, durations)
        if controls.shape[:2] == (1, 1):
            self.end_state_calls += 1
            if self.end_state_calls - 1 in self.diverging:
                trajectories[:, 1:] = np.nan
        return trajectories


def test_a_diverged_end_state_prediction_takes_the_plans_own_and_the_goal_goes_on() -> None:
    scene = tiny_scene()
    reference_loop, reference_world, _ = setup(scene, plan_time=0.2)
    reference = reference_loop.run(reference_world)
    loop, world, _planner = setup(scene, plan_time=0.2)
    loop.model = DivergingEndStates(scene, {0, 2})
    result = loop.run(world)
    assert result.outcome is MpcOutcome.SUCCESS and result.diverged_predictions == 2
    # the glued plan predicts what the world does: the same controls as without the divergences
    np.testing.assert_allclose([step.control for step in result.steps], [step.control for step in reference.steps])
    assert reference.diverged_predictions == 0 and result.replans_from_observation == 0


def test_a_diverged_end_state_prediction_without_a_planned_one_ends_the_goal_with_an_error() -> None:
    scene = tiny_scene()
    loop, world, planner = setup(scene, plan_time=0.2)
    loop.model = DivergingEndStates(scene, {0})
    optimize = planner.optimize

    def optimize_without_prediction(state, controls, model, cost, *, proposals=None):
        result = optimize(state, controls, model, cost, proposals=proposals)
        return dataclasses.replace(result, trajectory=np.full_like(result.trajectory, np.nan))

    planner.optimize = optimize_without_prediction
    result = loop.run(world)
    assert result.outcome is MpcOutcome.ERROR and result.controls_executed == 1
    assert "could not predict control" in result.failure_reason and "nor did its plan" in result.failure_reason


def failing_plans(planner: SlowPlanner, failing: set[int]) -> None:
    """Make the planner's plans numbered in ``failing`` (0: the first) fail as the multi-fidelity
    planner does when no corrected elite could be predicted."""
    optimize, calls = planner.optimize, itertools.count()

    def optimize_or_fail(state, controls, model, cost, *, proposals=None):
        if next(calls) in failing:
            planner.clock.now += planner.default
            raise AllPredictionsFailedError("no corrected elite could be predicted (8 tried, 8 unstable)")
        return optimize(state, controls, model, cost, proposals=proposals)

    planner.optimize = optimize_or_fail


def test_a_plan_that_cannot_be_predicted_backs_the_pusher_off_and_the_goal_goes_on() -> None:
    scene = tiny_scene()
    loop, world, planner = setup(scene, plan_time=0.2)
    # plan 1 (for the predicted end of control 0) fails; so does plan 2, from the observation
    failing_plans(planner, {1, 2})
    result = loop.run(world)
    assert result.outcome is MpcOutcome.SUCCESS and result.back_offs == 1
    backed_off = result.steps[1]
    assert backed_off.back_off and backed_off.replanned_from_observation and math.isnan(backed_off.cost)
    # straight away from the target, whose -x side the pusher is at, by back_off_distance in one control
    np.testing.assert_allclose(backed_off.control, [-PipelineSettings().back_off_distance, 0.0], atol=1e-9)
    assert not any(step.back_off for step in result.steps[:1] + result.steps[2:])


def test_a_back_off_planned_for_the_prediction_is_replaced_by_a_plan_from_the_observation() -> None:
    scene = tiny_scene()
    loop, world, planner = setup(scene, plan_time=0.2)
    failing_plans(planner, {1})  # only the plan for the predicted end of control 0
    result = loop.run(world)
    assert result.outcome is MpcOutcome.SUCCESS and result.back_offs == 0
    assert result.steps[1].replanned_from_observation and result.replans_from_observation == 1
    assert result.steps[1].control[0] > 0.0  # towards the goal, not backing off


def test_max_controls_ends_the_task_after_the_last_control() -> None:
    scene = tiny_scene(goal=(0.3, 0.3))
    loop, world, _planner = setup(scene, plan_time=0.1, max_controls=2)
    result = loop.run(world)
    assert result.outcome is MpcOutcome.MAX_CONTROLS and result.controls_executed == 2
    assert result.execution_time == pytest.approx(2.0)


def test_pipeline_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="replan_distance"):
        PipelineSettings(replan_distance=-0.1)
    with pytest.raises(ValueError, match="fallback_clearance"):
        PipelineSettings(fallback_clearance=math.nan)
    with pytest.raises(ValueError, match="back_off_distance"):
        PipelineSettings(back_off_distance=0.0)


# -- the virtual-clock world ---------------------------------------------------------------------
def test_virtual_clock_world_runs_a_fallback_only_without_a_new_control() -> None:
    scene = tiny_scene()
    clock = FakeClock()
    world = VirtualClockWorld(PropagatorPhysics(GluedPropagator(scene.layout), initial_state(scene)), clock=clock)
    start = initial_state(scene)[:2]
    begin = world.start(np.array([0.02, 0.0]), 1.0, fallback=np.array([0.0, 0.01]))
    world.wait_until(begin + 5.0)  # control, fallback, then standing still
    np.testing.assert_allclose(world.observe()[:2], start + [0.02, 0.01])
    assert world.motion_time == pytest.approx(2.0)
    begin = world.start(np.array([0.01, 0.0]), 1.0, fallback=np.array([0.0, 0.05]))
    clock.now += 0.5  # the caller computes for 0.5 s of clock time
    world.start(np.array([-0.01, 0.0]), 1.0)  # replaces the control and cancels its fallback
    world.wait_until(world.time() + 3.0)
    np.testing.assert_allclose(world.observe()[:2], start + [0.02 + 0.005 - 0.01, 0.01])
    assert world.motion_time == pytest.approx(3.5)


def test_blocking_world_executes_for_the_duration() -> None:
    scene = tiny_scene()
    world = VirtualClockWorld(PropagatorPhysics(GluedPropagator(scene.layout), initial_state(scene)), clock=FakeClock())
    blocking = BlockingWorld(world)
    before = world.time()
    blocking.execute(np.array([0.03, 0.0]), 2.0)
    assert world.time() == pytest.approx(before + 2.0)
    np.testing.assert_allclose(blocking.observe()[:2], initial_state(scene)[:2] + [0.06, 0.0])
