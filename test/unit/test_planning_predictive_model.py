"""The propagator rollout adapter: serial in time, batched, NaN rows. (The engine's adapter,
EnginePrediction, is tested in test_prediction.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from test_planning_fixtures import GluedPropagator, initial_state, tiny_scene

from parapush.planning import PredictiveModel, PropagatorRollout


class NanAfterTwoSteps(GluedPropagator):
    """Returns NaN for the rows whose control has u_x < 0, from the second call on."""

    def propagate(self, states, controls, durations):
        result = super().propagate(states, controls, durations)
        if self.calls >= 2:
            result[controls[:, 0] < 0.0] = np.nan
        return result


def test_rollout_is_serial_in_time_and_batched_over_samples() -> None:
    scene = tiny_scene()
    propagator = GluedPropagator(scene.layout)
    model = PropagatorRollout(propagator)
    assert isinstance(model, PredictiveModel)
    controls = np.random.default_rng(0).uniform(-0.05, 0.05, size=(6, 3, 2))
    trajectories = model.predict(initial_state(scene), controls, np.array([1.0, 0.5, 2.0]))
    assert trajectories.shape == (6, 4, scene.layout.dimension)
    assert propagator.calls == 3  # one call per control, all samples at once
    np.testing.assert_array_equal(trajectories[:, 0], np.tile(initial_state(scene), (6, 1)))
    expected = initial_state(scene)[:2] + (controls * np.array([1.0, 0.5, 2.0])[None, :, None]).sum(axis=1)
    np.testing.assert_allclose(trajectories[:, -1, :2], expected)


def test_rollout_marks_unstable_rows_nan_to_the_end() -> None:
    scene = tiny_scene()
    model = PropagatorRollout(NanAfterTwoSteps(scene.layout))
    controls = np.full((3, 4, 2), 0.01)
    controls[1, 1, 0] = -0.01
    trajectories = model.predict(initial_state(scene), controls, np.ones(4))
    assert np.all(np.isfinite(trajectories[[0, 2]]))
    assert np.all(np.isfinite(trajectories[1, :2])) and np.all(np.isnan(trajectories[1, 2:]))


def test_rollout_argument_validation() -> None:
    scene = tiny_scene()
    model = PropagatorRollout(GluedPropagator(scene.layout))
    state = initial_state(scene)
    with pytest.raises(ValueError, match=r"controls: expected shape \(S, N, 2\)"):
        model.predict(state, np.zeros((4, 2)), np.ones(4))
    with pytest.raises(ValueError, match=r"durations: expected shape \(4,\)"):
        model.predict(state, np.zeros((1, 4, 2)), np.ones(3))
    with pytest.raises(ValueError, match="durations: expected finite values > 0"):
        model.predict(state, np.zeros((1, 2, 2)), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"initial_state: expected shape \(10,\)"):
        model.predict(state[:4], np.zeros((1, 2, 2)), np.ones(2))
    with pytest.raises(TypeError, match="propagator: expected an object with a StateLayout"):
        PropagatorRollout(object())


def test_each_row_from_its_own_state_equals_one_rollout_per_row() -> None:
    scene = tiny_scene()
    rng = np.random.default_rng(1)
    starts = initial_state(scene) + rng.uniform(-0.02, 0.02, size=(5, scene.layout.dimension))
    controls = rng.uniform(-0.05, 0.05, size=(5, 3, 2))
    durations = np.array([1.0, 0.5, 2.0])
    propagator = GluedPropagator(scene.layout)
    together = PropagatorRollout(propagator).predict_from_each(starts, controls, durations)
    assert propagator.calls == 3  # one call per control for all rows
    one_by_one = PropagatorRollout(GluedPropagator(scene.layout))
    for row in range(5):
        np.testing.assert_array_equal(together[row], one_by_one.predict(starts[row], controls[row:row + 1],
                                                                         durations)[0])


def test_each_row_from_its_own_state_argument_validation() -> None:
    scene = tiny_scene()
    model = PropagatorRollout(GluedPropagator(scene.layout))
    starts = np.tile(initial_state(scene), (2, 1))
    with pytest.raises(ValueError, match=r"initial_states: expected shape \(S, 10\)"):
        model.predict_from_each(starts[:, :4], np.zeros((2, 2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="controls: 3 sequences for 2 initial_states"):
        model.predict_from_each(starts, np.zeros((3, 2, 2)), np.ones(2))
    starts[1, 0] = np.nan
    with pytest.raises(ValueError, match="initial_states: contains non-finite values"):
        model.predict_from_each(starts, np.zeros((2, 2, 2)), np.ones(2))
