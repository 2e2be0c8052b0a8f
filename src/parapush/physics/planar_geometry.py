"""Planar contact geometry of discs and rectangles, vectorised over a batch.

Shapes live in the table plane. A disc is (centre (..., 2), radius); a rectangle is
(centre (..., 2), yaw (...,), half extents (2,)) with half extents along its own x and y.
All lengths are metres, angles radians. Functions broadcast over leading batch axes.

Penetration functions return ``(depth, normal)``: ``depth`` (...,) is how far the two
shapes overlap (> 0 when penetrating; <= 0 is the negated separation for disc/disc and
disc/rectangle, and a non-positive number for rectangle/rectangle) and ``normal``
(..., 2) is the unit direction in which the *second* shape must move to separate
(translating it by ``depth * normal`` makes the shapes touch).
"""

from __future__ import annotations

import numpy as np

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
