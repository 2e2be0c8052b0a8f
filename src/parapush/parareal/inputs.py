"""Validation and broadcasting of a prediction problem: initial states, controls, durations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parapush.scene.state import StateLayout


def _as_float_array(value: object, name: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected an array of numbers, got {type(value).__name__}") from None
    return array


def _require_finite(array: np.ndarray, name: str) -> None:
    if not np.all(np.isfinite(array)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise ValueError(f"{name}: must be finite; {name}{list(bad)} = {array[bad]!r}")


@dataclass(frozen=True)
class PredictionProblem:
    """A validated batch of B prediction problems with N slices each.

    Attributes:
        initial_states: (B, D) states x_0 (layout of :mod:`parapush.scene.state`).
        controls: (B, N, 2) pusher velocities u_n, m/s.
        durations: (B, N) control durations Delta t_n, s, all > 0.
    """

    initial_states: np.ndarray
    controls: np.ndarray
    durations: np.ndarray

    @property
    def sequences(self) -> int:
        """B, the number of control sequences."""
        return self.controls.shape[0]

    @property
    def slices(self) -> int:
        """N, the number of controls (time slices) per sequence."""
        return self.controls.shape[1]

    @property
    def dimension(self) -> int:
        """D, the state dimension."""
        return self.initial_states.shape[1]

    @property
    def mean_duration(self) -> float:
        """Mean control duration, s."""
        return float(self.durations.mean())


def prepare_problem(
    initial_states: np.ndarray, controls: np.ndarray, durations: np.ndarray, layout: StateLayout
) -> PredictionProblem:
    """Validate and broadcast the inputs of a prediction.

    Args:
        initial_states: (D,) or (B, D); a single state is shared by all sequences.
        controls: (N, 2) or (B, N, 2) m/s; a single sequence is applied to every state.
        durations: (N,) shared by all sequences, or (B, N); s, > 0.
        layout: the state layout of the models (gives D).
    Returns:
        the problem with initial_states (B, D), controls (B, N, 2), durations (B, N), all
        float64 copies.
    Raises:
        TypeError / ValueError naming the offending argument.
    """
    states = _as_float_array(initial_states, "initial_states")
    if states.ndim not in (1, 2) or states.shape[-1] != layout.dimension:
        raise ValueError(
            f"initial_states: expected shape ({layout.dimension},) or (B, {layout.dimension}) for "
            f"{layout.object_count} object(s), got {states.shape}"
        )
    if states.ndim == 2 and states.shape[0] == 0:
        raise ValueError("initial_states: the batch is empty")
    _require_finite(states, "initial_states")

    sequence = _as_float_array(controls, "controls")
    if sequence.ndim not in (2, 3) or sequence.shape[-1] != 2:
        raise ValueError(f"controls: expected shape (N, 2) or (B, N, 2), got {sequence.shape}")
    if sequence.shape[-2] == 0:
        raise ValueError("controls: need at least one control (N >= 1)")
    if sequence.ndim == 3 and sequence.shape[0] == 0:
        raise ValueError("controls: the batch is empty")
    _require_finite(sequence, "controls")

    states_batch = states.shape[0] if states.ndim == 2 else 1
    controls_batch = sequence.shape[0] if sequence.ndim == 3 else 1
    if states_batch != controls_batch and 1 not in (states_batch, controls_batch):
        raise ValueError(
            f"initial_states, controls: batch sizes differ ({states_batch} states, "
            f"{controls_batch} control sequences); give equal batches or one of either"
        )
    batch = max(states_batch, controls_batch)
    slices = sequence.shape[-2]
    states = np.broadcast_to(states.reshape(-1, layout.dimension), (batch, layout.dimension)).copy()
    sequence = np.broadcast_to(sequence.reshape(-1, slices, 2), (batch, slices, 2)).copy()

    times = _as_float_array(durations, "durations")
    if times.shape == (slices,):
        times = np.broadcast_to(times, (batch, slices)).copy()
    elif times.shape == (batch, slices):
        times = times.copy()
    else:
        raise ValueError(f"durations: expected shape ({slices},) or ({batch}, {slices}), got {times.shape}")
    _require_finite(times, "durations")
    if np.any(times <= 0.0):
        bad = tuple(int(i) for i in np.argwhere(times <= 0.0)[0])
        raise ValueError(f"durations: must be > 0 s; durations{list(bad)} = {times[bad]!r}")
    return PredictionProblem(initial_states=states, controls=sequence, durations=times)
