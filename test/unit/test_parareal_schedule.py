"""Cost model (ISRR Eq 4 generalised to batches) and the ``auto`` schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_parareal_toy_system import ToyBackend, ToyCoarse, ToyFine, random_problem, serial_fine

from parapush.parareal import CostEstimator, PararealOptions, PararealSolver
from parapush.parareal.cost_estimate import call_overhead_of
from parapush.parareal.schedule import (
    ProblemSize,
    StepCosts,
    choose_schedule,
    paper_speedup,
    parareal_coarse_steps,
    parareal_fine_rows,
    parareal_iteration_time,
    parareal_wall_time,
    sample_parallel_wall_time,
    serial_fine_wall_time,
)


# -- Eq 4 -----------------------------------------------------------------------------------
def test_paper_speedup_hand_values() -> None:
    # ISRR Sec 2.1: negligible coarse cost, N = 4, K = 1 -> N / K = 4
    assert paper_speedup(4, 1, 0.0) == pytest.approx(4.0)
    # the paper's ratio c_c / c_f = 1/228: 1 / (2/228 + 1/4) = 3.8644...
    assert paper_speedup(4, 1, 1 / 228) == pytest.approx(1.0 / (2.0 / 228.0 + 0.25), rel=1e-12)
    assert paper_speedup(4, 1, 1 / 228) == pytest.approx(3.86441, abs=1e-5)
    # K = 2: 1 / (3/228 + 2/4) = 1.9487...
    assert paper_speedup(4, 2, 1 / 228) == pytest.approx(1.94872, abs=1e-5)
    # K = N is slower than serial fine
    assert paper_speedup(4, 4, 1 / 228) < 1.0


@settings(max_examples=60, deadline=None)
@given(
    slices=st.integers(1, 16),
    data=st.data(),
    ratio=st.floats(1e-4, 0.5),
)
def test_generalised_model_reduces_to_eq4_for_one_sequence_and_n_workers(
    slices: int, data: st.DataObject, ratio: float
) -> None:
    iterations = data.draw(st.integers(0, slices))
    costs = StepCosts(coarse_step=ratio * 0.05, fine_control=0.05)
    size = ProblemSize(sequences=1, slices=slices, workers=slices)
    parareal = parareal_wall_time(size, iterations, costs, skip_exact_slices=False)
    speedup = serial_fine_wall_time(size, costs) / parareal
    assert speedup == pytest.approx(paper_speedup(slices, iterations, ratio), rel=1e-12)
    # skipping exact slices never costs more
    assert parareal_wall_time(size, iterations, costs) <= parareal + 1e-15


def test_generalised_model_hand_checked() -> None:
    costs = StepCosts(coarse_step=1e-4, fine_control=1e-2)
    # B = 1, N = 4, P = 2, K = 2: coarse steps 4 + 3 + 2 = 9; fine rows 4, 3 -> 2 + 2 batches
    size = ProblemSize(sequences=1, slices=4, workers=2)
    assert parareal_fine_rows(size, 2) == [4, 3]
    assert parareal_coarse_steps(size, 2) == 9
    assert parareal_wall_time(size, 2, costs) == pytest.approx(9e-4 + 4e-2)
    assert parareal_wall_time(size, 2, costs, skip_exact_slices=False) == pytest.approx(12e-4 + 4e-2)
    assert parareal_iteration_time(size, 1, costs) == pytest.approx(2e-2 + 2e-4)
    # B = 1: sample parallelism is serial fine
    assert sample_parallel_wall_time(size, costs) == pytest.approx(4e-2)
    # B = 20, P = 2, N = 4: sample-parallel 4 * 10 c_f; Parareal K = 1: 4 c_c + 3 c_c + 40 c_f
    batch = ProblemSize(sequences=20, slices=4, workers=2)
    assert sample_parallel_wall_time(batch, costs) == pytest.approx(0.4)
    assert parareal_wall_time(batch, 1, costs) == pytest.approx(7e-4 + 0.4)
    assert serial_fine_wall_time(batch, costs) == pytest.approx(0.8)


def test_auto_rule_hand_cases() -> None:
    costs = StepCosts(coarse_step=22e-6, fine_control=6.7e-3)
    one = ProblemSize(sequences=1, slices=4, workers=2)
    assert choose_schedule(one, 1, costs).schedule == "parareal"  # 2 c_f + 7 c_c < 4 c_f
    assert choose_schedule(one, 4, costs).schedule == "sample_parallel"  # K = N: never faster
    assert choose_schedule(one, 0, costs).schedule == "parareal"  # coarse only
    planner = ProblemSize(sequences=20, slices=4, workers=2)
    choice = choose_schedule(planner, 1, costs)
    assert choice.schedule == "sample_parallel"
    assert choice.predicted_sample_parallel < choice.predicted_parareal
    # 16 workers, 20 sequences, K = 1 (design notes: Parareal ~1.5x there)
    wide = ProblemSize(sequences=20, slices=4, workers=16)
    assert choose_schedule(wide, 1, costs).schedule == "parareal"
    assert choose_schedule(wide, 2, costs).schedule == "sample_parallel"
    # B = 3 on P = 2 leaves a worker idle half the time: Parareal K = 1 wins (6 c_f vs 8 c_f)
    odd = ProblemSize(sequences=3, slices=4, workers=2)
    assert choose_schedule(odd, 1, costs).schedule == "parareal"


@settings(max_examples=80, deadline=None)
@given(
    workers=st.integers(1, 32),
    multiple=st.integers(1, 8),
    slices=st.integers(1, 12),
    data=st.data(),
    ratio=st.floats(0.0, 0.1),
)
def test_auto_picks_sample_parallel_when_the_batch_fills_the_workers(
    workers: int, multiple: int, slices: int, data: st.DataObject, ratio: float
) -> None:
    iterations = data.draw(st.integers(1, slices))
    size = ProblemSize(sequences=workers * multiple, slices=slices, workers=workers)
    costs = StepCosts(coarse_step=ratio * 1e-2, fine_control=1e-2)
    assert choose_schedule(size, iterations, costs).schedule == "sample_parallel"


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: ProblemSize(sequences=0, slices=4, workers=2), "sequences"),
        (lambda: ProblemSize(sequences=1, slices=4.0, workers=2), "slices"),
        (lambda: ProblemSize(sequences=1, slices=4, workers=0), "workers"),
        (lambda: StepCosts(coarse_step=-1.0, fine_control=1.0), "coarse_step"),
        (lambda: StepCosts(coarse_step=1.0, fine_control=0.0), "fine_control"),
        (lambda: StepCosts(coarse_step=1.0, fine_control=float("inf")), "fine_control"),
        (lambda: paper_speedup(4, 5, 0.1), None),
        (lambda: paper_speedup(4, -1, 0.1), "iterations"),
        (lambda: paper_speedup(4, 1, -0.1), "cost_ratio"),
        (
            lambda: parareal_wall_time(
                ProblemSize(sequences=1, slices=4, workers=2), 5, StepCosts(coarse_step=0.0, fine_control=1.0)
            ),
            "iterations",
        ),
        (lambda: CostEstimator(smoothing=0.0), "smoothing"),
    ],
)
def test_bad_cost_model_arguments_raise_naming_them(call: object, name: str | None) -> None:
    if name is None:  # Eq 4 itself allows K > N (it is only a formula): no error expected
        assert call() > 0.0  # type: ignore[operator]
        return
    with pytest.raises((ValueError, TypeError), match=rf"^{name}"):
        call()  # type: ignore[operator]


def test_the_call_overhead_counts_once_per_fine_call() -> None:
    """K calls for Parareal, N for sample-parallel: with B = P = N = 4 and K = 1 (4 c_f + 7 c_c
    + c_o against 4 c_f + 4 c_o) the overhead turns the choice once c_o > 7 c_c / 3."""
    size = ProblemSize(sequences=4, slices=4, workers=4)
    plain = StepCosts(coarse_step=1e-3, fine_control=1e-2)
    assert choose_schedule(size, 1, plain).schedule == "sample_parallel"
    for overhead, expected in ((2e-3, "sample_parallel"), (2.5e-3, "parareal")):
        costs = StepCosts(coarse_step=1e-3, fine_control=1e-2, call_overhead=overhead)
        choice = choose_schedule(size, 1, costs)
        assert choice.predicted_parareal == pytest.approx(4e-2 + 7e-3 + overhead)
        assert choice.predicted_sample_parallel == pytest.approx(4e-2 + 4 * overhead)
        assert choice.schedule == expected
    costs = StepCosts(coarse_step=1e-3, fine_control=1e-2, call_overhead=5e-3)
    assert parareal_iteration_time(size, 0, costs) == pytest.approx(4e-2 + 3e-3 + 5e-3)
    with pytest.raises(ValueError, match="^call_overhead"):
        StepCosts(coarse_step=1e-3, fine_control=1e-2, call_overhead=-1.0)


def test_cost_estimator_takes_the_call_overhead_off_the_fine_rate() -> None:
    estimator = CostEstimator(smoothing=1.0)
    # 4 rows of 1 s on 2 workers in 0.025 s of which 0.005 s overhead: 0.01 s per simulated s
    estimator.record_fine(wall_time=0.025, rows=4, mean_duration=1.0, workers=2, call_overhead=0.005)
    estimator.record_coarse(wall_time=1e-4, steps=1)
    assert estimator.fine_rate == pytest.approx(0.01) and estimator.call_overhead == 0.005
    costs = estimator.step_costs(1.0)
    assert costs is not None and costs.call_overhead == 0.005


def test_call_overhead_of_follows_wrapped_backends() -> None:
    class Measured:
        call_overhead = 0.004

    class Wrapper:
        def __init__(self, backend: object) -> None:
            self.backend = backend

    assert call_overhead_of(Wrapper(Wrapper(Measured()))) == 0.004
    assert call_overhead_of(ToyBackend(ToyFine(), workers=2)) == 0.0


# -- running estimate -----------------------------------------------------------------------
def test_cost_estimator_running_average() -> None:
    estimator = CostEstimator(smoothing=0.5)
    assert not estimator.ready and estimator.step_costs(1.0) is None
    # 4 rows of 1 s on 2 workers in 0.02 s: 2 simulated s per worker -> 0.01 s per simulated s
    estimator.record_fine(wall_time=0.02, rows=4, mean_duration=1.0, workers=2)
    estimator.record_coarse(wall_time=3e-4, steps=3)
    assert estimator.ready
    costs = estimator.step_costs(1.5)
    assert costs is not None
    assert costs.fine_control == pytest.approx(0.015) and costs.coarse_step == pytest.approx(1e-4)
    estimator.record_fine(wall_time=0.06, rows=1, mean_duration=2.0, workers=2)  # 0.03 s/s
    assert estimator.fine_rate == pytest.approx(0.5 * 0.01 + 0.5 * 0.03)
    estimator.record_iterations(2)
    estimator.record_iterations(4)
    assert estimator.mean_iterations == pytest.approx(3.0)
    with pytest.raises(ValueError, match="^fine_rate"):
        estimator.seed(fine_rate=0.0, coarse_step=1e-4)


# -- auto schedule in the solver ------------------------------------------------------------
def _solver(workers: int, estimator: CostEstimator) -> PararealSolver:
    return PararealSolver(
        coarse=ToyCoarse(), fine=ToyBackend(ToyFine(), workers=workers), cost_estimator=estimator
    )


def test_auto_picks_sample_parallel_for_a_planner_batch_and_parareal_for_one_trajectory() -> None:
    estimator = CostEstimator()
    # the design notes' costs: c_f = 6.7 ms per 1 s control, c_c = 22 us
    estimator.seed(fine_rate=6.7e-3, coarse_step=22e-6)
    solver = _solver(2, estimator)
    options = PararealOptions(iterations=1)
    states, controls, durations = random_problem(30, sequences=20, slices=4)
    durations[:] = 1.0
    batch = solver.solve(states, controls, durations, options, schedule="auto")
    assert batch.schedule == "sample_parallel" and batch.schedule_choice.requested == "auto"
    np.testing.assert_array_equal(batch.trajectories, serial_fine(ToyFine(), states, controls, durations))
    estimator.seed(fine_rate=6.7e-3, coarse_step=22e-6)
    single = solver.solve(states[0], controls[0], durations[0], options, schedule="auto")
    assert single.schedule == "parareal" and single.iterations_used == 1
    choice = single.schedule_choice
    assert choice.predicted_parareal == pytest.approx(2 * 6.7e-3 + 7 * 22e-6)
    assert choice.predicted_sample_parallel == pytest.approx(4 * 6.7e-3)


def test_auto_calibrates_when_it_has_no_costs_and_learns_from_solves() -> None:
    estimator = CostEstimator()
    solver = _solver(2, estimator)
    states, controls, durations = random_problem(31, sequences=2, slices=4)
    result = solver.solve(states, controls, durations, PararealOptions(iterations=1), schedule="auto")
    assert estimator.ready
    choice = result.schedule_choice
    assert choice is not None and choice.costs is not None
    assert math.isfinite(choice.predicted_parareal) and math.isfinite(choice.predicted_sample_parallel)
    assert result.schedule == choice.schedule
    before = estimator.fine_rate
    solver.solve(states, controls, durations, PararealOptions(iterations=2))
    assert estimator.fine_rate != before  # running estimate updated by the solve's own timings
    costs = solver.calibrate(states, controls, durations)
    assert costs.fine_control > 0.0 and costs.coarse_step > 0.0


def test_tolerance_driven_auto_uses_the_iterations_seen_so_far() -> None:
    estimator = CostEstimator()
    estimator.seed(fine_rate=6.7e-3, coarse_step=22e-6)
    solver = _solver(2, estimator)
    states, controls, durations = random_problem(32, sequences=1, slices=8)
    options = PararealOptions(tolerance_position=1e-1)
    first = solver.solve(states, controls, durations, options, schedule="parareal")
    assert first.stop_reason == "tolerance"
    assert estimator.mean_iterations == pytest.approx(first.iterations_used)
    estimator.seed(fine_rate=6.7e-3, coarse_step=22e-6)
    second = solver.solve(states, controls, durations, options, schedule="auto")
    assert second.schedule_choice.iterations_assumed == first.iterations_used
