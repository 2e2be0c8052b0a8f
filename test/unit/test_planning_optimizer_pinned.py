"""A seeded optimization pinned to the values the optimizer gave before its loop was split
into named steps (issue 32): the refactor must not change a single sample.

The run goes through every branch of the loop: a proposal that beats the start and every
sample in the first iteration (the search continues from it), iterations whose best sample
improves (the cost-weighted update), iterations that went uphill (restart from the best),
and non-finite predictions (infinite cost, counted, never used). The expected values were
printed by the optimizer of commit 95c109e (before the split) on this scene, seed and model.
"""

from __future__ import annotations

import numpy as np
from test_planning_fixtures import glued_model, initial_state
from test_planning_optimizer import BAD_START, SpyModel, UnstableModel, quadratic_problem

from parapush.planning import OptimizerSettings, StochasticTrajectoryOptimizer

CHEAPER_PROPOSAL = np.array([[0.035, 0.0], [0.061, 0.01], [0.078, 0.013], [0.087, 0.015]])
WORSE_PROPOSAL = np.tile([-0.1, -0.05], (4, 1))

PINNED_COST = 0.0033097664216207795
PINNED_CONTROLS = [
    [0.03985558799071715, -0.004542521503761864],
    [0.06528467295325238, 0.009394936448651948],
    [0.08629089701150969, 0.015640369692788605],
    [0.09439039827478979, 0.01968146204277188],
]
PINNED_COST_HISTORY = [
    0.004048999999999999, 0.004048999999999999, 0.003980598568075946, 0.003539711856258836,
    0.0034785459505764682, 0.0034785459505764682, 0.00338820367295953, 0.0033097664216207795,
    0.0033097664216207795, 0.0033097664216207795, 0.0033097664216207795, 0.0033097664216207795,
]
# sum of every control of each predict call's batch (S + 1 rows, + 2 proposals in the first)
PINNED_BATCH_SUMS = [
    -8.499704709068354, 6.241984019094531, 6.436253831688578, 6.549009373592701,
    6.649075767256155, 6.699204391923484, 6.806420151878518, 6.936126569785523,
    6.7812165864693075, 6.654181808693646, 6.977763270030167, 6.806972187357645,
]
PINNED_COST_TERMS = {"goal_distance": 0.00029757369602806014, "smoothness": 0.0030121927255927195}


def test_a_seeded_run_gives_the_pinned_result_sample_for_sample() -> None:
    scene, cost = quadratic_problem()
    spy = SpyModel(UnstableModel(glued_model(scene)))
    result = StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=12, seed=5)).optimize(
        initial_state(scene), BAD_START, spy, cost, proposals=np.stack([CHEAPER_PROPOSAL, WORSE_PROPOSAL])
    )
    # the branches the run is meant to cover
    np.testing.assert_array_equal(spy.calls[1][0], CHEAPER_PROPOSAL)  # the proposal became the start
    assert np.count_nonzero(np.diff(result.cost_history) == 0.0) == 6  # uphill: restarted from the best
    assert np.count_nonzero(np.diff(result.cost_history) < 0.0) == 5  # improved: weighted update
    assert result.unstable_samples == 95

    assert result.iterations == 12 and result.stop_reason == "iterations"
    assert len(spy.calls) == 12 and spy.calls[0].shape == (23, 4, 2) and spy.calls[1].shape == (21, 4, 2)
    np.testing.assert_allclose([float(batch.sum()) for batch in spy.calls], PINNED_BATCH_SUMS, rtol=1e-12)
    np.testing.assert_allclose(result.cost, PINNED_COST, rtol=1e-12)
    np.testing.assert_allclose(result.controls, PINNED_CONTROLS, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(result.cost_history, PINNED_COST_HISTORY, rtol=1e-12)
    assert set(result.cost_terms) == set(PINNED_COST_TERMS)
    for name, value in PINNED_COST_TERMS.items():
        np.testing.assert_allclose(result.cost_terms[name], value, rtol=1e-12)
    np.testing.assert_array_equal(result.trajectory, spy.model.predict(
        initial_state(scene), result.controls[None], np.ones(4))[0])
