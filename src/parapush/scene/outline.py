"""Planar outlines of bodies: discs, rectangles, ellipses and simple polygons.

An :class:`Outline` is a closed region in a body's own frame (metres; the body's pose is
the frame's origin, which need not be the outline's centroid). Every consumer that needs a
body's shape uses these few operations instead of branching on the kind:

- :meth:`Outline.boundary`: the boundary as a counter-clockwise polygon (discs and ellipses
  sampled, their points on the curve);
- :meth:`Outline.convex_parts`: convex counter-clockwise polygons whose union is the
  outline (a non-convex polygon is split by ear-clipping triangulation followed by a greedy
  Hertel-Mehlhorn merge of triangles across diagonals whose removal keeps the part convex;
  Hertel-Mehlhorn gives at most four times the minimum number of convex parts). Discs and
  ellipses: one part, the inscribed :data:`CONVEX_PART_RESOLUTION`-gon (what the fine model
  collides with; 0.29 % less area than the curve), its vertices at parameters half a step
  off the axes, so that it is symmetric about both axes and a push along an axis meets the
  middle of a flat edge (at 0.9979 of the semi-axis) rather than a vertex;
- :meth:`Outline.contains`, :meth:`Outline.signed_distance` (exact for every kind; the
  ellipse's by Newton iterations on the curve's parameter from the nearest of 129 samples
  of its quarter, to ~1e-9 m);
- :attr:`Outline.area`, :attr:`Outline.centroid`, :meth:`Outline.second_moments`,
  :meth:`Outline.polar_moment` (closed forms: the exact curve for discs and ellipses,
  shoelace sums for polygons), :func:`plate_mass_properties` (a uniform plate);
- :attr:`Outline.bounding_radius`, :meth:`Outline.extent_along` (the support function).

Polygons are validated when built: at least 3 distinct vertices (consecutive duplicates and
a repeated first vertex are dropped), non-zero area, simple (no two edges cross or touch
except neighbours at their shared vertex, no edge doubling back); the vertex order is
normalised to counter-clockwise. Errors are :class:`ValueError` s whose message starts with
the field (``vertices: ...``), so that a scene can prefix where the outline is.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

OUTLINE_KINDS = ("disc", "rectangle", "ellipse", "polygon")

CONVEX_PART_RESOLUTION = 48
"""Points of the convex part (an inscribed polygon) of a disc or an ellipse."""

_ELLIPSE_ITERATIONS = 8


def _cross(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return first[..., 0] * second[..., 1] - first[..., 1] * second[..., 0]


def _signed_area(vertices: np.ndarray) -> float:
    following = np.roll(vertices, -1, axis=0)
    return 0.5 * float(np.sum(_cross(vertices, following)))


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name}: expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name}: must be finite and > 0, got {value!r}")
    return value


def _segments_intersect(p1: np.ndarray, p2: np.ndarray, q1: np.ndarray, q2: np.ndarray, tolerance: float) -> np.ndarray:
    """Whether segments p1-p2 and q1-q2 (arrays (..., 2)) share a point (touching counts)."""
    d1 = _cross(p2 - p1, q1 - p1)
    d2 = _cross(p2 - p1, q2 - p1)
    d3 = _cross(q2 - q1, p1 - q1)
    d4 = _cross(q2 - q1, p2 - q1)
    proper = (((d1 > tolerance) & (d2 < -tolerance)) | ((d1 < -tolerance) & (d2 > tolerance))) & (
        ((d3 > tolerance) & (d4 < -tolerance)) | ((d3 < -tolerance) & (d4 > tolerance))
    )

    def on_segment(a: np.ndarray, b: np.ndarray, point: np.ndarray, side: np.ndarray) -> np.ndarray:
        low = np.minimum(a, b) - 1e-12
        high = np.maximum(a, b) + 1e-12
        return (np.abs(side) <= tolerance) & np.all((point >= low) & (point <= high), axis=-1)

    touching = (on_segment(p1, p2, q1, d1) | on_segment(p1, p2, q2, d2)
                | on_segment(q1, q2, p1, d3) | on_segment(q1, q2, p2, d4))
    return proper | touching


def _normalised_polygon(vertices: Any) -> tuple[tuple[float, float], ...]:
    """Validated counter-clockwise vertices (see the module docstring); raises ValueError."""
    if isinstance(vertices, (str, bytes)) or not isinstance(vertices, (Sequence, np.ndarray)):
        raise ValueError(f"vertices: expected a list of [x, y] points, got {vertices!r}")
    points = []
    for index, vertex in enumerate(vertices):
        if isinstance(vertex, (str, bytes)) or not isinstance(vertex, (Sequence, np.ndarray)) or len(vertex) != 2:
            raise ValueError(f"vertices[{index}]: expected [x, y], got {vertex!r}")
        pair = []
        for value in vertex:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(float(value)):
                raise ValueError(f"vertices[{index}]: expected two finite numbers, got {vertex!r}")
            pair.append(float(value))
        points.append((pair[0], pair[1]))
    distinct = [point for index, point in enumerate(points) if index == 0 or point != points[index - 1]]
    while len(distinct) > 1 and distinct[-1] == distinct[0]:
        distinct.pop()
    if len(set(distinct)) < 3:
        raise ValueError(f"vertices: a polygon needs at least 3 distinct vertices, got {len(set(distinct))}")
    if len(set(distinct)) != len(distinct):
        raise ValueError("vertices: the polygon is not simple (a vertex repeats)")
    array = np.array(distinct)
    scale = float(np.max(np.abs(array - array.mean(axis=0))))
    count = len(array)
    tolerance = 1e-12 * scale * scale
    # Neighbouring edges must not double back (a 180-degree turn overlaps them).
    incoming = array - np.roll(array, 1, axis=0)
    outgoing = np.roll(array, -1, axis=0) - array
    reverse = (np.abs(_cross(incoming, outgoing)) <= tolerance) & (np.sum(incoming * outgoing, axis=-1) < 0.0)
    if np.any(reverse):
        raise ValueError(f"vertices: the polygon is not simple (its outline doubles back at vertex "
                         f"{int(np.flatnonzero(reverse)[0])})")
    if count > 3:
        first, second = np.triu_indices(count, k=2)
        keep = ~((first == 0) & (second == count - 1))  # neighbours through the closing edge
        first, second = first[keep], second[keep]
        crossing = _segments_intersect(array[first], array[(first + 1) % count],
                                       array[second], array[(second + 1) % count], tolerance)
        if np.any(crossing):
            where = int(np.flatnonzero(crossing)[0])
            raise ValueError(f"vertices: the polygon is not simple (edge {int(first[where])} meets "
                             f"edge {int(second[where])})")
    area = _signed_area(array)
    if abs(area) <= 1e-12 * scale * scale:
        raise ValueError("vertices: the polygon has zero area")
    if area < 0.0:
        array = array[::-1]
    return tuple((float(x), float(y)) for x, y in array)


def _is_convex(polygon: np.ndarray, tolerance: float) -> bool:
    edges = np.roll(polygon, -1, axis=0) - polygon
    return bool(np.all(_cross(edges, np.roll(edges, -1, axis=0)) >= -tolerance))


def _drop_collinear(polygon: np.ndarray, tolerance: float) -> np.ndarray:
    """The polygon without vertices where its outline goes straight on."""
    keep = np.abs(_cross(polygon - np.roll(polygon, 1, axis=0), np.roll(polygon, -1, axis=0) - polygon)) > tolerance
    return polygon[keep] if np.count_nonzero(keep) >= 3 else polygon


def _triangulate(points: np.ndarray, tolerance: float) -> list[tuple[int, int, int]]:
    """Ear-clipping triangulation of a simple counter-clockwise polygon -> CCW index triples."""
    remaining = list(range(len(points)))
    triangles: list[tuple[int, int, int]] = []
    guard = 0
    while len(remaining) > 3:
        count = len(remaining)
        clipped = False
        for position in range(count):
            previous, current, following = (remaining[(position - 1) % count], remaining[position],
                                            remaining[(position + 1) % count])
            a, b, c = points[previous], points[current], points[following]
            turn = float(_cross(b - a, c - b))
            if abs(turn) <= tolerance and np.dot(b - a, c - b) >= 0.0:
                del remaining[position]  # straight on: no triangle
                clipped = True
                break
            if turn <= tolerance:
                continue  # reflex
            others = np.array([index for index in remaining if index not in (previous, current, following)])
            if others.size:
                tested = points[others]
                inside = ((_cross(b - a, tested - a) >= -tolerance) & (_cross(c - b, tested - b) >= -tolerance)
                          & (_cross(a - c, tested - c) >= -tolerance))
                if np.any(inside):
                    continue
            triangles.append((previous, current, following))
            del remaining[position]
            clipped = True
            break
        guard += 1
        if not clipped or guard > 4 * len(points) + 8:
            raise ValueError("vertices: the polygon could not be triangulated (degenerate outline)")
    a, b, c = (points[index] for index in remaining)
    if float(_cross(b - a, c - b)) > tolerance:
        triangles.append(tuple(remaining))  # type: ignore[arg-type]
    return triangles


def _merge_convex(points: np.ndarray, triangles: list[tuple[int, int, int]], tolerance: float) -> list[list[int]]:
    """Greedy Hertel-Mehlhorn: remove diagonals while the merged part stays convex."""
    parts: dict[int, list[int]] = {number: list(triangle) for number, triangle in enumerate(triangles)}
    merged = True
    while merged:
        merged = False
        owner = {}
        for number, part in parts.items():
            for position, start in enumerate(part):
                owner[(start, part[(position + 1) % len(part)])] = number
        for (start, end), number in owner.items():
            other = owner.get((end, start))
            if other is None or other == number or number not in parts or other not in parts:
                continue
            first, second = parts[number], parts[other]
            # first: ... start, end ...; second: ... end, start ...; join at the shared edge
            i = first.index(end)
            walk_first = first[i:] + first[:i]  # end ... start
            j = second.index(start)
            walk_second = second[j:] + second[:j]  # start ... end
            candidate = walk_first + walk_second[1:-1]
            if _is_convex(points[candidate], tolerance):
                parts[number] = candidate
                del parts[other]
                merged = True
                break
    return list(parts.values())


_ELLIPSE_ANGLES = np.linspace(0.0, 0.5 * math.pi, 129)
"""Samples of the quarter ellipse that start :func:`ellipse_closest_points`' Newton iterations."""


def ellipse_closest_points(points: np.ndarray, semi_x: float, semi_y: float
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The closest points of an axis-aligned ellipse's curve (semi-axes ``semi_x``, ``semi_y``, m)
    to body-frame points (..., 2): (closest points (..., 2), distances (...,) m, inside (...,) bool).

    The closest point (a cos t, b sin t), t in [0, pi/2] by symmetry, is the nearest of a dense
    sampling of the quarter curve (which picks the global minimum where, inside the evolute,
    several stationary points exist), refined by Newton iterations on the stationarity condition
    f(t) = (a^2 - b^2) cos t sin t - a px sin t + b py cos t within one sample spacing."""
    px, py = np.abs(points[..., 0]), np.abs(points[..., 1])
    angles = _ELLIPSE_ANGLES
    gaps = np.hypot(px[..., None] - semi_x * np.cos(angles), py[..., None] - semi_y * np.sin(angles))
    nearest = np.argmin(gaps, axis=-1)
    spacing = angles[1] - angles[0]
    low = np.maximum(angles[nearest] - spacing, 0.0)
    high = np.minimum(angles[nearest] + spacing, 0.5 * math.pi)
    t = angles[nearest]
    difference = semi_x * semi_x - semi_y * semi_y
    for _ in range(_ELLIPSE_ITERATIONS):
        cos, sin = np.cos(t), np.sin(t)
        value = difference * cos * sin - semi_x * px * sin + semi_y * py * cos
        slope = difference * (cos * cos - sin * sin) - semi_x * px * cos - semi_y * py * sin
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(slope != 0.0, value / slope, 0.0)
        t = np.clip(t - step, low, high)
    distance = np.minimum(np.hypot(px - semi_x * np.cos(t), py - semi_y * np.sin(t)), np.min(gaps, axis=-1))
    closest = np.stack([np.copysign(semi_x * np.cos(t), points[..., 0]),
                        np.copysign(semi_y * np.sin(t), points[..., 1])], axis=-1)
    inside = (px / semi_x) ** 2 + (py / semi_y) ** 2 <= 1.0
    return closest, distance, inside


@dataclass(frozen=True)
class Outline:
    """A planar outline in a body's frame, metres; validated in ``__post_init__``.

    Attributes:
        kind: one of :data:`OUTLINE_KINDS`.
        radius: disc radius, m.
        half_extents: rectangle half sizes, or ellipse semi-axes, along the body's x and y, m.
        vertices: polygon vertices (x, y), m, normalised to counter-clockwise.
    """

    kind: str
    radius: float = 0.0
    half_extents: tuple[float, float] = (0.0, 0.0)
    vertices: tuple[tuple[float, float], ...] = ()
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.kind not in OUTLINE_KINDS:
            raise ValueError(f"kind: expected one of {OUTLINE_KINDS}, got {self.kind!r}")
        if self.kind == "disc":
            object.__setattr__(self, "radius", _positive("radius", self.radius))
        elif self.kind in ("rectangle", "ellipse"):
            extents = self.half_extents
            if isinstance(extents, (str, bytes)) or not isinstance(extents, (Sequence, np.ndarray)) \
                    or len(extents) != 2:
                raise ValueError(f"half_extents: expected two numbers, got {extents!r}")
            object.__setattr__(self, "half_extents",
                               tuple(_positive(f"half_extents[{index}]", value) for index, value in enumerate(extents)))
        else:
            object.__setattr__(self, "vertices", _normalised_polygon(self.vertices))

    # -- constructors ------------------------------------------------------------------
    @classmethod
    def disc(cls, radius: float) -> Outline:
        return cls("disc", radius=radius)

    @classmethod
    def rectangle(cls, half_x: float, half_y: float) -> Outline:
        return cls("rectangle", half_extents=(half_x, half_y))

    @classmethod
    def ellipse(cls, semi_x: float, semi_y: float) -> Outline:
        return cls("ellipse", half_extents=(semi_x, semi_y))

    @classmethod
    def polygon(cls, vertices: Any) -> Outline:
        return cls("polygon", vertices=tuple(tuple(vertex) for vertex in np.asarray(vertices, dtype=float)))

    # -- shape --------------------------------------------------------------------------
    @property
    def is_convex(self) -> bool:
        """Whether the outline is convex (every kind but a non-convex polygon)."""
        return len(self.convex_parts()) == 1

    def _scale_tolerance(self) -> float:
        return 1e-12 * self.bounding_radius**2

    def boundary(self, resolution: int = 64) -> np.ndarray:
        """(M, 2) counter-clockwise boundary points, m (first point not repeated): discs and
        ellipses ``resolution`` points on the curve starting on the +x axis, rectangles their
        4 corners, polygons their vertices."""
        if self.kind in ("disc", "ellipse"):
            return self._curve_points(resolution, 0.0)
        if self.kind == "rectangle":
            half_x, half_y = self.half_extents
            return np.array([[half_x, -half_y], [half_x, half_y], [-half_x, half_y], [-half_x, -half_y]])
        return np.array(self.vertices, dtype=float)

    def _curve_points(self, resolution: int, phase: float) -> np.ndarray:
        """``resolution`` points (a cos t, b sin t) of a disc or an ellipse, t = 2 pi (k + phase) / resolution."""
        resolution = int(resolution)
        if resolution < 3:
            raise ValueError(f"resolution: expected at least 3 points, got {resolution}")
        angles = 2.0 * math.pi * (np.arange(resolution) + phase) / resolution
        semi_x, semi_y = (self.radius, self.radius) if self.kind == "disc" else self.half_extents
        return np.stack([semi_x * np.cos(angles), semi_y * np.sin(angles)], axis=-1)

    def convex_parts(self) -> tuple[np.ndarray, ...]:
        """Convex counter-clockwise polygons (each (Mi, 2), m) whose union is the outline
        (see the module docstring); read-only arrays, computed once."""
        parts = self._cache.get("parts")
        if parts is None:
            if self.kind in ("disc", "ellipse"):
                parts = (self._curve_points(CONVEX_PART_RESOLUTION, 0.5),)
            elif self.kind == "rectangle":
                parts = (self.boundary(),)
            else:
                points = self.boundary()
                tolerance = self._scale_tolerance()
                if _is_convex(points, tolerance):
                    parts = (_drop_collinear(points, tolerance),)
                else:
                    merged = _merge_convex(points, _triangulate(points, tolerance), tolerance)
                    parts = tuple(_drop_collinear(points[part], tolerance) for part in merged)
            for part in parts:
                part.setflags(write=False)
            self._cache["parts"] = parts
        return parts

    def contains(self, points: Any, tolerance: float = 0.0) -> np.ndarray:
        """(...,) bool: whether body-frame points (..., 2) m lie in the closed outline
        (within ``tolerance`` m of it)."""
        points = np.asarray(points, dtype=float)
        if self.kind == "disc":
            return np.hypot(points[..., 0], points[..., 1]) <= self.radius + tolerance
        if self.kind == "rectangle":
            return np.all(np.abs(points) <= np.asarray(self.half_extents) + tolerance, axis=-1)
        if self.kind == "ellipse" and tolerance == 0.0:
            semi_x, semi_y = self.half_extents
            return (points[..., 0] / semi_x) ** 2 + (points[..., 1] / semi_y) ** 2 <= 1.0
        return self.signed_distance(points) <= tolerance

    def signed_distance(self, points: Any) -> np.ndarray:
        """(...,) distance of body-frame points (..., 2) m to the boundary, m; < 0 inside."""
        points = np.asarray(points, dtype=float)
        if points.shape[-1:] != (2,):
            raise ValueError(f"points: expected shape (..., 2), got {points.shape}")
        if self.kind == "disc":
            return np.hypot(points[..., 0], points[..., 1]) - self.radius
        if self.kind == "rectangle":
            gap = np.abs(points) - np.asarray(self.half_extents)
            outside = np.linalg.norm(np.maximum(gap, 0.0), axis=-1)
            return outside + np.minimum(np.max(gap, axis=-1), 0.0)
        if self.kind == "ellipse":
            return self._ellipse_signed_distance(points)
        return self._polygon_signed_distance(points)

    def _ellipse_signed_distance(self, points: np.ndarray) -> np.ndarray:
        _, distance, inside = ellipse_closest_points(points, *self.half_extents)
        return np.where(inside, -distance, distance)

    def _polygon_signed_distance(self, points: np.ndarray) -> np.ndarray:
        vertices = self.boundary()
        following = np.roll(vertices, -1, axis=0)
        edges = following - vertices
        relative = points[..., None, :] - vertices  # (..., N, 2)
        lengths = np.sum(edges * edges, axis=-1)
        fraction = np.clip(np.sum(relative * edges, axis=-1) / lengths, 0.0, 1.0)
        distance = np.min(np.linalg.norm(relative - fraction[..., None] * edges, axis=-1), axis=-1)
        # even-odd crossing count of a ray towards +x
        y = points[..., None, 1]
        straddles = (vertices[:, 1] > y) != (following[:, 1] > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            crossing_x = vertices[:, 0] + (y - vertices[:, 1]) * edges[:, 0] / edges[:, 1]
        inside = np.count_nonzero(straddles & (points[..., None, 0] < crossing_x), axis=-1) % 2 == 1
        return np.where(inside, -distance, distance)

    # -- size and mass -------------------------------------------------------------------
    @functools.cached_property
    def area(self) -> float:
        """m^2."""
        if self.kind == "disc":
            return math.pi * self.radius**2
        if self.kind == "rectangle":
            return 4.0 * self.half_extents[0] * self.half_extents[1]
        if self.kind == "ellipse":
            return math.pi * self.half_extents[0] * self.half_extents[1]
        return _signed_area(self.boundary())

    @functools.cached_property
    def centroid(self) -> np.ndarray:
        """(2,) m, the area's centroid in the body frame (0 for discs, rectangles, ellipses);
        computed once, read-only."""
        if self.kind != "polygon":
            centroid = np.zeros(2)
        else:
            vertices = self.boundary()
            following = np.roll(vertices, -1, axis=0)
            weights = _cross(vertices, following)
            centroid = np.sum((vertices + following) * weights[:, None], axis=0) / (6.0 * self.area)
        centroid.setflags(write=False)
        return centroid

    def second_moments(self) -> tuple[float, float, float]:
        """Area second moments about the centroid per unit area, m^2:
        (∫(x - cx)^2 dA, ∫(y - cy)^2 dA, ∫(x - cx)(y - cy) dA) / area."""
        if self.kind == "disc":
            quarter = 0.25 * self.radius**2
            return (quarter, quarter, 0.0)
        if self.kind == "rectangle":
            return (self.half_extents[0] ** 2 / 3.0, self.half_extents[1] ** 2 / 3.0, 0.0)
        if self.kind == "ellipse":
            return (0.25 * self.half_extents[0] ** 2, 0.25 * self.half_extents[1] ** 2, 0.0)
        vertices = self.boundary()
        centroid = self.centroid
        x, y = (vertices - centroid).T  # about the centroid directly (better conditioned)
        x1, y1 = np.roll(x, -1), np.roll(y, -1)
        weights = x * y1 - x1 * y
        area = self.area
        xx = float(np.sum((x * x + x * x1 + x1 * x1) * weights)) / 12.0
        yy = float(np.sum((y * y + y * y1 + y1 * y1) * weights)) / 12.0
        xy = float(np.sum((x * y1 + 2.0 * x * y + 2.0 * x1 * y1 + x1 * y) * weights)) / 24.0
        return (xx / area, yy / area, xy / area)

    def polar_moment(self) -> float:
        """∫ |r - centroid|^2 dA / area, m^2: a uniform plate's yaw inertia about its
        centroid is ``mass * polar_moment()``."""
        xx, yy, _ = self.second_moments()
        return xx + yy

    @property
    def bounding_radius(self) -> float:
        """Largest distance of the outline from the body origin, m."""
        if self.kind == "disc":
            return self.radius
        if self.kind == "rectangle":
            return math.hypot(*self.half_extents)
        if self.kind == "ellipse":
            return max(self.half_extents)
        return float(np.max(np.linalg.norm(self.boundary(), axis=-1)))

    def extent_along(self, directions: Any) -> np.ndarray:
        """Support function: (...,) max over the outline of p . d for unit directions
        d (..., 2) in the body frame, m."""
        directions = np.asarray(directions, dtype=float)
        if self.kind == "disc":
            return np.full(directions.shape[:-1], self.radius)
        if self.kind == "rectangle":
            return np.abs(directions) @ np.asarray(self.half_extents)
        if self.kind == "ellipse":
            return np.linalg.norm(directions * np.asarray(self.half_extents), axis=-1)
        return np.max(directions @ self.boundary().T, axis=-1)


def plate_mass_properties(outline: Outline, thickness: float, density: float) -> tuple[float, np.ndarray, float]:
    """A uniform plate of ``outline``: (mass kg, centroid (2,) m in the body frame, yaw
    inertia about the centroid kg m^2). ``thickness`` m and ``density`` kg/m^3 are > 0."""
    thickness = _positive("thickness", thickness)
    density = _positive("density", density)
    mass = density * thickness * outline.area
    return mass, outline.centroid, mass * outline.polar_moment()
