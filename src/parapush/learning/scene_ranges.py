"""The scene family of the general learned coarse model: every range its training covered.

One :class:`SceneRanges` both draws the training scenes
(:mod:`parapush.learning.general_sampling`) and, stored in the weights' metadata, decides
which scenes the trained model serves (:meth:`SceneRanges.check_scene`): a scene with any
body or coefficient outside these ranges is refused with a
:class:`~parapush.learning.geometry.ModelMismatchError` that names the field, e.g.
``objects[2].mass: 3.0 kg outside the trained range [0.2, 2.0]``, instead of being
extrapolated silently.

Sizes follow the project's scene generators (``bench/make_benchmark_scenes.py``: cylinders
of 5.12 cm; ``bench/make_crowded_scenes.py``: cylinders of 3-5 cm and boxes of half sizes
2.5-4.5 cm; ``config/scenes``: the 5.45 x 7.7 cm box of ISRR, the MIT hexagon of 6.05 cm
circumradius) with a margin. Each range is a (low, high) pair, inclusive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from parapush.learning.geometry import ModelMismatchError
from parapush.scene import Scene
from parapush.scene.description import SHAPES
from parapush.settings import check_settings, setting

RANGE_TOLERANCE = 1.0e-9
"""Absolute margin around every range (rounding of values written to YAML)."""


@dataclass(frozen=True)
class SceneRanges:
    """Ranges of the scene format a general learned coarse model was trained on (each field's
    meaning and unit: its :func:`setting`; every (low, high) pair has low <= high)."""

    object_count: tuple[float, float] = setting((1, 16), "(fewest, most) movable objects", kind=tuple, lengths=(2,))
    obstacle_count: tuple[float, float] = setting((0, 3), "(fewest, most) static obstacles", kind=tuple, lengths=(2,))
    cylinder_radius: tuple[float, float] = setting((0.025, 0.065), "cylinder radius", kind=tuple, unit="m",
                                                   lengths=(2,))
    half_extent: tuple[float, float] = setting((0.02, 0.08), "box half size / ellipse semi-axis, each axis",
                                               kind=tuple, unit="m", lengths=(2,))
    polygon_radius: tuple[float, float] = setting((0.03, 0.07), "polygon bounding radius about its frame origin",
                                                  kind=tuple, unit="m", lengths=(2,))
    polygon_vertices: tuple[float, float] = setting((3, 8), "(fewest, most) polygon vertices", kind=tuple,
                                                    lengths=(2,))
    height: tuple[float, float] = setting((0.015, 0.08), "object height (no effect on planar motion)", kind=tuple,
                                          unit="m", lengths=(2,))
    mass: tuple[float, float] = setting((0.2, 2.0), "object mass", kind=tuple, unit="kg", lengths=(2,))
    support_friction: tuple[float, float] = setting(
        (0.2, 1.0), "table friction and each object's friction (support: the larger of the two)", kind=tuple,
        lengths=(2,))
    pusher_radius: tuple[float, float] = setting((0.01, 0.02), "pusher radius", kind=tuple, unit="m", lengths=(2,))
    pusher_mass: tuple[float, float] = setting((0.5, 2.0), "pusher mass (its servo and armature dominate)",
                                               kind=tuple, unit="kg", lengths=(2,))
    pusher_friction: tuple[float, float] = setting((0.05, 0.6), "pusher/object friction", kind=tuple, lengths=(2,))
    object_friction: tuple[float, float] = setting((0.05, 0.6), "object/object and object/obstacle friction",
                                                   kind=tuple, lengths=(2,))
    obstacle_radius: tuple[float, float] = setting((0.02, 0.1), "obstacle bounding radius about its frame origin",
                                                   kind=tuple, unit="m", lengths=(2,))
    max_speed: float = setting(0.1, "largest pusher speed", unit="m/s", above=0.0)
    duration_range: tuple[float, float] = setting((0.5, 2.0), "(shortest, longest) control duration", kind=tuple,
                                                  unit="s", lengths=(2,))
    shapes: tuple[str, ...] = SHAPES
    """Object and obstacle shapes (a subset of the scene format's SHAPES)."""

    def __post_init__(self) -> None:
        check_settings(self)
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name != "shapes" and isinstance(value, tuple) and value[0] > value[1]:
                raise ValueError(f"{item.name}: expected low <= high, got {value!r}")
        for name in ("object_count", "obstacle_count", "polygon_vertices"):
            low, high = getattr(self, name)
            if low != int(low) or high != int(high) or low < 0:
                raise ValueError(f"{name}: expected non-negative whole numbers, got {getattr(self, name)!r}")
        if self.object_count[0] < 1:
            raise ValueError(f"object_count: at least one object, got {self.object_count!r}")
        if self.polygon_vertices[0] < 3:
            raise ValueError(f"polygon_vertices: at least 3, got {self.polygon_vertices!r}")
        shapes = tuple(self.shapes)
        if not shapes or any(shape not in SHAPES for shape in shapes):
            raise ValueError(f"shapes: expected a non-empty subset of {SHAPES}, got {shapes!r}")
        object.__setattr__(self, "shapes", shapes)

    @property
    def max_objects(self) -> int:
        return int(self.object_count[1])

    @property
    def max_obstacles(self) -> int:
        return int(self.obstacle_count[1])

    def to_dict(self) -> dict[str, Any]:
        return {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SceneRanges:
        names = {item.name for item in fields(cls)}
        missing = sorted(names - set(data))
        if missing:
            raise ModelMismatchError(f"trained_ranges: missing field(s) {missing}")
        return cls(**{name: tuple(data[name]) if isinstance(data[name], list) else data[name] for name in names})

    def check_scene(self, scene: Scene) -> None:
        """Raise :class:`ModelMismatchError` naming the first field of ``scene`` outside these ranges.

        Checked: object and obstacle counts, every body's shape and size (cylinder radius,
        box/ellipse half extents, polygon vertex count and bounding radius, obstacle bounding
        radius), object height, mass and friction, patches (refused: the model knows uniform
        objects only), the table, pusher/object and object/object friction and the pusher's
        radius and mass.
        """
        _within("objects", len(scene.objects), self.object_count, "objects", count=True)
        _within("obstacles", len(scene.obstacles), self.obstacle_count, "obstacles", count=True)
        _within("table.friction", scene.table.friction, self.support_friction)
        _within("pusher.radius", scene.pusher.radius, self.pusher_radius, "m")
        _within("pusher.mass", scene.pusher.mass, self.pusher_mass, "kg")
        _within("pusher.friction", scene.pusher.friction, self.pusher_friction)
        _within("object_friction", scene.object_friction, self.object_friction)
        for index, spec in enumerate(scene.objects):
            where = f"objects[{index}]"
            self._check_outline(where, spec, spec.name)
            if spec.patches:
                raise ModelMismatchError(
                    f"{where}.patches: the model was trained for uniform objects; object {spec.name!r} has "
                    f"{len(spec.patches)} patch(es) of their own mass or friction"
                )
            _within(f"{where}.height", spec.height, self.height, "m", spec.name)
            _within(f"{where}.mass", spec.mass, self.mass, "kg", spec.name)
            _within(f"{where}.friction", spec.friction, self.support_friction, "", spec.name)
        for index, obstacle in enumerate(scene.obstacles):
            where = f"obstacles[{index}]"
            if obstacle.shape not in self.shapes:
                raise ModelMismatchError(f"{where}.shape: {obstacle.shape!r} is not a trained shape {self.shapes} "
                                         f"(obstacle {obstacle.name!r})")
            _within(f"{where}.bounding_radius", obstacle.bounding_radius, self.obstacle_radius, "m", obstacle.name)

    def _check_outline(self, where: str, spec: Any, name: str) -> None:
        if spec.shape not in self.shapes:
            raise ModelMismatchError(f"{where}.shape: {spec.shape!r} is not a trained shape {self.shapes} "
                                     f"(object {name!r})")
        if spec.shape == "cylinder":
            _within(f"{where}.radius", spec.radius, self.cylinder_radius, "m", name)
        elif spec.shape in ("box", "ellipse"):
            for axis, value in enumerate(spec.half_extents):
                _within(f"{where}.half_extents[{axis}]", value, self.half_extent, "m", name)
        else:
            _within(f"{where}.vertices", len(spec.vertices), self.polygon_vertices, "vertices", name, count=True)
            _within(f"{where}.bounding_radius", spec.bounding_radius, self.polygon_radius, "m", name)


def _within(name: str, value: float, bounds: tuple[float, float], unit: str = "", body: str | None = None,
            *, count: bool = False) -> None:
    """Raise ModelMismatchError ``"<name>: <value> <unit> outside the trained range [low, high]"``."""
    low, high = bounds
    if low - RANGE_TOLERANCE <= value <= high + RANGE_TOLERANCE:
        return
    shown = f"{int(value)}" if count else f"{value!r}"
    bounds_text = f"[{int(low)}, {int(high)}]" if count else f"[{low}, {high}]"
    unit_text = f" {unit}" if unit else ""
    owner = f" (body {body!r})" if body is not None else ""
    raise ModelMismatchError(f"{name}: {shown}{unit_text} outside the trained range {bounds_text}{owner}")
