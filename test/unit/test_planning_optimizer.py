"""The stochastic trajectory optimizer on the tiny glued system, where the optimum is known."""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_planning_fixtures import glued_model, initial_state, tiny_scene

from parapush.planning import (
    AllPredictionsFailedError,
    OptimizerSettings,
    StochasticTrajectoryOptimizer,
)
from parapush.planning.costs import CostFunction
from parapush.planning.optimizer import clip_to_speed, sample_weights

GOAL = np.array([0.15, 0.05])
START = np.array([-0.15, 0.0])
BAD_START = np.tile([-0.1, 0.0], (4, 1))  # pushes away from the goal at full speed


def quadratic_problem(goal_weight=1.0, smoothness_weight=1.0):
    scene = tiny_scene(target_position=tuple(START), goal=tuple(GOAL))
    cost = CostFunction.from_config(
        scene, {"goal_distance": {"weight": goal_weight}, "smoothness": {"weight": smoothness_weight}}
    ).with_previous_control(np.zeros(2))
    return scene, cost


def known_optimum(goal_weight=1.0, smoothness_weight=1.0, horizon=4, duration=1.0):
    """argmin_u  w ||p0 + dt sum u - g||^2 + w_u sum_t ||u_t - u_{t-1}||^2 with u_{-1} = 0 (least squares)."""
    differences = np.eye(horizon) - np.eye(horizon, k=-1)
    matrix = np.vstack(
        [np.full((1, horizon), duration * np.sqrt(goal_weight)), np.sqrt(smoothness_weight) * differences]
    )
    columns = []
    for axis in range(2):
        rhs = np.concatenate([[np.sqrt(goal_weight) * (GOAL[axis] - START[axis])], np.zeros(horizon)])
        columns.append(np.linalg.lstsq(matrix, rhs, rcond=None)[0])
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_the_known_optimum_from_a_bad_start_with_the_isrr_settings(seed) -> None:
    scene, cost = quadratic_problem()
    optimum = known_optimum()
    model = glued_model(scene)
    optimum_cost = cost.evaluate(
        model.predict(initial_state(scene), optimum[None], np.ones(4)), optimum[None]
    )[0]
    optimizer = StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=100, seed=seed))
    result = optimizer.optimize(initial_state(scene), BAD_START, model, cost)
    start_cost = result.cost_history[0]
    assert np.abs(BAD_START - optimum).max() > 0.15
    # precision is of the order of the exploration standard deviation, 0.01 m/s
    assert np.abs(result.controls - optimum).max() < 0.015
    assert result.cost < optimum_cost + 0.3 * optimum_cost
    assert start_cost > 100 * result.cost
    assert result.iterations == 100 and result.stop_reason == "iterations"
    assert np.all(np.diff(result.cost_history) <= 0.0)
    np.testing.assert_allclose(
        result.trajectory, model.predict(initial_state(scene), result.controls[None], np.ones(4))[0]
    )
    assert result.cost == pytest.approx(cost.evaluate(result.trajectory[None], result.controls[None])[0])
    assert set(result.cost_terms) == {"goal_distance", "smoothness"}


def test_the_cost_weighted_update_speeds_up_convergence() -> None:
    """Keeping the best sample alone (a (1 + S) random search) also converges, but slower:
    after 30 iterations it is still ~0.07 m/s away (measured with the update removed or
    reversed), the weighted update is within ~0.01 m/s."""
    scene, cost = quadratic_problem()
    optimum = known_optimum()
    errors = []
    for seed in range(5):
        optimizer = StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=30, seed=seed))
        result = optimizer.optimize(initial_state(scene), BAD_START, glued_model(scene), cost)
        errors.append(np.abs(result.controls - optimum).max())
    assert np.median(errors) < 0.02


def test_precision_follows_the_exploration_variance() -> None:
    scene, cost = quadratic_problem(goal_weight=10.0)
    optimum = known_optimum(goal_weight=10.0)
    settings = OptimizerSettings(max_iterations=300, exploration_variance=1e-6, step_size=2.0, seed=3)
    result = StochasticTrajectoryOptimizer(settings).optimize(
        initial_state(scene), BAD_START, glued_model(scene), cost
    )
    assert np.abs(result.controls - optimum).max() < 2e-3


class SpyModel:
    """Wraps a model, recording each predict call's controls."""

    def __init__(self, model, delay=0.0):
        self.model = model
        self.delay = delay
        self.calls: list[np.ndarray] = []

    def predict(self, initial_state, controls, durations):
        self.calls.append(np.array(controls))
        if self.delay:
            time.sleep(self.delay)
        return self.model.predict(initial_state, controls, durations)


def test_one_batched_predict_per_iteration_within_the_speed_limit() -> None:
    scene, cost = quadratic_problem()
    spy = SpyModel(glued_model(scene))
    settings = OptimizerSettings(samples=7, max_iterations=5, max_speed=0.06, exploration_variance=1e-2)
    result = StochasticTrajectoryOptimizer(settings).optimize(initial_state(scene), BAD_START, spy, cost)
    assert len(spy.calls) == 5 == result.iterations
    for controls in spy.calls:
        assert controls.shape == (8, 4, 2)  # S noisy sequences + the current one
        assert np.linalg.norm(controls, axis=-1).max() <= 0.06 + 1e-12
    # the first row of the first batch is the (clipped) initial candidate
    np.testing.assert_allclose(spy.calls[0][0], np.tile([-0.06, 0.0], (4, 1)))
    assert np.linalg.norm(result.controls, axis=-1).max() <= 0.06 + 1e-12


class UnstableModel:
    """NaN rows for every sequence whose first control points towards +y."""

    def __init__(self, model):
        self.model = model

    def predict(self, initial_state, controls, durations):
        trajectories = self.model.predict(initial_state, controls, durations)
        trajectories[controls[:, 0, 1] > 0.0, 2:] = np.nan
        return trajectories


def test_non_finite_predictions_get_infinite_cost_and_are_counted() -> None:
    scene, cost = quadratic_problem()
    settings = OptimizerSettings(max_iterations=30, seed=4)
    result = StochasticTrajectoryOptimizer(settings).optimize(
        initial_state(scene), np.tile([0.05, 0.0], (4, 1)), UnstableModel(glued_model(scene)), cost
    )
    assert result.unstable_samples > 0
    assert result.controls[0, 1] <= 0.0  # never one of the unstable sequences
    assert np.all(np.isfinite(result.trajectory)) and np.isfinite(result.cost)


def test_all_predictions_non_finite_raises() -> None:
    class Diverging:
        def predict(self, initial_state, controls, durations):
            return np.full((controls.shape[0], controls.shape[1] + 1, initial_state.shape[0]), np.nan)

    scene, cost = quadratic_problem()
    optimizer = StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=3))
    with pytest.raises(AllPredictionsFailedError, match=r"every predicted trajectory \(63 of them, 3 iteration"):
        optimizer.optimize(initial_state(scene), BAD_START, Diverging(), cost)


def test_wrong_prediction_shape_is_an_error_naming_the_model() -> None:
    class Short:
        def predict(self, initial_state, controls, durations):
            return np.zeros((controls.shape[0], controls.shape[1], initial_state.shape[0]))

    scene, cost = quadratic_problem()
    with pytest.raises(
        ValueError, match=r"model: predicted trajectories of shape \(21, 4, 10\), expected \(21, 5, 10\)"
    ):
        StochasticTrajectoryOptimizer(OptimizerSettings()).optimize(
            initial_state(scene), BAD_START, Short(), cost
        )


def test_time_budget_stops_before_overrunning() -> None:
    scene, cost = quadratic_problem()
    spy = SpyModel(glued_model(scene), delay=0.02)
    settings = OptimizerSettings(max_iterations=1000, time_budget=0.15)
    result = StochasticTrajectoryOptimizer(settings).optimize(initial_state(scene), BAD_START, spy, cost)
    assert result.stop_reason == "time_budget"
    assert 2 <= result.iterations < 10
    assert result.time < 0.15 + 0.05


def test_same_seed_same_result_and_generator_injection() -> None:
    scene, cost = quadratic_problem()
    settings = OptimizerSettings(max_iterations=8, seed=11)
    first = StochasticTrajectoryOptimizer(settings).optimize(
        initial_state(scene), BAD_START, glued_model(scene), cost
    )
    second = StochasticTrajectoryOptimizer(settings).optimize(
        initial_state(scene), BAD_START, glued_model(scene), cost
    )
    np.testing.assert_array_equal(first.controls, second.controls)
    injected = StochasticTrajectoryOptimizer(settings, rng=np.random.default_rng(11)).optimize(
        initial_state(scene), BAD_START, glued_model(scene), cost
    )
    np.testing.assert_array_equal(first.controls, injected.controls)
    other = StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=8, seed=12)).optimize(
        initial_state(scene), BAD_START, glued_model(scene), cost
    )
    assert not np.array_equal(first.controls, other.controls)


def test_weights_and_clipping() -> None:
    weights = sample_weights(np.array([1.0, 2.0, np.inf, 3.0]), sensitivity=10.0)
    expected = np.exp(-10.0 * np.array([0.0, 0.5, 1.0]))
    np.testing.assert_allclose(weights[[0, 1, 3]], expected / expected.sum())
    assert weights[2] == 0.0
    np.testing.assert_array_equal(sample_weights(np.array([2.0, 2.0]), 10.0), [0.5, 0.5])
    np.testing.assert_array_equal(sample_weights(np.array([np.inf, np.inf]), 10.0), [0.0, 0.0])
    clipped = clip_to_speed(np.array([[0.3, 0.4], [0.03, 0.04]]), 0.1)
    np.testing.assert_allclose(clipped, [[0.06, 0.08], [0.03, 0.04]])


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("samples", 0, "samples: expected an integer >= 1"),
        ("horizon", 2.5, "horizon: expected an integer >= 1"),
        ("exploration_variance", -1e-4, "exploration_variance: expected a finite number > 0"),
        ("max_speed", float("nan"), "max_speed: expected a finite number > 0"),
        ("time_budget", 0.0, "time_budget: expected a finite number > 0"),
        ("sensitivity", -1.0, "sensitivity: expected a finite number >= 0"),
        ("seed", 1.5, "seed: expected an integer >= 0"),
        ("seed", -1, "seed: expected an integer >= 0"),
    ],
)
def test_settings_validation_names_the_field(field, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        OptimizerSettings(**{field: value})


def test_optimize_argument_validation() -> None:
    scene, cost = quadratic_problem()
    optimizer = StochasticTrajectoryOptimizer(OptimizerSettings())
    with pytest.raises(ValueError, match=r"initial_controls: expected shape \(4, 2\)"):
        optimizer.optimize(initial_state(scene), np.zeros((3, 2)), glued_model(scene), cost)
    with pytest.raises(ValueError, match="initial_state: expected a finite vector"):
        optimizer.optimize(np.full(10, np.nan), BAD_START, glued_model(scene), cost)
    with pytest.raises(TypeError, match="settings: expected OptimizerSettings"):
        StochasticTrajectoryOptimizer({"samples": 20})


def test_a_cheaper_proposal_becomes_the_start_and_a_worse_one_changes_nothing() -> None:
    scene, cost = quadratic_problem()
    settings = OptimizerSettings(max_iterations=6, seed=3)
    plain = StochasticTrajectoryOptimizer(settings).optimize(initial_state(scene), BAD_START, glued_model(scene), cost)
    # a proposal worse than the start: the search is the plain one, sample for sample
    worse = StochasticTrajectoryOptimizer(settings).optimize(
        initial_state(scene), BAD_START, glued_model(scene), cost, proposals=np.tile([-0.1, 0.05], (1, 4, 1))
    )
    np.testing.assert_array_equal(worse.controls, plain.controls)
    np.testing.assert_array_equal(worse.cost_history, plain.cost_history)
    # the known optimum as a proposal: the search starts from it and never ends worse
    optimum = known_optimum()
    optimum_cost = cost.evaluate(glued_model(scene).predict(initial_state(scene), optimum[None], np.ones(4)),
                                 optimum[None])[0]
    helped = StochasticTrajectoryOptimizer(settings).optimize(
        initial_state(scene), BAD_START, glued_model(scene), cost, proposals=optimum[None]
    )
    assert helped.cost_history[0] == pytest.approx(optimum_cost)
    assert helped.cost <= optimum_cost
    assert helped.cost < 0.1 * plain.cost


def test_proposals_are_validated() -> None:
    scene, cost = quadratic_problem()
    optimizer = StochasticTrajectoryOptimizer(OptimizerSettings())
    with pytest.raises(ValueError, match=r"proposals: expected shape \(M, 4, 2\)"):
        optimizer.optimize(initial_state(scene), BAD_START, glued_model(scene), cost, proposals=np.zeros((4, 2)))
    with pytest.raises(ValueError, match="proposals: contains non-finite values"):
        optimizer.optimize(initial_state(scene), BAD_START, glued_model(scene), cost,
                           proposals=np.full((1, 4, 2), np.nan))
