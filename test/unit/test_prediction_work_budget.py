"""The work budget: every request's fine work estimated up front, over-budget ones refused with
the estimate and the limit, a deadline bounding the work (and still returning the latest iterate)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from parapush.graph import resolve_scene_path
from parapush.parareal.schedule import ProblemSize, parareal_fine_rows
from parapush.prediction import ModelConfig, PredictionEngine, PredictionLimits, PredictionRequest, WorkBudgetError
from parapush.prediction.work_budget import PRIOR_STEP_COST, check_work_budget, estimate_work, fine_simulated_time
from parapush.scene import load_scene

SCENE = load_scene(resolve_scene_path("isrr_obstacle.yaml"))
INITIAL = SCENE.layout.compose(SCENE.pusher.position, np.array([spec.pose for spec in SCENE.objects]))
PUSH = np.array([[0.025, 0.0], [0.025, 0.005], [0.02, -0.01], [0.025, 0.0]])


@pytest.mark.parametrize("sequences, slices, iterations", [(1, 4, 1), (3, 5, 2), (7, 6, 6), (2, 3, 0)])
def test_parareal_work_is_the_rows_of_every_iteration_times_the_duration(sequences, slices, iterations) -> None:
    duration = 0.7
    durations = np.full((sequences, slices), duration)
    simulated, passes = fine_simulated_time(durations, "parareal", "parareal", iterations)
    # The cost model's own count of the rows of each iteration's fine call (skipping exact slices).
    rows = parareal_fine_rows(ProblemSize(sequences=sequences, slices=slices, workers=1), iterations)
    assert simulated == pytest.approx(duration * sum(rows))
    assert passes == ("coarse model only" if iterations == 0 else f"Parareal K={iterations}")


def test_work_of_each_model_and_schedule_with_uneven_durations() -> None:
    rng = np.random.default_rng(3)
    durations = rng.uniform(0.2, 2.0, (4, 5))
    assert fine_simulated_time(durations, "coarse", "parareal", 0)[0] == 0.0
    assert fine_simulated_time(durations, "fine", "parareal", 3)[0] == pytest.approx(durations.sum())
    assert fine_simulated_time(durations, "parareal", "sample_parallel", 3)[0] == pytest.approx(durations.sum())
    # K = 2: slice 0 runs once (iteration 1), every later slice twice.
    expected = durations[:, 0].sum() + 2 * durations[:, 1:].sum()
    assert fine_simulated_time(durations, "parareal", "auto", 2)[0] == pytest.approx(expected)
    # K = N equals N serial passes minus the exact ones: slice n runs n + 1 times.
    assert fine_simulated_time(durations, "parareal", "parareal", 5)[0] == pytest.approx(
        (durations * np.arange(1, 6)).sum())


def test_the_estimate_uses_the_measured_rate_else_the_prior_and_the_deadline_caps_it() -> None:
    durations = np.ones((8, 4))
    prior = estimate_work(durations, "fine", "auto", 1, fine_rate=None, timestep=0.001, deadline=None, workers=2)
    assert not prior.measured and prior.fine_rate == pytest.approx(PRIOR_STEP_COST / 0.001)
    assert prior.worker_seconds == pytest.approx(32 * PRIOR_STEP_COST / 0.001)
    measured = estimate_work(durations, "fine", "auto", 1, fine_rate=0.03, timestep=0.001, deadline=None, workers=2)
    assert measured.measured and measured.worker_seconds == pytest.approx(0.96)
    capped = estimate_work(durations, "fine", "auto", 1, fine_rate=0.03, timestep=0.001, deadline=0.1, workers=2)
    assert capped.worker_seconds == pytest.approx(0.2) and "capped by the deadline" in capped.describe()
    check_work_budget(measured, 0.96)  # at the limit: accepted
    with pytest.raises(WorkBudgetError, match=r"^work: estimated 0\.96 worker-s \(one fine pass: 32 s of fine "
                                              r"simulation at 0\.03 s per simulated s, measured\), over the budget "
                                              r"of 0\.5 worker-s per request \(max_work\)"):
        check_work_budget(measured, 0.5)


def test_the_engine_refuses_an_over_budget_request_stating_estimate_and_limit() -> None:
    config = ModelConfig(backend="threads", workers=2, schedule="parareal", coarse_model="analytical")
    with PredictionEngine(SCENE, config, limits=PredictionLimits(max_work=0.5)) as engine:
        small = PredictionRequest(INITIAL, PUSH[None], np.ones((1, 4)), iterations=1)
        engine.predict(small)  # measures the fine rate
        assert engine.fine_scheduler.cost_estimator.fine_rate is not None
        rng = np.random.default_rng(5)
        controls = PUSH[None] + rng.normal(0.0, 0.002, (64, 4, 2))
        large = PredictionRequest(INITIAL, controls, np.full((64, 4), 8.0), iterations=4)
        estimate = engine.estimate_work(large)
        assert estimate.measured and estimate.simulated == pytest.approx(64 * 8.0 * (1 + 2 + 3 + 4))
        assert estimate.worker_seconds > 0.5
        with pytest.raises(WorkBudgetError) as refused:
            engine.predict(large)
        message = str(refused.value)
        assert f"estimated {estimate.worker_seconds:.3g} worker-s" in message
        assert re.search(r"over the budget of 0\.5 worker-s per request", message)
        statistics = engine.statistics()
        assert statistics.failures == 1 and statistics.requests == 2


def test_a_deadline_bounds_the_work_and_the_latest_iterate_is_returned() -> None:
    config = ModelConfig(backend="threads", workers=2, schedule="parareal", coarse_model="analytical")
    with PredictionEngine(SCENE, config, limits=PredictionLimits(max_work=0.5)) as engine:
        engine.predict(PredictionRequest(INITIAL, PUSH[None], np.ones((1, 4)), iterations=1))
        rng = np.random.default_rng(6)
        controls = PUSH[None] + rng.normal(0.0, 0.002, (32, 4, 2))
        durations = np.full((32, 4), 2.0)
        with pytest.raises(WorkBudgetError):
            engine.predict(PredictionRequest(INITIAL, controls, durations, iterations=4))
        # The same request with a deadline fits the budget (0.1 s x 2 workers) and returns an iterate.
        outcome = engine.predict(PredictionRequest(INITIAL, controls, durations, iterations=4, deadline=0.1))
        assert outcome.stop_reason == "deadline" and outcome.iterations_used < 4
        assert outcome.trajectories.shape == (32, 5, INITIAL.size) and np.all(np.isfinite(outcome.trajectories))
