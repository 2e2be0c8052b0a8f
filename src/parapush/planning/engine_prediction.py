"""The planner's predictive model on a :class:`~parapush.prediction.PredictionEngine`.

:class:`EnginePrediction` implements :class:`parapush.planning.PredictiveModel`::

    predict(initial_state (D,), controls (S, N, 2) m/s, durations (N,) s) -> (S, N+1, D)

by asking the engine exactly what the prediction service would be asked for the same call
(the MPC's ``prediction_source: service`` path, :mod:`parapush.nodes.prediction_client`):
the same :class:`~parapush.prediction.PredictionRequest`, object yaws wrapped to [-pi, pi) on the way in and out
as the ROS messages carry them. So the local and the service path give identical
trajectories for the same ``model:`` config (test/ros/test_prediction_paths.py).

A sequence whose physics diverged is returned as a NaN row: the engine names it
(:class:`~parapush.prediction.DivergedSequenceError`), it is dropped and the others are
predicted again.

The adapter belongs to planning, the layer that uses predictions: :mod:`parapush.prediction`
serves them and never imports :mod:`parapush.planning`.
"""

from __future__ import annotations

import numpy as np

from parapush.planning.predictive_model import check_prediction_arguments
from parapush.prediction.config import ModelConfig
from parapush.prediction.engine import DivergedSequenceError, PredictionEngine, PredictionOutcome
from parapush.prediction.request import PredictionLimits, PredictionRequest
from parapush.scene import Scene
from parapush.scene.state import wrap_angle


class EnginePrediction:
    """Planner predictions from an engine; ``model``/``iterations`` None: the engine's config.

    Args:
        engine: the engine that answers.
        model: ``"parareal"``, ``"coarse"`` or ``"fine"``, or None (the configured ``name``).
        iterations: Parareal K, or None (the configured K, capped at N).
        owns_engine: :meth:`close` closes the engine.
    """

    def __init__(
        self,
        engine: PredictionEngine,
        *,
        model: str | None = None,
        iterations: int | None = None,
        owns_engine: bool = False,
    ) -> None:
        if not isinstance(engine, PredictionEngine):
            raise TypeError(f"engine: expected a PredictionEngine, got {type(engine).__name__}")
        self.engine = engine
        self.layout = engine.layout
        self.model = model
        self.iterations = iterations
        self.owns_engine = owns_engine
        self.last_outcome: PredictionOutcome | None = None
        self.diverged_sequences = 0

    @classmethod
    def build(cls, scene: Scene, config: ModelConfig, *, limits: PredictionLimits | None = None) -> EnginePrediction:
        """A predictor owning a new engine for ``scene`` built from ``config`` (close it)."""
        return cls(PredictionEngine(scene, config, limits=limits), owns_engine=True)

    def configured(self, *, model: str | None, iterations: int | None) -> EnginePrediction:
        """A predictor asking for another model or K on the same engine (it does not own it)."""
        return EnginePrediction(self.engine, model=model, iterations=iterations)

    def predict(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """Trajectories (S, N+1, D) for controls (S, N, 2) from initial_state (D,), durations (N,) s;
        NaN rows for sequences whose physics diverged."""
        initial_state, controls, durations = check_prediction_arguments(self.layout, initial_state, controls, durations)
        yaws = self.layout.yaw_indices
        initial_state[yaws] = wrap_angle(initial_state[yaws])
        samples, horizon = controls.shape[:2]
        trajectories = np.full((samples, horizon + 1, self.layout.dimension), np.nan)
        rows = np.arange(samples)
        while rows.size:
            request = PredictionRequest(
                initial_state,
                controls[rows],
                np.broadcast_to(durations, (rows.size, horizon)),
                model=self.model,
                iterations=self.iterations,
            )
            try:
                outcome = self.engine.predict(request)
            except DivergedSequenceError as error:
                self.diverged_sequences += 1
                rows = np.delete(rows, error.sequence)
                continue
            self.last_outcome = outcome
            predicted = np.array(outcome.trajectories, dtype=float)
            predicted[..., yaws] = wrap_angle(predicted[..., yaws])
            trajectories[rows] = predicted
            break
        return trajectories

    def close(self) -> None:
        """Close the engine if this predictor owns it."""
        if self.owns_engine:
            self.engine.close()

    def __enter__(self) -> EnginePrediction:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


__all__ = ["EnginePrediction"]
