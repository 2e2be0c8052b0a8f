"""Running estimate of the coarse and fine costs from the solver's own timings."""

from __future__ import annotations

import math
from dataclasses import dataclass

from parapush.parareal.schedule import StepCosts
from parapush.read_only import ReadOnly
from parapush.validation import check_non_negative, check_positive


def call_overhead_of(backend: object) -> float:
    """The per-call overhead c_o (s) of a fine backend or of the backend it wraps (``.backend``,
    as :class:`parapush.physics.fidelity.ManagedFineBackend` and the prediction service's fair
    scheduler do): its ``call_overhead`` (the Ray backend measures one), else 0."""
    for _ in range(8):  # a short chain of wrappers
        if backend is None:
            break
        overhead = getattr(backend, "call_overhead", None)
        if overhead is not None:
            return float(overhead)
        backend = getattr(backend, "backend", None)
    return 0.0


@dataclass
class _RunningMean:
    """Exponential moving average; the first sample sets it."""

    smoothing: float
    value: float | None = None
    samples: int = 0

    def add(self, sample: float) -> None:
        if not math.isfinite(sample) or sample < 0.0:
            return
        self.value = (
            sample if self.value is None else (1.0 - self.smoothing) * self.value + self.smoothing * sample
        )
        self.samples += 1


class CostEstimator:
    """Running estimates of c_c, c_f and of the iterations tolerance-driven solves need.

    The fine cost is kept as a *rate*: wall seconds per simulated second of one sequence
    on one worker, so that slices of different durations share one estimate; c_f for a
    problem is that rate times its mean control duration. A fine batch call of M rows of
    mean duration d on P workers is counted as ceil(M / P) d simulated seconds per worker.
    The backend's per-call overhead c_o (:func:`call_overhead_of`)
    is taken off each fine call's wall time before the rate is updated and kept as the latest
    value given. The coarse cost c_c is wall seconds per coarse step of the whole batch, correction and
    projection included (it depends weakly on B; it is negligible beside c_f in the
    schedule choice).

    Args:
        smoothing: weight of a new sample in the moving averages, in (0, 1].
    """

    def __init__(self, *, smoothing: float = 0.3) -> None:
        smoothing = float(smoothing)
        if not 0.0 < smoothing <= 1.0:
            raise ValueError(f"smoothing: must be in (0, 1], got {smoothing!r}")
        self._fine_rate = _RunningMean(smoothing)
        self._coarse_step = _RunningMean(smoothing)
        self._iterations = _RunningMean(smoothing)
        self._call_overhead = 0.0

    @property
    def ready(self) -> bool:
        """Whether both c_c and c_f have been measured."""
        return self._fine_rate.value is not None and self._coarse_step.value is not None

    @property
    def fine_rate(self) -> float | None:
        """Wall s per simulated s of fine model on one worker, or None."""
        return self._fine_rate.value

    call_overhead: ReadOnly[float] = ReadOnly(
        "_call_overhead", "c_o, s per fine backend call (the latest value a fine call gave; 0 before)."
    )

    @property
    def coarse_step(self) -> float | None:
        """c_c, s per coarse step of the batch, or None."""
        return self._coarse_step.value

    @property
    def mean_iterations(self) -> float | None:
        """Running mean of the iterations that tolerance-driven solves used, or None."""
        return self._iterations.value

    def record_fine(
        self, *, wall_time: float, rows: int, mean_duration: float, workers: int, call_overhead: float = 0.0
    ) -> None:
        """One fine batch call: ``rows`` controls of ``mean_duration`` s took ``wall_time`` s, of
        which ``call_overhead`` s were the backend's overhead per call."""
        if rows <= 0 or mean_duration <= 0.0:
            return
        overhead = check_non_negative("call_overhead", call_overhead)
        self._call_overhead = overhead
        per_worker = math.ceil(rows / workers) * mean_duration
        # a call faster than its overhead estimate still counts as a little work, never as none
        self._fine_rate.add(max(wall_time - overhead, 0.1 * wall_time) / per_worker)

    def record_coarse(self, *, wall_time: float, steps: int) -> None:
        """``steps`` serial coarse steps (with corrections) took ``wall_time`` s."""
        if steps > 0:
            self._coarse_step.add(wall_time / steps)

    def record_iterations(self, iterations: int) -> None:
        """Iterations a tolerance-driven solve needed."""
        self._iterations.add(float(iterations))

    def seed(self, *, fine_rate: float, coarse_step: float) -> None:
        """Set the estimates from known values (e.g. an earlier calibration)."""
        fine_rate = check_positive("fine_rate", fine_rate)
        coarse_step = check_non_negative("coarse_step", coarse_step)
        self._fine_rate = _RunningMean(self._fine_rate.smoothing, float(fine_rate), 1)
        self._coarse_step = _RunningMean(self._coarse_step.smoothing, float(coarse_step), 1)

    def step_costs(self, mean_duration: float) -> StepCosts | None:
        """c_c and c_f for controls of ``mean_duration`` s, or None before any measurement."""
        if not self.ready:
            return None
        return StepCosts(
            coarse_step=self._coarse_step.value, fine_control=self._fine_rate.value * mean_duration,
            call_overhead=self._call_overhead,
        )
