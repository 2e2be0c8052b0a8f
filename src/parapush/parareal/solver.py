r"""Parareal for pushing predictions (ISRR 2019, Eq 3), batched over control sequences.

Given initial states x_0 and controls u_0..u_{N-1} (each applied for Delta t_n), the
solver predicts x_1..x_N by combining a cheap coarse propagator C with the fine
propagator F (MuJoCo behind a parallel backend)::

    x^0_{n+1}     = C(x^0_n)                                   initial coarse sweep
    x^{k+1}_{n+1} = C(x^{k+1}_n) + F(x^k_n) - C(x^k_n)         Eq 3, n = 0..N-1

(u_n and Delta t_n omitted). F(x^k_n) for all slices and all sequences is one call of
the fine backend, which runs the rows in parallel; only C runs serially in time.

Implementation notes:

* After k iterations the states x_0..x_k are exactly the serial fine solution. Iteration
  k + 1 therefore computes F only on the slices n = k..N-1 and sets
  x^{k+1}_{k+1} = F(x^k_k) directly (the two coarse terms cancel in exact arithmetic;
  assigning avoids rounding), so K = N reproduces serial fine bit for bit.
* The jump F(x^k_n) - C(x^k_n) has its yaw components wrapped to [-pi, pi), so models that
  wrap yaw differently still combine correctly (equal to Eq 3 modulo 2 pi).
* Every corrected state (and the initial coarse sweep) may be passed through the
  feasibility projection (ISRR Eq 9) so that no body starts a fine run inside another.
* The batch is vectorised: one coarse call per slice for all sequences, one fine call
  per iteration for all (sequence, slice) rows still needed. A sequence whose update is
  within the tolerances stops iterating while the others go on; rows of a sequence never
  depend on the other sequences, so a batch gives the same result as solving each
  sequence alone.
* A non-finite state from any model raises :class:`PhysicsDivergenceError` naming the
  sequence and the slice; it is never returned as a prediction.

Besides Parareal, the solver offers the coarse model alone (K = 0) and the fine model
computed serially in time but in parallel across sequences ("sample-parallel"), with a
cost model (:mod:`parapush.parareal.schedule`) that picks the faster of Parareal and
sample-parallel (``schedule="auto"``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from parapush.parareal.cost_estimate import CostEstimator, call_overhead_of
from parapush.parareal.exceptions import PhysicsDivergenceError
from parapush.parareal.inputs import PredictionProblem, prepare_problem
from parapush.parareal.options import PararealOptions
from parapush.parareal.result import PararealResult
from parapush.parareal.schedule import (
    SCHEDULES,
    ProblemSize,
    ScheduleChoice,
    StepCosts,
    choose_schedule,
    parareal_iteration_time,
    parareal_wall_time,
    sample_parallel_wall_time,
)
from parapush.read_only import ReadOnly
from parapush.scene.state import StateLayout, wrap_angle

if TYPE_CHECKING:
    from parapush.physics.backends import FineBackend
    from parapush.physics.projection import FeasibilityProjector
    from parapush.physics.propagator import Propagator

__all__ = [
    "MODELS",
    "PararealOptions",
    "PararealResult",
    "PararealSolver",
    "PhysicsDivergenceError",
]

MODELS = ("coarse", "parareal", "fine")
"""Model names accepted by :meth:`PararealSolver.predict`."""


@dataclass
class _Clock:
    """Wall-time accounting of one solve, s."""

    start: float = field(default_factory=time.perf_counter)
    coarse: float = 0.0
    fine: float = 0.0
    correction: float = 0.0
    coarse_steps: int = 0
    fine_calls: list[tuple[float, int, float]] = field(default_factory=list)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def result_timings(self) -> dict[str, float | int]:
        """The timing fields of a :class:`PararealResult` at this instant."""
        return {
            "time_coarse": self.coarse,
            "time_fine": self.fine,
            "time_correction": self.correction,
            "time_total": self.elapsed(),
            "fine_rows": sum(count for _, count, _ in self.fine_calls),
        }


def _position_indices(layout: StateLayout) -> np.ndarray:
    """Indices of the pusher x, y and every object's x, y in the state vector."""
    objects = [index for i in range(layout.object_count) for index in (2 + 3 * i, 3 + 3 * i)]
    return np.array([0, 1, *objects])


class PararealSolver:
    """Predicts trajectories with the coarse model, Parareal, or the fine model.

    Args:
        coarse: C, a propagator (``layout`` and ``propagate(states (M, D), controls (M, 2),
            durations (M,)) -> (M, D)``), e.g. the analytical or the learned coarse model.
        fine: the fine backend F (``propagate`` as above, ``workers``): its rows run in
            parallel on ``workers`` workers. The solver does not close it.
        projector: optional feasibility projection (``project(states (M, D)) -> (M, D)``)
            applied after each correction when the options ask for it.
        cost_estimator: running cost estimates for the ``auto`` schedule and the deadline
            rule; a fresh one when omitted. Shared estimators let solvers learn together.
    """

    def __init__(
        self,
        *,
        coarse: Propagator,
        fine: FineBackend,
        projector: FeasibilityProjector | None = None,
        cost_estimator: CostEstimator | None = None,
    ) -> None:
        layout = getattr(coarse, "layout", None)
        if not isinstance(layout, StateLayout) or not callable(getattr(coarse, "propagate", None)):
            raise TypeError("coarse: expected a propagator with a StateLayout `layout` and `propagate()`")
        if not callable(getattr(fine, "propagate", None)):
            raise TypeError("fine: expected a fine backend with `propagate()` and `workers`")
        workers = getattr(fine, "workers", None)
        if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
            raise TypeError(f"fine: `workers` must be an integer >= 1, got {workers!r}")
        fine_layout = getattr(fine, "layout", None)
        if fine_layout is not None and fine_layout != layout:
            raise ValueError(f"fine: layout {fine_layout} differs from the coarse model's {layout}")
        if projector is not None and not callable(getattr(projector, "project", None)):
            raise TypeError("projector: expected an object with `project(states)` or None")
        if cost_estimator is not None and not isinstance(cost_estimator, CostEstimator):
            raise TypeError(f"cost_estimator: expected a CostEstimator, got {type(cost_estimator).__name__}")
        self._coarse = coarse
        self._fine = fine
        self._projector = projector
        self._layout = layout
        self._workers = int(workers)
        self._costs = cost_estimator if cost_estimator is not None else CostEstimator()
        self._positions = _position_indices(layout)
        self._yaws = layout.yaw_indices

    # -- properties -----------------------------------------------------------------------
    layout: ReadOnly[StateLayout] = ReadOnly("_layout", "State layout of the models.")

    workers: ReadOnly[int] = ReadOnly("_workers", "P, the fine backend's workers.")

    cost_estimator: ReadOnly[CostEstimator] = ReadOnly("_costs", "The running cost estimates (updated by every solve).")

    # -- public API -----------------------------------------------------------------------
    def solve(
        self,
        initial_states: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
        options: PararealOptions,
        *,
        schedule: str = "parareal",
    ) -> PararealResult:
        """Predict x_1..x_N of every sequence with Parareal.

        Args:
            initial_states: (D,) or (B, D) states x_0; one state is shared by all sequences.
            controls: (N, 2) or (B, N, 2) pusher velocities, m/s; one sequence is applied to
                every initial state.
            durations: (N,) or (B, N) control durations, s, > 0.
            options: stopping rules (K <= N is checked here).
            schedule: ``"parareal"`` (Eq 3), ``"sample_parallel"`` (the fine model serially
                in time, the sequences in parallel: exact, so it satisfies any iteration or
                tolerance rule) or ``"auto"`` (the one the cost model predicts faster; the
                first ``auto`` solve without cost estimates calibrates them, which costs
                about one fine control).
        Returns:
            a :class:`PararealResult` with trajectories (B, N+1, D).
        Raises:
            TypeError / ValueError naming the offending argument;
            PhysicsDivergenceError when a model returns a non-finite state.
        """
        if not isinstance(options, PararealOptions):
            raise TypeError(f"options: expected PararealOptions, got {type(options).__name__}")
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule: expected one of {SCHEDULES}, got {schedule!r}")
        clock = _Clock()
        problem = prepare_problem(initial_states, controls, durations, self._layout)
        limit = options.iteration_limit(problem.slices)
        if schedule == "sample_parallel" and limit == 0:
            raise ValueError(
                "schedule: 'sample_parallel' computes the fine model but options.iterations = 0 asks "
                "for the coarse model alone; use schedule='parareal' or 'auto'"
            )
        choice = self._choose(problem, options, limit, schedule)
        if choice.schedule == "sample_parallel":
            return self._sample_parallel(problem, clock, options.deadline, options.project, choice)
        return self._parareal(problem, clock, options, limit, choice)

    def predict_coarse(
        self, initial_states: np.ndarray, controls: np.ndarray, durations: np.ndarray, *, project: bool = True
    ) -> PararealResult:
        """The coarse model alone (Parareal with K = 0); arguments as :meth:`solve`."""
        return self.solve(initial_states, controls, durations, PararealOptions(iterations=0, project=project))

    def predict_fine(
        self,
        initial_states: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
        *,
        deadline: float | None = None,
    ) -> PararealResult:
        """The fine model, serially in time and in parallel across sequences.

        Arguments as :meth:`solve`. With a ``deadline`` (s) that passes before the end, the
        states not yet computed are filled in with the coarse model from the last exact
        state and ``exact_states`` says how many are exact.
        """
        if deadline is not None:
            deadline = PararealOptions(deadline=deadline).deadline  # validates, naming `deadline`
        clock = _Clock()
        problem = prepare_problem(initial_states, controls, durations, self._layout)
        choice = self._describe(problem, problem.slices, "sample_parallel", "sample_parallel")
        return self._sample_parallel(problem, clock, deadline, True, choice)

    def predict(
        self,
        model: str,
        initial_states: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
        *,
        options: PararealOptions | None = None,
        schedule: str = "parareal",
    ) -> PararealResult:
        """Predict with the model named ``model``: ``"coarse"``, ``"parareal"`` or ``"fine"``.

        ``options`` is required for ``"parareal"`` (its stopping rules); for ``"fine"`` only
        its deadline is used; ``"coarse"`` uses its ``project`` switch. ``schedule`` applies
        to ``"parareal"``.
        """
        if model not in MODELS:
            raise ValueError(f"model: expected one of {MODELS}, got {model!r}")
        if options is not None and not isinstance(options, PararealOptions):
            raise TypeError(f"options: expected PararealOptions or None, got {type(options).__name__}")
        if model == "coarse":
            project = options.project if options is not None else True
            return self.predict_coarse(initial_states, controls, durations, project=project)
        if model == "fine":
            deadline = options.deadline if options is not None else None
            return self.predict_fine(initial_states, controls, durations, deadline=deadline)
        if options is None:
            raise ValueError("options: model 'parareal' needs PararealOptions (its stopping rules)")
        return self.solve(initial_states, controls, durations, options, schedule=schedule)

    def calibrate(self, initial_states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> StepCosts:
        """Measure c_f and c_c on this problem and feed the cost estimator.

        Runs the fine model on the first control of P rows (one per worker, taken from the
        batch) and one coarse step with a correction on all B sequences: about one fine
        control of wall time. Returns the costs for the problem's mean duration.
        """
        problem = prepare_problem(initial_states, controls, durations, self._layout)
        self._calibrate(problem)
        costs = self._costs.step_costs(problem.mean_duration)
        if costs is None:  # pragma: no cover - _calibrate always records both costs
            raise RuntimeError("cost estimator: calibration recorded no costs")
        return costs

    # -- schedule -------------------------------------------------------------------------
    def _size(self, problem: PredictionProblem) -> ProblemSize:
        return ProblemSize(sequences=problem.sequences, slices=problem.slices, workers=self._workers)

    def _describe(
        self, problem: PredictionProblem, iterations: int, schedule: str, requested: str
    ) -> ScheduleChoice:
        costs = self._costs.step_costs(problem.mean_duration)
        if costs is None:
            return ScheduleChoice(schedule=schedule, requested=requested, iterations_assumed=iterations)
        size = self._size(problem)
        return ScheduleChoice(
            schedule=schedule,
            requested=requested,
            iterations_assumed=iterations,
            predicted_parareal=parareal_wall_time(size, iterations, costs),
            predicted_sample_parallel=sample_parallel_wall_time(size, costs),
            costs=costs,
        )

    def _choose(
        self, problem: PredictionProblem, options: PararealOptions, limit: int, schedule: str
    ) -> ScheduleChoice:
        iterations = limit
        if options.has_tolerance and self._costs.mean_iterations is not None:
            iterations = min(limit, math.ceil(self._costs.mean_iterations - 1e-9))
        if schedule != "auto":
            return self._describe(problem, iterations, schedule, schedule)
        if limit == 0:
            return self._describe(problem, 0, "parareal", "auto")
        if not self._costs.ready:
            self._calibrate(problem)
        costs = self._costs.step_costs(problem.mean_duration)
        if costs is None:  # pragma: no cover - _calibrate always records both costs
            raise RuntimeError("cost estimator: calibration recorded no costs")
        return choose_schedule(self._size(problem), iterations, costs)

    def _calibrate(self, problem: PredictionProblem) -> None:
        clock = _Clock()
        rows = np.arange(self._workers) % problem.sequences
        self._fine_call(
            clock,
            problem.initial_states[rows],
            problem.controls[rows, 0],
            problem.durations[rows, 0],
            sequences=rows,
            slices=np.zeros(len(rows), dtype=int),
            iteration=None,
        )
        started = time.perf_counter()
        coarse = self._coarse_call(
            clock, problem, problem.initial_states, np.arange(problem.sequences), 0, iteration=0
        )
        jump = coarse - problem.initial_states
        jump[:, self._yaws] = wrap_angle(jump[:, self._yaws])
        self._project(problem.initial_states + jump, np.arange(problem.sequences), 0, problem, 0)
        elapsed_coarse = time.perf_counter() - started
        wall, count, mean_duration = clock.fine_calls[0]
        self._costs.record_fine(
            wall_time=wall, rows=count, mean_duration=mean_duration, workers=self._workers,
            call_overhead=call_overhead_of(self._fine),
        )
        self._costs.record_coarse(wall_time=elapsed_coarse, steps=1)

    # -- model calls ----------------------------------------------------------------------
    def _check_output(
        self,
        output: Any,
        model: str,
        starts: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
        sequences: np.ndarray,
        slices: np.ndarray,
        iteration: int | None,
    ) -> np.ndarray:
        states = np.asarray(output, dtype=float)
        if states.shape != starts.shape:
            raise RuntimeError(
                f"{model} model returned shape {states.shape} for {starts.shape[0]} rows; "
                f"expected {starts.shape}"
            )
        finite = np.isfinite(states).all(axis=1)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            raise PhysicsDivergenceError(
                model=model,
                sequence=int(sequences[row]),
                slice_index=int(slices[row]),
                iteration=iteration,
                start_state=starts[row],
                control=controls[row],
                duration=float(durations[row]),
            )
        return states

    def _fine_call(
        self,
        clock: _Clock,
        starts: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
        *,
        sequences: np.ndarray,
        slices: np.ndarray,
        iteration: int | None,
    ) -> np.ndarray:
        starts = np.ascontiguousarray(starts)
        controls = np.ascontiguousarray(controls)
        durations = np.ascontiguousarray(durations)
        started = time.perf_counter()
        output = self._fine.propagate(starts, controls, durations)
        elapsed = time.perf_counter() - started
        clock.fine += elapsed
        clock.fine_calls.append((elapsed, starts.shape[0], float(durations.mean())))
        return self._check_output(output, "fine", starts, controls, durations, sequences, slices, iteration)

    def _coarse_call(
        self,
        clock: _Clock,
        problem: PredictionProblem,
        starts: np.ndarray,
        sequences: np.ndarray,
        slice_index: int,
        *,
        iteration: int,
    ) -> np.ndarray:
        controls = np.ascontiguousarray(problem.controls[sequences, slice_index])
        durations = np.ascontiguousarray(problem.durations[sequences, slice_index])
        starts = np.ascontiguousarray(starts)
        started = time.perf_counter()
        output = self._coarse.propagate(starts, controls, durations)
        clock.coarse += time.perf_counter() - started
        clock.coarse_steps += 1
        slices = np.full(len(sequences), slice_index)
        return self._check_output(output, "coarse", starts, controls, durations, sequences, slices, iteration)

    def _project(
        self,
        states: np.ndarray,
        sequences: np.ndarray,
        slice_index: int,
        problem: PredictionProblem,
        iteration: int,
    ) -> np.ndarray:
        """Project states of x_{slice_index + 1} (rows = ``sequences``) onto feasible states."""
        if self._projector is None:
            return states
        output = self._projector.project(states)
        controls = problem.controls[sequences, slice_index]
        durations = problem.durations[sequences, slice_index]
        slices = np.full(len(sequences), slice_index)
        return self._check_output(
            output, "projection", states, controls, durations, sequences, slices, iteration
        )

    # -- Parareal -------------------------------------------------------------------------
    def _parareal(
        self,
        problem: PredictionProblem,
        clock: _Clock,
        options: PararealOptions,
        limit: int,
        choice: ScheduleChoice,
    ) -> PararealResult:
        batch, slices, dimension = problem.sequences, problem.slices, problem.dimension
        project = options.project and self._projector is not None
        everyone = np.arange(batch)
        trajectories = np.empty((batch, slices + 1, dimension))
        trajectories[:, 0] = problem.initial_states
        coarse_of_iterate = np.empty((batch, slices, dimension))  # C(x^k_n), n = 0..N-1

        # Initial coarse sweep: x^0_{n+1} = C(x^0_n) (projected).
        for n in range(slices):
            predicted = self._coarse_call(clock, problem, trajectories[:, n], everyone, n, iteration=0)
            coarse_of_iterate[:, n] = predicted
            started = time.perf_counter()
            trajectories[:, n + 1] = (
                self._project(predicted, everyone, n, problem, 0) if project else predicted
            )
            clock.correction += time.perf_counter() - started

        iterates = [trajectories.copy()] if options.keep_iterates else None
        active = np.ones(batch, dtype=bool)
        sequence_iterations = np.zeros(batch, dtype=int)
        update_position: list[float] = []
        update_angle: list[float] = []
        completed = 0
        stop_reason: str | None = None
        last_iteration_time: float | None = None
        size = self._size(problem)
        costs = self._costs.step_costs(problem.mean_duration)

        while active.any():
            if completed >= limit:
                stop_reason = "iterations"
                break
            if options.deadline is not None:
                predicted_time = last_iteration_time
                if predicted_time is None and costs is not None:
                    predicted_time = parareal_iteration_time(
                        size, completed, costs, active_sequences=int(active.sum())
                    )
                elapsed = clock.elapsed()
                if elapsed >= options.deadline or elapsed + (predicted_time or 0.0) > options.deadline:
                    stop_reason = "deadline"
                    break
            iteration_started = time.perf_counter()
            rows = np.flatnonzero(active)
            position_change, angle_change = self._iterate(
                problem, clock, trajectories, coarse_of_iterate, rows, completed, project
            )
            completed += 1
            sequence_iterations[rows] = completed
            update_position.append(float(position_change.max()))
            update_angle.append(float(angle_change.max()))
            if iterates is not None:
                iterates.append(trajectories.copy())
            if completed == slices:
                active[rows] = False
            elif options.has_tolerance:
                within = np.ones(len(rows), dtype=bool)
                if options.tolerance_position is not None:
                    within &= position_change <= options.tolerance_position
                if options.tolerance_angle is not None:
                    within &= angle_change <= options.tolerance_angle
                active[rows[within]] = False
            last_iteration_time = time.perf_counter() - iteration_started

        exact_states = sequence_iterations + 1
        if np.all(exact_states == slices + 1):
            stop_reason = "converged"
        elif stop_reason is None:
            stop_reason = "tolerance"

        self._record(clock, problem, options, stop_reason, completed)
        return PararealResult(
            trajectories=trajectories,
            iterations_used=completed,
            sequence_iterations=sequence_iterations,
            exact_states=exact_states,
            update_position=np.array(update_position),
            update_angle=np.array(update_angle),
            iterates=np.stack(iterates) if iterates is not None else None,
            stop_reason=stop_reason,
            schedule="parareal",
            schedule_choice=choice,
            **clock.result_timings(),
        )

    def _iterate(
        self,
        problem: PredictionProblem,
        clock: _Clock,
        trajectories: np.ndarray,
        coarse_of_iterate: np.ndarray,
        rows: np.ndarray,
        completed: int,
        project: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One Parareal iteration k -> k + 1 (k = ``completed``) for the sequences ``rows``.

        Updates ``trajectories`` and ``coarse_of_iterate`` in place; returns the largest
        position change (m) and yaw change (rad) of each of these sequences.
        """
        slices, dimension = problem.slices, problem.dimension
        iteration = completed + 1
        remaining = slices - completed  # slices n = k..N-1 still needing F
        count = len(rows)
        sequence_ids = np.repeat(rows, remaining)
        slice_ids = np.tile(np.arange(completed, slices), count)
        fine = self._fine_call(
            clock,
            trajectories[rows, completed:slices].reshape(count * remaining, dimension),
            problem.controls[rows, completed:slices].reshape(count * remaining, 2),
            problem.durations[rows, completed:slices].reshape(count * remaining),
            sequences=sequence_ids,
            slices=slice_ids,
            iteration=iteration,
        ).reshape(count, remaining, dimension)

        started = time.perf_counter()
        coarse_before = clock.coarse
        updated = trajectories[rows]
        updated[:, completed + 1] = fine[:, 0]  # F(x^k_k): exact
        for n in range(completed + 1, slices):
            predicted = self._coarse_call(clock, problem, updated[:, n], rows, n, iteration=iteration)
            jump = fine[:, n - completed] - coarse_of_iterate[rows, n]
            jump[:, self._yaws] = wrap_angle(jump[:, self._yaws])
            corrected = predicted + jump
            updated[:, n + 1] = (
                self._project(corrected, rows, n, problem, iteration) if project else corrected
            )
            coarse_of_iterate[rows, n] = predicted
        change = updated[:, completed + 1 :] - trajectories[rows, completed + 1 :]
        position_change = np.abs(change[..., self._positions]).max(axis=(1, 2))
        angle_change = np.abs(wrap_angle(change[..., self._yaws])).max(axis=(1, 2))
        trajectories[rows] = updated
        clock.correction += time.perf_counter() - started - (clock.coarse - coarse_before)
        return position_change, angle_change

    # -- sample-parallel fine -------------------------------------------------------------
    def _sample_parallel(
        self,
        problem: PredictionProblem,
        clock: _Clock,
        deadline: float | None,
        project: bool,
        choice: ScheduleChoice,
    ) -> PararealResult:
        batch, slices, dimension = problem.sequences, problem.slices, problem.dimension
        everyone = np.arange(batch)
        trajectories = np.empty((batch, slices + 1, dimension))
        trajectories[:, 0] = problem.initial_states
        exact = slices
        stop_reason = "converged"
        last_step_time: float | None = None
        costs = self._costs.step_costs(problem.mean_duration)
        if costs is not None:
            last_step_time = sample_parallel_wall_time(self._size(problem), costs) / slices
        for n in range(slices):
            if deadline is not None:
                elapsed = clock.elapsed()
                if elapsed >= deadline or elapsed + (last_step_time or 0.0) > deadline:
                    exact, stop_reason = n, "deadline"
                    break
            started = time.perf_counter()
            trajectories[:, n + 1] = self._fine_call(
                clock,
                trajectories[:, n],
                problem.controls[:, n],
                problem.durations[:, n],
                sequences=everyone,
                slices=np.full(batch, n),
                iteration=None,
            )
            last_step_time = time.perf_counter() - started
        if stop_reason == "deadline":
            use_projection = project and self._projector is not None
            for n in range(exact, slices):
                predicted = self._coarse_call(clock, problem, trajectories[:, n], everyone, n, iteration=0)
                trajectories[:, n + 1] = (
                    self._project(predicted, everyone, n, problem, 0) if use_projection else predicted
                )
        self._record(clock, problem, None, stop_reason, 0)
        return PararealResult(
            trajectories=trajectories,
            iterations_used=0,
            sequence_iterations=np.zeros(batch, dtype=int),
            exact_states=np.full(batch, exact + 1),
            update_position=np.zeros(0),
            update_angle=np.zeros(0),
            iterates=None,
            stop_reason=stop_reason,
            schedule="sample_parallel",
            schedule_choice=choice,
            **clock.result_timings(),
        )

    # -- bookkeeping ----------------------------------------------------------------------
    def _record(
        self,
        clock: _Clock,
        problem: PredictionProblem,
        options: PararealOptions | None,
        stop_reason: str,
        iterations: int,
    ) -> None:
        for wall, count, mean_duration in clock.fine_calls:
            self._costs.record_fine(
                wall_time=wall, rows=count, mean_duration=mean_duration, workers=self._workers,
                call_overhead=call_overhead_of(self._fine),
            )
        if clock.coarse_steps and options is not None:
            self._costs.record_coarse(wall_time=clock.coarse + clock.correction, steps=clock.coarse_steps)
        if options is not None and options.has_tolerance and stop_reason in ("tolerance", "converged"):
            self._costs.record_iterations(iterations)
