"""Risk measures of a candidate's costs under M sampled models (parapush.planning.risk)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parapush.planning.risk import RiskMeasure


def test_mean_cvar_and_worst_of_a_cost_matrix() -> None:
    costs = np.array([[1.0, 4.0], [2.0, 3.0], [3.0, 2.0], [10.0, 1.0]])  # (M = 4, S = 2)
    np.testing.assert_allclose(RiskMeasure("mean").aggregate(costs), [4.0, 2.5])
    np.testing.assert_allclose(RiskMeasure("worst").aggregate(costs), [10.0, 4.0])
    np.testing.assert_allclose(RiskMeasure("cvar", alpha=0.5).aggregate(costs), [6.5, 3.5])
    np.testing.assert_allclose(RiskMeasure("cvar", alpha=1.0).aggregate(costs), [4.0, 2.5])  # the mean
    assert RiskMeasure("cvar", alpha=0.25).tail_count(4) == 1 and RiskMeasure("cvar", alpha=0.3).tail_count(4) == 2


def test_cvar_ranks_a_rare_catastrophe_below_a_slightly_worse_mean() -> None:
    rare_catastrophe = np.array([1.0] * 7 + [10.0])  # mean 2.125: one model in eight fails badly
    always_fair = np.full(8, 2.2)  # mean 2.2
    costs = np.stack([rare_catastrophe, always_fair], axis=1)
    assert np.argmin(RiskMeasure("mean").aggregate(costs)) == 0
    assert np.argmin(RiskMeasure("cvar", alpha=0.25).aggregate(costs)) == 1
    assert np.argmin(RiskMeasure("worst").aggregate(costs)) == 1


def test_a_failed_prediction_is_the_worst_cost_for_every_measure() -> None:
    costs = np.array([[1.0, 1.0], [math.nan, 2.0], [1.0, math.inf]])
    for measure in (RiskMeasure("mean"), RiskMeasure("cvar", alpha=0.3), RiskMeasure("worst")):
        assert np.all(np.isinf(measure.aggregate(costs)))


def test_one_model_is_its_cost_whatever_the_measure() -> None:
    costs = np.array([[0.3, 1.7, 0.9]])
    for kind in ("mean", "cvar", "worst"):
        np.testing.assert_array_equal(RiskMeasure(kind).aggregate(costs), costs[0])


def test_bad_settings_and_shapes_name_the_field() -> None:
    with pytest.raises(ValueError, match="kind"):
        RiskMeasure("median")
    with pytest.raises(ValueError, match="alpha"):
        RiskMeasure("cvar", alpha=0.0)
    with pytest.raises(ValueError, match="alpha"):
        RiskMeasure("cvar", alpha=1.5)
    with pytest.raises(ValueError, match="costs"):
        RiskMeasure().aggregate(np.ones(3))
