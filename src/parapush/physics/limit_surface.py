"""Quasi-static pushing with an ellipsoidal limit surface: how a point pusher turns an object.

The object slides on the table under a uniform pressure over its outline. Its limit surface
(the set of friction wrenches the support can bear) is approximated by an ellipsoid about
the centre of pressure (the outline's centroid), so that the body twist is parallel to the
wrench scaled by the limit surface's axes (Lynch, Maekawa & Tanie 1992; Hogan & Rodriguez
2016, "motion cones"):

    w = (f_x, f_y, m)   ->   V = (v_x, v_y, omega)  proportional to  (f_x, f_y, m / c^2),
    c = m_max / f_max = (integral over the outline of |r - centroid| dA) / area,

c for a uniform pressure (:func:`uniform_pressure_radius`: a disc of radius R, 2R/3; a
square of side a, (sqrt 2 + asinh 1) / 6 a = 0.3826 a). A force f at the contact point r
(relative to the centroid, world-aligned) gives V = (f, (r x f) / c^2), and the contact
point then moves with A f,

    A = [[1 + r_y^2 / c^2, -r_x r_y / c^2], [-r_x r_y / c^2, 1 + r_x^2 / c^2]].

The pusher's force lies in the friction cone about the inward contact normal n (half angle
atan(mu)); its edges f_+ and f_- (n turned by +-atan(mu)) map to the motion cone's edges
A f_+ and A f_-. A pusher velocity v_p inside the motion cone sticks (f = A^-1 v_p: the
contact point moves with the pusher); outside it, the pusher slides along the object and the
force lies on the cone edge on v_p's side, scaled so that the contact point's normal velocity
is the pusher's (:func:`quasi_static_push`). A pusher that does not move into the object
(n . v_p <= 0) does not push.

:func:`push_outline` integrates this along a pusher path in short substeps (a few mm of pusher
travel each, vectorised over a batch), so that the contact point (the outline's point closest
to the pusher centre, :func:`outline_contacts`) and the normal follow the turning object;
the object turns about its centroid, which for a polygon need not be its pose (the body
frame's origin). :class:`parapush.physics.coarse_analytical.AnalyticalCoarseModel` uses it
with ``rotation="limit_surface"``.

The motion is quasi-static: rate independent (a pusher twice as fast moves the object twice as
fast along the same path) and without inertia (an object stops when the pusher leaves it).
Units are SI (m, s, rad) throughout; functions broadcast over leading batch axes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from parapush.physics.planar_geometry import cross, outline_polygon, polygon_closest_points, rotate
from parapush.scene.outline import Outline, ellipse_closest_points

NO_PUSH, STICK, SLIDE = 0, 1, 2
"""Contact modes of :func:`quasi_static_push`."""

SUBSTEP_TRAVEL = 0.005
"""Default pusher travel per substep of :func:`push_outline`, m (each costs about 0.27 ms for a
batch: at 5 mm every recorded real push ends within 1.3 mm / 1.2 deg of a 0.1 mm reference, at
2 mm within 0.55 mm / 0.55 deg, for 2.5x the cost: the planner's coarse search calls it often)."""

CONTACT_TOLERANCE = 2e-4
"""A pusher whose surface is at most this far (m) from the outline touches it in
:func:`push_outline` (covers an explicit substep's drift away from the outline, which
push_outline undoes at the next substep). Overlap always counts as touching (an ellipse's
curve lies up to 0.21 % of its semi-axis outside the 48-gon that the analytical model's
contact entry uses)."""

_ELLIPSE_QUADRATURE = 4096


# -- the limit surface's c ----------------------------------------------------------------
def _fan_mean_distance_integral(vertices: np.ndarray) -> float:
    """Integral of |r| dA over a simple polygon (N, 2), m^3, r from the origin: the signed sum
    over the triangles (0, v_i, v_i+1), each exact in polar coordinates about the origin.

    For the triangle (0, a, b) let h be the origin's distance from the line ab and t the
    coordinate along it (t = p . e, e the unit vector from a to b); then
    ``integral = [h t sqrt(h^2 + t^2) + h^3 asinh(t / h)] / 6`` from t_a to t_b, with the sign
    of a x b (the fan's triangles cover the polygon with winding number 1)."""
    following = np.roll(vertices, -1, axis=0)
    edges = following - vertices
    lengths = np.linalg.norm(edges, axis=-1)
    keep = lengths > 0.0
    vertices, following, edges, lengths = vertices[keep], following[keep], edges[keep], lengths[keep]
    unit = edges / lengths[:, None]
    signed = cross(vertices, following)  # twice the signed triangle area
    height = np.abs(signed) / lengths
    t_start, t_end = np.sum(vertices * unit, axis=-1), np.sum(following * unit, axis=-1)

    def primitive(t: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            logarithmic = np.where(height > 0.0, height**3 * np.arcsinh(t / np.where(height > 0.0, height, 1.0)), 0.0)
        return (height * t * np.hypot(height, t) + logarithmic) / 6.0

    return float(np.sum(np.sign(signed) * (primitive(t_end) - primitive(t_start))))


@functools.lru_cache(maxsize=256)
def uniform_pressure_radius(outline: Outline) -> float:
    """c = m_max / f_max of a uniform pressure over ``outline``: the mean distance of its area
    from its centroid, ``integral |r - centroid| dA / area``, m (computed once per outline).

    Discs 2R/3 (closed form); rectangles and polygons exact (:func:`_fan_mean_distance_integral`);
    ellipses by the trapezoidal rule on ``integral rho(theta)^3 / 3 dtheta`` over 4096 angles
    (periodic and smooth: exact to rounding)."""
    if not isinstance(outline, Outline):
        raise TypeError(f"outline: expected a parapush.scene.outline.Outline, got {type(outline).__name__}")
    if outline.kind == "disc":
        return 2.0 * outline.radius / 3.0
    if outline.kind == "ellipse":
        semi_x, semi_y = outline.half_extents
        angles = 2.0 * math.pi * np.arange(_ELLIPSE_QUADRATURE) / _ELLIPSE_QUADRATURE
        rho = semi_x * semi_y / np.hypot(semi_y * np.cos(angles), semi_x * np.sin(angles))
        integral = float(np.mean(rho**3 / 3.0)) * 2.0 * math.pi
        return integral / outline.area
    vertices = outline.boundary() - outline.centroid
    return _fan_mean_distance_integral(vertices) / outline.area


# -- one contact ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PushResponse:
    """The quasi-static response of an object to a point pusher (:func:`quasi_static_push`).

    Attributes:
        force: (..., 2) the pusher's force on the object, scaled so that the object's twist is
            (force, cross(contact, force) / c^2): a force of m/s (0 without a push).
        twist: (..., 3) the object's twist: the centroid's velocity (m/s, world-aligned) and
            the angular velocity (rad/s, counter-clockwise).
        contact_velocity: (..., 2) the velocity of the object's material point at the contact,
            m/s (the pusher's velocity when sticking).
        mode: (...,) int, :data:`NO_PUSH`, :data:`STICK` or :data:`SLIDE`.
    """

    force: np.ndarray
    twist: np.ndarray
    contact_velocity: np.ndarray
    mode: np.ndarray


def quasi_static_push(
    contacts: np.ndarray, normals: np.ndarray, pusher_velocities: np.ndarray, radius: float | np.ndarray,
    friction: float,
) -> PushResponse:
    """The object's twist under a point pusher, by the motion cone of an ellipsoidal limit surface.

    Args:
        contacts: (..., 2) contact points relative to the centre of pressure (the centroid), m,
            world-aligned.
        normals: (..., 2) unit contact normals pointing into the object.
        pusher_velocities: (..., 2) pusher velocities, m/s.
        radius: c = m_max / f_max of the limit surface, m (scalar or (...,), > 0;
            :func:`uniform_pressure_radius`).
        friction: pusher/object friction coefficient mu, >= 0.
    Returns:
        a :class:`PushResponse`; sticking inside the motion cone, sliding on the edge on the
        pusher velocity's side outside it, no push where ``n . v_p <= 0``.
    """
    contacts = np.asarray(contacts, dtype=float)
    normals = np.asarray(normals, dtype=float)
    velocities = np.asarray(pusher_velocities, dtype=float)
    if friction < 0.0 or not math.isfinite(friction):
        raise ValueError(f"friction: must be finite and >= 0, got {friction!r}")
    inverse_square = 1.0 / np.square(np.asarray(radius, dtype=float))
    rx, ry = contacts[..., 0], contacts[..., 1]
    a11 = 1.0 + ry * ry * inverse_square
    a12 = -rx * ry * inverse_square
    a22 = 1.0 + rx * rx * inverse_square

    def apply(force: np.ndarray) -> np.ndarray:
        return np.stack([a11 * force[..., 0] + a12 * force[..., 1], a12 * force[..., 0] + a22 * force[..., 1]], -1)

    half_angle = math.atan(friction)
    edge_plus, edge_minus = rotate(normals, half_angle), rotate(normals, -half_angle)
    motion_plus, motion_minus = apply(edge_plus), apply(edge_minus)
    # A is symmetric positive definite: the motion cone keeps the friction cone's orientation,
    # motion_minus -> motion_plus counter-clockwise.
    beyond_plus = cross(velocities, motion_plus) < 0.0
    beyond_minus = cross(motion_minus, velocities) < 0.0
    sticking = ~beyond_plus & ~beyond_minus

    def cosine(first: np.ndarray, second: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(first, axis=-1) * np.linalg.norm(second, axis=-1)
        return np.sum(first * second, axis=-1) / np.where(norms > 0.0, norms, 1.0)

    # Outside on both sides (behind a cone of over 90 degrees): the nearer edge by angle.
    use_plus = beyond_plus & (~beyond_minus | (cosine(velocities, motion_plus) >= cosine(velocities, motion_minus)))
    # Only an edge whose contact moves into the pusher's side can match its normal velocity.
    normal_plus = np.sum(normals * motion_plus, axis=-1)
    normal_minus = np.sum(normals * motion_minus, axis=-1)
    use_plus = np.where(use_plus, normal_plus > 0.0, normal_minus <= 0.0)
    edge = np.where(use_plus[..., None], edge_plus, edge_minus)
    edge_normal_speed = np.where(use_plus, normal_plus, normal_minus)
    normal_speed = np.sum(normals * velocities, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = normal_speed / edge_normal_speed
        determinant = a11 * a22 - a12 * a12
        stick_force = np.stack([a22 * velocities[..., 0] - a12 * velocities[..., 1],
                                -a12 * velocities[..., 0] + a11 * velocities[..., 1]], -1) / determinant[..., None]
    pushing = normal_speed > 0.0
    force = np.where(sticking[..., None], stick_force, scale[..., None] * edge)
    force = np.where(pushing[..., None], force, 0.0)
    omega = cross(contacts, force) * inverse_square
    mode = np.where(pushing, np.where(sticking, STICK, SLIDE), NO_PUSH)
    return PushResponse(force=force, twist=np.concatenate([force, omega[..., None]], axis=-1),
                        contact_velocity=apply(force), mode=mode)


# -- the contact on a posed outline -----------------------------------------------------------
def outline_contacts(
    points: np.ndarray, centres: np.ndarray, yaws: np.ndarray, outline: Outline
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where a pusher centred at ``points`` would touch a posed outline.

    Args:
        points: (..., 2) pusher centres, m, world frame.
        centres: (..., 2) the body's pose position (its frame's origin), m.
        yaws: (...,) the body's yaw, rad.
        outline: its outline in the body frame.
    Returns:
        ``(contacts (..., 2), normals (..., 2), gaps (...,))``: the boundary point closest to
        each pusher centre (world frame, m), the unit normal from the pusher centre towards it
        (into the object; for a centre inside the outline, from the boundary point inwards), and
        the centre's signed distance from the boundary (m, < 0 inside). Discs and ellipses on
        their exact curves, rectangles and polygons on their edges.
    """
    centres = np.asarray(centres, dtype=float)
    yaws = np.asarray(yaws, dtype=float)
    local = rotate(np.asarray(points, dtype=float) - centres, -yaws)
    if outline.kind == "disc":
        length = np.linalg.norm(local, axis=-1)
        direction = np.where((length > 0.0)[..., None], local / np.where(length > 0.0, length, 1.0)[..., None],
                             np.array([1.0, 0.0]))
        closest = outline.radius * direction
        inside = length <= outline.radius
    elif outline.kind == "ellipse":
        closest, _, inside = ellipse_closest_points(local, *outline.half_extents)
    else:
        closest, _, inside = polygon_closest_points(local, outline_polygon(outline))
    offset = closest - local
    distance = np.linalg.norm(offset, axis=-1)
    fallback = outline.centroid - local  # a centre on the boundary: towards the centroid
    fallback = fallback / np.maximum(np.linalg.norm(fallback, axis=-1, keepdims=True), 1e-300)
    normal = np.where((distance > 0.0)[..., None], offset / np.where(distance > 0.0, distance, 1.0)[..., None],
                      fallback)
    normal = np.where(inside[..., None], -normal, normal)
    gaps = np.where(inside, -distance, distance)
    return centres + rotate(closest, yaws), rotate(normal, yaws), gaps


# -- a push along a path ----------------------------------------------------------------------
def push_outline(
    starts: np.ndarray, velocities: np.ndarray, durations: np.ndarray, poses: np.ndarray, outline: Outline,
    pusher_radius: float, friction: float, *, substep_travel: float = SUBSTEP_TRAVEL,
) -> tuple[np.ndarray, np.ndarray]:
    """Push bodies with a disc pusher moving in straight lines, quasi-statically.

    Each row's pusher starts at ``starts`` (normally touching the body) and moves with
    ``velocities`` for ``durations``; the path is cut into the same number of substeps for
    every row, enough that none moves more than ``substep_travel``. In each substep the contact
    (:func:`outline_contacts`; touching while the pusher's surface is within
    :data:`CONTACT_TOLERANCE` of the outline) gives the twist (:func:`quasi_static_push`), and
    the body's centroid moves and the body turns about it (explicit Euler). A pushed body is
    first moved along the contact normal so that the pusher's surface touches it exactly
    (undoing the previous substeps' drift, and an overlap at the start).

    Args:
        starts: (B, 2) pusher centres at the start, m.
        velocities: (B, 2) pusher velocities, m/s.
        durations: (B,) time pushed, s (>= 0).
        poses: (B, 3) body poses (x, y, yaw of the body frame's origin), m and rad.
        outline: the body's outline in its frame.
        pusher_radius: m.
        friction: pusher/object friction coefficient, >= 0.
        substep_travel: largest pusher travel per substep, m (> 0).
    Returns:
        ``(poses (B, 3), rates (B, 3))``: the final poses, and the rate of change of the pose
        (x, y, yaw) during the last substep (0 where the pusher no longer touches the body).
    """
    if not substep_travel > 0.0:
        raise ValueError(f"substep_travel: must be > 0, got {substep_travel!r}")
    starts = np.asarray(starts, dtype=float)
    velocities = np.asarray(velocities, dtype=float)
    durations = np.asarray(durations, dtype=float)
    poses = np.array(poses, dtype=float)
    radius = uniform_pressure_radius(outline)
    centroid = np.asarray(outline.centroid, dtype=float)
    travel = np.linalg.norm(velocities, axis=-1) * durations
    finite = np.isfinite(travel)
    longest = float(np.max(travel[finite], initial=0.0))
    steps = max(1, math.ceil(longest / substep_travel))
    step_time = np.where(finite, durations, 0.0) / steps
    pusher = starts.copy()
    rates = np.zeros_like(poses)
    for _ in range(steps):
        contacts, normals, gaps = outline_contacts(pusher, poses[:, :2], poses[:, 2], outline)
        centres = poses[:, :2] + rotate(centroid, poses[:, 2])
        response = quasi_static_push(contacts - centres, normals, velocities, radius, friction)
        pushing = (gaps <= pusher_radius + CONTACT_TOLERANCE) & (response.mode != NO_PUSH)
        twist = np.where(pushing[:, None], response.twist, 0.0)
        # Keep the pushed body touching the pusher: an explicit substep lets a turning body drift
        # away from it (second order per substep, 10 um per 2 mm substep at 1 rad per 100 mm).
        shift = np.where(pushing, gaps - pusher_radius, 0.0)[:, None] * normals
        poses = np.concatenate([poses[:, :2] - shift, poses[:, 2:]], axis=1)
        centres = centres - shift
        yaws = poses[:, 2] + twist[:, 2] * step_time
        origins = centres + twist[:, :2] * step_time[:, None] - rotate(centroid, yaws)  # turn about the centroid
        new_poses = np.concatenate([origins, yaws[:, None]], axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            rates = np.where((step_time > 0.0)[:, None], (new_poses - poses) / step_time[:, None], 0.0)
        poses = new_poses
        pusher = pusher + velocities * step_time[:, None]
    return poses, rates
