"""Planar geometry of discs and rectangles, vectorised over a batch: contact (penetration,
swept entry) for the physics, clearances to the scene's static obstacles for the planner.

Shapes live in the table plane. A disc is (centre (..., 2), radius); a rectangle is
(centre (..., 2), yaw (...,), half extents (2,)) with half extents along its own x and y.
All lengths are metres, angles radians. Functions broadcast over leading batch axes.

Penetration functions return ``(depth, normal)``: ``depth`` (...,) is how far the two
shapes overlap (> 0 when penetrating; <= 0 is the negated separation for disc/disc and
disc/rectangle, and a non-positive number for rectangle/rectangle) and ``normal``
(..., 2) is the unit direction in which the *second* shape must move to separate
(translating it by ``depth * normal`` makes the shapes touch).

Clearances (costs and termination checks) are the gap between two surfaces, <= 0 when
they touch or overlap (overlapping rectangles report 0): the *swept* clearance of a disc
moving along a straight segment (one control), :func:`segment_obstacle_clearance`, and
the clearance of one body at one pose, :func:`object_obstacle_clearance`,
:func:`disc_obstacle_clearance`. Obstacles are :class:`parapush.scene.Obstacle` s.
"""

from __future__ import annotations

import math

import numpy as np

from parapush.scene import ObjectSpec, Obstacle

NO_HIT = np.inf
"""Segment parameter returned when a path does not enter a shape."""


def rotate(vectors: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Rotate vectors (..., 2) by angles (...,) rad, counter-clockwise."""
    cos, sin = np.cos(angles), np.sin(angles)
    x, y = vectors[..., 0], vectors[..., 1]
    return np.stack([cos * x - sin * y, sin * x + cos * y], axis=-1)


def cross(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """z component of the cross product of planar vectors (..., 2)."""
    return first[..., 0] * second[..., 1] - first[..., 1] * second[..., 0]


def _unit(vectors: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """vectors / |vectors|, with ``fallback`` (broadcastable) where the length is 0."""
    length = np.linalg.norm(vectors, axis=-1, keepdims=True)
    safe = np.where(length > 0.0, length, 1.0)
    return np.where(length > 0.0, vectors / safe, fallback)


def closest_point_on_rectangle(
    points: np.ndarray, centres: np.ndarray, yaws: np.ndarray, half_extents: np.ndarray
) -> np.ndarray:
    """Closest point (..., 2) of the filled rectangle to each point (..., 2), world frame."""
    local = rotate(points - centres, -yaws)
    clipped = np.clip(local, -np.asarray(half_extents), np.asarray(half_extents))
    return centres + rotate(clipped, yaws)


# -- penetration ------------------------------------------------------------------------
def disc_disc_penetration(
    first_centres: np.ndarray, first_radius: float, second_centres: np.ndarray, second_radius: float
) -> tuple[np.ndarray, np.ndarray]:
    """Overlap of two discs; coincident centres separate along +x."""
    offset = second_centres - first_centres
    depth = first_radius + second_radius - np.linalg.norm(offset, axis=-1)
    return depth, _unit(offset, np.array([1.0, 0.0]))


def disc_rectangle_penetration(
    disc_centres: np.ndarray, radius: float, centres: np.ndarray, yaws: np.ndarray, half_extents: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Overlap of a disc (first) and a rectangle (second), exact.

    Outside the rectangle the normal points from the disc centre's closest rectangle point
    away from the disc; with the disc centre inside, the rectangle leaves through the face
    nearest to the disc centre.
    """
    half_extents = np.asarray(half_extents, dtype=float)
    local = rotate(disc_centres - centres, -yaws)  # disc centre in the rectangle frame
    clipped = np.clip(local, -half_extents, half_extents)
    outward = local - clipped  # from the rectangle to the disc centre
    distance = np.linalg.norm(outward, axis=-1)
    inside = distance == 0.0
    # centre inside: distances to the faces along x and y
    face_gap = half_extents - np.abs(local)
    along_x = face_gap[..., 0] <= face_gap[..., 1]
    sign = np.where(local >= 0.0, 1.0, -1.0)
    inside_normal = np.where(
        along_x[..., None], np.stack([sign[..., 0], np.zeros_like(sign[..., 0])], -1),
        np.stack([np.zeros_like(sign[..., 1]), sign[..., 1]], -1),
    )
    # direction from the disc to the rectangle (the rectangle moves along it)
    local_normal = np.where(inside[..., None], -inside_normal, -_unit(outward, np.array([1.0, 0.0])))
    depth = np.where(inside, radius + np.min(face_gap, axis=-1), radius - distance)
    return depth, rotate(local_normal, yaws)


def rectangle_disc_penetration(
    centres: np.ndarray, yaws: np.ndarray, half_extents: np.ndarray, disc_centres: np.ndarray, radius: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Overlap of a rectangle (first) and a disc (second)."""
    depth, normal = disc_rectangle_penetration(disc_centres, radius, centres, yaws, half_extents)
    return depth, -normal


def rectangle_rectangle_penetration(
    first_centres: np.ndarray, first_yaws: np.ndarray, first_half_extents: np.ndarray,
    second_centres: np.ndarray, second_yaws: np.ndarray, second_half_extents: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Overlap of two rectangles by the separating-axis theorem (exact for convex polygons):
    the minimum-translation depth over the four face normals, and that axis."""
    first_half_extents = np.asarray(first_half_extents, dtype=float)
    second_half_extents = np.asarray(second_half_extents, dtype=float)
    offset = second_centres - first_centres
    axes = []
    for yaws in (first_yaws, second_yaws):
        cos, sin = np.cos(yaws), np.sin(yaws)
        axes.append(np.stack([cos, sin], axis=-1))
        axes.append(np.stack([-sin, cos], axis=-1))
    first_axes, second_axes = axes[:2], axes[2:]
    best_depth = np.full(offset.shape[:-1], np.inf)
    best_axis = np.zeros(offset.shape)
    for axis in axes:
        first_extent = sum(
            h * np.abs(np.sum(axis * a, -1)) for h, a in zip(first_half_extents, first_axes, strict=True)
        )
        second_extent = sum(
            h * np.abs(np.sum(axis * a, -1)) for h, a in zip(second_half_extents, second_axes, strict=True)
        )
        along = np.sum(axis * offset, axis=-1)
        depth = first_extent + second_extent - np.abs(along)
        better = depth < best_depth
        direction = np.where((along >= 0.0)[..., None], axis, -axis)
        best_depth = np.where(better, depth, best_depth)
        best_axis = np.where(better[..., None], direction, best_axis)
    return best_depth, best_axis


# -- swept pusher paths -----------------------------------------------------------------
def segment_disc_entry(starts: np.ndarray, moves: np.ndarray, centres: np.ndarray, radius: float) -> np.ndarray:
    """Parameter s in [0, 1] where the point ``starts + s * moves`` first enters the disc.

    Args:
        starts: (..., 2) segment starts, m.
        moves: (..., 2) segment vectors, m.
        centres: (..., 2) disc centres, m.
        radius: disc radius, m.
    Returns:
        (...,) s; 0 when the start is on or inside the disc and the segment moves inward
        (not tangentially or away); :data:`NO_HIT` (inf) when it never enters.
    """
    relative = starts - centres
    a = np.sum(moves * moves, axis=-1)
    b = 2.0 * np.sum(relative * moves, axis=-1)
    c = np.sum(relative * relative, axis=-1) - radius * radius
    with np.errstate(invalid="ignore", divide="ignore"):
        discriminant = b * b - 4.0 * a * c
        root = (-b - np.sqrt(np.maximum(discriminant, 0.0))) / (2.0 * a)
    entering = (a > 0.0) & (discriminant > 0.0) & (root >= 0.0) & (root <= 1.0) & (c > 0.0)
    inward_from_inside = (c <= 0.0) & (b < 0.0)
    return np.where(inward_from_inside, 0.0, np.where(entering, root, NO_HIT))


def segment_rounded_rectangle_entry(
    starts: np.ndarray, moves: np.ndarray, centres: np.ndarray, yaws: np.ndarray,
    half_extents: np.ndarray, radius: float,
) -> np.ndarray:
    """Parameter s in [0, 1] where ``starts + s * moves`` first enters the rectangle
    inflated by ``radius`` (a rounded rectangle: the positions where a disc of ``radius``
    centred there touches the rectangle). Computed in the rectangle's frame as the
    earliest entry into the union of two axis-aligned rectangles and four corner discs.

    Returns (...,) s; 0 when the start is already inside and the segment moves towards the
    rectangle; :data:`NO_HIT` (inf) otherwise.
    """
    half_x, half_y = (float(value) for value in half_extents)
    local_starts = rotate(starts - centres, -yaws)
    local_moves = rotate(moves, -yaws)
    entries = [
        _segment_box_entry(local_starts, local_moves, np.array([half_x + radius, half_y])),
        _segment_box_entry(local_starts, local_moves, np.array([half_x, half_y + radius])),
    ]
    for corner_x in (-half_x, half_x):
        for corner_y in (-half_y, half_y):
            corner = np.array([corner_x, corner_y])
            entries.append(segment_disc_entry(local_starts, local_moves, corner, radius))
    entry = np.min(np.stack(entries, axis=0), axis=0)
    # starting inside the rounded rectangle: contact only if moving towards the rectangle
    closest = np.clip(local_starts, -np.array([half_x, half_y]), np.array([half_x, half_y]))
    towards = closest - local_starts
    towards = np.where(np.linalg.norm(towards, axis=-1, keepdims=True) > 0.0, towards, -local_starts)
    inside = np.linalg.norm(local_starts - closest, axis=-1) <= radius
    moving_in = np.sum(towards * local_moves, axis=-1) > 0.0
    return np.where(inside, np.where(moving_in, 0.0, NO_HIT), entry)


def _segment_box_entry(starts: np.ndarray, moves: np.ndarray, half_extents: np.ndarray) -> np.ndarray:
    """Slab test: first s in [0, 1] with ``starts + s * moves`` inside the centred,
    axis-aligned box; starts inside give NO_HIT (handled by the caller)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = 1.0 / moves
        lower = (-half_extents - starts) * inverse
        upper = (half_extents - starts) * inverse
    near = np.minimum(lower, upper)
    far = np.maximum(lower, upper)
    # a zero move component: inside that slab for all s, or never
    parallel = moves == 0.0
    inside_slab = np.abs(starts) <= half_extents
    near = np.where(parallel, np.where(inside_slab, -np.inf, np.inf), near)
    far = np.where(parallel, np.where(inside_slab, np.inf, -np.inf), far)
    enter = np.max(near, axis=-1)
    leave = np.min(far, axis=-1)
    hit = (enter <= leave) & (enter > 0.0) & (enter <= 1.0)
    return np.where(hit, enter, NO_HIT)


# -- clearances to obstacles ------------------------------------------------------------
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


def segment_box_distance(
    starts: np.ndarray, ends: np.ndarray, half_extents: tuple[float, float], pose: tuple[float, float, float]
) -> np.ndarray:
    """Distance between segments (..., 2) and an oriented rectangle, m -> (...,); 0 if they cross.

    Args:
        starts, ends: segment end points (..., 2), m, table frame.
        half_extents: rectangle half sizes (x, y) in its own frame, m.
        pose: rectangle (x, y, yaw), m and rad.
    """
    centre = np.asarray(pose[:2], dtype=float)
    half = np.asarray(half_extents, dtype=float)
    local_starts = rotate(np.asarray(starts, dtype=float) - centre, -pose[2])
    local_ends = rotate(np.asarray(ends, dtype=float) - centre, -pose[2])
    # Disjoint convex sets: the closest pair involves a segment end point or a box corner.
    distance = np.minimum(
        np.linalg.norm(local_starts - np.clip(local_starts, -half, half), axis=-1),
        np.linalg.norm(local_ends - np.clip(local_ends, -half, half), axis=-1),
    )
    for sign_x, sign_y in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        corner = np.array([sign_x * half[0], sign_y * half[1]])
        distance = np.minimum(distance, segment_point_distance(local_starts, local_ends, corner))
    starts_inside = np.all(np.abs(local_starts) <= half, axis=-1)
    crossing = _segment_box_entry(local_starts, local_ends - local_starts, half) < NO_HIT
    return np.where(starts_inside | crossing, 0.0, distance)


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
    """(4, 2) corners of an oriented rectangle, in order around it, table frame."""
    half_x, half_y = half_extents
    local = np.array([[half_x, half_y], [-half_x, half_y], [-half_x, -half_y], [half_x, -half_y]])
    return rotate(local, pose[2]) + np.asarray(pose[:2], dtype=float)


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
    overlap, _ = rectangle_rectangle_penetration(
        pose[:2], pose[2], spec.half_extents, np.asarray(obstacle.pose[:2]), obstacle.pose[2], obstacle.half_extents
    )
    if overlap >= 0.0:
        return 0.0
    corners_object = _rectangle_corners(spec.half_extents, tuple(pose))
    corners_obstacle = _rectangle_corners(obstacle.half_extents, obstacle.pose)
    distance = math.inf
    for corners, other in ((corners_object, corners_obstacle), (corners_obstacle, corners_object)):
        starts = other
        ends = np.roll(other, -1, axis=0)
        for corner in corners:
            distance = min(distance, float(segment_point_distance(starts, ends, corner).min()))
    return distance
