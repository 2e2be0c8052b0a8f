"""The outcome of one Parareal (or coarse, or fine) prediction."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parapush.parareal.schedule import ScheduleChoice

STOP_REASONS = ("iterations", "tolerance", "deadline", "converged")


@dataclass(frozen=True)
class PararealResult:
    """Predicted trajectories and how they were obtained.

    Attributes:
        trajectories: (B, N+1, D) predicted states x_0..x_N of each sequence (the latest
            iterate; state layout of :mod:`parapush.scene.state`, SI units).
        iterations_used: k, the most iterations any sequence received (0 = coarse only).
        sequence_iterations: (B,) iterations each sequence received (a sequence that met
            the tolerances stops early).
        exact_states: (B,) how many leading states x_0..x_{e-1} of each sequence equal the
            serial fine solution: k + 1 after k iterations, N + 1 for the fine path.
        update_position: (k,) m, for each iteration the largest change of any position
            (pusher and object x, y) from the previous iterate, over the sequences iterated.
        update_angle: (k,) rad, the same for the object yaws (wrapped difference).
        iterates: (k+1, B, N+1, D) the iterates x^0..x^k when kept, else None.
        time_coarse: s in the coarse model (initial sweep and corrections' coarse steps).
        time_fine: s in fine backend calls.
        time_correction: s in the corrections' arithmetic, projection and bookkeeping.
        time_total: s of wall time of the whole solve.
        stop_reason: one of ``"iterations"``, ``"tolerance"``, ``"deadline"``,
            ``"converged"`` (all states exact).
        schedule: ``"parareal"`` or ``"sample_parallel"``: how the result was computed.
        schedule_choice: the cost model's prediction behind the schedule, when it had costs.
        fine_rows: how many fine controls (sequence x slice propagations) were computed.
    """

    trajectories: np.ndarray
    iterations_used: int
    sequence_iterations: np.ndarray
    exact_states: np.ndarray
    update_position: np.ndarray
    update_angle: np.ndarray
    iterates: np.ndarray | None
    time_coarse: float
    time_fine: float
    time_correction: float
    time_total: float
    stop_reason: str
    schedule: str
    schedule_choice: ScheduleChoice | None = None
    fine_rows: int = 0

    def __post_init__(self) -> None:
        if self.stop_reason not in STOP_REASONS:
            raise ValueError(f"stop_reason: expected one of {STOP_REASONS}, got {self.stop_reason!r}")
        if self.trajectories.ndim != 3:
            raise ValueError(f"trajectories: expected shape (B, N+1, D), got {self.trajectories.shape}")

    @property
    def finite(self) -> bool:
        """Whether every predicted state is finite (the solver raises before returning NaN)."""
        return bool(np.all(np.isfinite(self.trajectories)))

    @property
    def final_states(self) -> np.ndarray:
        """(B, D) the predicted states x_N."""
        return self.trajectories[:, -1]

    @property
    def fully_exact(self) -> bool:
        """Whether every state equals the serial fine solution (K = N or the fine path)."""
        return bool(np.all(self.exact_states == self.trajectories.shape[1]))
