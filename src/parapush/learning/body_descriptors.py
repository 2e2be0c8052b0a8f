"""Fixed-size descriptions of a scene's bodies (any outline) for the general learned model.

Every movable object and every obstacle becomes the same record, whatever its shape:

- its centroid in its body frame (a polygon's pose origin need not be its centroid; the
  fine model puts the centre of mass there), m;
- its *support table*: the support function h(theta) = max over the outline of
  (p - centroid) . (cos theta, sin theta), sampled at :data:`SUPPORT_SAMPLES` body-frame
  angles theta_k = 2 pi k / SUPPORT_SAMPLES, m. It describes the outline's convex hull; the
  network reads it at a few directions of its own frame (:func:`support_along`, linear
  interpolation: for the polygon corners this is within r (1 - cos(pi / 64)) ~ 0.05 mm of
  the exact support of a 5 cm body);
- its radius of gyration about the centroid sqrt(polar moment / area) (how a uniform
  plate's friction torque and yaw inertia scale), m, and its bounding radius about the
  centroid, m;
- its mass, kg, and support friction max(table.friction, object.friction) (the fine
  model's pair rule), 0 for obstacles, and a static flag (obstacles).

The tables are (B, ...) arrays with B = objects followed by obstacles, so a dataset of
many scenes stacks them with a leading row axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parapush.scene import Scene
from parapush.scene.outline import Outline

SUPPORT_SAMPLES = 64
"""Body-frame directions at which each outline's support function is tabulated."""


def support_table(outline: Outline) -> tuple[np.ndarray, np.ndarray]:
    """(centroid (2,) m body frame, support about the centroid at SUPPORT_SAMPLES angles (S,) m)."""
    angles = 2.0 * math.pi * np.arange(SUPPORT_SAMPLES) / SUPPORT_SAMPLES
    directions = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    centroid = np.asarray(outline.centroid, dtype=float)
    return centroid.copy(), outline.extent_along(directions) - directions @ centroid


def support_along(tables: np.ndarray, angles: np.ndarray, *, rows: np.ndarray | None = None) -> np.ndarray:
    """Support of bodies along directions given by their angle in the body frame.

    Args:
        tables: (..., S) support tables (broadcast against ``angles`` without its last axis), or
            with ``rows`` (R, S), the tables of R bodies.
        angles: (..., K) body-frame direction angles, rad.
        rows: (...) the row of ``tables`` each body's support is read from (no table is copied).
    Returns:
        (..., K) support about the centroid, m (linear interpolation between samples).
    """
    position = np.mod(angles, 2.0 * math.pi) * (SUPPORT_SAMPLES / (2.0 * math.pi))
    lower = np.floor(position).astype(np.int64) % SUPPORT_SAMPLES
    upper = (lower + 1) % SUPPORT_SAMPLES
    fraction = position - np.floor(position)
    if rows is not None:
        if tables.ndim != 2 or tables.shape[1] != SUPPORT_SAMPLES:
            raise ValueError(f"tables: expected shape (R, {SUPPORT_SAMPLES}) with rows, got {tables.shape}")
        flat = np.ascontiguousarray(tables).reshape(-1)
        start = (np.asarray(rows, dtype=np.int64) * SUPPORT_SAMPLES)[..., None]
        low, high = flat[start + lower], flat[start + upper]
        return low + fraction * (high - low)
    shape = np.broadcast_shapes(tables.shape[:-1], angles.shape[:-1])
    tables = np.broadcast_to(tables, (*shape, SUPPORT_SAMPLES))
    low = np.take_along_axis(tables, np.broadcast_to(lower, (*shape, lower.shape[-1])), axis=-1)
    high = np.take_along_axis(tables, np.broadcast_to(upper, (*shape, upper.shape[-1])), axis=-1)
    return low + fraction * (high - low)


@dataclass(frozen=True)
class BodyDescriptors:
    """The bodies of one scene or (with a leading row axis) of many, B = objects + obstacles.

    Attributes:
        centroids: (..., B, 2) centroid in the body frame, m.
        supports: (..., B, S) support tables about the centroid, m.
        gyration_radii: (..., B) sqrt(polar moment / area) about the centroid, m.
        bounding_radii: (..., B) largest distance of the outline from the centroid, m.
        masses: (..., B) kg (0 for obstacles).
        support_frictions: (..., B) max(table, object) friction (0 for obstacles).
        static: (..., B) bool, True for obstacles.
        present: (..., B) bool, False for padding.
    """

    centroids: np.ndarray
    supports: np.ndarray
    gyration_radii: np.ndarray
    bounding_radii: np.ndarray
    masses: np.ndarray
    support_frictions: np.ndarray
    static: np.ndarray
    present: np.ndarray

    def __post_init__(self) -> None:
        bodies = self.present.shape
        if self.centroids.shape != (*bodies, 2) or self.supports.shape != (*bodies, SUPPORT_SAMPLES):
            raise ValueError(f"centroids, supports: expected {(*bodies, 2)} and {(*bodies, SUPPORT_SAMPLES)}, got "
                             f"{self.centroids.shape} and {self.supports.shape}")
        for name in ("gyration_radii", "bounding_radii", "masses", "support_frictions", "static"):
            if getattr(self, name).shape != bodies:
                raise ValueError(f"{name}: expected shape {bodies}, got {getattr(self, name).shape}")

    @classmethod
    def from_scene(cls, scene: Scene, bodies: int | None = None) -> BodyDescriptors:
        """The objects then the obstacles of ``scene``, padded to ``bodies`` (default: no padding)."""
        outlines = [spec.outline for spec in scene.objects] + [obstacle.outline for obstacle in scene.obstacles]
        count = len(outlines) if bodies is None else int(bodies)
        if count < len(outlines):
            raise ValueError(f"bodies: {count} is fewer than the scene's {len(outlines)} objects and obstacles")
        centroids = np.zeros((count, 2))
        supports = np.zeros((count, SUPPORT_SAMPLES))
        gyration = np.zeros(count)
        bounding = np.zeros(count)
        for index, outline in enumerate(outlines):
            centroids[index], supports[index] = support_table(outline)
            gyration[index] = math.sqrt(outline.polar_moment())
            bounding[index] = float(np.max(np.linalg.norm(outline.boundary(128) - centroids[index], axis=-1)))
        objects = len(scene.objects)
        masses = np.zeros(count)
        frictions = np.zeros(count)
        masses[:objects] = [spec.mass for spec in scene.objects]
        frictions[:objects] = [max(scene.table.friction, spec.friction) for spec in scene.objects]
        static = np.zeros(count, dtype=bool)
        static[objects:len(outlines)] = True
        present = np.zeros(count, dtype=bool)
        present[:len(outlines)] = True
        return cls(centroids, supports, gyration, bounding, masses, frictions, static, present)

    @classmethod
    def stack(cls, rows: list[BodyDescriptors]) -> BodyDescriptors:
        """Stack equally padded descriptors along a new leading row axis."""
        return cls(**{name: np.stack([getattr(row, name) for row in rows]) for name in cls.__dataclass_fields__})

    def take(self, rows: np.ndarray) -> BodyDescriptors:
        """The rows ``rows`` of stacked descriptors."""
        return BodyDescriptors(**{name: getattr(self, name)[rows] for name in self.__dataclass_fields__})
