"""How far the target still has to travel to the goal when static obstacles stand in the way.

The planner's terminal cost measures the target's distance to the goal centre (ISRR J_N).
The straight-line distance has a local minimum in front of an obstacle that lies between
the target and the goal: every short push round the obstacle first moves the target
sideways, which barely changes (or raises) the straight-line distance, so within the
4-control horizon no plan is better than standing still (measured: a box target behind a
central obstacle, the cost flat at 0.496 for 20 controls while the pusher crept about).
A *route distance* removes it: the length of the shortest path of the target's centre to the
goal centre that keeps the target clear of every obstacle, with the target a disc of its
bounding radius about its pose plus a margin (:func:`route_radius`: for a cylinder its radius;
for the default box its half-diagonal, 9.4 cm, the disc it sweeps as it turns on the way). With
the inscribed radius (a box's half width, 5.45 cm) the route led a box so close past the
obstacle that any push along it grazed the post: the obstacle-proximity term priced every such
plan above standing still, and the box stood behind its obstacle for the rest of the task
(``docs/planner_tuning.md``: box-obstacle scenes of probe seeds, interleaved). A gap wider than
the box but narrower than its diagonal is blocked for this route (a move through blocked cells
is dearer, not forbidden). Where the straight line to the goal is clear, the route distance IS
the straight-line distance (exactly: those points are answered in closed form), so the cost
changes only behind obstacles. Movable objects are not obstacles here (the pusher may push them
aside; the non-target-object term prices that).

Computation (:meth:`GoalRoute.for_scene`, once per scene and margin): a grid over the table
(and :data:`GRID_BORDER` beyond its edges) with spacing ``resolution``; cells whose disc
touches an obstacle are *blocked*; cells that see the goal centre get the exact distance;
Dijkstra over 16-neighbour moves carries those values to the rest (a move into or out of a
blocked cell costs :data:`BLOCKED_FACTOR` times its length, so a target predicted inside an
obstacle's margin still has a finite distance that grows towards the inside; the 16-neighbour
moves make a route round a post 1.1 % longer than the exact tangent-arc-tangent path,
``test/unit/test_planning_goal_route.py``). Queries
(:meth:`GoalRoute.distance`, :meth:`GoalRoute.direction`) are bilinear on the grid, except for
points that see the goal, which are exact.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from parapush.physics.planar_geometry import segment_obstacle_clearance
from parapush.scene import Outline, Scene

GRID_BORDER = 0.05
"""m of grid beyond each table edge (targets predicted just off the table keep a distance)."""

BLOCKED_FACTOR = 4.0
"""Cost per metre of a move into or out of a blocked cell, relative to a free move."""

DIRECTION_SAMPLES = 32
"""Directions :meth:`GoalRoute.direction` compares behind obstacles (11.25 degrees apart)."""

DIRECTION_REACH = 2.0
"""Grid cells from the point at which those directions are compared."""

_ANGLES = 2 * np.pi * np.arange(DIRECTION_SAMPLES) / DIRECTION_SAMPLES
_UNIT_DIRECTIONS = np.stack([np.cos(_ANGLES), np.sin(_ANGLES)], axis=1)

_MOVES = np.array([(1, 0), (0, 1), (1, 1), (1, -1), (2, 1), (1, 2), (2, -1), (1, -2)])
"""Half of the 16-neighbour stencil (each move is added in both directions), (row, column) steps."""


@dataclass(frozen=True, eq=False)
class GoalRoute:
    """Route distance of the target's centre to the goal centre around the static obstacles.

    Attributes:
        goal: (2,) goal centre, m.
        radius: m, the target's disc: its bounding radius (:func:`route_radius`) plus the margin.
        obstacles: the scene's static obstacles.
        origin: (2,) m, table-frame position of grid cell (0, 0).
        resolution: m, grid spacing.
        distances: (rows, columns) route distance at each cell centre, m (rows along y).
    """

    goal: np.ndarray
    radius: float
    obstacles: tuple
    origin: np.ndarray
    resolution: float
    distances: np.ndarray

    @classmethod
    def for_scene(cls, scene: Scene, margin: float, resolution: float = 0.005) -> GoalRoute | None:
        """The route of ``scene``'s target to its goal (None without obstacles or goal: the
        straight-line distance is then the route distance everywhere).

        Args:
            scene: the task.
            margin: m added to the target's bounding radius, >= 0.
            resolution: m, grid spacing, > 0.
        Raises:
            ValueError naming ``margin`` or ``resolution``.
        """
        if not np.isfinite(margin) or margin < 0:
            raise ValueError(f"margin: expected a finite number >= 0 m, got {margin!r}")
        if not np.isfinite(resolution) or resolution <= 0:
            raise ValueError(f"resolution: expected a finite number > 0 m, got {resolution!r}")
        if not scene.obstacles or scene.goal is None:
            return None
        return _route(scene, float(margin), float(resolution))

    # -- queries ------------------------------------------------------------------------------
    def sees_goal(self, points: np.ndarray) -> np.ndarray:
        """(...,) bool: the straight path of the target's disc from each of ``points`` (..., 2)
        to the goal centre is clear of every obstacle."""
        points = np.asarray(points, dtype=float)
        goal = np.broadcast_to(self.goal, points.shape)
        clear = np.ones(points.shape[:-1], dtype=bool)
        for obstacle in self.obstacles:
            clear &= segment_obstacle_clearance(points, goal, self.radius, obstacle) > 0.0
        return clear

    def distance(self, points: np.ndarray) -> np.ndarray:
        """(...,) route distance, m, of target centres ``points`` (..., 2) m to the goal centre."""
        points = np.asarray(points, dtype=float)
        distance = np.array(np.linalg.norm(points - self.goal, axis=-1))  # an array also for one point
        hidden = ~self.sees_goal(points)  # the grid is read only behind the obstacles
        distance[hidden] = np.maximum(self._interpolated(points[hidden]), distance[hidden])
        return distance

    def direction(self, points: np.ndarray) -> np.ndarray:
        """(..., 2) unit vectors along which the route leaves each of ``points`` (..., 2) m: towards
        the goal centre where it is in sight, else down the route distance's steepest slope; zero
        at the goal centre."""
        points = np.asarray(points, dtype=float)
        direction = self.goal - points
        hidden = ~self.sees_goal(points)
        # behind the obstacles: the steepest descent among DIRECTION_SAMPLES directions (not the
        # central-difference gradient: straight behind an obstacle the route distance has a ridge,
        # whose gradient points into the obstacle; the first of two equal sides is taken)
        around = DIRECTION_REACH * self.resolution * _UNIT_DIRECTIONS  # (K, 2)
        values = self._interpolated(points[hidden][:, None, :] + around)  # (hidden, K)
        direction[hidden] = _UNIT_DIRECTIONS[np.argmin(np.where(np.isnan(values), np.inf, values), axis=-1)]
        length = np.linalg.norm(direction, axis=-1, keepdims=True)
        return np.where(length > 1e-12, direction / np.maximum(length, 1e-12), 0.0)

    def _interpolated(self, points: np.ndarray) -> np.ndarray:
        """Bilinear grid value at ``points`` (..., 2); beyond the grid, the nearest edge value plus
        the distance to it; NaN at non-finite points."""
        rows, columns = self.distances.shape
        finite = np.all(np.isfinite(points), axis=-1)
        cell = (np.where(finite[..., None], points, 0.0) - self.origin) / self.resolution  # (column, row) units
        upper = np.array([columns - 1, rows - 1], dtype=float)
        inside = np.clip(cell, 0.0, upper)
        outside = np.linalg.norm(cell - inside, axis=-1) * self.resolution
        low = np.minimum(np.floor(inside).astype(int), np.array([columns - 2, rows - 2]))
        fraction = inside - low
        column, row = low[..., 0], low[..., 1]
        grid = self.distances
        below = grid[row, column] * (1 - fraction[..., 0]) + grid[row, column + 1] * fraction[..., 0]
        above = grid[row + 1, column] * (1 - fraction[..., 0]) + grid[row + 1, column + 1] * fraction[..., 0]
        return np.where(finite, below * (1 - fraction[..., 1]) + above * fraction[..., 1] + outside, np.nan)


def goal_route(scene: Scene, margin: float | None) -> GoalRoute | None:
    """:meth:`GoalRoute.for_scene` for a cost term's ``route_margin`` (None: no route, the
    straight line); the terms check the margin first, naming ``<term>.route_margin``."""
    return None if margin is None else GoalRoute.for_scene(scene, margin)


def route_radius(outline: Outline) -> float:
    """m, the radius of the disc that stands for a target of ``outline`` on its route (before the
    margin): its bounding radius about its pose (module docstring)."""
    return float(outline.bounding_radius)


@functools.lru_cache(maxsize=16)
def _route(scene: Scene, margin: float, resolution: float) -> GoalRoute:
    """The grid and Dijkstra of :class:`GoalRoute` (module docstring), cached per scene."""
    # scipy here, not at module level: every node imports the planning package, few need a route
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

    radius = route_radius(scene.objects[scene.target_index].outline) + margin
    half_x, half_y = scene.table.half_extents
    origin = np.array([-half_x - GRID_BORDER, -half_y - GRID_BORDER])
    columns = int(np.ceil(2 * (half_x + GRID_BORDER) / resolution)) + 1
    rows = int(np.ceil(2 * (half_y + GRID_BORDER) / resolution)) + 1
    xs, ys = np.meshgrid(origin[0] + resolution * np.arange(columns), origin[1] + resolution * np.arange(rows))
    centres = np.stack([xs, ys], axis=-1)  # (rows, columns, 2)
    goal = np.asarray(scene.goal.center, dtype=float)
    blocked = np.zeros((rows, columns), dtype=bool)
    visible = np.ones((rows, columns), dtype=bool)
    for obstacle in scene.obstacles:
        blocked |= segment_obstacle_clearance(centres, centres, radius, obstacle) <= 0.0
        visible &= segment_obstacle_clearance(centres, np.broadcast_to(goal, centres.shape), radius, obstacle) > 0.0
    visible &= ~blocked
    count = rows * columns
    index = np.arange(count).reshape(rows, columns)
    starts, ends, weights = [], [], []
    for step_row, step_column in _MOVES:
        row_range = slice(max(0, -step_row), rows - max(0, step_row))
        column_range = slice(max(0, -step_column), columns - max(0, step_column))
        source = index[row_range, column_range]
        destination = source + step_row * columns + step_column
        length = resolution * float(np.hypot(step_row, step_column))
        either = blocked.ravel()[source] | blocked.ravel()[destination]
        weight = np.where(either, BLOCKED_FACTOR * length, length).ravel()
        starts += [source.ravel(), destination.ravel()]
        ends += [destination.ravel(), source.ravel()]
        weights += [weight, weight]
    seeds = np.flatnonzero(visible.ravel())
    if seeds.size == 0:  # the goal is inside an obstacle's margin: every cell as the crow flies
        straight = np.linalg.norm(centres - goal, axis=-1)
        return GoalRoute(goal=goal, radius=radius, obstacles=tuple(scene.obstacles), origin=origin,
                         resolution=resolution, distances=straight)
    straight = np.linalg.norm(centres - goal, axis=-1).ravel()
    starts.append(np.full(seeds.size, count))  # a virtual source, one edge of the exact distance per seen cell
    ends.append(seeds)
    weights.append(np.maximum(straight[seeds], 1e-12))  # csgraph drops zero-weight edges
    graph = coo_matrix((np.concatenate(weights), (np.concatenate(starts), np.concatenate(ends))),
                       shape=(count + 1, count + 1)).tocsr()
    distances = dijkstra(graph, directed=True, indices=count)[:count].reshape(rows, columns)
    return GoalRoute(goal=goal, radius=radius, obstacles=tuple(scene.obstacles), origin=origin,
                     resolution=resolution, distances=distances)
