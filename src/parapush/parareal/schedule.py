r"""Cost model of Parareal and of sample-parallel fine prediction, and the ``auto`` choice.

Notation (ISRR 2019, Sec 2.1, generalised to a batch):

* B: control sequences predicted together (a planner's noisy samples), N: slices
  (controls) per sequence, K: Parareal iterations, P: workers of the fine backend.
* c_c: wall time of one *coarse step*: the coarse model applied to one control of all
  B sequences, with the Parareal correction and the feasibility projection, s.
* c_f: wall time of the fine model for one control of one sequence on one worker, s.
* c_o: the fine backend's overhead per call (a batch), s: scheduling and transfers, about
  nothing for threads, a millisecond or more for Ray actors on a cluster
  (:attr:`parapush.physics.backends.RayBackend.call_overhead`).

ISRR Eq 4 (B = 1, P = N, every slice recomputed in every iteration)::

    s_p = N c_f / ((1 + K) N c_c + K c_f) = 1 / ((1 + K) c_c / c_f + K / N)

Generalised wall time of Parareal as :class:`~parapush.parareal.solver.PararealSolver`
runs it. The initial coarse sweep costs N c_c. Iteration k + 1 (k = 0..K-1) starts from
an iterate whose states 0..k are exact, so it needs the fine model on the N - k slices
n = k..N-1 of every sequence, in one batch of B (N - k) rows spread over P workers, and
then N - k - 1 serial coarse steps for the correction::

    T_parareal = [N + sum_{k<K} (N - k - 1)] c_c + sum_{k<K} ceil(B (N - k) / P) c_f + K c_o

Without skipping the exact slices (``skip_exact_slices=False``, the paper's and the
authors' code's count)::

    T_parareal = (1 + K) N c_c + K ceil(B N / P) c_f + K c_o

which for B = 1 and P = N is the denominator of Eq 4.

Sample-parallel serial fine: the N controls are done one after the other, each one for
all B sequences at once on the P workers::

    T_sample_parallel = N ceil(B / P) c_f + N c_o

and plain serial fine on one worker costs T_serial = B N c_f. For one trajectory
(B = 1) sample parallelism has nothing to spread and T_sample_parallel = T_serial.

``auto`` picks the schedule with the smaller predicted wall time. When B is a multiple
of P the sample-parallel schedule keeps every worker busy doing only necessary work, so
Parareal (at least as much fine work, plus the coarse sweeps) cannot win. With B < P,
or a last round of sample-parallel that leaves workers idle (B = 3, P = 2: 2 rounds per
control), Parareal can use the idle workers: for B = 1, P = 2, N = 4, K = 1 it needs
2 c_f + 7 c_c against 4 c_f. The per-call overhead favours Parareal too: it makes K calls
where sample-parallel makes N (B = P = N = 4, K = 1: 4 c_f + 7 c_c + c_o against
4 c_f + 4 c_o, Parareal once c_o > 7 c_c / 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from parapush.validation import check_integer, check_non_negative

SCHEDULES = ("parareal", "sample_parallel", "auto")


@dataclass(frozen=True, kw_only=True)
class ProblemSize:
    """Size of a batched prediction.

    Attributes:
        sequences: B >= 1.
        slices: N >= 1.
        workers: P >= 1, workers of the fine backend.
    """

    sequences: int
    slices: int
    workers: int

    def __post_init__(self) -> None:
        check_integer("sequences", self.sequences, minimum=1)
        check_integer("slices", self.slices, minimum=1)
        check_integer("workers", self.workers, minimum=1)


@dataclass(frozen=True, kw_only=True)
class StepCosts:
    """Measured or assumed model costs.

    Attributes:
        coarse_step: c_c, s: one coarse control for the whole batch, including the
            correction and the projection.
        fine_control: c_f, s: one fine control of one sequence on one worker.
        call_overhead: c_o, s: the fine backend's overhead per call (0 for threads).
    """

    coarse_step: float
    fine_control: float
    call_overhead: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "coarse_step", check_non_negative("coarse_step", self.coarse_step))
        object.__setattr__(self, "fine_control", check_non_negative("fine_control", self.fine_control))
        object.__setattr__(self, "call_overhead", check_non_negative("call_overhead", self.call_overhead))
        if self.fine_control == 0.0:
            raise ValueError("fine_control: must be > 0 s")

    @property
    def ratio(self) -> float:
        """c_c / c_f (ISRR: 1/228; design notes: 1/250 to 1/3500)."""
        return self.coarse_step / self.fine_control


def paper_speedup(slices: int, iterations: int, cost_ratio: float) -> float:
    """ISRR Eq 4: s_p = 1 / ((1 + K) c_c / c_f + K / N), the speedup over serial fine.

    Args:
        slices: N.
        iterations: K >= 0 (K = 0 gives c_f / c_c, the coarse model's speedup).
        cost_ratio: c_c / c_f >= 0.
    """
    check_integer("slices", slices, minimum=1)
    check_integer("iterations", iterations, minimum=0)
    ratio = check_non_negative("cost_ratio", cost_ratio)
    denominator = (1 + iterations) * ratio + iterations / slices
    return math.inf if denominator == 0.0 else 1.0 / denominator


def _check_iterations(size: ProblemSize, iterations: int) -> int:
    check_integer("iterations", iterations, minimum=0)
    if iterations > size.slices:
        raise ValueError(f"iterations: K = {iterations} exceeds the number of slices N = {size.slices}")
    return iterations


def parareal_fine_rows(size: ProblemSize, iterations: int, *, skip_exact_slices: bool = True) -> list[int]:
    """Rows of the fine batch call of each iteration: [B (N - k) for k < K] (or B N each)."""
    _check_iterations(size, iterations)
    if not skip_exact_slices:
        return [size.sequences * size.slices] * iterations
    return [size.sequences * (size.slices - k) for k in range(iterations)]


def parareal_coarse_steps(size: ProblemSize, iterations: int, *, skip_exact_slices: bool = True) -> int:
    """Serial coarse steps: N + sum_{k<K} (N - k - 1) (or (1 + K) N)."""
    _check_iterations(size, iterations)
    if not skip_exact_slices:
        return (1 + iterations) * size.slices
    return size.slices + sum(size.slices - k - 1 for k in range(iterations))


def parareal_wall_time(
    size: ProblemSize, iterations: int, costs: StepCosts, *, skip_exact_slices: bool = True
) -> float:
    """Predicted wall time of Parareal with K iterations, s (formula in the module doc)."""
    rows = parareal_fine_rows(size, iterations, skip_exact_slices=skip_exact_slices)
    fine = sum(math.ceil(count / size.workers) for count in rows) * costs.fine_control
    coarse = parareal_coarse_steps(size, iterations, skip_exact_slices=skip_exact_slices) * costs.coarse_step
    return coarse + fine + len(rows) * costs.call_overhead


def parareal_iteration_time(
    size: ProblemSize, completed: int, costs: StepCosts, *, active_sequences: int | None = None
) -> float:
    """Predicted wall time of iteration ``completed + 1`` alone, s.

    ceil(B_a (N - k) / P) c_f + (N - k - 1) c_c + c_o with k = ``completed`` and B_a the
    sequences still iterating (default B).
    """
    check_integer("completed", completed, minimum=0)
    if completed >= size.slices:
        return 0.0
    active = size.sequences if active_sequences is None else active_sequences
    remaining = size.slices - completed
    return (
        math.ceil(active * remaining / size.workers) * costs.fine_control
        + (remaining - 1) * costs.coarse_step
        + costs.call_overhead
    )


def sample_parallel_wall_time(size: ProblemSize, costs: StepCosts) -> float:
    """Predicted wall time of sample-parallel serial fine, s: N ceil(B / P) c_f + N c_o."""
    return size.slices * (math.ceil(size.sequences / size.workers) * costs.fine_control + costs.call_overhead)


def serial_fine_wall_time(size: ProblemSize, costs: StepCosts) -> float:
    """Predicted wall time of the fine model on one worker, s: B N c_f (no overhead: one process)."""
    return size.sequences * size.slices * costs.fine_control


@dataclass(frozen=True)
class ScheduleChoice:
    """Which schedule was used and why.

    Attributes:
        schedule: ``"parareal"`` or ``"sample_parallel"``.
        requested: what the caller asked for (``"parareal"``, ``"sample_parallel"``, ``"auto"``).
        iterations_assumed: K used for the Parareal prediction.
        predicted_parareal: s, or None when no costs were known.
        predicted_sample_parallel: s, or None when no costs were known.
        costs: the costs the prediction used, or None.
    """

    schedule: str
    requested: str
    iterations_assumed: int
    predicted_parareal: float | None = None
    predicted_sample_parallel: float | None = None
    costs: StepCosts | None = None


def choose_schedule(size: ProblemSize, iterations: int, costs: StepCosts) -> ScheduleChoice:
    """The ``auto`` rule: the schedule with the smaller predicted wall time.

    Ties go to sample-parallel, which is exact. K = 0 (coarse only) always gives Parareal.
    """
    _check_iterations(size, iterations)
    parareal = parareal_wall_time(size, iterations, costs)
    sample_parallel = sample_parallel_wall_time(size, costs)
    schedule = "parareal" if iterations == 0 or parareal < sample_parallel else "sample_parallel"
    return ScheduleChoice(
        schedule=schedule,
        requested="auto",
        iterations_assumed=iterations,
        predicted_parareal=parareal,
        predicted_sample_parallel=sample_parallel,
        costs=costs,
    )
