"""The path a body has followed, thinned: a pose is kept once the body has moved far enough.

ROS-free; the visualizer node publishes it as a ``nav_msgs/Path`` in the table frame.
"""

from __future__ import annotations

import math
from collections import deque


class ExecutedPath:
    """Keeps the poses (stamp s, x m, y m, yaw rad) of one body, thinned and bounded.

    A pose is kept when it lies at least ``min_spacing`` (m) from the last kept one, or when
    it is the first; at most ``max_poses`` are kept (the oldest go first).
    """

    def __init__(self, min_spacing: float, max_poses: int) -> None:
        if not math.isfinite(min_spacing) or min_spacing < 0.0:
            raise ValueError(f"min_spacing: must be >= 0 m, got {min_spacing!r}")
        if int(max_poses) != max_poses or max_poses < 2:
            raise ValueError(f"max_poses: expected an integer >= 2, got {max_poses!r}")
        self.min_spacing = float(min_spacing)
        self.poses: deque[tuple[float, float, float, float]] = deque(maxlen=int(max_poses))

    def add(self, stamp: float, x: float, y: float, yaw: float = 0.0) -> bool:
        """Offer a pose; returns whether it was kept (non-finite poses never are)."""
        if not all(math.isfinite(value) for value in (stamp, x, y, yaw)):
            return False
        if self.poses:
            _, last_x, last_y, _ = self.poses[-1]
            if math.hypot(x - last_x, y - last_y) < self.min_spacing:
                return False
        self.poses.append((float(stamp), float(x), float(y), float(yaw)))
        return True
