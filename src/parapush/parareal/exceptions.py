"""Errors raised by the Parareal solver."""

from __future__ import annotations

import numpy as np


class PhysicsDivergenceError(RuntimeError):
    """A model returned a non-finite state: the prediction cannot be trusted.

    Raised instead of returning a trajectory containing NaN or inf. The attributes say
    where it happened so that a caller (the planner) can discard that control sequence.

    Attributes:
        model: ``"fine"``, ``"coarse"`` or ``"projection"``: which stage produced the value.
        sequence: index of the control sequence in the caller's batch.
        slice_index: index n of the time slice (the control u_n) whose propagation failed.
        iteration: Parareal iteration being computed (0 = initial coarse sweep); ``None`` for
            the sample-parallel fine path.
        start_state: (D,) state the model was started from.
        control: (2,) pusher velocity of that slice, m/s.
        duration: duration of that slice, s.
    """

    def __init__(
        self,
        *,
        model: str,
        sequence: int,
        slice_index: int,
        iteration: int | None,
        start_state: np.ndarray,
        control: np.ndarray,
        duration: float,
    ) -> None:
        self.model = model
        self.sequence = int(sequence)
        self.slice_index = int(slice_index)
        self.iteration = iteration
        self.start_state = np.array(start_state, dtype=float)
        self.control = np.array(control, dtype=float)
        self.duration = float(duration)
        where = f"sequence {self.sequence}, slice {self.slice_index}"
        if iteration is not None:
            where += f", Parareal iteration {iteration}"
        start = np.array2string(self.start_state, precision=5, max_line_width=200)
        control_text = np.array2string(self.control, precision=5)
        super().__init__(
            f"{model} model returned a non-finite state for {where} "
            f"(control {control_text} m/s for {self.duration:g} s) starting from state {start}; "
            "the prediction is discarded"
        )
