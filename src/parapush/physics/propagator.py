"""The propagator contract shared by the fine model, the coarse models and Parareal."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from parapush.scene import StateLayout


@runtime_checkable
class Propagator(Protocol):
    """A model x_{n+1} = F(x_n, u_n, dt) of planar pushing, evaluated on batches.

    Attributes:
        layout: the state layout x = [q_pusher(2), q_objects(3n), qdot_pusher(2), qdot_objects(3n)].
    """

    layout: StateLayout

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """Hold each control for its duration, starting from each state.

        Args:
            states: (M, D) float64 states in the papers' layout (m, rad, m/s, rad/s).
            controls: (M, 2) commanded pusher velocities in the table frame, m/s.
            durations: (M,) control durations, s, each > 0.
        Returns:
            (M, D) float64 states after the controls. Rows whose physics became non-finite
            or unstable are filled with NaN (never silently wrong); check ``np.isfinite``.
        """
        ...


def check_batch(
    layout: StateLayout, states: np.ndarray, controls: np.ndarray, durations: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate and normalise the arguments of :meth:`Propagator.propagate`.

    Returns C-contiguous float64 copies ``(states (M, D), controls (M, 2), durations (M,))``.
    Raises ValueError naming the argument on a wrong shape, a non-finite control or
    duration, or a non-positive duration. Non-finite *state* rows are accepted: models
    return NaN for them, so a failure upstream (e.g. an unstable fine segment inside
    Parareal) propagates as NaN instead of raising.
    """
    states = np.array(states, dtype=np.float64, order="C", copy=True)
    controls = np.array(controls, dtype=np.float64, order="C", copy=True)
    durations = np.array(durations, dtype=np.float64, order="C", copy=True)
    if states.ndim != 2 or states.shape[1] != layout.dimension:
        raise ValueError(
            f"states: expected shape (M, {layout.dimension}) for {layout.object_count} object(s), "
            f"got {states.shape}"
        )
    batch = states.shape[0]
    if controls.shape != (batch, 2):
        raise ValueError(f"controls: expected shape ({batch}, 2), got {controls.shape}")
    if durations.shape != (batch,):
        raise ValueError(f"durations: expected shape ({batch},), got {durations.shape}")
    if not np.all(np.isfinite(controls)):
        rows = np.flatnonzero(~np.all(np.isfinite(controls), axis=1))
        raise ValueError(f"controls: non-finite values in row(s) {rows[:10].tolist()}")
    if not np.all(np.isfinite(durations)) or np.any(durations <= 0.0):
        raise ValueError(f"durations: expected finite values > 0, got {durations[:10].tolist()}")
    return states, controls, durations
