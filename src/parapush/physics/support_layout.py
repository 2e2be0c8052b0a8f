"""Where an object's weight meets the table in the fine model (``FineSettings.support``).

A plate resting on a flat table presses on it over its whole outline; how the pressure is spread
decides how the plate turns when it is pushed off its centre (the friction torque the table can
resist). MuJoCo's own colliders put the weight on a few extreme points: a cylinder on 3 points of
its rim, a box on its 4 corners, a mesh on at most 4 of its bottom corners (not symmetrically
for a hexagon). That is the largest torque a support can resist, and the fine model then turned
recorded real plates 2.5-4 times too little (``bench/real_pushes.py``). Two even-pressure layouts:

- :func:`even_support_points`: ``count`` points at the centroids of ``count`` cells of nearly
  equal area covering the outline (Lloyd's k-means over a fine grid of its inside points), each a
  table contact. With the objects' roll and pitch (``object_tilt``) the contacts' compliance
  shares the weight among them as on a rigid plate on an elastic table.
- one contact at the centroid with the torsional friction of an even pressure: the torque it
  resists is ``mu * N * c`` with ``c`` the mean distance of the outline's area from its centroid
  (:func:`parapush.physics.limit_surface.uniform_pressure_radius`); with MuJoCo's elliptic cone the
  contact's friction wrenches form the ellipsoidal limit surface of that pressure.
"""

from __future__ import annotations

import functools

import numpy as np

from parapush.scene.outline import Outline

GRID_CELLS = 4000
"""About how many grid points sample the outline's inside for :func:`even_support_points`."""

LLOYD_ITERATIONS = 60
"""Iterations of Lloyd's algorithm (the points move less than 0.1 mm in the last ones)."""


def _inside_grid(outline: Outline) -> np.ndarray:
    """(G, 2) body-frame points of a square grid inside ``outline`` (about :data:`GRID_CELLS`), m."""
    low, high = outline.boundary().min(axis=0), outline.boundary().max(axis=0)
    spacing = float(np.sqrt(outline.area / GRID_CELLS))
    axes = [np.arange(low[axis] + 0.5 * spacing, high[axis], spacing) for axis in range(2)]
    points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 2)
    return points[outline.contains(points)]


@functools.lru_cache(maxsize=256)
def even_support_points(outline: Outline, count: int) -> np.ndarray:
    """(count, 2) body-frame points (m) spreading a plate's weight evenly over ``outline``: the
    centroids of ``count`` cells of nearly equal area that cover it (Lloyd's k-means on its inside
    grid, started deterministically by farthest-point sampling from the point nearest the
    centroid; one point: the grid point nearest the centroid). Read-only, cached per outline."""
    if not isinstance(outline, Outline):
        raise TypeError(f"outline: expected a parapush.scene.outline.Outline, got {type(outline).__name__}")
    if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or count < 1:
        raise ValueError(f"count: expected an integer >= 1, got {count!r}")
    grid = _inside_grid(outline)
    if count == 1:
        centre = grid[np.argmin(np.linalg.norm(grid - outline.centroid, axis=1))]
        result = centre[None].copy()
        result.setflags(write=False)
        return result
    chosen = [int(np.argmin(np.linalg.norm(grid - outline.centroid, axis=1)))]
    distance = np.linalg.norm(grid - grid[chosen[0]], axis=1)
    for _ in range(count - 1):
        chosen.append(int(np.argmax(distance)))
        distance = np.minimum(distance, np.linalg.norm(grid - grid[chosen[-1]], axis=1))
    centres = grid[chosen]
    for _ in range(LLOYD_ITERATIONS):
        labels = np.argmin(np.linalg.norm(grid[:, None, :] - centres[None], axis=-1), axis=1)
        centres = np.array([grid[labels == cell].mean(axis=0) if np.any(labels == cell) else centres[cell]
                            for cell in range(count)])
    centres.setflags(write=False)
    return centres
