"""The papers' state layout x = [q_pusher, q_objects, qdot_pusher, qdot_objects].

For a scene with ``n`` objects a state is a float64 vector of length ``4 + 6 n``::

    [ px, py,                       pusher position, m
      o0x, o0y, o0yaw, ... ,        object poses (x m, y m, yaw rad), object order of the scene
      pvx, pvy,                     pusher velocity, m/s
      o0vx, o0vy, o0w, ... ]        object twists (m/s, m/s, rad/s)

Batches of states are arrays of shape (..., 4 + 6 n). Yaw is not wrapped by the
models (Parareal adds and subtracts states); use :func:`wrap_angle` when comparing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def wrap_angle(angle: np.ndarray | float) -> np.ndarray | float:
    """Wrap angles (rad) to [-pi, pi)."""
    return (np.asarray(angle) + np.pi) % (2.0 * np.pi) - np.pi


@dataclass(frozen=True)
class StateLayout:
    """Index arithmetic for the state vector of a scene with ``object_count`` objects."""

    object_count: int

    def __post_init__(self) -> None:
        if not isinstance(self.object_count, (int, np.integer)) or self.object_count < 1:
            raise ValueError(f"object_count: expected an integer >= 1, got {self.object_count!r}")

    @classmethod
    def from_dimension(cls, dimension: int) -> StateLayout:
        """The layout of state vectors of length ``dimension`` (D = 4 + 6 n for n objects),
        e.g. ``StateLayout.from_dimension(states.shape[-1])``.

        Raises:
            ValueError: naming ``dimension`` unless it is an integer 4 + 6 n with n >= 1.
        """
        if isinstance(dimension, bool) or not isinstance(dimension, (int, np.integer)) \
                or dimension < 10 or (dimension - 4) % 6 != 0:
            raise ValueError(
                f"dimension: expected a state length 4 + 6 n for n >= 1 objects (10, 16, 22, ...), got {dimension!r}"
            )
        return cls(int(dimension - 4) // 6)

    @property
    def dimension(self) -> int:
        """Length of a state vector: 4 + 6 n."""
        return 4 + 6 * self.object_count

    @property
    def position_dimension(self) -> int:
        """Length of the configuration part q: 2 + 3 n."""
        return 2 + 3 * self.object_count

    # -- slices ---------------------------------------------------------------------------
    @property
    def pusher_position(self) -> slice:
        return slice(0, 2)

    def object_pose(self, index: int) -> slice:
        self._check(index)
        return slice(2 + 3 * index, 5 + 3 * index)

    @property
    def object_poses(self) -> slice:
        """All object poses, reshapeable to (n, 3)."""
        return slice(2, self.position_dimension)

    @property
    def pusher_velocity(self) -> slice:
        start = self.position_dimension
        return slice(start, start + 2)

    def object_twist(self, index: int) -> slice:
        self._check(index)
        start = self.position_dimension + 2 + 3 * index
        return slice(start, start + 3)

    @property
    def object_twists(self) -> slice:
        """All object twists, reshapeable to (n, 3)."""
        return slice(self.position_dimension + 2, self.dimension)

    @property
    def yaw_indices(self) -> np.ndarray:
        """Indices of the object yaw angles in the state vector."""
        return np.array([2 + 3 * index + 2 for index in range(self.object_count)])

    # -- views on batches -----------------------------------------------------------------
    def poses(self, states: np.ndarray) -> np.ndarray:
        """Object poses of states (..., D) as an array (..., n, 3)."""
        states = self.check(states)
        return states[..., self.object_poses].reshape(*states.shape[:-1], self.object_count, 3)

    def twists(self, states: np.ndarray) -> np.ndarray:
        """Object twists of states (..., D) as an array (..., n, 3)."""
        states = self.check(states)
        return states[..., self.object_twists].reshape(*states.shape[:-1], self.object_count, 3)

    def compose(
        self,
        pusher_position: np.ndarray,
        object_poses: np.ndarray,
        pusher_velocity: np.ndarray | None = None,
        object_twists: np.ndarray | None = None,
    ) -> np.ndarray:
        """Assemble a state (or a batch) from its parts.

        Args:
            pusher_position: (..., 2) m.
            object_poses: (..., n, 3) m, m, rad.
            pusher_velocity: (..., 2) m/s; zeros when omitted.
            object_twists: (..., n, 3); zeros when omitted.
        Returns:
            states (..., 4 + 6 n).
        """
        pusher_position = np.asarray(pusher_position, dtype=float)
        object_poses = np.asarray(object_poses, dtype=float)
        batch = pusher_position.shape[:-1]
        if pusher_position.shape[-1:] != (2,):
            raise ValueError(f"pusher_position: expected shape (..., 2), got {pusher_position.shape}")
        if object_poses.shape != (*batch, self.object_count, 3):
            raise ValueError(
                f"object_poses: expected shape {(*batch, self.object_count, 3)}, got {object_poses.shape}"
            )
        states = np.zeros((*batch, self.dimension))
        states[..., self.pusher_position] = pusher_position
        states[..., self.object_poses] = object_poses.reshape(*batch, 3 * self.object_count)
        if pusher_velocity is not None:
            states[..., self.pusher_velocity] = np.asarray(pusher_velocity, dtype=float)
        if object_twists is not None:
            twists = np.asarray(object_twists, dtype=float)
            states[..., self.object_twists] = twists.reshape(*batch, 3 * self.object_count)
        return states

    def check(self, states: np.ndarray, name: str = "states") -> np.ndarray:
        """Return ``states`` as a float array, raising ValueError naming ``name`` if its last
        axis is not the state dimension."""
        states = np.asarray(states, dtype=float)
        if states.ndim == 0 or states.shape[-1] != self.dimension:
            raise ValueError(
                f"{name}: expected shape (..., {self.dimension}) for {self.object_count} object(s), "
                f"got {states.shape}"
            )
        return states

    def _check(self, index: int) -> None:
        if not 0 <= index < self.object_count:
            raise IndexError(f"object index {index} out of range for {self.object_count} object(s)")
