"""An observed (or simulated) scene state at one instant, with per-body validity."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parapush.scene.state import StateLayout


@dataclass(frozen=True)
class SceneSnapshot:
    """The scene state at time ``stamp`` as the estimator (or the simulator) sees it.

    Attributes:
        stamp: time the state refers to, s (latency corrected; monotonic or ROS time).
        object_names: names of the objects, in state order.
        state: (4 + 6 n,) state vector in the papers' layout (see :mod:`parapush.scene.state`).
        pusher_valid: whether the pusher is currently tracked.
        object_valid: (n,) bool, whether each object is currently tracked (False = stale).
        pusher_age: s since the pusher's last valid observation.
        object_age: (n,) s since each object's last valid observation.
    """

    stamp: float
    object_names: tuple[str, ...]
    state: np.ndarray
    pusher_valid: bool = True
    object_valid: np.ndarray | None = None
    pusher_age: float = 0.0
    object_age: np.ndarray | None = None

    def __post_init__(self) -> None:
        names = tuple(self.object_names)
        object.__setattr__(self, "object_names", names)
        layout = StateLayout(len(names))
        state = layout.check(self.state, "state")
        if state.shape != (layout.dimension,):
            raise ValueError(f"state: expected shape ({layout.dimension},), got {state.shape}")
        object.__setattr__(self, "state", state)
        for attribute, default, dtype in (("object_valid", True, bool), ("object_age", 0.0, float)):
            value = getattr(self, attribute)
            value = np.full(len(names), default, dtype) if value is None else np.asarray(value, dtype)
            if value.shape != (len(names),):
                raise ValueError(f"{attribute}: expected shape ({len(names)},), got {value.shape}")
            object.__setattr__(self, attribute, value)

    @property
    def layout(self) -> StateLayout:
        return StateLayout(len(self.object_names))

    @property
    def all_valid(self) -> bool:
        return bool(self.pusher_valid and np.all(self.object_valid))
