"""Predictive models for the planner: everything the optimizer needs from physics.

The optimizer only ever calls :meth:`PredictiveModel.predict`, once per iteration, with
all its control sequences::

    predict(initial_state (D,), controls (S, N, 2) m/s, durations (N,) s) -> (S, N+1, D)

Row s of the result is x_0..x_N for sequence s (x_0 = the initial state). A row that
could not be predicted (unstable or diverged physics) is returned as NaN, never as
numbers: the optimizer gives such a sequence an infinite cost, counts it, and never
uses it (see :class:`parapush.planning.optimizer.StochasticTrajectoryOptimizer`).
Other failures raise.

Implementations: :class:`parapush.planning.engine_prediction.EnginePrediction` (the
coarse, fine or Parareal model of a :class:`~parapush.prediction.PredictionEngine` built
from the ``model:`` config: what the MPC uses locally), the ROS ``PredictTrajectory``
service client (:mod:`parapush.nodes.prediction_client`: the same engine in the prediction
service), and :class:`PropagatorRollout` (any one-step propagator rolled out serially in
time, e.g. for tests with toy dynamics). Nothing else is needed by the planner.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from parapush.scene import StateLayout


@runtime_checkable
class PredictiveModel(Protocol):
    """Predicts the states a batch of control sequences leads to from one initial state."""

    def predict(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """Trajectories (S, N+1, D) for controls (S, N, 2) m/s held for durations (N,) s each,
        from ``initial_state`` (D,); rows that could not be predicted are NaN."""
        ...


def check_prediction_arguments(
    layout: StateLayout, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate and return float copies of (initial_state (D,), controls (S, N, 2), durations (N,))."""
    initial_state = np.array(initial_state, dtype=float)
    controls = np.array(controls, dtype=float)
    durations = np.array(durations, dtype=float)
    if initial_state.shape != (layout.dimension,):
        raise ValueError(f"initial_state: expected shape ({layout.dimension},), got {initial_state.shape}")
    if not np.all(np.isfinite(initial_state)):
        raise ValueError("initial_state: contains non-finite values")
    if controls.ndim != 3 or controls.shape[-1] != 2 or controls.shape[0] < 1 or controls.shape[1] < 1:
        raise ValueError(f"controls: expected shape (S, N, 2) with S, N >= 1, got {controls.shape}")
    if not np.all(np.isfinite(controls)):
        raise ValueError("controls: contains non-finite values")
    if durations.shape != (controls.shape[1],):
        raise ValueError(f"durations: expected shape ({controls.shape[1]},), got {durations.shape}")
    if not np.all(np.isfinite(durations)) or np.any(durations <= 0.0):
        raise ValueError(f"durations: expected finite values > 0, got {durations.tolist()}")
    return initial_state, controls, durations


def check_trajectories(
    trajectories: Any, samples: int, horizon: int, dimension: int, source: str
) -> np.ndarray:
    """``trajectories`` as a float array, raising ValueError naming ``source`` unless its
    shape is (samples, horizon + 1, dimension)."""
    trajectories = np.asarray(trajectories, dtype=float)
    expected = (samples, horizon + 1, dimension)
    if trajectories.shape != expected:
        raise ValueError(
            f"{source}: predicted trajectories of shape {trajectories.shape}, expected {expected}"
        )
    return trajectories


def _close_all(resources: Sequence[Any]) -> None:
    for resource in resources:
        close = getattr(resource, "close", None)
        if callable(close):
            close()


class PropagatorRollout:
    """A one-step propagator rolled out serially in time, batched over the sequences.

    x_{n+1}[s] = propagator.propagate(x_n[s], u_n[s], dt_n) for all s at once, n = 0..N-1.
    A row that turns non-finite is NaN from that state to the end (it is not propagated
    further); the states before it are kept.

    Args:
        propagator: any :class:`parapush.physics.propagator.Propagator` (``layout``,
            ``propagate(states (M, D), controls (M, 2), durations (M,)) -> (M, D)``),
            e.g. a coarse model or a fine backend.
        owned: resources closed by :meth:`close` (e.g. the backend the factory created).
    """

    def __init__(self, propagator: Any, *, owned: Sequence[Any] = ()) -> None:
        layout = getattr(propagator, "layout", None)
        if not isinstance(layout, StateLayout) or not callable(getattr(propagator, "propagate", None)):
            raise TypeError("propagator: expected an object with a StateLayout `layout` and `propagate()`")
        self.propagator = propagator
        self.layout: StateLayout = layout
        self._owned = tuple(owned)

    def predict(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        initial_state, controls, durations = check_prediction_arguments(
            self.layout, initial_state, controls, durations
        )
        return self._roll_out(np.broadcast_to(initial_state, (controls.shape[0], self.layout.dimension)),
                              controls, durations)

    def predict_from_each(self, initial_states: np.ndarray, controls: np.ndarray, durations: np.ndarray
                          ) -> np.ndarray:
        """Trajectories (S, N+1, D) for controls (S, N, 2) m/s held for durations (N,) s each, row s
        from its own ``initial_states[s]`` (S, D); one propagator call per control for all rows, so
        the same numbers as S calls of :meth:`predict` (a row-wise propagator's) at the cost of N."""
        initial_states = np.array(initial_states, dtype=float)
        if initial_states.ndim != 2 or initial_states.shape[1] != self.layout.dimension:
            raise ValueError(f"initial_states: expected shape (S, {self.layout.dimension}), got "
                             f"{initial_states.shape}")
        _, controls, durations = check_prediction_arguments(
            self.layout, np.zeros(self.layout.dimension), controls, durations
        )
        if controls.shape[0] != initial_states.shape[0]:
            raise ValueError(f"controls: {controls.shape[0]} sequences for {initial_states.shape[0]} initial_states")
        if not np.all(np.isfinite(initial_states)):
            raise ValueError("initial_states: contains non-finite values")
        return self._roll_out(initial_states, controls, durations)

    def _roll_out(self, initial_states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        samples, horizon = controls.shape[:2]
        trajectories = np.full((samples, horizon + 1, self.layout.dimension), np.nan)
        trajectories[:, 0] = initial_states
        alive = np.ones(samples, dtype=bool)
        for step in range(horizon):
            rows = np.flatnonzero(alive)
            if rows.size == 0:
                break
            next_states = np.asarray(
                self.propagator.propagate(
                    trajectories[rows, step], controls[rows, step], np.full(rows.size, durations[step])
                ),
                dtype=float,
            )
            if next_states.shape != (rows.size, self.layout.dimension):
                raise ValueError(
                    f"propagator: returned shape {next_states.shape}, expected ({rows.size}, "
                    f"{self.layout.dimension})"
                )
            finite = np.all(np.isfinite(next_states), axis=1)
            trajectories[rows[finite], step + 1] = next_states[finite]
            alive[rows[~finite]] = False
        return trajectories

    def close(self) -> None:
        """Close the resources this rollout owns (idempotent as theirs are)."""
        _close_all(self._owned)

    def __enter__(self) -> PropagatorRollout:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def is_finite_trajectory(trajectories: np.ndarray) -> np.ndarray:
    """(S,) bool: rows of trajectories (S, N+1, D) that are finite everywhere."""
    return np.all(np.isfinite(trajectories.reshape(trajectories.shape[0], -1)), axis=1)


__all__ = [
    "PredictiveModel",
    "PropagatorRollout",
    "check_prediction_arguments",
    "check_trajectories",
    "is_finite_trajectory",
]
