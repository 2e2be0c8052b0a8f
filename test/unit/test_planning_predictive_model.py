"""Predictive-model adapters: rollouts, NaN handling, Parareal divergence, the factory."""

from __future__ import annotations

import numpy as np
import pytest
from test_planning_fixtures import GluedPropagator, initial_state, tiny_scene

from parapush.parareal import PhysicsDivergenceError
from parapush.planning import PararealPrediction, PredictiveModel, PropagatorRollout, make_predictive_model
from parapush.scene import load_scene


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


class FakeSolver:
    """A Parareal stand-in: glued dynamics; raises divergence for sequences with u_y > 0.04."""

    def __init__(self, scene):
        self.rollout = PropagatorRollout(GluedPropagator(scene.layout))
        self.batch_sizes: list[int] = []

    def solve(self, initial_states, controls, durations, options, *, schedule):
        self.batch_sizes.append(len(controls))
        bad = np.flatnonzero(controls[:, 0, 1] > 0.04)
        if bad.size:
            raise PhysicsDivergenceError(
                model="fine",
                sequence=int(bad[0]),
                slice_index=0,
                iteration=1,
                start_state=initial_states[bad[0]],
                control=controls[bad[0], 0],
                duration=float(durations[0]),
            )

        class Result:
            trajectories = self.rollout.predict(initial_states[0], controls, durations)

        return Result()


def test_parareal_divergence_of_one_sequence_gives_a_nan_row_only() -> None:
    scene = tiny_scene()
    solver = FakeSolver(scene)
    model = PararealPrediction(solver, scene.layout, options=None)
    controls = np.full((5, 4, 2), 0.01)
    controls[1, 0, 1] = 0.05
    controls[3, 0, 1] = 0.06
    trajectories = model.predict(initial_state(scene), controls, np.ones(4))
    assert np.all(np.isnan(trajectories[[1, 3]]))
    assert np.all(np.isfinite(trajectories[[0, 2, 4]]))
    assert solver.batch_sizes == [5, 4, 3] and model.diverged_sequences == 2


def test_factory_rejects_unknown_models() -> None:
    with pytest.raises(
        ValueError, match=r"name: expected one of \('coarse', 'fine', 'parareal'\), got 'mujoco'"
    ):
        make_predictive_model("mujoco", tiny_scene())


@pytest.mark.parametrize("name", ["coarse", "fine", "parareal"])
def test_factory_models_predict_the_isrr_scene(name) -> None:
    scene = load_scene("config/scenes/isrr_obstacle.yaml")
    state = initial_state(scene)
    controls = np.tile([0.05, 0.0], (2, 2, 1))
    controls[1, :, 1] = 0.01
    with make_predictive_model(name, scene, backend="serial", iterations=1) as model:
        trajectories = model.predict(state, controls, np.ones(2))
    assert trajectories.shape == (2, 3, scene.layout.dimension)
    assert np.all(np.isfinite(trajectories))
    # the pusher follows its velocity commands (exactly for the kinematic model, within
    # a few mm for the MuJoCo velocity servo)
    np.testing.assert_allclose(trajectories[:, -1, :2], state[:2] + controls.sum(axis=1), atol=5e-3)
    # the slider, 3.4 cm ahead of the pusher, is pushed towards +x
    assert np.all(trajectories[:, -1, 2] > state[2] + 0.02)
