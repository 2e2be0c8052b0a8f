"""What RViz and Foxglove draw of a pushing scene: plain marker descriptions, ROS-free.

:func:`scene_markers` describes the table, the obstacles, the goal region, the objects at
their (estimated) poses, stale ones greyed, and the pusher; :func:`plan_markers` the chosen
plan's target and pusher paths. The visualizer node turns each :class:`MarkerDescription`
into a ``visualization_msgs/Marker`` in the table frame (x along the table, y across, z up,
origin at the centre of the table top; SI units).

Bodies stand on the table top as solids of their height, drawn as RViz and Foxglove draw
them natively: cylinders as CYLINDER markers, boxes as CUBEs, ellipses as CYLINDERs scaled
to their two diameters (an elliptic cylinder, exact), and polygons as a TRIANGLE_LIST prism
(caps from the outline's convex parts, one quad per edge for the walls, in the body's frame
so that the marker's pose moves it). A solid prism, not a LINE_STRIP outline, so that a
polygon looks like the other bodies (filled, seen from any side, greyed the same when stale)
and a non-convex outline's notches show; both viewers draw TRIANGLE_LIST with one colour.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from parapush.scene import Scene, SceneSnapshot

MARKER_SHAPES = ("cube", "cylinder", "line_strip", "triangle_list")

TABLE_THICKNESS = 0.02
"""m, drawn below z = 0 (the table top)."""
GOAL_THICKNESS = 0.002
"""m, the goal disc lies on the table top."""
PATH_WIDTH = 0.004
"""m, line width of the plan's paths."""

TABLE_COLOUR = (0.87, 0.82, 0.72, 1.0)
GOAL_COLOUR = (0.30, 0.75, 0.30, 0.5)
OBSTACLE_COLOUR = (0.25, 0.25, 0.25, 1.0)
TARGET_COLOUR = (0.84, 0.15, 0.16, 0.9)
OBJECT_COLOUR = (0.12, 0.47, 0.71, 0.9)
STALE_COLOUR = (0.6, 0.6, 0.6, 0.5)
PUSHER_COLOUR = (0.12, 0.23, 0.45, 1.0)
PLANNED_TARGET_COLOUR = (0.84, 0.15, 0.16, 1.0)
PLANNED_PUSHER_COLOUR = (0.12, 0.23, 0.45, 1.0)
OBSTACLE_HEIGHT = 0.05
"""m, obstacles have no height in the scene file."""


def _finite_tuple(values, length: int, name: str) -> tuple[float, ...]:
    values = tuple(float(value) for value in values)
    if len(values) != length:
        raise ValueError(f"{name}: expected {length} numbers, got {len(values)}")
    if not all(math.isfinite(value) for value in values):
        raise ValueError(f"{name}: must be finite, got {values}")
    return values


@dataclass(frozen=True)
class MarkerDescription:
    """One marker in the table frame.

    Attributes:
        namespace: marker namespace (``table``, ``objects``, ``plan`` ...); with ``marker_id`` its identity.
        marker_id: integer id, unique within the namespace.
        shape: one of :data:`MARKER_SHAPES`.
        position: (x, y, z) of the marker's centre, m (zero for line strips: their points are absolute).
        yaw: rad, rotation about z.
        scale: (x, y, z) m: full sizes for cubes, (diameter x, diameter y, height) for cylinders,
            (line width, 0, 0) for line strips, (1, 1, 1) for triangle lists (a factor on their points).
        colour: (red, green, blue, alpha), each in [0, 1].
        points: ((x, y, z), ...) m, the vertices of a line strip (at least two, absolute) or a
            triangle list's triangles (three points each, in the marker's frame: relative to
            ``position``, turned by ``yaw``); empty for the other shapes.
    """

    namespace: str
    marker_id: int
    shape: str
    position: tuple[float, float, float]
    yaw: float
    scale: tuple[float, float, float]
    colour: tuple[float, float, float, float]
    points: tuple[tuple[float, float, float], ...] = ()

    def __post_init__(self) -> None:
        if not self.namespace:
            raise ValueError("namespace: must not be empty")
        if self.shape not in MARKER_SHAPES:
            raise ValueError(f"shape: expected one of {MARKER_SHAPES}, got {self.shape!r}")
        object.__setattr__(self, "position", _finite_tuple(self.position, 3, "position"))
        object.__setattr__(self, "yaw", _finite_tuple((self.yaw,), 1, "yaw")[0])
        scale = _finite_tuple(self.scale, 3, "scale")
        needed = scale[:1] if self.shape == "line_strip" else scale
        if any(value <= 0.0 for value in needed):
            raise ValueError(f"scale: must be > 0 for a {self.shape}, got {scale}")
        object.__setattr__(self, "scale", scale)
        colour = _finite_tuple(self.colour, 4, "colour")
        if any(not 0.0 <= value <= 1.0 for value in colour):
            raise ValueError(f"colour: each component must be in [0, 1], got {colour}")
        object.__setattr__(self, "colour", colour)
        points = tuple(_finite_tuple(point, 3, f"points[{index}]") for index, point in enumerate(self.points))
        if self.shape == "triangle_list":
            if not points or len(points) % 3:
                raise ValueError(f"points: a triangle list needs three points per triangle, got {len(points)}")
        elif (self.shape == "line_strip") != bool(points) or (points and len(points) < 2):
            raise ValueError(f"points: a line strip needs at least two points, cubes and cylinders none; "
                             f"got {len(points)}")
        object.__setattr__(self, "points", points)


@functools.lru_cache(maxsize=64)
def prism_triangles(outline, height: float) -> tuple[tuple[float, float, float], ...]:
    """The triangles (three points each, outward-facing counter-clockwise) of ``outline``
    (:class:`parapush.scene.outline.Outline`) raised into a prism of ``height`` m centred on
    z = 0, in the body frame: each convex part's caps as fans, one quad per boundary edge.
    Remembered per (outline, height): the visualizer draws the same bodies at every state."""
    half = 0.5 * height
    points: list[tuple[float, float, float]] = []
    for part in outline.convex_parts():
        part = np.asarray(part, dtype=float).tolist()
        (x0, y0) = part[0]
        for (x1, y1), (x2, y2) in zip(part[1:-1], part[2:], strict=True):
            points += [(x0, y0, half), (x1, y1, half), (x2, y2, half)]  # top, seen from above
            points += [(x0, y0, -half), (x2, y2, -half), (x1, y1, -half)]  # bottom, seen from below
    boundary = np.asarray(outline.boundary(), dtype=float).tolist()
    for (ax, ay), (bx, by) in zip(boundary, boundary[1:] + boundary[:1], strict=True):
        points += [(ax, ay, -half), (bx, by, -half), (bx, by, half), (ax, ay, -half), (bx, by, half), (ax, ay, half)]
    return tuple(points)


def _disc(namespace: str, marker_id: int, radius: float, pose, height: float, colour) -> MarkerDescription:
    """A cylinder of ``radius`` m standing on the table top at pose (x, y, yaw)."""
    x, y, yaw = (float(value) for value in pose)
    return MarkerDescription(namespace, marker_id, "cylinder", (x, y, 0.5 * height), yaw,
                             (2.0 * radius, 2.0 * radius, height), colour)


def _body(namespace: str, marker_id: int, body, pose, height: float, colour) -> MarkerDescription:
    """A scene body (an object or an obstacle: its ``shape`` and sizes or ``outline``) standing on
    the table top at pose (x, y, yaw)."""
    if body.shape == "cylinder":
        return _disc(namespace, marker_id, body.radius, pose, height, colour)
    x, y, yaw = (float(value) for value in pose)
    if body.shape in ("box", "ellipse"):
        kind = "cube" if body.shape == "box" else "cylinder"  # a cylinder scaled to the two diameters
        scale = (2.0 * body.half_extents[0], 2.0 * body.half_extents[1], height)
        return MarkerDescription(namespace, marker_id, kind, (x, y, 0.5 * height), yaw, scale, colour)
    return MarkerDescription(namespace, marker_id, "triangle_list", (x, y, 0.5 * height), yaw, (1.0, 1.0, 1.0),
                             colour, prism_triangles(body.outline, height))


def scene_markers(scene: Scene, snapshot: SceneSnapshot) -> tuple[MarkerDescription, ...]:
    """The scene's markers at one observed state.

    Namespaces: ``table`` (id 0), ``goal`` (id 0, when the scene has a goal), ``obstacles``
    (ids in the scene's obstacle order), ``objects`` (ids in the scene's object order; the
    target red, the others blue, stale ones grey) and ``pusher`` (id 0; grey when stale).

    Args:
        scene: the scene (shapes, table, obstacles, goal, target).
        snapshot: the observed state, its object names in the scene's order.
    Raises:
        ValueError: the snapshot's objects are not the scene's.
    """
    if tuple(snapshot.object_names) != scene.object_names:
        raise ValueError(f"snapshot.object_names: {list(snapshot.object_names)} are not the scene's "
                         f"{list(scene.object_names)}")
    layout = scene.layout
    markers = [MarkerDescription("table", 0, "cube", (0.0, 0.0, -0.5 * TABLE_THICKNESS), 0.0,
                                 (scene.table.length, scene.table.width, TABLE_THICKNESS), TABLE_COLOUR)]
    if scene.goal is not None:
        diameter = 2.0 * scene.goal.radius
        markers.append(MarkerDescription("goal", 0, "cylinder", (*scene.goal.center, 0.5 * GOAL_THICKNESS), 0.0,
                                         (diameter, diameter, GOAL_THICKNESS), GOAL_COLOUR))
    for index, obstacle in enumerate(scene.obstacles):
        markers.append(_body("obstacles", index, obstacle, obstacle.pose, OBSTACLE_HEIGHT, OBSTACLE_COLOUR))
    poses = layout.poses(snapshot.state)
    for index, spec in enumerate(scene.objects):
        if not snapshot.object_valid[index]:
            colour = STALE_COLOUR
        else:
            colour = TARGET_COLOUR if spec.name == scene.target else OBJECT_COLOUR
        markers.append(_body("objects", index, spec, poses[index], spec.height, colour))
    pusher = snapshot.state[layout.pusher_position]
    markers.append(_disc("pusher", 0, scene.pusher.radius, (*pusher, 0.0), scene.pusher.height,
                         PUSHER_COLOUR if snapshot.pusher_valid else STALE_COLOUR))
    return tuple(markers)


def plan_markers(scene: Scene, trajectory: np.ndarray) -> tuple[MarkerDescription, ...]:
    """The chosen plan: the target's and the pusher's predicted paths as line strips.

    Namespace ``plan``: id 0 the target's centre path (at half its height), id 1 the pusher's.

    Args:
        scene: the scene (target, heights).
        trajectory: (N + 1, D) predicted states, N >= 1.
    """
    layout = scene.layout
    trajectory = layout.check(np.atleast_2d(trajectory), "trajectory")
    if trajectory.ndim != 2 or len(trajectory) < 2:
        raise ValueError(f"trajectory: expected (N + 1, {layout.dimension}) states with N >= 1, "
                         f"got shape {trajectory.shape}")
    target = scene.objects[scene.target_index]
    target_path = layout.poses(trajectory)[:, scene.target_index, :2]
    pusher_path = trajectory[:, layout.pusher_position]
    return (
        MarkerDescription("plan", 0, "line_strip", (0.0, 0.0, 0.0), 0.0, (PATH_WIDTH, 0.0, 0.0),
                          PLANNED_TARGET_COLOUR, tuple((x, y, 0.5 * target.height) for x, y in target_path)),
        MarkerDescription("plan", 1, "line_strip", (0.0, 0.0, 0.0), 0.0, (PATH_WIDTH, 0.0, 0.0),
                          PLANNED_PUSHER_COLOUR,
                          tuple((x, y, 0.5 * scene.pusher.height) for x, y in pusher_path)),
    )
