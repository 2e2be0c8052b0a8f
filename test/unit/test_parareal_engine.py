"""Parareal solver on the MuJoCo-free toy system: exactness, stopping rules, batching, errors."""

from __future__ import annotations

import numpy as np
import pytest
from test_parareal_toy_system import (
    DIMENSION,
    DIVERGE_CONTROL,
    LAYOUT,
    ToyBackend,
    ToyCoarse,
    ToyFine,
    ToyProjector,
    random_problem,
    serial_fine,
)

from parapush.parareal import (
    CostEstimator,
    PararealOptions,
    PararealResult,
    PararealSolver,
    PhysicsDivergenceError,
)
from parapush.scene import wrap_angle


def make_solver(
    *, projector: ToyProjector | None = None, wrap_yaw: bool = False, workers: int = 1, delay: float = 0.0
) -> tuple[PararealSolver, ToyFine]:
    fine = ToyFine()
    solver = PararealSolver(
        coarse=ToyCoarse(wrap_yaw=wrap_yaw),
        fine=ToyBackend(fine, workers=workers, delay=delay),
        projector=projector,
    )
    return solver, fine


# -- exactness ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_k_equals_n_reproduces_serial_fine(seed: int) -> None:
    states, controls, durations = random_problem(seed, sequences=3, slices=5)
    solver, fine = make_solver(projector=ToyProjector())
    result = solver.solve(states, controls, durations, PararealOptions(iterations=5))
    reference = serial_fine(ToyFine(), states, controls, durations)
    np.testing.assert_allclose(result.trajectories, reference, rtol=0, atol=1e-12)
    assert result.stop_reason == "converged"
    assert result.iterations_used == 5
    assert result.fully_exact and result.finite
    assert result.exact_states.tolist() == [6, 6, 6]
    # exact slices are skipped: iteration k+1 runs the fine model on N - k slices only
    assert result.fine_rows == 3 * (5 + 4 + 3 + 2 + 1)
    assert fine.calls == 5


def test_after_k_iterations_the_first_k_plus_1_states_are_exact() -> None:
    states, controls, durations = random_problem(4, sequences=2, slices=6)
    solver, _ = make_solver(projector=ToyProjector())
    result = solver.solve(states, controls, durations, PararealOptions(iterations=6, keep_iterates=True))
    reference = serial_fine(ToyFine(), states, controls, durations)
    assert result.iterates is not None and result.iterates.shape == (7, 2, 7, DIMENSION)
    for k in range(7):
        iterate = result.iterates[k]
        np.testing.assert_allclose(iterate[:, : k + 1], reference[:, : k + 1], rtol=0, atol=1e-12)
        if k < 6:
            # the next state is not exact yet: the test would notice a wrong exactness claim
            assert np.max(np.abs(iterate[:, k + 1 :] - reference[:, k + 1 :])) > 1e-6
    # stopping at k gives the same iterate as the kept one
    for k in (0, 1, 3):
        partial = solver.solve(states, controls, durations, PararealOptions(iterations=k))
        np.testing.assert_array_equal(partial.trajectories, result.iterates[k])
        assert partial.exact_states.tolist() == [k + 1, k + 1]
        assert partial.stop_reason == ("iterations" if k < 6 else "converged")
        assert partial.update_position.shape == (k,) and partial.update_angle.shape == (k,)


def test_parareal_error_shrinks_with_iterations() -> None:
    states, controls, durations = random_problem(5, sequences=4, slices=8)
    solver, _ = make_solver()
    result = solver.solve(states, controls, durations, PararealOptions(iterations=8, keep_iterates=True))
    reference = serial_fine(ToyFine(), states, controls, durations)
    errors = [np.max(np.abs(result.iterates[k] - reference)) for k in range(9)]
    assert errors[0] > 1e-2
    assert errors[2] < 0.5 * errors[0]
    assert errors[8] == 0.0


def test_projection_is_applied_to_corrected_states_only() -> None:
    states, controls, durations = random_problem(6, sequences=2, slices=4)
    projector = ToyProjector()
    solver, _ = make_solver(projector=projector)
    solver.solve(states, controls, durations, PararealOptions(iterations=2))
    # initial sweep: 4 slices; iteration 1: slices 2..4 corrected (3); iteration 2: 2
    assert projector.calls == 4 + 3 + 2
    projector.calls = 0
    solver.solve(states, controls, durations, PararealOptions(iterations=2, project=False))
    assert projector.calls == 0


def test_wrapped_yaw_in_the_coarse_model_gives_the_same_iterates() -> None:
    states, controls, durations = random_problem(7, sequences=3, slices=5)
    states[:, LAYOUT.yaw_indices] = 3.1  # near +pi: the wrapping coarse model jumps to -pi
    plain, _ = make_solver()
    wrapping, _ = make_solver(wrap_yaw=True)
    options = PararealOptions(iterations=5, keep_iterates=True)
    expected = plain.solve(states, controls, durations, options).iterates
    actual = wrapping.solve(states, controls, durations, options).iterates
    difference = actual - expected
    difference[..., LAYOUT.yaw_indices] = wrap_angle(difference[..., LAYOUT.yaw_indices])
    assert np.max(np.abs(difference)) < 1e-9
    np.testing.assert_array_equal(actual[-1], expected[-1])


# -- batching -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "options",
    [PararealOptions(iterations=2), PararealOptions(tolerance_position=1e-4, tolerance_angle=1e-4)],
    ids=["iterations", "tolerance"],
)
def test_a_batch_equals_solving_each_sequence_alone(options: PararealOptions) -> None:
    states, controls, durations = random_problem(8, sequences=4, slices=6)
    controls[2] *= 0.05  # a gentle sequence that meets the tolerance earlier than the others
    solver, _ = make_solver(projector=ToyProjector())
    batch = solver.solve(states, controls, durations, options)
    for b in range(4):
        alone = solver.solve(states[b], controls[b], durations[b], options)
        np.testing.assert_array_equal(batch.trajectories[b], alone.trajectories[0])
        assert batch.sequence_iterations[b] == alone.iterations_used
        assert batch.exact_states[b] == alone.exact_states[0]


def test_one_state_is_broadcast_to_many_control_sequences_and_vice_versa() -> None:
    states, controls, durations = random_problem(9, sequences=3, slices=4)
    solver, _ = make_solver()
    options = PararealOptions(iterations=1)
    shared_state = solver.solve(states[0], controls, durations, options)
    assert shared_state.trajectories.shape == (3, 5, DIMENSION)
    np.testing.assert_array_equal(shared_state.trajectories[:, 0], np.repeat(states[:1], 3, axis=0))
    shared_controls = solver.solve(states, controls[0], durations[0], options)
    for b in range(3):
        alone = solver.solve(states[b], controls[0], durations[0], options)
        np.testing.assert_array_equal(shared_controls.trajectories[b], alone.trajectories[0])


# -- stopping rules -------------------------------------------------------------------------
def test_tolerance_stops_when_every_update_is_small() -> None:
    states, controls, durations = random_problem(10, sequences=2, slices=8)
    solver, _ = make_solver()
    tolerance = 2e-3
    result = solver.solve(states, controls, durations, PararealOptions(tolerance_position=tolerance))
    assert result.stop_reason == "tolerance"
    assert 1 <= result.iterations_used < 8
    assert result.update_position[-1] <= tolerance
    assert np.all(result.update_position[:-1] > tolerance)
    reference = serial_fine(ToyFine(), states, controls, durations)
    coarse = solver.predict_coarse(states, controls, durations).trajectories
    positions = [0, 1, 2, 3]
    error = np.max(np.abs(result.trajectories - reference)[..., positions])
    assert error < 0.01 * np.max(np.abs(coarse - reference)[..., positions])
    loose = solver.solve(states, controls, durations, PararealOptions(tolerance_position=10.0))
    assert loose.iterations_used == 1 and loose.stop_reason == "tolerance"


def test_angle_tolerance_alone_and_iteration_cap() -> None:
    states, controls, durations = random_problem(11, sequences=2, slices=6)
    solver, _ = make_solver()
    result = solver.solve(states, controls, durations, PararealOptions(tolerance_angle=1e-12, iterations=2))
    assert result.stop_reason == "iterations" and result.iterations_used == 2
    result = solver.solve(states, controls, durations, PararealOptions(tolerance_angle=1e-3))
    assert result.update_angle[-1] <= 1e-3


def test_deadline_returns_the_latest_iterate_and_its_exact_states() -> None:
    states, controls, durations = random_problem(12, sequences=2, slices=6)
    solver, _ = make_solver(delay=0.05)
    result = solver.solve(states, controls, durations, PararealOptions(deadline=0.13, keep_iterates=True))
    assert result.stop_reason == "deadline"
    assert 1 <= result.iterations_used < 6
    k = result.iterations_used
    assert result.exact_states.tolist() == [k + 1, k + 1]
    reference = serial_fine(ToyFine(), states, controls, durations)
    np.testing.assert_allclose(result.trajectories[:, : k + 1], reference[:, : k + 1], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(result.trajectories, result.iterates[k])


def test_deadline_already_passed_gives_the_coarse_prediction() -> None:
    states, controls, durations = random_problem(13, sequences=1, slices=3)
    solver, _ = make_solver(delay=0.02)
    result = solver.solve(states, controls, durations, PararealOptions(deadline=1e-9))
    assert result.stop_reason == "deadline" and result.iterations_used == 0
    coarse = solver.predict_coarse(states, controls, durations)
    np.testing.assert_array_equal(result.trajectories, coarse.trajectories)


# -- coarse and fine paths ------------------------------------------------------------------
def test_coarse_path_is_the_coarse_model_chained() -> None:
    states, controls, durations = random_problem(14, sequences=2, slices=4)
    solver, fine = make_solver()
    result = solver.predict("coarse", states, controls, durations)
    expected = serial_fine(ToyCoarse(), states, controls, durations)  # serial chaining of C
    np.testing.assert_array_equal(result.trajectories, expected)
    assert result.exact_states.tolist() == [1, 1] and fine.calls == 0
    assert result.stop_reason == "iterations" and result.schedule == "parareal"


@pytest.mark.parametrize("path", ["predict_fine", "sample_parallel"])
def test_fine_path_is_serial_fine(path: str) -> None:
    states, controls, durations = random_problem(15, sequences=3, slices=4)
    solver, fine = make_solver(workers=2)
    if path == "predict_fine":
        result = solver.predict("fine", states, controls, durations)
    else:
        result = solver.solve(
            states, controls, durations, PararealOptions(iterations=1), schedule="sample_parallel"
        )
    reference = serial_fine(ToyFine(), states, controls, durations)
    np.testing.assert_array_equal(result.trajectories, reference)
    assert result.schedule == "sample_parallel" and result.stop_reason == "converged"
    assert result.fully_exact and fine.calls == 4 and result.fine_rows == 12


def test_fine_path_deadline_keeps_an_exact_prefix_and_fills_with_coarse() -> None:
    states, controls, durations = random_problem(16, sequences=2, slices=6)
    solver, _ = make_solver(delay=0.05)
    result = solver.predict_fine(states, controls, durations, deadline=0.12)
    assert result.stop_reason == "deadline"
    exact = int(result.exact_states[0])
    assert 1 <= exact < 7
    reference = serial_fine(ToyFine(), states, controls, durations)
    np.testing.assert_array_equal(result.trajectories[:, :exact], reference[:, :exact])
    assert np.max(np.abs(result.trajectories[:, -1] - reference[:, -1])) > 1e-6


def test_timings_are_reported() -> None:
    states, controls, durations = random_problem(17, sequences=2, slices=4)
    solver, _ = make_solver()
    result = solver.solve(states, controls, durations, PararealOptions(iterations=2))
    assert isinstance(result, PararealResult)
    for name in ("time_coarse", "time_fine", "time_correction", "time_total"):
        assert getattr(result, name) >= 0.0
    assert result.time_total >= result.time_fine + result.time_coarse
    assert result.time_fine > 0.0 and result.time_coarse > 0.0


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("schedule", ["parareal", "sample_parallel"])
def test_non_finite_fine_state_raises_naming_sequence_and_slice(schedule: str) -> None:
    states, controls, durations = random_problem(18, sequences=3, slices=4)
    controls[1, 2] = DIVERGE_CONTROL
    solver, _ = make_solver()
    with pytest.raises(PhysicsDivergenceError, match=r"sequence 1, slice 2") as caught:
        solver.solve(states, controls, durations, PararealOptions(iterations=4), schedule=schedule)
    assert caught.value.model == "fine"
    assert caught.value.sequence == 1 and caught.value.slice_index == 2
    np.testing.assert_array_equal(caught.value.control, DIVERGE_CONTROL)


def test_non_finite_coarse_or_projection_raises() -> None:
    states, controls, durations = random_problem(19, sequences=2, slices=3)

    class BadProjector:
        def project(self, states: np.ndarray) -> np.ndarray:
            result = np.array(states)
            result[-1, 0] = np.inf
            return result

    solver = PararealSolver(coarse=ToyCoarse(), fine=ToyBackend(ToyFine()), projector=BadProjector())
    with pytest.raises(PhysicsDivergenceError, match="projection model .* sequence 1, slice 0"):
        solver.solve(states, controls, durations, PararealOptions(iterations=1))


def _solve(solver: PararealSolver, **overrides: object) -> None:
    states, controls, durations = random_problem(20, sequences=2, slices=3)
    arguments: dict[str, object] = {
        "initial_states": states,
        "controls": controls,
        "durations": durations,
        "options": PararealOptions(iterations=1),
    }
    arguments.update(overrides)
    solver.solve(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        ({"initial_states": np.zeros((2, DIMENSION + 1))}, "initial_states"),
        ({"initial_states": np.zeros((2, 2, DIMENSION))}, "initial_states"),
        ({"initial_states": np.full((2, DIMENSION), np.nan)}, "initial_states"),
        ({"initial_states": "state"}, "initial_states"),
        ({"initial_states": np.zeros((0, DIMENSION))}, "initial_states"),
        ({"controls": np.zeros((2, 3, 3))}, "controls"),
        ({"controls": np.zeros((2, 0, 2))}, "controls"),
        ({"controls": np.full((2, 3, 2), np.inf)}, "controls"),
        ({"controls": np.zeros((5, 3, 2))}, "initial_states, controls"),
        ({"durations": np.ones(4)}, "durations"),
        ({"durations": np.array([1.0, 0.0, 1.0])}, "durations"),
        ({"durations": np.array([1.0, -1.0, 1.0])}, "durations"),
        ({"durations": np.array([1.0, np.nan, 1.0])}, "durations"),
        ({"options": PararealOptions(iterations=4)}, "iterations"),
        ({"options": {"iterations": 1}}, "options"),
        ({"schedule": "fastest"}, "schedule"),
        ({"schedule": "sample_parallel", "options": PararealOptions(iterations=0)}, "schedule"),
    ],
)
def test_bad_inputs_raise_naming_the_argument(overrides: dict[str, object], name: str) -> None:
    solver, _ = make_solver()
    with pytest.raises((ValueError, TypeError), match=rf"^{name}"):
        _solve(solver, **overrides)


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({}, "iterations, tolerance_position"),
        ({"iterations": -1}, "iterations"),
        ({"iterations": 1.5}, "iterations"),
        ({"iterations": True}, "iterations"),
        ({"tolerance_position": 0.0}, "tolerance_position"),
        ({"tolerance_angle": float("nan")}, "tolerance_angle"),
        ({"tolerance_angle": "small"}, "tolerance_angle"),
        ({"deadline": -0.1}, "deadline"),
        ({"iterations": 1, "keep_iterates": 1}, "keep_iterates"),
        ({"iterations": 1, "project": None}, "project"),
    ],
)
def test_bad_options_raise_naming_the_field(arguments: dict[str, object], name: str) -> None:
    with pytest.raises((ValueError, TypeError), match=rf"^{name}"):
        PararealOptions(**arguments)  # type: ignore[arg-type]


def test_bad_solver_arguments_raise_naming_them() -> None:
    fine = ToyBackend(ToyFine())
    with pytest.raises(TypeError, match="^coarse"):
        PararealSolver(coarse=object(), fine=fine)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^fine"):
        PararealSolver(coarse=ToyCoarse(), fine=ToyBackend(ToyFine(), workers=0))
    with pytest.raises(TypeError, match="^projector"):
        PararealSolver(coarse=ToyCoarse(), fine=fine, projector=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^cost_estimator"):
        PararealSolver(coarse=ToyCoarse(), fine=fine, cost_estimator=1.0)  # type: ignore[arg-type]
    solver = PararealSolver(coarse=ToyCoarse(), fine=fine, cost_estimator=CostEstimator())
    states, controls, durations = random_problem(21, sequences=1, slices=2)
    with pytest.raises(ValueError, match="^model"):
        solver.predict("medium", states, controls, durations)
    with pytest.raises(ValueError, match="^options"):
        solver.predict("parareal", states, controls, durations)
    with pytest.raises(ValueError, match="^deadline"):
        solver.predict_fine(states, controls, durations, deadline=0.0)
