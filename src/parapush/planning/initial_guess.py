"""Initial candidate control sequences: the straight-line push and the MPC warm start.

ISRR Sec. 3: "For the very first optimization, the initial candidate sequence is
generated as a straight line push towards the goal"; afterwards each optimization is
warm-started with the previously optimized sequence.

Straight-line push (:func:`straight_line_controls`), with d the unit vector from the
target centre t to the goal centre g and R = r_target + r_pusher the contact distance
(r_target: the target's extent along -d from its pose, any outline)::

    pre-push point  a = t - (R + approach_clearance) d
    push end        e = g - R d          (the pusher's position when the target reaches g)

The pusher path is p -> [detour] -> a -> e: the pusher first approaches the target from
behind, going around it (via corners of the square of half side R + clearance around
t, on the pusher's side, grown to the target's bounding disc) when the direct approach would
touch it, then pushes along d. "Touch" is judged against the target's outline (a disc exactly,
any other outline by the polygon the planar geometry uses for it). Judged against its
bounding disc instead, every box target's pre-push point (a is R + clearance from t, inside the
disc of a 10.9 x 15.4 cm box for most headings) touched it, so no path cleared, and the proposal
took the longest detour, round the target's front and back, even with the pusher right behind it.
The path is followed at ``speed``; control k is the chord between the path positions at
k dt and (k+1) dt, so the controls stop (are zero) once the path ends.
"""

from __future__ import annotations

import math

import numpy as np

from parapush.physics.planar_geometry import outline_polygon, rotate, segment_point_distance, segment_polygon_distance
from parapush.planning.goal_route import GoalRoute
from parapush.scene import ObjectSpec, Scene

WARM_START_FILLS = ("repeat", "zero")
"""How :func:`shift_controls` completes the shifted sequence: a copy of the last control, or a zero velocity."""


def _extent_along(spec: ObjectSpec, yaw: float, direction: np.ndarray) -> float:
    """Support distance of the object's outline from its origin (its pose) along ``direction``
    (unit, table frame), m (:meth:`parapush.scene.outline.Outline.extent_along`)."""
    return float(spec.outline.extent_along(rotate(np.asarray(direction, dtype=float), -yaw)))


def _clears(points: list[np.ndarray], spec: ObjectSpec, pose: np.ndarray, pusher_radius: float) -> bool:
    """Whether a pusher of ``pusher_radius`` moving along the polyline through ``points`` stays off
    the outline of ``spec`` at ``pose`` (x, y, yaw) (module docstring)."""
    waypoints = np.asarray(points, dtype=float)
    centre = np.asarray(pose[:2], dtype=float)
    outline = spec.outline
    if outline.kind == "disc":
        distances = segment_point_distance(waypoints[:-1], waypoints[1:], centre)
        reach = outline.radius + pusher_radius
    else:
        local = rotate(waypoints - centre, -float(pose[2]))
        distances = segment_polygon_distance(local[:-1], local[1:], outline_polygon(outline))
        reach = pusher_radius
    return not np.any(distances < reach - 1e-12)


def straight_line_path(scene: Scene, state: np.ndarray, *, approach_clearance: float = 0.01,
                       route: GoalRoute | None = None) -> np.ndarray:
    """Waypoints (W, 2) m of the straight-line push: pusher, [detour], pre-push point, push end.

    With a ``route`` (:class:`~parapush.planning.goal_route.GoalRoute`) whose way from the target
    is not straight to the goal (an obstacle in between), d is the route's direction at the target
    and the push ends where the target has gone the route distance along d (the re-plans turn it
    round the obstacle)."""
    if scene.goal is None:
        raise ValueError(f"scene: {scene.name!r} has no goal region to push towards")
    if not math.isfinite(approach_clearance) or approach_clearance < 0.0:
        raise ValueError(f"approach_clearance: must be finite and >= 0, got {approach_clearance!r}")
    layout = scene.layout
    state = layout.check(state, "state")
    if state.shape != (layout.dimension,):
        raise ValueError(f"state: expected shape ({layout.dimension},), got {state.shape}")
    pusher = state[layout.pusher_position].copy()
    target_pose = state[layout.object_pose(scene.target_index)]
    target = target_pose[:2].copy()
    goal = np.asarray(scene.goal.center, dtype=float)
    offset = goal - target
    distance = float(np.linalg.norm(offset))
    if distance < 1e-9:
        return np.array([pusher])
    direction = offset / distance
    if route is not None and not bool(route.sees_goal(target)):
        direction = route.direction(target)
        goal = target + float(route.distance(target)) * direction
    normal = np.array([-direction[1], direction[0]])
    spec = scene.objects[scene.target_index]
    contact = _extent_along(spec, float(target_pose[2]), -direction) + scene.pusher.radius
    standoff = contact + approach_clearance
    pre_push = target - standoff * direction
    push_end = goal - contact * direction
    # The detour's corners keep the pusher off the target's bounding disc.
    keep_out = spec.bounding_radius + scene.pusher.radius
    side = 1.0 if float(normal @ (pusher - target)) >= 0.0 else -1.0
    back_corner = target + standoff * (-direction + side * normal) * max(1.0, keep_out / standoff)
    front_corner = target + standoff * (direction + side * normal) * max(1.0, keep_out / standoff)
    candidates = ([], [back_corner], [front_corner, back_corner])
    detour = candidates[-1]
    for waypoints in candidates:
        if _clears([pusher, *waypoints, pre_push], spec, target_pose, scene.pusher.radius):
            detour = waypoints
            break
    return np.array([pusher, *detour, pre_push, push_end])


def straight_line_controls(
    scene: Scene,
    state: np.ndarray,
    horizon: int,
    duration: float,
    speed: float,
    *,
    approach_clearance: float = 0.01,
    route: GoalRoute | None = None,
) -> np.ndarray:
    """The first ``horizon`` controls (N, 2) m/s of the straight-line push at ``speed``.

    Args:
        scene: the scene (its goal and target are used).
        state: (D,) current state.
        horizon: N, number of controls.
        duration: s, duration of each control.
        speed: m/s, pusher speed along the path (<= the pusher's max speed).
        approach_clearance: m, gap between pusher and target at the pre-push point.
        route: push along the target's route round the obstacles (:func:`straight_line_path`).
    """
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon: expected an integer >= 1, got {horizon!r}")
    if not math.isfinite(duration) or duration <= 0.0:
        raise ValueError(f"duration: must be finite and > 0, got {duration!r}")
    if not math.isfinite(speed) or speed <= 0.0:
        raise ValueError(f"speed: must be finite and > 0, got {speed!r}")
    if speed > scene.pusher.max_speed + 1e-12:
        raise ValueError(f"speed: {speed} m/s exceeds the pusher's max_speed {scene.pusher.max_speed} m/s")
    waypoints = straight_line_path(scene, state, approach_clearance=approach_clearance, route=route)
    lengths = np.linalg.norm(np.diff(waypoints, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(lengths)])

    def position(travelled: float) -> np.ndarray:
        travelled = min(travelled, float(arc[-1]))
        segment = min(int(np.searchsorted(arc, travelled, side="right")) - 1, len(lengths) - 1)
        if segment < 0 or lengths.size == 0:
            return waypoints[0]
        fraction = 0.0 if lengths[segment] == 0.0 else (travelled - arc[segment]) / lengths[segment]
        return waypoints[segment] + fraction * (waypoints[segment + 1] - waypoints[segment])

    positions = np.array([position(speed * duration * step) for step in range(horizon + 1)])
    return np.diff(positions, axis=0) / duration


def shift_controls(previous: np.ndarray, *, fill: str = "repeat") -> np.ndarray:
    """Warm start: drop the executed first control of ``previous`` (N, 2) and append one.

    Args:
        previous: (N, 2) m/s, the sequence optimized at the previous MPC step.
        fill: ``"repeat"`` appends a copy of the last control, ``"zero"`` a zero velocity.
    Returns:
        (N, 2) [u_1, ..., u_{N-1}, fill].
    """
    previous = np.asarray(previous, dtype=float)
    if previous.ndim != 2 or previous.shape[1] != 2 or previous.shape[0] < 1:
        raise ValueError(f"previous: expected shape (N, 2) with N >= 1, got {previous.shape}")
    if fill not in WARM_START_FILLS:
        raise ValueError(f"fill: expected {' or '.join(repr(name) for name in WARM_START_FILLS)}, got {fill!r}")
    last = previous[-1] if fill == "repeat" else np.zeros(2)
    return np.vstack([previous[1:], last[None]])
