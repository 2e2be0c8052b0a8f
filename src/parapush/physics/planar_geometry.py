"""Planar geometry of discs, rectangles and any outline, vectorised over a batch: contact
(penetration, swept entry) for the physics, clearances to the scene's static obstacles for
the planner.

Shapes live in the table plane. A disc is (centre (..., 2), radius); a rectangle is
(centre (..., 2), yaw (...,), half extents (2,)) with half extents along its own x and y; a
polygon is (centre, yaw, body-frame vertices (N, 2), counter-clockwise). A body of any
:class:`~parapush.scene.outline.Outline` is handled by the ``outline_`` functions
(:func:`outline_penetration`, :func:`segment_outline_entry`, :func:`closest_point_on_outline`):
discs and rectangles keep their exact fast paths; other outlines are polygons (an ellipse is
its inscribed 48-gon, the fine model's mesh), split into their convex parts where needed
(separating-axis theorem between convex polygons, swept entry into a disc-inflated convex
polygon). All lengths are metres, angles radians. Functions broadcast over leading batch axes.

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

from parapush.scene import ObjectSpec, Obstacle, Outline

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
def segment_point_distance(starts: np.ndarray, ends: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Distance from points to the segments ``starts`` -> ``ends``, m.

    Args:
        starts, ends: (..., 2) segment end points, m (a segment may have zero length: a point).
        points: (..., 2) points, m.
        All three broadcast together: one point against many segments ((2,) with (M, 2)), many
        points against one segment each ((M, S, 2) with (M, 1, 2)), or pairs ((M, 2) each).
    Returns:
        (...,) the broadcast batch shape: the Euclidean distance of each point to its segment.
    """
    starts = np.asarray(starts, dtype=float)
    direction = np.asarray(ends, dtype=float) - starts
    relative = np.asarray(points, dtype=float) - starts
    # by components: twice as fast as reductions over an axis of length 2
    direction_x, direction_y = direction[..., 0], direction[..., 1]
    relative_x, relative_y = relative[..., 0], relative[..., 1]
    length_squared = direction_x * direction_x + direction_y * direction_y
    safe = np.where(length_squared > 0.0, length_squared, 1.0)
    along = (relative_x * direction_x + relative_y * direction_y) / safe
    fraction = np.clip(np.where(length_squared > 0.0, along, 0.0), 0.0, 1.0)
    gap_x, gap_y = relative_x - fraction * direction_x, relative_y - fraction * direction_y
    return np.sqrt(gap_x * gap_x + gap_y * gap_y)


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
        obstacle: an obstacle of any shape (ellipses as their :func:`outline_polygon`).
    Returns:
        (...,) clearance, m; negative when the disc penetrates a cylinder obstacle, and
        ``-radius`` when its centre path touches or crosses another obstacle's outline.
    """
    if obstacle.shape == "cylinder":
        centre = np.asarray(obstacle.pose[:2], dtype=float)
        return segment_point_distance(starts, ends, centre) - obstacle.radius - radius
    if obstacle.shape == "box":
        return segment_box_distance(starts, ends, obstacle.half_extents, obstacle.pose) - radius
    return segment_polygon_distance(_obstacle_local(starts, obstacle), _obstacle_local(ends, obstacle),
                                    outline_polygon(obstacle.outline)) - radius


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

    Exact for every pair of shapes (ellipses as their :func:`outline_polygon`); overlapping
    bodies report 0, except a cylinder, whose clearance goes negative as with
    :func:`disc_obstacle_clearance`.
    """
    pose = np.asarray(pose, dtype=float)
    if spec.shape == "cylinder":
        return disc_obstacle_clearance(pose[:2], spec.radius, obstacle)
    if spec.shape != "box" or obstacle.shape not in ("cylinder", "box"):
        return _outline_obstacle_clearance(spec.outline, pose, obstacle)
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


# -- any outline: polygons (convex parts) -----------------------------------------------
def outline_polygon(outline: Outline) -> np.ndarray:
    """(N, 2) counter-clockwise polygon, body frame, m, that the planar geometry uses for a
    non-disc outline: a rectangle's corners, an ellipse's inscribed
    :data:`~parapush.scene.outline.CONVEX_PART_RESOLUTION`-gon (the fine model's mesh), a
    polygon's vertices."""
    if outline.kind == "ellipse":
        return outline.convex_parts()[0]
    return outline.boundary()


def polygon_closest_points(points: np.ndarray, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closest boundary points of a simple polygon (N, 2) to points (..., 2), all in one frame.

    Returns ``(closest (..., 2), distance (...,) to the boundary, inside (...,) bool)``."""
    vertices = np.asarray(vertices, dtype=float)
    points = np.asarray(points, dtype=float)
    following = np.roll(vertices, -1, axis=0)
    edges = following - vertices
    relative = points[..., None, :] - vertices  # (..., N, 2)
    fraction = np.clip(np.sum(relative * edges, axis=-1) / np.sum(edges * edges, axis=-1), 0.0, 1.0)
    candidates = vertices + fraction[..., None] * edges
    gaps = np.linalg.norm(points[..., None, :] - candidates, axis=-1)
    nearest = np.argmin(gaps, axis=-1)
    closest = np.take_along_axis(candidates, nearest[..., None, None], axis=-2)[..., 0, :]
    distance = np.take_along_axis(gaps, nearest[..., None], axis=-1)[..., 0]
    y = points[..., None, 1]
    straddles = (vertices[:, 1] > y) != (following[:, 1] > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing_x = vertices[:, 0] + (y - vertices[:, 1]) * edges[:, 0] / edges[:, 1]
    inside = np.count_nonzero(straddles & (points[..., None, 0] < crossing_x), axis=-1) % 2 == 1
    return closest, distance, inside


def to_body_frame(points: np.ndarray, centres: np.ndarray, yaws: np.ndarray) -> np.ndarray:
    """World points (..., 2) m in the frame of a body at ``centres`` (..., 2) m with ``yaws`` (...,) rad."""
    return rotate(np.asarray(points, dtype=float) - centres, -np.asarray(yaws, dtype=float))


def closest_point_on_outline(points: np.ndarray, centres: np.ndarray, yaws: np.ndarray, outline: Outline) -> np.ndarray:
    """Closest point (..., 2) of the filled outline (body at ``centres`` (..., 2), ``yaws``
    (...,)) to each point (..., 2), world frame; a point inside is its own closest point.
    Discs and rectangles exact, ellipses by their :func:`outline_polygon`."""
    centres = np.asarray(centres, dtype=float)
    if outline.kind == "rectangle":
        return closest_point_on_rectangle(points, centres, yaws, np.array(outline.half_extents))
    local = to_body_frame(points, centres, yaws)
    if outline.kind == "disc":
        length = np.linalg.norm(local, axis=-1, keepdims=True)
        closest = np.where(length > outline.radius, local * outline.radius / np.where(length > 0, length, 1.0), local)
    else:
        boundary, _, inside = polygon_closest_points(local, outline_polygon(outline))
        closest = np.where(inside[..., None], local, boundary)
    return centres + rotate(closest, yaws)


def disc_polygon_penetration(
    disc_centres: np.ndarray, radius: float, centres: np.ndarray, yaws: np.ndarray, vertices: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Overlap of a disc (first) and a simple polygon (second; body-frame ``vertices`` (N, 2)
    at ``centres``, ``yaws``), convex or not: depth = radius -+ the centre's distance to the
    polygon's boundary, normal along the nearest boundary point (exact for convex polygons;
    a non-convex one leaves through the nearest boundary point, which may not clear a pocket)."""
    local = to_body_frame(disc_centres, centres, yaws)
    closest, distance, inside = polygon_closest_points(local, vertices)
    outward = _unit(local - closest, np.array([1.0, 0.0]))  # from the boundary to the disc centre
    # the polygon moves away from the disc: against ``outward`` outside, along it inside
    local_normal = np.where(inside[..., None], outward, -outward)
    depth = np.where(inside, radius + distance, radius - distance)
    return depth, rotate(local_normal, yaws)


def polygon_disc_penetration(
    centres: np.ndarray, yaws: np.ndarray, vertices: np.ndarray, disc_centres: np.ndarray, radius: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Overlap of a polygon (first) and a disc (second); see :func:`disc_polygon_penetration`."""
    depth, normal = disc_polygon_penetration(disc_centres, radius, centres, yaws, vertices)
    return depth, -normal


def convex_polygon_penetration(
    first_centres: np.ndarray, first_yaws: np.ndarray, first_vertices: np.ndarray,
    second_centres: np.ndarray, second_yaws: np.ndarray, second_vertices: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Overlap of two convex counter-clockwise polygons (body-frame vertices (N1, 2), (N2, 2))
    by the separating-axis theorem: the minimum-translation depth over both polygons' edge
    normals (<= 0: separated or touching) and that axis, oriented for the second to move."""
    first_centres, second_centres = np.asarray(first_centres, float), np.asarray(second_centres, float)
    batch = np.broadcast_shapes(first_centres.shape[:-1], second_centres.shape[:-1],
                                np.shape(first_yaws), np.shape(second_yaws))
    worlds = []
    for centres, yaws, vertices in ((first_centres, first_yaws, first_vertices),
                                    (second_centres, second_yaws, second_vertices)):
        yaws = np.broadcast_to(np.asarray(yaws, dtype=float), batch)
        vertices = np.asarray(vertices, dtype=float)
        worlds.append(rotate(vertices, yaws[..., None]) + np.broadcast_to(centres, (*batch, 2))[..., None, :])
    first_world, second_world = worlds  # (..., N, 2)
    axes = []
    for world in worlds:
        edges = np.roll(world, -1, axis=-2) - world
        axes.append(_unit(np.stack([edges[..., 1], -edges[..., 0]], axis=-1), np.array([1.0, 0.0])))
    axes = np.concatenate(axes, axis=-2)  # (..., A, 2) outward edge normals
    first_projection = np.einsum("...ak,...nk->...an", axes, first_world)
    second_projection = np.einsum("...ak,...nk->...an", axes, second_world)
    forward = first_projection.max(axis=-1) - second_projection.min(axis=-1)  # second moves +axis
    backward = second_projection.max(axis=-1) - first_projection.min(axis=-1)  # second moves -axis
    overlap = np.minimum(forward, backward)
    best = np.argmin(overlap, axis=-1)
    depth = np.take_along_axis(overlap, best[..., None], axis=-1)[..., 0]
    axis = np.take_along_axis(axes, best[..., None, None], axis=-2)[..., 0, :]
    sign = np.where(np.take_along_axis(forward <= backward, best[..., None], axis=-1)[..., 0], 1.0, -1.0)
    return depth, sign[..., None] * axis


def outline_penetration(
    first: Outline, first_centres: np.ndarray, first_yaws: np.ndarray,
    second: Outline, second_centres: np.ndarray, second_yaws: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Overlap of two bodies of any outline (the module's convention: the normal is the
    direction in which the second must move). Discs and rectangles use the exact pairs
    above; a disc and any polygon the boundary's nearest point; two polygons (ellipses as
    their :func:`outline_polygon`) the deepest pair of their convex parts by
    :func:`convex_polygon_penetration` (exact for convex outlines; for a non-convex one the
    deepest part pair's minimum translation, which a further pass may have to finish)."""
    first_centres, second_centres = np.asarray(first_centres, float), np.asarray(second_centres, float)
    first_yaws, second_yaws = np.asarray(first_yaws, float), np.asarray(second_yaws, float)
    if first.kind == "disc" and second.kind == "disc":
        return disc_disc_penetration(first_centres, first.radius, second_centres, second.radius)
    if first.kind == "disc":
        if second.kind == "rectangle":
            return disc_rectangle_penetration(first_centres, first.radius, second_centres, second_yaws,
                                              np.array(second.half_extents))
        return disc_polygon_penetration(first_centres, first.radius, second_centres, second_yaws,
                                        outline_polygon(second))
    if second.kind == "disc":
        depth, normal = outline_penetration(second, second_centres, second_yaws, first, first_centres, first_yaws)
        return depth, -normal
    if first.kind == "rectangle" and second.kind == "rectangle":
        return rectangle_rectangle_penetration(first_centres, first_yaws, np.array(first.half_extents),
                                               second_centres, second_yaws, np.array(second.half_extents))
    best_depth, best_normal = None, None
    for first_part in _parts(first):
        for second_part in _parts(second):
            depth, normal = convex_polygon_penetration(first_centres, first_yaws, first_part,
                                                       second_centres, second_yaws, second_part)
            if best_depth is None:
                best_depth, best_normal = depth, normal
            else:
                deeper = depth > best_depth
                best_depth = np.where(deeper, depth, best_depth)
                best_normal = np.where(deeper[..., None], normal, best_normal)
    return best_depth, best_normal


def _parts(outline: Outline) -> tuple[np.ndarray, ...]:
    """Convex parts the planar geometry uses (a rectangle: its corners; an ellipse: its polygon)."""
    return (outline_polygon(outline),) if outline.kind != "polygon" else outline.convex_parts()


def _segment_convex_entry(
    starts: np.ndarray, moves: np.ndarray, normals: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """Cyrus-Beck: first s in (0, 1] with ``starts + s * moves`` inside the convex set
    ``normals @ x <= offsets`` (normals (K, 2), offsets (K,)); starts inside give NO_HIT."""
    along = moves @ normals.T  # (..., K)
    gap = offsets - starts @ normals.T  # >= 0 inside the half plane
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = gap / along
    entering = np.where(along < 0.0, bound, np.where((along == 0.0) & (gap < 0.0), np.inf, -np.inf))
    leaving = np.where(along > 0.0, bound, np.where((along == 0.0) & (gap < 0.0), -np.inf, np.inf))
    enter = np.max(entering, axis=-1)
    leave = np.min(leaving, axis=-1)
    hit = (enter <= leave) & (enter > 0.0) & (enter <= 1.0)
    return np.where(hit, enter, NO_HIT)


def _segment_rounded_convex_entry(
    starts: np.ndarray, moves: np.ndarray, vertices: np.ndarray, radius: float
) -> np.ndarray:
    """First s where the local segments enter the convex polygon inflated by ``radius``: the
    earliest entry into the polygon, the rectangles swept by its edges moved out by
    ``radius``, and the discs at its vertices (starts inside give NO_HIT)."""
    following = np.roll(vertices, -1, axis=0)
    edges = following - vertices
    lengths = np.linalg.norm(edges, axis=-1)
    tangents = edges / lengths[:, None]
    outward = np.stack([tangents[:, 1], -tangents[:, 0]], axis=-1)
    entries = [_segment_convex_entry(starts, moves, outward, np.sum(outward * vertices, axis=-1))]
    for vertex, end, tangent, normal in zip(vertices, following, tangents, outward, strict=True):
        band_normals = np.stack([normal, -normal, tangent, -tangent])
        band_offsets = np.array([normal @ vertex + radius, -(normal @ vertex), tangent @ end, -(tangent @ vertex)])
        entries.append(_segment_convex_entry(starts, moves, band_normals, band_offsets))
        entries.append(segment_disc_entry(starts, moves, vertex, radius))
    return np.min(np.stack(entries, axis=0), axis=0)


def segment_outline_entry(
    starts: np.ndarray, moves: np.ndarray, centres: np.ndarray, yaws: np.ndarray, outline: Outline, radius: float,
) -> np.ndarray:
    """Parameter s in [0, 1] where ``starts + s * moves`` first enters the outline inflated by
    ``radius`` (where a disc of ``radius`` centred there touches it). Discs and rectangles by
    :func:`segment_disc_entry` and :func:`segment_rounded_rectangle_entry`; other outlines as
    the union of their inflated convex parts (ellipses: their :func:`outline_polygon`).

    Returns (...,) s; 0 when the start is already within ``radius`` of the outline and the
    segment moves towards it; :data:`NO_HIT` (inf) otherwise.
    """
    if outline.kind == "disc":
        return segment_disc_entry(starts, moves, centres, outline.radius + radius)
    if outline.kind == "rectangle":
        return segment_rounded_rectangle_entry(starts, moves, centres, yaws, np.array(outline.half_extents), radius)
    local_starts = to_body_frame(starts, centres, yaws)
    local_moves = rotate(np.asarray(moves, dtype=float), -np.asarray(yaws, dtype=float))
    entry = np.min(np.stack([_segment_rounded_convex_entry(local_starts, local_moves, part, radius)
                             for part in _parts(outline)], axis=0), axis=0)
    closest, distance, inside = polygon_closest_points(local_starts, outline_polygon(outline))
    towards = np.where(inside[..., None], -local_starts, closest - local_starts)
    touching = inside | (distance <= radius)
    moving_in = np.sum(towards * local_moves, axis=-1) > 0.0
    return np.where(touching, np.where(moving_in, 0.0, NO_HIT), entry)


def segment_polygon_distance(starts: np.ndarray, ends: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Distance between segments (..., 2) and a filled simple polygon (N, 2), same frame, m
    -> (...,); 0 when a segment touches or crosses it."""
    starts, ends = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    vertices = np.asarray(vertices, dtype=float)
    _, start_gap, start_inside = polygon_closest_points(starts, vertices)
    _, end_gap, _ = polygon_closest_points(ends, vertices)
    distance = np.minimum(start_gap, end_gap)
    following = np.roll(vertices, -1, axis=0)
    crossing = np.zeros(distance.shape, dtype=bool)
    for vertex, end in zip(vertices, following, strict=True):
        distance = np.minimum(distance, segment_point_distance(starts, ends, vertex))
        d1 = cross(ends - starts, vertex - starts)
        d2 = cross(ends - starts, end - starts)
        d3 = cross(end - vertex, starts - vertex)
        d4 = cross(end - vertex, ends - vertex)
        crossing |= (d1 * d2 <= 0.0) & (d3 * d4 <= 0.0) & ~((d1 == 0.0) & (d2 == 0.0))
    return np.where(start_inside | crossing, 0.0, distance)


def _obstacle_local(points: np.ndarray, obstacle: Obstacle) -> np.ndarray:
    return rotate(np.asarray(points, dtype=float) - np.asarray(obstacle.pose[:2], dtype=float), -obstacle.pose[2])


def _outline_obstacle_clearance(outline: Outline, pose: np.ndarray, obstacle: Obstacle) -> float:
    """:func:`object_obstacle_clearance` of a non-disc object and an obstacle of any shape."""
    if obstacle.shape == "cylinder":
        local = to_body_frame(np.asarray(obstacle.pose[:2], dtype=float), pose[:2], pose[2])
        _, distance, inside = polygon_closest_points(local, outline_polygon(outline))
        return (0.0 if bool(inside) else float(distance)) - obstacle.radius
    depth, _ = outline_penetration(outline, pose[:2], pose[2], obstacle.outline,
                                   np.asarray(obstacle.pose[:2], dtype=float), obstacle.pose[2])
    if float(depth) >= 0.0:
        return 0.0
    # disjoint simple polygons: the closest pair is a vertex of one and an edge of the other
    polygons = [rotate(outline_polygon(body), yaw) + centre for body, centre, yaw in (
        (outline, pose[:2], pose[2]), (obstacle.outline, np.asarray(obstacle.pose[:2], dtype=float), obstacle.pose[2]))]
    distance = math.inf
    for corners, other in ((polygons[0], polygons[1]), (polygons[1], polygons[0])):
        starts, ends = other, np.roll(other, -1, axis=0)
        for corner in corners:
            distance = min(distance, float(segment_point_distance(starts, ends, corner).min()))
    return distance


SWEEP_SAMPLES = 5
"""Poses along one control at which :func:`swept_outline_obstacle_clearance` measures (both ends
included): 2.5 cm apart for a 10 cm move, finer than the obstacles the scenes use."""


def swept_outline_obstacle_clearance(
    start_poses: np.ndarray, end_poses: np.ndarray, outline: Outline, obstacle: Obstacle,
    samples: int = SWEEP_SAMPLES,
) -> np.ndarray:
    """Smallest gap between a body of ``outline`` moving from ``start_poses`` to ``end_poses``
    (..., 3) (x m, y m, yaw rad; yaw interpolated the short way round) and ``obstacle``, m ->
    (...,); 0 while they touch or overlap. Measured at ``samples`` poses along each move, with the
    body as its :func:`outline_polygon` (exact for rectangles and polygons) and the obstacle exact
    for a cylinder, as its polygon otherwise: the vectorised counterpart of
    :func:`object_obstacle_clearance` for many moves at once (the planner's cost)."""
    start_poses = np.asarray(start_poses, dtype=float)
    end_poses = np.asarray(end_poses, dtype=float)
    fractions = np.linspace(0.0, 1.0, samples)
    turn = np.arctan2(np.sin(end_poses[..., 2] - start_poses[..., 2]), np.cos(end_poses[..., 2] - start_poses[..., 2]))
    centres = start_poses[..., None, :2] + fractions[:, None] * (end_poses[..., None, :2] - start_poses[..., None, :2])
    yaws = start_poses[..., None, 2] + fractions * turn[..., None]  # (..., K)
    body = outline_polygon(outline)
    obstacle_centre = np.asarray(obstacle.pose[:2], dtype=float)
    if obstacle.shape == "cylinder":
        _, distance, inside = polygon_closest_points(to_body_frame(obstacle_centre, centres, yaws), body)
        gaps = np.where(inside, 0.0, distance) - obstacle.radius
        return gaps.min(axis=-1)
    shape = outline_polygon(obstacle.outline)
    # the body's corners against the obstacle, the obstacle's corners against the body
    corners = centres[..., None, :] + rotate(body, yaws[..., None])  # (..., K, V, 2)
    _, to_obstacle, corner_inside = polygon_closest_points(_obstacle_local(corners, obstacle), shape)
    obstacle_corners = rotate(shape, obstacle.pose[2]) + obstacle_centre  # (W, 2)
    local = to_body_frame(obstacle_corners, centres[..., None, :], yaws[..., None])  # (..., K, W, 2)
    _, to_body, obstacle_inside = polygon_closest_points(local, body)
    gaps = np.minimum(to_obstacle.min(axis=-1), to_body.min(axis=-1))
    touching = corner_inside.any(axis=-1) | obstacle_inside.any(axis=-1)
    return np.where(touching, 0.0, gaps).min(axis=-1)
