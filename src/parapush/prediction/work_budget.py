"""A prediction request's fine-model work, estimated before it runs, and the budget it must fit.

The work of a request is the fine model's simulated time summed over every row it will
simulate, converted to worker-seconds (wall seconds of one fine worker) with the measured
fine rate of the cost model (:attr:`parapush.parareal.cost_estimate.CostEstimator.fine_rate`,
wall s per simulated s on one worker), or with :data:`PRIOR_STEP_COST` per MuJoCo step
before anything was measured. Per model (notation of :mod:`parapush.parareal.schedule`,
d_{b,n} the duration of control n of sequence b)::

    coarse:                     0
    fine, sample_parallel:      sum_{b,n} d_{b,n}                    (one fine pass)
    parareal, K iterations:     sum_{k<K} sum_b sum_{n>=k} d_{b,n}   (iteration k+1 re-runs slices k..N-1)

``auto`` is counted as Parareal (at least the sample-parallel work for K >= 1). A request
that stops by a tolerance counts its iteration limit (the worst case). A deadline bounds the
work to about ``deadline x workers`` worker-seconds (the solver returns the latest iterate
then), so the estimate is capped there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parapush.prediction.request import RequestError

PRIOR_STEP_COST = 50e-6
"""s of wall time per MuJoCo step of one row, used before the cost model has measured the
fine rate (measured on the 2-core development machine: about 26 us per 1 ms step; doubled)."""


class WorkBudgetError(RequestError):
    """A valid request whose estimated work exceeds the configured budget; the message states both."""


@dataclass(frozen=True)
class WorkEstimate:
    """The fine-model work of one request.

    Attributes:
        simulated: s of fine-model simulated time summed over all rows and passes.
        fine_rate: wall s per simulated s on one worker used for the conversion.
        measured: whether ``fine_rate`` was measured (else the prior per-step cost).
        passes: human-readable count of the fine passes (e.g. ``"Parareal K=2"``).
        deadline_cap: worker-s the request's deadline bounds the work to, or None.
    """

    simulated: float
    fine_rate: float
    measured: bool
    passes: str
    deadline_cap: float | None = None

    @property
    def worker_seconds(self) -> float:
        """Estimated wall s of one fine worker: simulated x fine_rate, capped by the deadline."""
        uncapped = self.simulated * self.fine_rate
        return uncapped if self.deadline_cap is None else min(uncapped, self.deadline_cap)

    def describe(self) -> str:
        """The estimate in words, for refusal messages and logs."""
        source = "measured" if self.measured else "prior"
        text = (
            f"{self.worker_seconds:.3g} worker-s ({self.passes}: {self.simulated:.4g} s of fine simulation at "
            f"{self.fine_rate:.3g} s per simulated s, {source})"
        )
        if self.deadline_cap is not None and self.deadline_cap < self.simulated * self.fine_rate:
            text += f", capped by the deadline at {self.deadline_cap:.3g} worker-s"
        return text


def fine_simulated_time(durations: np.ndarray, model: str, schedule: str, iterations: int) -> tuple[float, str]:
    """s of fine simulated time a request runs, and its passes in words (formulas in the module doc).

    Args:
        durations: (B, N) control durations, s.
        model: ``"coarse"``, ``"parareal"`` or ``"fine"``.
        schedule: ``"parareal"``, ``"sample_parallel"`` or ``"auto"`` (counted as Parareal).
        iterations: Parareal K (the iteration limit), 0 <= K <= N.
    """
    durations = np.asarray(durations, dtype=float)
    if model == "coarse" or (model == "parareal" and iterations == 0):
        return 0.0, "coarse model only"
    if model == "fine" or schedule == "sample_parallel":
        return float(durations.sum()), "one fine pass"
    # Iteration k+1 runs slices k..N-1: sum over k of the tail sums, i.e. slice n is run min(n + 1, K) times.
    slices = durations.shape[1]
    runs = np.minimum(np.arange(slices) + 1, iterations)
    return float((durations * runs).sum()), f"Parareal K={iterations}"


def estimate_work(
    durations: np.ndarray,
    model: str,
    schedule: str,
    iterations: int,
    *,
    fine_rate: float | None,
    timestep: float,
    deadline: float | None,
    workers: int,
) -> WorkEstimate:
    """The :class:`WorkEstimate` of a request.

    Args:
        durations, model, schedule, iterations: as :func:`fine_simulated_time`.
        fine_rate: measured wall s per simulated s on one worker, or None (then
            ``PRIOR_STEP_COST / timestep``).
        timestep: s, the fine model's step.
        deadline: s of wall time the request may run, or None.
        workers: P, the fine workers.
    """
    simulated, passes = fine_simulated_time(durations, model, schedule, iterations)
    measured = fine_rate is not None and math.isfinite(fine_rate) and fine_rate > 0.0
    rate = float(fine_rate) if measured else PRIOR_STEP_COST / timestep
    cap = None if deadline is None else deadline * workers
    return WorkEstimate(simulated=simulated, fine_rate=rate, measured=measured, passes=passes, deadline_cap=cap)


def check_work_budget(estimate: WorkEstimate, max_work: float) -> None:
    """Raise :class:`WorkBudgetError` stating the estimate and the limit unless it fits ``max_work``."""
    if estimate.worker_seconds > max_work:
        raise WorkBudgetError(
            f"work: estimated {estimate.describe()}, over the budget of {max_work:.4g} worker-s per request "
            "(max_work); send fewer sequences, shorter controls, fewer iterations, or a deadline"
        )


__all__ = ["PRIOR_STEP_COST", "WorkBudgetError", "WorkEstimate", "check_work_budget", "estimate_work",
           "fine_simulated_time"]
