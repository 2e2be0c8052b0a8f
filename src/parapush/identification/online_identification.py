"""Narrow what is believed about an object's physics as the robot pushes it.

An :class:`~parapush.identification.ObjectIdentifier` predicts with the fine model under
several parameter vectors of one object at once (one model variant per row, one batched
``mujoco.rollout`` call: :meth:`~parapush.identification.ObjectIdentifier.propagate`). The
robust planner (:mod:`parapush.planning.robust_scoring`) rolls its candidates out with it, and
:class:`OnlineIdentification` uses it for the belief's measurement step
(:class:`~parapush.identification.parameter_belief.ParameterBelief`'s unscented update): after
each executed control, each sigma point of the belief predicts the object's pose from the state
observed before the control, and the pose observed after it moves the belief.
"""

from __future__ import annotations

import numpy as np

from parapush.identification.identifier import ObjectIdentifier
from parapush.identification.parameter_belief import ParameterBelief
from parapush.validation import check_instance

__all__ = ["OnlineIdentification"]


class OnlineIdentification:
    """The measurement steps of ``belief`` driven by observed controls of object ``identifier.object_index``.

    Args:
        identifier: predicts under parameter vectors of the object.
        belief: the belief it narrows (updated in place).
    """

    def __init__(self, identifier: ObjectIdentifier, belief: ParameterBelief) -> None:
        self.identifier = check_instance("identifier", identifier, ObjectIdentifier)
        self.belief = check_instance("belief", belief, ParameterBelief)
        self._layout = identifier.fine_model.layout
        self._pose = self._layout.object_pose(identifier.object_index)
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
        dimension = self._layout.dimension
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
        predicted = self.identifier.propagate(np.tile(state, (count, 1)), np.tile(np.asarray(control, dtype=float),
                                              (count, 1)), np.full(count, float(duration)), points)
        self.belief.update(predicted[:, pose], next_state[pose])
        return True
