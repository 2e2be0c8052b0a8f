"""Narrow what is believed about an object's physics as the robot pushes it.

:class:`ParameterHypotheses` predicts with the fine model under several parameter vectors of
one object at once (one model variant per row, one batched ``mujoco.rollout`` call:
:class:`~parapush.identification.ObjectModelVariants` on a
:class:`~parapush.physics.backends.ThreadBackend`). The robust planner
(:mod:`parapush.planning.robust_scoring`) rolls its candidates out with it, and
:class:`OnlineIdentification` uses it for the particle filter's measurement step
(:class:`~parapush.identification.parameter_belief.ParameterBelief`'s unscented update): after
each executed control, each sigma point of the belief predicts the object's pose from the state
observed before the control, and the pose observed after it moves the belief.
"""

from __future__ import annotations

import numpy as np

from parapush.identification.model_variants import ObjectModelVariants
from parapush.identification.parameter_belief import ParameterBelief
from parapush.identification.parameters import PARAMETER_NAMES
from parapush.physics.backends import ThreadBackend
from parapush.physics.fine import FineModel

__all__ = ["OnlineIdentification", "ParameterHypotheses"]


class ParameterHypotheses:
    """Fine-model predictions of a scene under parameter vectors of its object ``object_index``.

    Args:
        fine_model: the fine model (its scene gives the other objects, which keep their parameters).
        object_index: the object whose parameters vary, in scene order.
        workers: fine-model threads; default: the cores available.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, fine_model: FineModel, object_index: int, *, workers: int | None = None) -> None:
        self.variants = ObjectModelVariants(fine_model, object_index)
        self.fine_model = fine_model
        self.object_index = object_index
        self.layout = fine_model.layout
        self._backend = ThreadBackend(fine_model, threads=workers)

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray,
                  vectors: np.ndarray) -> np.ndarray:
        """One control per row under that row's parameters.

        Args:
            states: (R, D) start states.
            controls: (R, 2) m/s.
            durations: (R,) s.
            vectors: (R, 5) parameter vectors (order of ``PARAMETER_NAMES``).
        Returns:
            (R, D) the states after the controls (NaN rows where the simulation failed).
        """
        vectors = np.asarray(vectors, dtype=float)
        states = np.asarray(states, dtype=float)
        if vectors.ndim != 2 or vectors.shape[1] != len(PARAMETER_NAMES) or vectors.shape[0] != states.shape[0]:
            raise ValueError(f"vectors: expected shape ({states.shape[0]}, {len(PARAMETER_NAMES)}), "
                             f"got {vectors.shape}")
        return self._backend.propagate(states, controls, durations, models=self.variants.make_many(vectors))

    def rollouts(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray,
                 vectors: np.ndarray) -> np.ndarray:
        """Every sequence under every parameter vector, from one initial state.

        Args:
            initial_state: (D,).
            controls: (S, k, 2) m/s, S sequences of k controls.
            durations: (k,) s.
            vectors: (M, 5) parameter vectors.
        Returns:
            (M, S, k + 1, D) trajectories (row m, sequence s: ``controls[s]`` under ``vectors[m]``).
        """
        controls = np.asarray(controls, dtype=float)
        vectors = np.atleast_2d(np.asarray(vectors, dtype=float))
        initial_state = np.asarray(initial_state, dtype=float)
        if controls.ndim != 3 or controls.shape[2] != 2:
            raise ValueError(f"controls: expected shape (S, k, 2), got {controls.shape}")
        durations = np.asarray(durations, dtype=float)
        if durations.shape != (controls.shape[1],):
            raise ValueError(f"durations: expected shape ({controls.shape[1]},), got {durations.shape}")
        models, sequences, steps = vectors.shape[0], controls.shape[0], controls.shape[1]
        rows = np.repeat(vectors, sequences, axis=0)  # (M S, 5): model-major
        tiled = np.tile(controls, (models, 1, 1))  # (M S, k, 2)
        trajectories = np.empty((models * sequences, steps + 1, initial_state.size))
        trajectories[:, 0] = initial_state
        for step in range(steps):
            trajectories[:, step + 1] = self.propagate(trajectories[:, step], tiled[:, step],
                                                       np.full(models * sequences, durations[step]), rows)
        return trajectories.reshape(models, sequences, steps + 1, initial_state.size)

    def close(self) -> None:
        """Stop the fine-model threads; idempotent."""
        self._backend.close()

    def __enter__(self) -> ParameterHypotheses:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class OnlineIdentification:
    """The measurement steps of ``belief`` driven by observed controls of object ``hypotheses.object_index``.

    Args:
        hypotheses: predictions under parameter vectors of the object.
        belief: the belief it narrows (updated in place).
    """

    def __init__(self, hypotheses: ParameterHypotheses, belief: ParameterBelief) -> None:
        if not isinstance(hypotheses, ParameterHypotheses):
            raise TypeError(f"hypotheses: expected ParameterHypotheses, got {type(hypotheses).__name__}")
        if not isinstance(belief, ParameterBelief):
            raise TypeError(f"belief: expected ParameterBelief, got {type(belief).__name__}")
        self.hypotheses = hypotheses
        self.belief = belief
        self._pose = hypotheses.layout.object_pose(hypotheses.object_index)
        self.observed_controls = 0

    def observe(self, state: np.ndarray, control: np.ndarray, duration: float, next_state: np.ndarray) -> bool:
        """Update the belief with one executed control.

        Args:
            state: (D,) observed before the control.
            control: (2,) m/s, the control executed.
            duration: s.
            next_state: (D,) observed after it.
        Returns:
            whether the belief was updated (False when the object moved less than the settings'
            ``min_motion``, or a state is not finite).
        """
        state, next_state = np.asarray(state, dtype=float), np.asarray(next_state, dtype=float)
        dimension = self.hypotheses.layout.dimension
        for name, value in (("state", state), ("next_state", next_state)):
            if value.shape != (dimension,):
                raise ValueError(f"{name}: expected shape ({dimension},), got {value.shape}")
        self.observed_controls += 1
        if not (np.all(np.isfinite(state)) and np.all(np.isfinite(next_state))):
            return False
        pose = self._pose
        if np.hypot(*(next_state[pose][:2] - state[pose][:2])) < self.belief.settings.min_motion:
            return False
        points = self.belief.sigma_points()
        count = points.shape[0]
        predicted = self.hypotheses.propagate(np.tile(state, (count, 1)), np.tile(np.asarray(control, dtype=float),
                                              (count, 1)), np.full(count, float(duration)), points)
        self.belief.update(predicted[:, pose], next_state[pose])
        return True
