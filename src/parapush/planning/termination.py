"""When a pushing task is over: geometric checks of an observed state (ISRR, journal).

Checked in this order (a failure wins over a simultaneous success):

1. OBSTACLE_HIT: the target or the pusher touches a static obstacle (clearance <=
   ``obstacle_tolerance``, exact planar geometry of cylinders and boxes);
2. OBJECT_OFF_TABLE: the centre of any object is off the table top (shrunk by
   ``table_margin``), i.e. it falls;
3. OBJECT_IN_GOAL: the centre of a non-target object is inside the goal region;
4. SUCCESS: the target's centre is inside the goal region.

Running out of controls, cancellation and errors are decided by the MPC loop.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from parapush.physics.planar_geometry import disc_obstacle_clearance, object_obstacle_clearance
from parapush.scene import Scene


class MpcOutcome(enum.IntEnum):
    """How a pushing task ended; values equal the ``PushObject`` action's OUTCOME_* constants."""

    SUCCESS = 0
    OBSTACLE_HIT = 1
    OBJECT_OFF_TABLE = 2
    OBJECT_IN_GOAL = 3
    MAX_CONTROLS = 4
    CANCELED = 5
    ERROR = 6


@dataclass(frozen=True)
class TaskStatus:
    """Result of checking one state.

    Attributes:
        outcome: the terminal outcome, or None while the task goes on.
        reason: human-readable explanation (names the bodies involved); empty while going on.
        distance_to_goal: m, target centre to goal centre.
    """

    outcome: MpcOutcome | None
    reason: str
    distance_to_goal: float

    @property
    def finished(self) -> bool:
        return self.outcome is not None


@dataclass(frozen=True, kw_only=True)
class TerminationCheck:
    """Classifies observed states of ``scene``.

    Attributes:
        scene: the scene (it must have a goal region).
        obstacle_tolerance: m; a body within this clearance of an obstacle counts as a hit
            (0: actual contact; a small positive value absorbs tracking noise).
        table_margin: m; an object whose centre is beyond the table edges shrunk by this
            margin counts as off the table (0: its centre is past the edge).
    """

    scene: Scene
    obstacle_tolerance: float = 0.0
    table_margin: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.scene, Scene):
            raise TypeError(f"scene: expected a parapush.scene.Scene, got {type(self.scene).__name__}")
        if self.scene.goal is None:
            raise ValueError(f"scene: {self.scene.name!r} has no goal region; a pushing task needs one")
        for name in ("obstacle_tolerance", "table_margin"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name}: expected a finite number, got {value!r}")
            object.__setattr__(self, name, float(value))

    def check(self, state: np.ndarray) -> TaskStatus:
        """Classify ``state`` (D,)."""
        scene = self.scene
        layout = scene.layout
        state = layout.check(state, "state")
        if state.shape != (layout.dimension,):
            raise ValueError(f"state: expected shape ({layout.dimension},), got {state.shape}")
        if not np.all(np.isfinite(state)):
            raise ValueError("state: contains non-finite values")
        poses = layout.poses(state)
        target_index = scene.target_index
        goal = scene.goal
        assert goal is not None  # checked in __post_init__
        distance = float(np.hypot(*(poses[target_index, :2] - np.asarray(goal.center))))
        pusher = state[layout.pusher_position]
        target_spec = scene.objects[target_index]

        for obstacle in scene.obstacles:
            clearance = object_obstacle_clearance(target_spec, poses[target_index], obstacle)
            if clearance <= self.obstacle_tolerance:
                return TaskStatus(
                    MpcOutcome.OBSTACLE_HIT,
                    f"target {target_spec.name!r} hit obstacle {obstacle.name!r} "
                    f"(clearance {clearance:.4f} m)",
                    distance,
                )
            clearance = disc_obstacle_clearance(pusher, scene.pusher.radius, obstacle)
            if clearance <= self.obstacle_tolerance:
                return TaskStatus(
                    MpcOutcome.OBSTACLE_HIT,
                    f"pusher hit obstacle {obstacle.name!r} (clearance {clearance:.4f} m)",
                    distance,
                )
        for index, spec in enumerate(scene.objects):
            x, y = poses[index, :2]
            if not scene.table.contains(float(x), float(y), self.table_margin):
                return TaskStatus(
                    MpcOutcome.OBJECT_OFF_TABLE,
                    f"object {spec.name!r} left the table (centre at ({x:.3f}, {y:.3f}) m)",
                    distance,
                )
        for index, spec in enumerate(scene.objects):
            if index != target_index and goal.contains(float(poses[index, 0]), float(poses[index, 1])):
                return TaskStatus(
                    MpcOutcome.OBJECT_IN_GOAL,
                    f"non-target object {spec.name!r} entered the goal region",
                    distance,
                )
        if goal.contains(float(poses[target_index, 0]), float(poses[target_index, 1])):
            return TaskStatus(MpcOutcome.SUCCESS, "", distance)
        return TaskStatus(None, "", distance)
