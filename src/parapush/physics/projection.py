"""Projection of infeasible (interpenetrating) states to nearby feasible ones, ISRR Eq 9.

Parareal's correction ``C(x^k) - C(x^{k-1}) + F(x^{k-1})`` can put bodies inside each
other, where contact dynamics are undefined and the fine model may blow up. Eq 9 moves
the object to the nearest pose with no penetration; the paper notes that for simple
shapes the penetration depth can be found analytically and the object moved along the
contact normal. This module does that, pair by pair, with the exact minimum translation
of each pair:

- pusher/object: the object moves by the penetration depth along the normal (the pusher
  is commanded, so it never moves);
- object/obstacle: the object moves out of the static obstacle;
- object/object: both objects move by half the depth in opposite directions (the
  smallest total displacement that separates them).

Shapes are the bodies' outlines (:class:`~parapush.scene.outline.Outline`: the pusher and
cylinders discs, boxes rectangles, ellipses and polygons); depths come from
:func:`parapush.physics.planar_geometry.outline_penetration`: analytic for disc/disc,
disc/rectangle and rectangle/rectangle, the nearest boundary point for a disc and a polygon,
the separating-axis theorem between convex parts otherwise (an ellipse is its 48-gon; for a
non-convex polygon the deepest pair of parts, which further passes finish). Orientations
and velocities are kept. Resolving one pair can create another penetration (chains,
clusters), so the pairs are swept ``passes`` times, stopping early once a pass moves
nothing. Each move adds ``clearance`` so that a projected state is not re-projected by
rounding. Rows without penetration deeper than 1e-12 m (and NaN rows) are returned
bit-identical. A body
wedged between the pusher and an obstacle has no feasible pose and keeps a (reduced)
penetration; :meth:`FeasibilityProjector.penetration` reports what is left.
"""

from __future__ import annotations

import numpy as np

from parapush.physics.planar_geometry import outline_penetration
from parapush.scene import Outline, Scene, StateLayout
from parapush.validation import check_integer, check_real

_PUSHER = -1
"""Pair code of the pusher; obstacle j is coded ``_OBSTACLE_BASE - j``."""
_OBSTACLE_BASE = -2
_DEPTH_TOLERANCE = 1e-12
"""Penetrations up to this depth (m) are rounding, not contact: such states are feasible."""
_PIN_TOLERANCE = 1e-6
"""An object within this distance of a fixed body (m) is pinned against it."""


_penetration = outline_penetration
"""Depth (M,) and unit normal (M, 2) along which the second body must move."""


class FeasibilityProjector:
    """Moves penetrating objects to nearby non-penetrating poses (the pusher never moves).

    Args:
        scene: the scene (shapes of the pusher, objects and obstacles).
        passes: maximum sweeps over all pairs, >= 1.
        clearance: extra separation added to every move, m (>= 0).

    Attributes:
        layout: the scene's state layout.
    """

    def __init__(self, scene: Scene, *, passes: int = 8, clearance: float = 1e-7) -> None:
        if not isinstance(scene, Scene):
            raise TypeError(f"scene: expected a parapush.scene.Scene, got {type(scene).__name__}")
        passes = check_integer("passes", passes, minimum=1)
        clearance = check_real("clearance", clearance, minimum=0.0, below=1e-3)
        self.scene = scene
        self.layout: StateLayout = scene.layout
        self.passes = passes
        self.clearance = float(clearance)
        self._pusher = Outline("disc", radius=scene.pusher.radius)
        self._objects: list[Outline] = [spec.outline for spec in scene.objects]
        self._obstacles: list[tuple[Outline, np.ndarray, float]] = [
            (obstacle.outline, np.array(obstacle.pose[:2]), obstacle.pose[2]) for obstacle in scene.obstacles
        ]
        count = len(self._objects)
        # (first, second): second is always an object; the pusher and obstacles come first,
        # so a sweep ends with object/object pairs
        self._pairs: list[tuple[int, int]] = [(_PUSHER, index) for index in range(count)]
        self._pairs += [
            (_OBSTACLE_BASE - obstacle, index) for index in range(count) for obstacle in range(len(self._obstacles))
        ]
        self._pairs += [(first, second) for first in range(count) for second in range(first + 1, count)]

    def project(self, states: np.ndarray) -> np.ndarray:
        """States (M, D) -> (M, D) without pusher/object, object/obstacle or object/object
        penetration (up to ``passes`` sweeps); objects move by minimum translations."""
        states = self.layout.check(states)
        if states.ndim != 2:
            raise ValueError(f"states: expected shape (M, {self.layout.dimension}), got {states.shape}")
        result = states.copy()
        finite = np.all(np.isfinite(states), axis=1)
        rows = np.flatnonzero(finite)
        if rows.size == 0:
            return result
        poses = self.layout.poses(states[rows]).copy()  # (m, n, 3)
        pusher = states[rows][:, self.layout.pusher_position]
        moved_any = np.zeros(rows.size, dtype=bool)
        for _ in range(self.passes):
            moved = self._sweep(pusher, poses)
            moved_any |= moved
            if not np.any(moved):
                break
        if np.any(moved_any):
            changed = rows[moved_any]
            result[changed, self.layout.object_poses] = poses[moved_any].reshape(changed.size, -1)
        return result

    def penetration(self, states: np.ndarray) -> np.ndarray:
        """(M,) largest penetration depth of any pusher/object, object/obstacle or
        object/object pair, m (<= 0 when the state is feasible; NaN for NaN rows)."""
        states = self.layout.check(states)
        poses = self.layout.poses(states)
        pusher = states[:, self.layout.pusher_position]
        deepest = np.full(states.shape[0], -np.inf)
        for pair in self._pairs:
            deepest = np.maximum(deepest, self._pair_penetration(pair, pusher, poses)[0])
        return np.where(np.all(np.isfinite(states), axis=1), deepest, np.nan)

    def _pair_penetration(
        self, pair: tuple[int, int], pusher: np.ndarray, poses: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Depth (m,) and the unit direction (m, 2) in which object ``pair[1]`` must move.

        ``pair[0]`` is an object index, :data:`_PUSHER`, or ``_OBSTACLE_BASE - j`` for obstacle j.
        """
        first, second = pair
        second_args = (self._objects[second], poses[:, second, :2], poses[:, second, 2])
        if first == _PUSHER:
            return _penetration(self._pusher, pusher, np.zeros(pusher.shape[0]), *second_args)
        if first <= _OBSTACLE_BASE:
            shape, centre, yaw = self._obstacles[_OBSTACLE_BASE - first]
            return _penetration(
                shape, np.broadcast_to(centre, pusher.shape), np.full(pusher.shape[0], yaw), *second_args
            )
        return _penetration(self._objects[first], poses[:, first, :2], poses[:, first, 2], *second_args)

    def _sweep(self, pusher: np.ndarray, poses: np.ndarray) -> np.ndarray:
        """One Gauss-Seidel pass over all pairs (each sees the previous moves), moving
        objects in place; returns (m,) which rows moved.

        Fixed bodies (pusher, obstacles) push objects out first. An object left touching a
        fixed body is *pinned*: in an object/object pair, if separating would push it back
        into that body, only the other object moves (by the full depth), which is the
        minimum displacement with the fixed body in place; otherwise both move by half.
        """
        rows = pusher.shape[0]
        moved = np.zeros(rows, dtype=bool)
        count = len(self._objects)
        pin_normals = np.zeros((rows, count, 2))  # direction away from the touching fixed body
        pinned = np.zeros((rows, count), dtype=bool)
        for pair in self._pairs:
            first, second = pair
            depth, normal = self._pair_penetration(pair, pusher, poses)
            hit = depth > _DEPTH_TOLERANCE
            if first < 0:  # the pusher or an obstacle: fixed
                if np.any(hit):
                    poses[hit, second, :2] += (depth[hit] + self.clearance)[:, None] * normal[hit]
                    moved |= hit
                touching = hit | (depth > -_PIN_TOLERANCE)
                pinned[touching, second] = True
                pin_normals[touching, second] = normal[touching]
                continue
            if not np.any(hit):
                continue
            # share of the move taken by the second object (the first takes the rest, reversed)
            first_blocked = pinned[:, first] & (np.sum(normal * pin_normals[:, first], axis=-1) > 0.0)
            second_blocked = pinned[:, second] & (np.sum(normal * pin_normals[:, second], axis=-1) < 0.0)
            share = np.where(first_blocked & ~second_blocked, 1.0, np.where(second_blocked & ~first_blocked, 0.0, 0.5))
            push = (depth[hit] + self.clearance)[:, None] * normal[hit]
            poses[hit, second, :2] += share[hit, None] * push
            poses[hit, first, :2] -= (1.0 - share[hit, None]) * push
            moved |= hit
        return moved
