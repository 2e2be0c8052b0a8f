"""Robust scoring of the multi-fidelity planner's elites (parapush.planning.robust_scoring)."""

from __future__ import annotations

import numpy as np
import pytest
from test_planning_fixtures import glued_model, initial_state, tiny_scene

from parapush.identification import ObjectIdentifier
from parapush.identification.parameter_belief import ParameterBelief, ParameterSpread, to_coordinates
from parapush.identification.parameters import ObjectParameters
from parapush.physics.fine import FineModel
from parapush.planning import CostFunction, OptimizerSettings, StochasticTrajectoryOptimizer
from parapush.planning.multifidelity import MultiFidelityPlanner, MultiFidelitySettings
from parapush.planning.predictive_model import PropagatorRollout
from parapush.planning.risk import RiskMeasure
from parapush.planning.robust_scoring import RobustScoring, RobustSettings, robust_scoring_for
from parapush.prediction.config import ModelConfig

GOAL_ONLY = {"goal_distance": {"weight": 1.0}, "smoothness": {"weight": 0.1}}


@pytest.fixture(scope="module")
def setup():
    scene = tiny_scene()
    fine = FineModel(scene, ModelConfig().fine)
    with ObjectIdentifier(fine, 0, workers=2) as identifier:
        yield scene, fine, identifier


def planner(scene, robust=None) -> MultiFidelityPlanner:
    optimizer = StochasticTrajectoryOptimizer(OptimizerSettings(samples=10, max_iterations=3, seed=4))
    made = MultiFidelityPlanner(optimizer, glued_model(scene), MultiFidelitySettings(corrected_controls=1, rounds=2))
    made.robust = robust
    return made


def plan(made: MultiFidelityPlanner, scene, fine):
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    return made.optimize(initial_state(scene), np.tile([0.05, 0.0], (4, 1)), PropagatorRollout(fine), cost)


def test_one_model_is_the_nominal_planner(setup) -> None:
    scene, fine, identifier = setup
    belief = ParameterBelief.from_spread(ObjectParameters.from_scene(scene, 0), ParameterSpread())
    assert robust_scoring_for(RobustSettings(samples=1), identifier, belief) is None
    assert robust_scoring_for(RobustSettings(samples=1), None, None) is None
    with pytest.raises(ValueError, match="samples"):
        robust_scoring_for(RobustSettings(samples=3), None, None)


def test_models_that_all_equal_the_corrector_choose_the_nominal_plan_exactly(setup) -> None:
    scene, fine, identifier = setup
    nominal = ObjectParameters.from_scene(scene, 0)
    certain = ParameterBelief(to_coordinates(nominal.as_vector()), np.zeros((5, 5)))  # a point mass
    expected = plan(planner(scene), scene, fine)
    for kind in ("mean", "cvar", "worst"):
        scoring = RobustScoring(identifier, certain, RobustSettings(samples=3, risk=RiskMeasure(kind)))
        robust = plan(planner(scene, scoring), scene, fine)
        np.testing.assert_array_equal(robust.controls, expected.controls)
        np.testing.assert_array_equal(robust.trajectory, expected.trajectory)
        assert robust.cost == expected.cost


def test_elites_are_scored_under_every_model_and_ranked_by_the_risk(setup) -> None:
    scene, fine, identifier = setup
    belief = ParameterBelief.from_spread(ObjectParameters.from_scene(scene, 0), ParameterSpread(com_offset=0.02))
    scoring = RobustScoring(identifier, belief, RobustSettings(samples=4, risk=RiskMeasure("worst")))
    made = planner(scene, scoring)
    result = plan(made, scene, fine)
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    state = initial_state(scene)
    corrected_cost = float(cost.evaluate(result.trajectory[None], result.controls[None])[0])
    assert made.last_report.corrected_cost == pytest.approx(corrected_cost)
    scores = scoring.score(state, result.controls[None], np.ones(4), np.array([corrected_cost]), cost=cost,
                           coarse=glued_model(scene), depth=1)
    assert scores.costs.shape == (4, 1) and scores.costs[0, 0] == corrected_cost
    assert result.cost == pytest.approx(scores.scores[0]) and result.cost == pytest.approx(scores.costs.max())
    assert np.ptp(scores.costs) > 0.0  # the drawn models predict other outcomes


def test_only_a_round_s_best_corrected_elites_are_scored(setup) -> None:
    scene, fine, identifier = setup
    belief = ParameterBelief.from_spread(ObjectParameters.from_scene(scene, 0), ParameterSpread(com_offset=0.02))
    scoring = RobustScoring(identifier, belief, RobustSettings(samples=4, scored_elites=2))
    np.testing.assert_array_equal(scoring.scored(np.array([3.0, np.inf, 1.0, 2.0, np.nan])), [2, 3])
    np.testing.assert_array_equal(scoring.scored(np.array([np.inf, 5.0])), [1])
    assert scoring.scored(np.array([np.inf, np.nan])).size == 0
    # K = 1: the corrector's best elite is the only candidate, whatever the drawn models predict
    expected = plan(planner(scene), scene, fine)
    one = RobustScoring(identifier, belief, RobustSettings(samples=4, scored_elites=1, risk=RiskMeasure("worst")))
    robust = plan(planner(scene, one), scene, fine)
    np.testing.assert_array_equal(robust.controls, expected.controls)
    np.testing.assert_array_equal(robust.trajectory, expected.trajectory)
    assert robust.cost >= expected.cost  # its worst case over the models
    with pytest.raises(ValueError, match="scored_elites"):
        RobustSettings(scored_elites=0)


def test_robust_settings_are_validated_with_the_field_name(setup) -> None:
    scene, _, identifier = setup
    belief = ParameterBelief.from_spread(ObjectParameters.from_scene(scene, 0), ParameterSpread())
    with pytest.raises(ValueError, match="samples"):
        RobustSettings(samples=0)
    with pytest.raises(TypeError, match="risk"):
        RobustSettings(samples=2, risk="cvar")
    with pytest.raises(ValueError, match="samples"):
        RobustScoring(identifier, belief, RobustSettings(samples=1))
