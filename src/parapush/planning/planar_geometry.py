"""Planar distances between the bodies of a pushing scene and its static obstacles.

Bodies are discs (the pusher, cylinders) or oriented rectangles (boxes); obstacles are
cylinders or boxes (:class:`parapush.scene.Obstacle`). Two uses:

- costs: the *swept* clearance of a disc moving along a straight segment (one control),
  vectorised over any batch shape: :func:`segment_obstacle_clearance`;
- termination checks: the clearance of one body at one pose:
  :func:`object_obstacle_clearance`, :func:`disc_obstacle_clearance`.

All lengths are metres in the table frame; a clearance is the gap between the two
surfaces, <= 0 when they touch or overlap (overlapping rectangles report 0).
"""

from __future__ import annotations

import math

import numpy as np

from parapush.scene import ObjectSpec, Obstacle


def _rotation(yaw: float) -> np.ndarray:
    cosine, sine = math.cos(yaw), math.sin(yaw)
    return np.array([[cosine, -sine], [sine, cosine]])


def segment_point_distance(starts: np.ndarray, ends: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Distance from ``point`` (2,) to the segments ``starts`` -> ``ends`` (..., 2), m -> (...,)."""
    starts = np.asarray(starts, dtype=float)
    ends = np.asarray(ends, dtype=float)
    point = np.asarray(point, dtype=float)
    direction = ends - starts
    length_squared = np.einsum("...i,...i->...", direction, direction)
    safe = np.where(length_squared > 0.0, length_squared, 1.0)
    fraction = np.einsum("...i,...i->...", point - starts, direction) / safe
    fraction = np.where(length_squared > 0.0, np.clip(fraction, 0.0, 1.0), 0.0)
    closest = starts + fraction[..., None] * direction
    return np.linalg.norm(closest - point, axis=-1)


def _point_box_distance(points: np.ndarray, half_extents: np.ndarray) -> np.ndarray:
    """Distance of points (..., 2) in the box frame to the axis-aligned box (0 inside)."""
    outside = np.maximum(np.abs(points) - half_extents, 0.0)
    return np.linalg.norm(outside, axis=-1)


def _segment_hits_box(starts: np.ndarray, ends: np.ndarray, half_extents: np.ndarray) -> np.ndarray:
    """Whether segments (..., 2) in the box frame intersect the axis-aligned box (slab test)."""
    direction = ends - starts
    entry = np.zeros(starts.shape[:-1])
    leave = np.ones(starts.shape[:-1])
    hit = np.ones(starts.shape[:-1], dtype=bool)
    for axis in range(2):
        delta = direction[..., axis]
        origin = starts[..., axis]
        parallel = np.abs(delta) < 1e-15
        # A segment parallel to the slab hits it only if it starts inside it.
        hit &= ~(parallel & (np.abs(origin) > half_extents[axis]))
        safe = np.where(parallel, 1.0, delta)
        low = (-half_extents[axis] - origin) / safe
        high = (half_extents[axis] - origin) / safe
        near = np.where(parallel, -np.inf, np.minimum(low, high))
        far = np.where(parallel, np.inf, np.maximum(low, high))
        entry = np.maximum(entry, near)
        leave = np.minimum(leave, far)
    return hit & (entry <= leave)


def segment_box_distance(
    starts: np.ndarray, ends: np.ndarray, half_extents: tuple[float, float], pose: tuple[float, float, float]
) -> np.ndarray:
    """Distance between segments (..., 2) and an oriented rectangle, m -> (...,); 0 if they cross.

    Args:
        starts, ends: segment end points (..., 2), m, table frame.
        half_extents: rectangle half sizes (x, y) in its own frame, m.
        pose: rectangle (x, y, yaw), m and rad.
    """
    rotation = _rotation(pose[2])
    centre = np.asarray(pose[:2], dtype=float)
    half = np.asarray(half_extents, dtype=float)
    # Into the box frame: p_box = R^T (p - c), i.e. (p - c) @ R.
    local_starts = (np.asarray(starts, dtype=float) - centre) @ rotation
    local_ends = (np.asarray(ends, dtype=float) - centre) @ rotation
    # Disjoint convex sets: the closest pair involves a segment end point or a box corner.
    distance = np.minimum(_point_box_distance(local_starts, half), _point_box_distance(local_ends, half))
    for sign_x, sign_y in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        corner = np.array([sign_x * half[0], sign_y * half[1]])
        distance = np.minimum(distance, segment_point_distance(local_starts, local_ends, corner))
    return np.where(_segment_hits_box(local_starts, local_ends, half), 0.0, distance)


def segment_obstacle_clearance(
    starts: np.ndarray, ends: np.ndarray, radius: float, obstacle: Obstacle
) -> np.ndarray:
    """Smallest gap between a disc of ``radius`` (m) swept along segments and ``obstacle``.

    Args:
        starts, ends: (..., 2) disc centre at the start and end of each segment, m.
        radius: disc radius, m.
        obstacle: a cylinder or box obstacle.
    Returns:
        (...,) clearance, m; negative when the disc penetrates a cylinder obstacle, and
        ``-radius`` when its centre path crosses a box obstacle.
    """
    if obstacle.shape == "cylinder":
        centre = np.asarray(obstacle.pose[:2], dtype=float)
        return segment_point_distance(starts, ends, centre) - obstacle.radius - radius
    return segment_box_distance(starts, ends, obstacle.half_extents, obstacle.pose) - radius


def disc_obstacle_clearance(centre: np.ndarray, radius: float, obstacle: Obstacle) -> float:
    """Gap between a disc at ``centre`` (2,) m with ``radius`` m and ``obstacle``, m."""
    centre = np.asarray(centre, dtype=float)
    return float(segment_obstacle_clearance(centre, centre, radius, obstacle))


def _rectangle_corners(half_extents: tuple[float, float], pose: tuple[float, float, float]) -> np.ndarray:
    half_x, half_y = half_extents
    local = np.array([[half_x, half_y], [-half_x, half_y], [-half_x, -half_y], [half_x, -half_y]])
    return local @ _rotation(pose[2]).T + np.asarray(pose[:2], dtype=float)


def _rectangles_overlap(corners_a: np.ndarray, corners_b: np.ndarray) -> bool:
    """Separating-axis test for two convex quadrilaterals (4, 2)."""
    for corners in (corners_a, corners_b):
        for index in range(4):
            edge = corners[(index + 1) % 4] - corners[index]
            axis = np.array([-edge[1], edge[0]])
            projection_a = corners_a @ axis
            projection_b = corners_b @ axis
            if projection_a.max() < projection_b.min() or projection_b.max() < projection_a.min():
                return False
    return True


def object_obstacle_clearance(spec: ObjectSpec, pose: np.ndarray, obstacle: Obstacle) -> float:
    """Gap between a movable object at ``pose`` (x, y, yaw) and ``obstacle``, m (<= 0: contact).

    Exact for every pair of shapes (cylinder/box object, cylinder/box obstacle);
    overlapping boxes report 0.
    """
    pose = np.asarray(pose, dtype=float)
    if spec.shape == "cylinder":
        return disc_obstacle_clearance(pose[:2], spec.radius, obstacle)
    if obstacle.shape == "cylinder":
        # Disc obstacle against the box object: swap roles.
        centre = np.asarray(obstacle.pose[:2], dtype=float)
        distance = segment_box_distance(centre, centre, spec.half_extents, tuple(pose))
        return float(distance) - obstacle.radius
    corners_object = _rectangle_corners(spec.half_extents, tuple(pose))
    corners_obstacle = _rectangle_corners(obstacle.half_extents, obstacle.pose)
    if _rectangles_overlap(corners_object, corners_obstacle):
        return 0.0
    distance = math.inf
    for corners, other in ((corners_object, corners_obstacle), (corners_obstacle, corners_object)):
        starts = other
        ends = np.roll(other, -1, axis=0)
        for corner in corners:
            distance = min(distance, float(segment_point_distance(starts, ends, corner).min()))
    return distance
