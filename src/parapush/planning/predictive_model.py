"""Predictive models for the planner: everything the optimizer needs from physics.

The optimizer only ever calls :meth:`PredictiveModel.predict`, once per iteration, with
all its control sequences::

    predict(initial_state (D,), controls (S, N, 2) m/s, durations (N,) s) -> (S, N+1, D)

Row s of the result is x_0..x_N for sequence s (x_0 = the initial state). A row that
could not be predicted (unstable or diverged physics) is returned as NaN, never as
numbers: the optimizer gives such a sequence an infinite cost, counts it, and never
uses it (see :class:`parapush.planning.optimizer.StochasticTrajectoryOptimizer`).
Other failures raise.

Adapters, chosen by name with :func:`make_predictive_model`:

- ``"coarse"``: a propagator (the analytical coarse model by default) rolled out
  serially in time, batched over the sequences: :class:`PropagatorRollout`;
- ``"fine"``: the fine MuJoCo model behind a parallel backend, rolled out the same way;
- ``"parareal"``: :class:`PararealPrediction`, Parareal with K iterations and/or
  tolerances and a deadline.

A remote model (the ROS ``PredictTrajectory`` service, wrapped by the MPC node) only has
to implement :class:`PredictiveModel`; nothing else is needed by the planner.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from parapush.scene import Scene, StateLayout

MODEL_NAMES = ("coarse", "fine", "parareal")


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
        samples, horizon = controls.shape[:2]
        trajectories = np.full((samples, horizon + 1, self.layout.dimension), np.nan)
        trajectories[:, 0] = initial_state
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


class PararealPrediction:
    """Parareal predictions for the planner's batch of sequences.

    Calls ``solver.solve(initial_states (S, D), controls (S, N, 2), durations (N,), options)``
    of :class:`parapush.parareal.PararealSolver`. The solver raises
    :class:`~parapush.parareal.PhysicsDivergenceError` naming the sequence whose physics
    diverged; that sequence is returned as NaN and the others are solved again without
    it (so one bad sample does not discard the whole batch).

    Args:
        solver: a ``PararealSolver`` (or anything with the same ``solve``).
        layout: the state layout.
        options: ``PararealOptions`` (iterations K, tolerances, deadline).
        schedule: passed to ``solve`` (``"parareal"``, ``"sample_parallel"`` or ``"auto"``).
        owned: resources closed by :meth:`close`.
    """

    def __init__(
        self,
        solver: Any,
        layout: StateLayout,
        options: Any,
        *,
        schedule: str = "parareal",
        owned: Sequence[Any] = (),
    ) -> None:
        if not callable(getattr(solver, "solve", None)):
            raise TypeError("solver: expected an object with `solve()` (a PararealSolver)")
        self.solver = solver
        self.layout = layout
        self.options = options
        self.schedule = schedule
        self.last_result: Any = None
        self.diverged_sequences = 0
        self._owned = tuple(owned)

    def predict(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        from parapush.parareal import PhysicsDivergenceError

        initial_state, controls, durations = check_prediction_arguments(
            self.layout, initial_state, controls, durations
        )
        samples, horizon = controls.shape[:2]
        trajectories = np.full((samples, horizon + 1, self.layout.dimension), np.nan)
        rows = np.arange(samples)
        while rows.size:
            try:
                result = self.solver.solve(
                    np.repeat(initial_state[None], rows.size, axis=0),
                    controls[rows],
                    durations,
                    self.options,
                    schedule=self.schedule,
                )
            except PhysicsDivergenceError as error:
                if not 0 <= error.sequence < rows.size:
                    raise
                self.diverged_sequences += 1
                rows = np.delete(rows, error.sequence)
                continue
            self.last_result = result
            trajectories[rows] = check_trajectories(
                result.trajectories, rows.size, horizon, self.layout.dimension, "parareal solver"
            )
            break
        return trajectories

    def close(self) -> None:
        _close_all(self._owned)

    def __enter__(self) -> PararealPrediction:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def make_predictive_model(
    name: str,
    scene: Scene,
    *,
    iterations: int | None = 1,
    tolerance_position: float | None = None,
    tolerance_angle: float | None = None,
    deadline: float | None = None,
    backend: str = "threads",
    workers: int | None = None,
    coarse_model: Any = None,
    fine_settings: Any = None,
    project: bool = True,
    schedule: str = "parareal",
) -> PropagatorRollout | PararealPrediction:
    """Build the predictive model called ``name`` for ``scene``.

    Args:
        name: ``"coarse"``, ``"fine"`` or ``"parareal"``.
        scene: the scene the models simulate.
        iterations: Parareal iterations K (``"parareal"`` only); None: stop by tolerance/deadline.
        tolerance_position: m, Parareal stops when every position update is below it.
        tolerance_angle: rad, the same for the object yaws.
        deadline: s of wall time per Parareal prediction.
        backend: fine backend, ``"serial"``, ``"threads"`` or ``"processes"`` (``"fine"``,
            ``"parareal"``).
        workers: fine workers; None: one per CPU core.
        coarse_model: a coarse propagator to use instead of the analytical model (e.g. the
            learned model) for ``"coarse"`` and ``"parareal"``.
        fine_settings: ``FineSettings`` of the MuJoCo model; None: defaults.
        project: apply the feasibility projection (ISRR Eq 9) inside Parareal.
        schedule: Parareal schedule (``"parareal"``, ``"sample_parallel"``, ``"auto"``).
    Returns:
        a model with ``predict`` and ``close`` (it owns the backend it created; close it,
        or use it as a context manager).
    """
    if name not in MODEL_NAMES:
        raise ValueError(f"name: expected one of {MODEL_NAMES}, got {name!r}")
    if not isinstance(scene, Scene):
        raise TypeError(f"scene: expected a parapush.scene.Scene, got {type(scene).__name__}")
    if name == "coarse":
        if coarse_model is None:
            from parapush.physics.coarse_analytical import AnalyticalCoarseModel

            coarse_model = AnalyticalCoarseModel(scene)
        return PropagatorRollout(coarse_model)

    from parapush.physics.backends import make_backend
    from parapush.physics.fine import FineModel

    fine_backend = make_backend(backend, FineModel(scene, fine_settings), workers=workers)
    try:
        if name == "fine":
            return PropagatorRollout(_BackendPropagator(fine_backend, scene.layout), owned=(fine_backend,))
        from parapush.parareal import PararealOptions, PararealSolver

        if coarse_model is None:
            from parapush.physics.coarse_analytical import AnalyticalCoarseModel

            # The solver projects every corrected state (Eq 9); resolving overlaps inside the
            # coarse model as well would only double the coarse cost.
            coarse_model = AnalyticalCoarseModel(scene, resolve_overlaps=not project)
        projector = None
        if project:
            from parapush.physics.projection import FeasibilityProjector

            projector = FeasibilityProjector(scene)
        options = PararealOptions(
            iterations=iterations,
            tolerance_position=tolerance_position,
            tolerance_angle=tolerance_angle,
            deadline=deadline,
            project=project,
        )
        solver = PararealSolver(coarse=coarse_model, fine=fine_backend, projector=projector)
        return PararealPrediction(solver, scene.layout, options, schedule=schedule, owned=(fine_backend,))
    except BaseException:
        fine_backend.close()
        raise


class _BackendPropagator:
    """Gives a fine backend (which may lack ``layout``) the propagator interface."""

    def __init__(self, backend: Any, layout: StateLayout) -> None:
        self.backend = backend
        self.layout = getattr(backend, "layout", None) or layout

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        return self.backend.propagate(states, controls, durations)


def is_finite_trajectory(trajectories: np.ndarray) -> np.ndarray:
    """(S,) bool: rows of trajectories (S, N+1, D) that are finite everywhere."""
    return np.all(np.isfinite(trajectories.reshape(trajectories.shape[0], -1)), axis=1)


__all__ = [
    "MODEL_NAMES",
    "PararealPrediction",
    "PredictiveModel",
    "PropagatorRollout",
    "check_prediction_arguments",
    "check_trajectories",
    "is_finite_trajectory",
    "make_predictive_model",
]
