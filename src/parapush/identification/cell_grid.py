"""A planar object as a regular grid of small square cells (the differentiable model's geometry).

Song and Boularias (shared/papers/differentiable-physics-sliding-unknown-objects.txt, section
"Approach") divide the object's footprint into ``K`` connected cells of side ``w``, each with
its own mass ``m_i`` and support friction coefficient ``mu_i``. :class:`CellGrid` holds the
cells' centres in the object's body frame and the outline the pusher touches, given as a
union of parts (axis-aligned boxes and discs in the body frame): a uniform cylinder or box is
one part, a T or hammer shape several.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parapush.scene import ObjectSpec
from parapush.validation import check_choice, check_positive, check_real

SHAPES = ("cylinder", "box")


@dataclass(frozen=True)
class OutlinePart:
    """One part of an object's outline, in its body frame (m).

    Attributes:
        shape: ``cylinder`` (a disc of ``radius``) or ``box`` (axis-aligned, ``half_extents``).
        center: (x, y) m, the part's centre in the body frame.
        radius: m, > 0 (cylinders).
        half_extents: (x, y) m, > 0 (boxes).
    """

    shape: str
    center: tuple[float, float] = (0.0, 0.0)
    radius: float = 0.05
    half_extents: tuple[float, float] = (0.05, 0.05)

    def __post_init__(self) -> None:
        check_choice("shape", self.shape, SHAPES)
        for name in ("center", "half_extents"):
            pair = getattr(self, name)
            if not isinstance(pair, (tuple, list, np.ndarray)) or len(pair) != 2:
                raise ValueError(f"{name}: expected (x, y) in m, got {pair!r}")
            object.__setattr__(self, name, tuple(check_real(f"{name}[{i}]", v) for i, v in enumerate(pair)))
        check_positive("radius", self.radius)
        for index, value in enumerate(self.half_extents):
            check_positive(f"half_extents[{index}]", value)

    def signed_distance(self, points: np.ndarray) -> np.ndarray:
        """(...,) m, signed distance of body-frame points (..., 2) to the part (< 0 inside)."""
        offset = np.asarray(points, dtype=float) - np.array(self.center)
        if self.shape == "cylinder":
            return np.linalg.norm(offset, axis=-1) - self.radius
        excess = np.abs(offset) - np.array(self.half_extents)
        return np.linalg.norm(np.maximum(excess, 0.0), axis=-1) + np.minimum(excess.max(axis=-1), 0.0)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(low (2,), high (2,)) m, the part's bounding box in the body frame."""
        half = np.full(2, self.radius) if self.shape == "cylinder" else np.array(self.half_extents)
        return np.array(self.center) - half, np.array(self.center) + half


@dataclass(frozen=True)
class CellGrid:
    """The cells of one object.

    Attributes:
        parts: the outline (a union of parts), body frame.
        cell_size: m, the side ``w`` of each square cell.
        centers: (K, 2) m, cell centres in the body frame: the points of a regular grid of
            spacing ``cell_size`` that lie inside the outline.
        neighbours: (E, 2) int, index pairs of cells that share a side (the paper's adjacency
            constraints; here the regulariser's smoothness pairs).
    """

    parts: tuple[OutlinePart, ...]
    cell_size: float
    centers: np.ndarray
    neighbours: np.ndarray

    @classmethod
    def from_parts(cls, parts: tuple[OutlinePart, ...] | list[OutlinePart], cell_size: float) -> CellGrid:
        """The cells of the union of ``parts`` on a grid of side ``cell_size`` (m) centred on the body origin."""
        parts = tuple(parts)
        if not parts or not all(isinstance(part, OutlinePart) for part in parts):
            raise ValueError(f"parts: expected at least one OutlinePart, got {parts!r}")
        cell_size = check_positive("cell_size", cell_size)
        lows, highs = zip(*(part.bounds() for part in parts), strict=True)
        low, high = np.min(lows, axis=0), np.max(highs, axis=0)
        first = np.floor(low / cell_size + 0.5).astype(int)
        last = np.ceil(high / cell_size - 0.5).astype(int)
        columns, rows = np.meshgrid(np.arange(first[0], last[0] + 1), np.arange(first[1], last[1] + 1), indexing="ij")
        indices = np.column_stack([columns.ravel(), rows.ravel()])
        points = indices * cell_size
        inside = np.min([part.signed_distance(points) for part in parts], axis=0) < 0.0
        indices, points = indices[inside], points[inside]
        if points.shape[0] == 0:
            raise ValueError(f"cell_size: {cell_size} m leaves no cell centre inside the outline")
        lookup = {tuple(index): position for position, index in enumerate(indices.tolist())}
        pairs = [(position, lookup[(i + di, j + dj)]) for position, (i, j) in enumerate(indices.tolist())
                 for di, dj in ((1, 0), (0, 1)) if (i + di, j + dj) in lookup]
        centers = points.astype(float)
        centers.setflags(write=False)
        neighbours = np.array(pairs, dtype=int).reshape(-1, 2)
        neighbours.setflags(write=False)
        return cls(parts=parts, cell_size=cell_size, centers=centers, neighbours=neighbours)

    @classmethod
    def from_spec(cls, spec: ObjectSpec, cell_size: float = 0.01) -> CellGrid:
        """The cells of a scene object's outline (its one cylinder or box)."""
        if spec.shape == "cylinder":
            return cls.from_parts((OutlinePart(shape="cylinder", radius=spec.radius),), cell_size)
        return cls.from_parts((OutlinePart(shape="box", half_extents=spec.half_extents),), cell_size)

    def spec_maps(self, spec: ObjectSpec, table_friction: float) -> tuple[np.ndarray, np.ndarray]:
        """The per-cell (mass (K,) kg, support friction (K,)) a scene object describes: its base mass
        spread evenly, each patch's mass spread over the cells whose centres lie in it, and the
        support friction ``max(table_friction, friction)`` of the patch or object the cell is in."""
        mass = self.uniform(spec.base_mass)
        friction = np.full(self.count, max(table_friction, spec.friction))
        for number, patch in enumerate(spec.patches):
            inside = np.all(np.abs(self.centers - np.array(patch.center)) < np.array(patch.half_extents), axis=1)
            if patch.mass > 0.0 and not inside.any():
                raise ValueError(f"cell_size: {self.cell_size} m puts no cell centre in patch {number} of {spec.name}")
            mass[inside] += patch.mass / max(1, int(inside.sum()))
            friction[inside] = max(table_friction, patch.friction)
        return mass, friction

    @property
    def count(self) -> int:
        """K, the number of cells."""
        return int(self.centers.shape[0])

    def part_of_cells(self) -> np.ndarray:
        """(K,) int: for each cell, the first part that contains its centre."""
        distances = np.stack([part.signed_distance(self.centers) for part in self.parts])
        return np.argmax(distances < 0.0, axis=0)

    def uniform(self, total: float) -> np.ndarray:
        """(K,) ``total`` spread evenly over the cells (e.g. a uniform object's mass, kg)."""
        return np.full(self.count, float(total) / self.count)
