"""A planar object as a regular grid of small square cells (the differentiable model's geometry).

Song and Boularias (shared/papers/differentiable-physics-sliding-unknown-objects.txt, section
"Approach") divide the object's footprint into ``K`` connected cells of side ``w``, each with
its own mass ``m_i`` and support friction coefficient ``mu_i``. :class:`CellGrid` holds the
cells' centres in the object's body frame and the outline the pusher touches, given as a
union of parts (axis-aligned boxes, discs and convex polygons in the body frame): a uniform
cylinder or box is one part, a T or hammer shape several. A scene's ellipse or polygon
(:meth:`CellGrid.from_spec`) takes its cells from the exact outline (the grid squares whose
centres lie inside ``spec.outline``) and gives the pusher its convex parts
(:meth:`parapush.scene.outline.Outline.convex_parts`: a polygon's exactly, an ellipse's
inscribed polygon, which is also what the fine model collides with).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parapush.scene import ObjectPatch, ObjectSpec
from parapush.scene.outline import Outline
from parapush.validation import check_choice, check_positive, check_real

SHAPES = ("cylinder", "box", "polygon")


@dataclass(frozen=True)
class OutlinePart:
    """One part of an object's outline, in its body frame (m).

    Attributes:
        shape: ``cylinder`` (a disc of ``radius``), ``box`` (axis-aligned, ``half_extents``) or
            ``polygon`` (convex, ``vertices``).
        center: (x, y) m, the part's centre in the body frame.
        radius: m, > 0 (cylinders).
        half_extents: (x, y) m, > 0 (boxes).
        vertices: ((x, y), ...) m relative to ``center``, at least 3, convex and counter-clockwise
            (polygons; e.g. one of :meth:`parapush.scene.outline.Outline.convex_parts`).
    """

    shape: str
    center: tuple[float, float] = (0.0, 0.0)
    radius: float = 0.05
    half_extents: tuple[float, float] = (0.05, 0.05)
    vertices: tuple[tuple[float, float], ...] = ()

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
        if self.shape == "polygon":
            object.__setattr__(self, "vertices", _convex_polygon(self.vertices))
        elif len(self.vertices):
            raise ValueError(f"vertices: only a polygon has vertices, got {len(self.vertices)} for a {self.shape}")

    def signed_distance(self, points: np.ndarray) -> np.ndarray:
        """(...,) m, signed distance of body-frame points (..., 2) to the part (< 0 inside)."""
        offset = np.asarray(points, dtype=float) - np.array(self.center)
        if self.shape == "cylinder":
            return np.linalg.norm(offset, axis=-1) - self.radius
        if self.shape == "polygon":
            start = np.array(self.vertices)
            edge = np.roll(start, -1, axis=0) - start
            relative = offset[..., None, :] - start  # (..., M, 2)
            along = np.clip(np.sum(relative * edge, axis=-1) / np.sum(edge * edge, axis=-1), 0.0, 1.0)
            outside = np.linalg.norm(relative - along[..., None] * edge, axis=-1).min(axis=-1)
            # inside a convex polygon the nearest edge is the one whose line is nearest
            plane = (np.sum(relative * np.stack([edge[:, 1], -edge[:, 0]], -1), axis=-1)
                     / np.linalg.norm(edge, axis=-1)).max(axis=-1)
            return np.where(plane > 0.0, outside, plane)
        excess = np.abs(offset) - np.array(self.half_extents)
        return np.linalg.norm(np.maximum(excess, 0.0), axis=-1) + np.minimum(excess.max(axis=-1), 0.0)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(low (2,), high (2,)) m, the part's bounding box in the body frame."""
        if self.shape == "polygon":
            vertices = np.array(self.vertices)
            return np.array(self.center) + vertices.min(axis=0), np.array(self.center) + vertices.max(axis=0)
        half = np.full(2, self.radius) if self.shape == "cylinder" else np.array(self.half_extents)
        return np.array(self.center) - half, np.array(self.center) + half


def _convex_polygon(vertices) -> tuple[tuple[float, float], ...]:
    """Validated vertices of a convex counter-clockwise polygon (ValueError naming ``vertices``)."""
    try:
        array = np.array(vertices, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"vertices: expected ((x, y), ...) in m, got {vertices!r}") from None
    if array.ndim != 2 or array.shape[1] != 2 or array.shape[0] < 3 or not np.all(np.isfinite(array)):
        raise ValueError(f"vertices: expected at least 3 finite (x, y) in m, got {vertices!r}")
    edge = np.roll(array, -1, axis=0) - array
    if np.any(np.sum(edge * edge, axis=-1) == 0.0):
        raise ValueError("vertices: a vertex repeats")
    turns = edge[:, 0] * np.roll(edge, -1, axis=0)[:, 1] - edge[:, 1] * np.roll(edge, -1, axis=0)[:, 0]
    scale = float(np.max(np.abs(array)))
    if np.any(turns < -1e-12 * scale**2) or turns.sum() <= 0.0:
        raise ValueError("vertices: the polygon must be convex and counter-clockwise")
    return tuple((float(x), float(y)) for x, y in array)


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
        outline: the exact outline the cells were taken from (an ellipse's or a polygon's,
            :meth:`from_outline`), of which ``parts`` are the pusher's approximation; None: the parts.
    """

    parts: tuple[OutlinePart, ...]
    cell_size: float
    centers: np.ndarray
    neighbours: np.ndarray
    outline: Outline | None = None

    @classmethod
    def from_parts(cls, parts: tuple[OutlinePart, ...] | list[OutlinePart], cell_size: float,
                   outline: Outline | None = None) -> CellGrid:
        """The cells of the union of ``parts`` on a grid of side ``cell_size`` (m) centred on the body origin.

        With ``outline`` (:class:`parapush.scene.outline.Outline`, of which ``parts`` are the pusher's
        approximation), the cells are the grid points strictly inside ``outline`` instead."""
        parts = tuple(parts)
        if not parts or not all(isinstance(part, OutlinePart) for part in parts):
            raise ValueError(f"parts: expected at least one OutlinePart, got {parts!r}")
        cell_size = check_positive("cell_size", cell_size)
        lows, highs = zip(*(part.bounds() for part in parts), strict=True)
        low, high = np.min(lows, axis=0), np.max(highs, axis=0)
        if outline is not None:  # its exact bounds (the support function along the axes)
            low = np.minimum(low, -outline.extent_along(-np.eye(2)))
            high = np.maximum(high, outline.extent_along(np.eye(2)))
        first = np.floor(low / cell_size + 0.5).astype(int)
        last = np.ceil(high / cell_size - 0.5).astype(int)
        columns, rows = np.meshgrid(np.arange(first[0], last[0] + 1), np.arange(first[1], last[1] + 1), indexing="ij")
        indices = np.column_stack([columns.ravel(), rows.ravel()])
        points = indices * cell_size
        if outline is None:
            inside = np.min([part.signed_distance(points) for part in parts], axis=0) < 0.0
        else:
            inside = outline.signed_distance(points) < 0.0
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
        return cls(parts=parts, cell_size=cell_size, centers=centers, neighbours=neighbours, outline=outline)

    @classmethod
    def from_outline(cls, outline: Outline, cell_size: float = 0.01) -> CellGrid:
        """The cells of an outline (:class:`parapush.scene.outline.Outline`): a disc or a rectangle
        as one cylinder or box part (the cells of :meth:`from_parts`), an ellipse or a polygon as
        the grid points strictly inside it, its convex parts the pusher's outline."""
        if not isinstance(outline, Outline):
            raise TypeError(f"outline: expected Outline, got {type(outline).__name__}")
        if outline.kind == "disc":
            return cls.from_parts((OutlinePart(shape="cylinder", radius=outline.radius),), cell_size)
        if outline.kind == "rectangle":
            return cls.from_parts((OutlinePart(shape="box", half_extents=outline.half_extents),), cell_size)
        parts = tuple(OutlinePart(shape="polygon", vertices=tuple(map(tuple, part.tolist())))
                      for part in outline.convex_parts())
        return cls.from_parts(parts, cell_size, outline)

    @classmethod
    def from_spec(cls, spec: ObjectSpec, cell_size: float = 0.01) -> CellGrid:
        """The cells of a scene object's outline (:meth:`from_outline`; a cylinder or box as before
        outlines existed, cell for cell)."""
        if spec.shape == "cylinder":
            return cls.from_parts((OutlinePart(shape="cylinder", radius=spec.radius),), cell_size)
        if spec.shape == "box":
            return cls.from_parts((OutlinePart(shape="box", half_extents=spec.half_extents),), cell_size)
        return cls.from_outline(spec.outline, cell_size)

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

    def patches(self, cell_mass: np.ndarray, cell_friction: np.ndarray, *, contrast: float = 1.5,
                max_patches: int = 4) -> tuple[float, tuple[ObjectPatch, ...]]:
        """A cell map in the scene format (the inverse of :meth:`spec_maps`, to the resolution of
        patches): (the support friction of the footprint, patches).

        The footprint takes the median cell's friction and mass. Cells whose friction or friction
        weight ``mu_i m_i`` differ from the median cell's by more than the factor ``contrast``
        are grouped into side-connected regions; each region of two or more cells (at most
        ``max_patches``, those with the largest friction-weight excess first) becomes a patch:
        the cells' bounding box (kept inside the outline), the cells' mass above the median
        cell's (>= 0: a lighter region shows as lower friction) and their mass-weighted mean
        friction. Fine models build patches as geoms, so a few coarse regions, not cells.

        Args:
            cell_mass: (K,) kg; cell_friction: (K,).
        """
        mass, friction = (np.asarray(values, dtype=float) for values in (cell_mass, cell_friction))
        if mass.shape != (self.count,) or friction.shape != (self.count,):
            raise ValueError(f"cell_mass, cell_friction: expected shape ({self.count},), got {mass.shape}, "
                             f"{friction.shape}")
        if contrast <= 1.0:
            raise ValueError(f"contrast: expected > 1, got {contrast!r}")
        base_mass, base_friction = float(np.median(mass)), float(np.median(friction))
        weight, base_weight = mass * friction, base_mass * base_friction
        deviating = (np.abs(np.log(weight / base_weight)) > np.log(contrast)) \
            | (np.abs(np.log(friction / base_friction)) > np.log(contrast))
        regions = [region for region in self._regions(deviating) if len(region) >= 2]
        regions.sort(key=lambda region: -abs(float(np.sum(weight[region] - base_weight))))
        patches = []
        for region in regions[:max_patches]:
            low = self.centers[region].min(axis=0) - 0.5 * self.cell_size
            high = self.centers[region].max(axis=0) + 0.5 * self.cell_size
            middle = 0.5 * (low + high)
            center, half = self._inside(middle, 0.5 * (high - low), self._anchor(region, middle))
            region_mass = float(mass[region].sum())
            patches.append(ObjectPatch(center=tuple(float(v) for v in center),
                                       half_extents=tuple(float(v) for v in half),
                                       mass=max(0.0, region_mass - base_mass * len(region)),
                                       friction=float(weight[region].sum() / region_mass)))
        return base_friction, tuple(patches)

    def _regions(self, selected: np.ndarray) -> list[np.ndarray]:
        """Side-connected groups of the ``selected`` (K,) bool cells, as index arrays."""
        links: dict[int, list[int]] = {int(index): [] for index in np.flatnonzero(selected)}
        for first, second in self.neighbours.tolist():
            if first in links and second in links:
                links[first].append(second)
                links[second].append(first)
        regions, seen = [], set()
        for start in links:
            if start in seen:
                continue
            stack, region = [start], []
            seen.add(start)
            while stack:
                cell = stack.pop()
                region.append(cell)
                for other in links[cell]:
                    if other not in seen:
                        seen.add(other)
                        stack.append(other)
            regions.append(np.array(sorted(region)))
        return regions

    def _fits(self, center: np.ndarray, half: np.ndarray) -> bool:
        """Whether the box (centre, half extents) lies inside the outline: its corners inside and, for an
        exact outline, none of its edges entering the box (a non-convex outline's notch)."""
        corners = center + half * np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]])
        if self.outline is None:
            return bool(np.all(np.min([part.signed_distance(corners) for part in self.parts], axis=0) <= 1e-9))
        if not np.all(self.outline.signed_distance(corners) <= 1e-9):
            return False
        # Liang-Barsky: the part of each boundary edge inside the open box (shrunk by 1e-9 m) has no length
        start = self.outline.boundary(256)
        direction = np.roll(start, -1, axis=0) - start
        low, high = center - half + 1e-9, center + half - 1e-9
        with np.errstate(divide="ignore", invalid="ignore"):
            first, second = (low - start) / direction, (high - start) / direction
        still = direction == 0.0  # parallel to a side: inside the slab or never
        inside = (start > low) & (start < high)
        enter = np.where(still, np.where(inside, -np.inf, np.inf), np.minimum(first, second)).max(axis=1)
        leave = np.where(still, np.where(inside, np.inf, -np.inf), np.maximum(first, second)).min(axis=1)
        return not np.any(np.maximum(enter, 0.0) < np.minimum(leave, 1.0))

    def _anchor(self, region: np.ndarray, middle: np.ndarray) -> np.ndarray:
        """The centre of the region's cell nearest ``middle`` among those at least half a cell inside the
        outline (else the deepest cell): where a box shrinks to when its own centre leaves the outline."""
        centers = self.centers[region]
        depth = -np.min([part.signed_distance(centers) for part in self.parts], axis=0) if self.outline is None \
            else -self.outline.signed_distance(centers)
        deep = depth >= 0.5 * self.cell_size
        if not deep.any():
            return centers[int(np.argmax(depth))]
        centers = centers[deep]
        return centers[int(np.argmin(np.linalg.norm(centers - middle, axis=1)))]

    def _inside(self, center: np.ndarray, half: np.ndarray, anchor: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """The box (centre, half extents) shrunk about its centre until it lies inside the outline; when
        that centre is outside (a non-convex outline), shrunk about ``anchor`` (a cell centre) instead."""
        for start in (center,) if anchor is None else (center, np.asarray(anchor, dtype=float)):
            size = half
            for _ in range(50):
                if self._fits(start, size):
                    return start, size
                size = 0.9 * size
        return start, size

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
