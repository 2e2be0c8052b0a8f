"""The MPC loop: success, every failure mode, cancel, errors, and the ISRR scene."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from test_planning_fixtures import (
    GluedPropagator,
    PropagatorWorld,
    glued_model,
    glued_world,
    initial_state,
    tiny_scene,
)

from parapush.planning import (
    CostFunction,
    MpcLoop,
    MpcOutcome,
    MpcSettings,
    OptimizerSettings,
    PropagatorRollout,
    StochasticTrajectoryOptimizer,
    load_planner_config,
)
from parapush.scene import Obstacle, load_scene

GOAL_ONLY = {"goal_distance": {"weight": 1.0}, "smoothness": {"weight": 0.1}}


def make_loop(scene, costs=GOAL_ONLY, *, iterations=5, seed=0, model=None, **mpc):
    optimizer = StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=iterations, seed=seed))
    cost = CostFunction.from_config(scene, costs)
    return MpcLoop(scene, optimizer, model or glued_model(scene), cost, MpcSettings(**mpc))


def test_reaches_the_goal_and_reports_every_step() -> None:
    scene = tiny_scene(target_position=(-0.15, 0.0), goal=(0.15, 0.05))
    world = glued_world(scene)
    steps = []
    result = make_loop(scene).run(world, callback=steps.append)
    assert result.outcome is MpcOutcome.SUCCESS and result.success and result.failure_reason == ""
    assert 3 <= result.controls_executed <= 12
    assert scene.goal.contains(*scene.layout.poses(result.final_state)[0, :2])
    assert result.final_distance <= scene.goal.radius
    # bookkeeping
    assert len(steps) == result.controls_executed == len(world.executed) == len(result.executed_controls)
    assert result.states.shape == (result.controls_executed + 1, scene.layout.dimension)
    for index, (step, (control, duration)) in enumerate(zip(steps, world.executed, strict=True)):
        assert step.step == index and duration == 1.0
        np.testing.assert_array_equal(step.control, control)
        np.testing.assert_array_equal(step.planned_controls[0], control)
        np.testing.assert_array_equal(step.state, result.states[index])
        assert step.predicted_trajectory.shape == (5, scene.layout.dimension)
        assert step.planning_time > 0.0 and step.optimizer_iterations == 5
        assert np.linalg.norm(control) <= 0.1 + 1e-12
    assert steps[0].distance_to_goal == pytest.approx(np.hypot(0.3, 0.05))
    assert result.optimizer_iterations == 5 * result.controls_executed
    assert 0.0 < result.planning_time <= result.total_time
    assert result.execution_time <= result.total_time
    assert world.stops == 1


def test_warm_start_is_the_shifted_previous_plan() -> None:
    scene = tiny_scene()
    seen = []

    class Recording:
        def __init__(self, model):
            self.model = model

        def predict(self, initial_state, controls, durations):
            seen.append(np.array(controls[0]))  # row 0: the current candidate
            return self.model.predict(initial_state, controls, durations)

    loop = make_loop(scene, iterations=1, model=Recording(glued_model(scene)))
    steps = []
    loop.run(glued_world(scene), callback=steps.append, max_controls=3)
    # with one iteration, each plan's candidate is the previous plan shifted by one control
    for previous, candidate in zip(steps[:-1], seen[1:], strict=False):
        np.testing.assert_allclose(candidate[:3], previous.planned_controls[1:])
        np.testing.assert_allclose(candidate[3], previous.planned_controls[3])


class ProposalSpy:
    """The stochastic optimizer, recording each call's start state and proposals."""

    def __init__(self, settings: OptimizerSettings) -> None:
        self.inner = StochasticTrajectoryOptimizer(settings)
        self.settings = settings
        self.calls: list[tuple[np.ndarray, np.ndarray | None]] = []

    def optimize(self, state, controls, model, cost, *, proposals=None):
        self.calls.append((np.array(state), None if proposals is None else np.array(proposals)))
        return self.inner.optimize(state, controls, model, cost, proposals=proposals)


@pytest.mark.parametrize("replan_proposal", [True, False])
def test_every_replan_is_offered_the_straight_line_push_from_its_state(replan_proposal) -> None:
    scene = tiny_scene(target_position=(-0.15, 0.0), goal=(0.15, 0.05))
    spy = ProposalSpy(OptimizerSettings(max_iterations=2, seed=0))
    settings = MpcSettings(replan_proposal=replan_proposal)
    loop = MpcLoop(scene, spy, glued_model(scene), CostFunction.from_config(scene, GOAL_ONLY), settings)
    loop.run(glued_world(scene), max_controls=4)
    assert len(spy.calls) == 4
    assert spy.calls[0][1] is None  # the first plan starts from the straight line itself
    for state, proposals in spy.calls[1:]:
        if replan_proposal:
            np.testing.assert_array_equal(proposals, settings.straight_line(scene, state, spy.settings)[None])
        else:
            assert proposals is None
    with pytest.raises(ValueError, match="replan_proposal: expected true or false"):
        MpcSettings(replan_proposal="yes")


def test_a_plan_starts_from_the_observation_with_its_overlaps_resolved() -> None:
    """A pusher sunk 1 cm into the target (a soft contact under load, as the simulated world shows
    it) is planned from as the rigid state: the target moved out of the pusher, the rest unchanged."""
    scene = tiny_scene(target_position=(-0.15, 0.0), goal=(0.15, 0.05))
    state = initial_state(scene)
    state[0] += 0.011  # 1 mm behind the target before: now 1 cm inside it
    spy = ProposalSpy(OptimizerSettings(max_iterations=1, seed=0))
    loop = MpcLoop(scene, spy, glued_model(scene), CostFunction.from_config(scene, GOAL_ONLY), MpcSettings())
    result = loop.run(glued_world(scene, state), max_controls=1)
    planned_from = spy.calls[0][0]
    assert loop.projector.penetration(state[None])[0] == pytest.approx(0.01, abs=1e-9)
    assert loop.projector.penetration(planned_from[None])[0] <= 1e-9
    np.testing.assert_array_equal(planned_from[scene.layout.pusher_position], state[scene.layout.pusher_position])
    np.testing.assert_array_equal(result.states[0], state)  # the report keeps what was observed


def test_obstacle_hit_when_the_cost_ignores_the_obstacle() -> None:
    post = Obstacle(name="post", radius=0.0375, pose=(0.0, 0.0, 0.0))
    scene = tiny_scene(target_position=(-0.15, 0.0), goal=(0.15, 0.0), obstacles=(post,))
    world = glued_world(scene)
    result = make_loop(scene).run(world)
    assert result.outcome is MpcOutcome.OBSTACLE_HIT
    assert "hit obstacle 'post'" in result.failure_reason
    assert world.stops == 1


def test_object_off_table_when_the_goal_lies_beyond_the_edge() -> None:
    scene = tiny_scene(target_position=(0.25, 0.0), goal=(0.6, 0.0))
    result = make_loop(scene).run(glued_world(scene))
    assert result.outcome is MpcOutcome.OBJECT_OFF_TABLE
    assert "object 'target' left the table" in result.failure_reason


class ScriptedWorld:
    """Returns scripted states after each control, whatever the control."""

    def __init__(self, states):
        self.states = [np.array(state) for state in states]
        self.index = 0
        self.stops = 0

    def observe(self):
        return self.states[self.index].copy()

    def execute(self, control, duration):
        self.index += 1

    def stop(self):
        self.stops += 1


def test_non_target_object_in_goal_ends_the_task() -> None:
    scene = tiny_scene(goal=(0.15, 0.05), others=((0.0, 0.3),))
    start = initial_state(scene)
    pushed = start.copy()
    other = scene.layout.object_pose(1)
    pushed[other.start : other.start + 2] = (0.16, 0.05)
    world = ScriptedWorld([start, start, pushed])
    result = make_loop(scene).run(world)
    assert result.outcome is MpcOutcome.OBJECT_IN_GOAL and result.controls_executed == 2
    assert "'other_0' entered the goal region" in result.failure_reason


def test_max_controls_when_the_world_does_not_move() -> None:
    scene = tiny_scene()
    world = ScriptedWorld([initial_state(scene)] * 10)
    result = make_loop(scene, max_controls=20).run(world, max_controls=4)
    assert result.outcome is MpcOutcome.MAX_CONTROLS and result.controls_executed == 4
    assert "after 4 controls" in result.failure_reason
    assert world.stops == 1
    default = make_loop(scene, max_controls=3).run(ScriptedWorld([initial_state(scene)] * 10))
    assert default.outcome is MpcOutcome.MAX_CONTROLS and default.controls_executed == 3


def test_cancel_from_the_callback_stops_before_executing() -> None:
    scene = tiny_scene()
    world = glued_world(scene)
    loop = make_loop(scene)

    def cancel_at_second_step(step):
        if step.step == 1:
            loop.cancel()

    result = loop.run(world, callback=cancel_at_second_step)
    assert result.outcome is MpcOutcome.CANCELED and result.controls_executed == 1
    assert len(world.executed) == 1 and world.stops == 1
    # the next run starts afresh
    assert loop.run(glued_world(scene), max_controls=1).outcome is MpcOutcome.MAX_CONTROLS


def test_cancel_from_another_thread_and_should_cancel() -> None:
    scene = tiny_scene()

    class SlowWorld(PropagatorWorld):
        def execute(self, control, duration):
            time.sleep(0.05)
            super().execute(control, duration)

    world = SlowWorld(GluedPropagator(scene.layout), initial_state(scene))
    loop = make_loop(scene, iterations=1)
    timer = threading.Timer(0.12, loop.cancel)
    timer.start()
    try:
        result = loop.run(world)
    finally:
        timer.cancel()
    assert result.outcome is MpcOutcome.CANCELED and 1 <= result.controls_executed <= 4
    assert world.stops == 1

    requests = iter([False, False, True])
    polled = make_loop(scene).run(glued_world(scene), should_cancel=lambda: next(requests, True))
    assert polled.outcome is MpcOutcome.CANCELED and polled.controls_executed == 1


def test_errors_become_error_outcomes_and_stop_the_world() -> None:
    scene = tiny_scene()

    class Broken:
        def predict(self, initial_state, controls, durations):
            raise RuntimeError("prediction service unavailable")

    world = glued_world(scene)
    result = make_loop(scene, model=Broken()).run(world)
    assert result.outcome is MpcOutcome.ERROR
    assert result.failure_reason == "RuntimeError: prediction service unavailable"
    assert world.stops == 1 and result.controls_executed == 0

    class Diverging:
        def predict(self, initial_state, controls, durations):
            return np.full((controls.shape[0], controls.shape[1] + 1, initial_state.shape[0]), np.nan)

    diverged = make_loop(scene, model=Diverging()).run(glued_world(scene))
    assert (
        diverged.outcome is MpcOutcome.ERROR
        and "AllPredictionsFailedError: every predicted trajectory" in diverged.failure_reason
    )

    wrong = ScriptedWorld([np.zeros(3)])
    observed = make_loop(scene).run(wrong)
    assert (
        observed.outcome is MpcOutcome.ERROR
        and "world.observe: returned shape (3,)" in observed.failure_reason
    )

    class StopFails(ScriptedWorld):
        def stop(self):
            raise OSError("arm driver gone")

    stopped = make_loop(scene).run(StopFails([initial_state(scene)] * 3), max_controls=1)
    assert stopped.outcome is MpcOutcome.ERROR
    assert stopped.failure_reason.endswith("world.stop failed: OSError: arm driver gone")


def test_already_in_the_goal_succeeds_without_moving() -> None:
    scene = tiny_scene(target_position=(0.15, 0.05), goal=(0.15, 0.05))
    world = glued_world(scene)
    result = make_loop(scene).run(world)
    assert result.outcome is MpcOutcome.SUCCESS and result.controls_executed == 0 and not world.executed


def test_loop_validation() -> None:
    scene = tiny_scene()
    fast = StochasticTrajectoryOptimizer(OptimizerSettings(max_speed=0.2))
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    with pytest.raises(
        ValueError, match="optimizer.settings.max_speed: 0.2 m/s exceeds the scene's pusher.max_speed"
    ):
        MpcLoop(scene, fast, glued_model(scene), cost, MpcSettings())
    with pytest.raises(ValueError, match="max_controls: expected an integer >= 1"):
        MpcSettings(max_controls=0)
    with pytest.raises(ValueError, match=r"warm_start_fill: expected one of \['repeat', 'zero'\]"):
        MpcSettings(warm_start_fill="extend")
    loop = make_loop(scene)
    with pytest.raises(TypeError, match="world: expected an object with `execute"):
        loop.run(type("ObserveOnly", (), {"observe": lambda self: None})())
    with pytest.raises(ValueError, match="max_controls: expected an integer >= 1"):
        loop.run(glued_world(scene), max_controls=0)


def test_isrr_scene_with_the_analytical_coarse_model_as_world_and_model() -> None:
    """The shipped planner configuration, the coarse model as both world and predictive
    model: the slider goes around the central obstacle into the goal (seeded)."""
    from parapush.physics.coarse_analytical import AnalyticalCoarseModel

    scene = load_scene("config/scenes/isrr_obstacle.yaml")
    config = load_planner_config("config/planner.yaml")
    optimizer = StochasticTrajectoryOptimizer(config.optimizer)
    model = PropagatorRollout(AnalyticalCoarseModel(scene))
    loop = MpcLoop(scene, optimizer, model, config.cost_function(scene), config.mpc)
    world = PropagatorWorld(AnalyticalCoarseModel(scene), initial_state(scene))
    started = time.perf_counter()
    result = loop.run(world)
    assert time.perf_counter() - started < 10.0
    assert result.outcome is MpcOutcome.SUCCESS, result.failure_reason
    assert result.controls_executed < 20
    # the straight line from the slider to the goal crosses the obstacle: the slider went around
    slider = scene.layout.poses(result.states)[:, 0, :2]
    assert np.abs(slider[np.argmin(np.abs(slider[:, 0])), 1]) > 0.0375 + 0.0512
