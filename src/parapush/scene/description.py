"""Scene description: table, pusher, objects, obstacles and goal region.

All quantities are SI (metres, kilograms, radians) and expressed in the *table frame*:
origin at the centre of the table top, x along the table's length, y across it, z up.
Scenes are frozen dataclasses validated in ``__post_init__``; :func:`load_scene` reads
them from YAML and every error names the offending field (``objects[1].mass``).

Objects and obstacles have a planar outline (:class:`parapush.scene.outline.Outline`, the
``outline`` property that every consumer uses): a cylinder is a disc, a box a rectangle, an
``ellipse`` has ``half_extents`` as its semi-axes along the body's x and y, and a
``polygon`` has ``vertices`` ([x, y] in the body frame, m: any simple polygon, convex or
not, normalised to counter-clockwise). A body's pose is its frame's origin, which for a
polygon need not be its centroid (the fine model puts the centre of mass at the centroid).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parapush.scene.outline import Outline
from parapush.scene.state import StateLayout
from parapush.scene.uncertainty import ParameterSpread
from parapush.settings import SettingsError, settings_from_mapping
from parapush.validation import check_non_negative, check_positive, check_real
from parapush.yaml_file import load_yaml

SHAPES = ("cylinder", "box", "ellipse", "polygon")


class SceneError(ValueError):
    """A scene description is invalid; the message names the offending field."""


def _checked(check: Callable[[str, Any], float], name: str, value: Any) -> float:
    """``check(name, value)`` (a :mod:`parapush.validation` check), its error raised as SceneError."""
    try:
        return check(name, value)
    except ValueError as error:
        raise SceneError(str(error)) from None


def _check_fields(body: Any, where: str, check: Callable[[str, Any], float], *names: str) -> None:
    """Check and convert the fields ``names`` of the frozen ``body`` in place, naming them ``<where>.<name>``."""
    for name in names:
        object.__setattr__(body, name, _checked(check, f"{where}.{name}" if where else name, getattr(body, name)))


def _vector(value: Any, length: int, name: str) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise SceneError(f"{name}: expected a list of {length} numbers, got {value!r}")
    if len(value) != length:
        raise SceneError(f"{name}: expected {length} numbers, got {len(value)}")
    return tuple(_checked(check_real, f"{name}[{index}]", item) for index, item in enumerate(value))


@dataclass(frozen=True)
class Table:
    """Rectangular table top centred on the table-frame origin.

    Attributes:
        length: extent along x, m.
        width: extent along y, m.
        friction: sliding friction coefficient of the table surface (MuJoCo takes the
            larger coefficient of a contact pair).
    """

    length: float = 0.8
    width: float = 1.0
    friction: float = 1.0

    def __post_init__(self) -> None:
        _check_fields(self, "table", check_positive, "length", "width")
        _check_fields(self, "table", check_non_negative, "friction")

    @property
    def half_extents(self) -> tuple[float, float]:
        """(half length, half width), m."""
        return (0.5 * self.length, 0.5 * self.width)

    def contains(self, x: float, y: float, margin: float = 0.0) -> bool:
        """Whether the point (x, y) lies on the table shrunk by ``margin`` (m)."""
        half_x, half_y = self.half_extents
        return abs(x) <= half_x - margin and abs(y) <= half_y - margin


@dataclass(frozen=True)
class Pusher:
    """Cylindrical pusher held by the gripper, velocity controlled in the plane.

    Attributes:
        radius: m (paper: 1.45 cm).
        height: m, for the MuJoCo geometry only.
        mass: kg, of the simulated pusher body.
        friction: pusher/object friction coefficient (authors' code: 0.2).
        position: initial (x, y), m.
        max_speed: largest planar speed the pusher may be commanded, m/s.
    """

    radius: float = 0.0145
    height: float = 0.11
    mass: float = 1.0
    friction: float = 0.2
    position: tuple[float, float] = (0.0, 0.0)
    max_speed: float = 0.1

    def __post_init__(self) -> None:
        _check_fields(self, "pusher", check_positive, "radius", "height", "mass", "max_speed")
        _check_fields(self, "pusher", check_non_negative, "friction")
        object.__setattr__(self, "position", _vector(self.position, 2, "pusher.position"))


@dataclass(frozen=True)
class ObjectPatch:
    """A region of an object with its own mass and support friction (a heterogeneous object:
    a heavy head, a rubber patch).

    Attributes:
        center: (x, y) m, the region's centre in the object's body frame.
        half_extents: (x, y) m, half sizes of the axis-aligned box region; inside the object's outline.
        mass: kg, >= 0, the part of the object's mass that lies in the region (on top of the
            rest of the object's mass, which is spread evenly over the whole footprint).
        friction: the region's support friction (its table contact: ``max(table.friction, friction)``,
            the rule of the object's own support).
    """

    center: tuple[float, float] = (0.0, 0.0)
    half_extents: tuple[float, float] = (0.02, 0.02)
    mass: float = 0.0
    friction: float = 1.0

    def check(self, where: str) -> None:
        """Validate and normalise in place; ``where`` names the patch in errors."""
        object.__setattr__(self, "center", _vector(self.center, 2, f"{where}.center"))
        extents = _vector(self.half_extents, 2, f"{where}.half_extents")
        for index, value in enumerate(extents):
            _checked(check_positive, f"{where}.half_extents[{index}]", value)
        object.__setattr__(self, "half_extents", extents)
        _check_fields(self, where, check_non_negative, "mass", "friction")

    def corners(self) -> tuple[tuple[float, float], ...]:
        """The region's four corners, body frame, m."""
        (cx, cy), (hx, hy) = self.center, self.half_extents
        return tuple((cx + sx * hx, cy + sy * hy) for sx in (-1.0, 1.0) for sy in (-1.0, 1.0))


@dataclass(frozen=True)
class ObjectSpec:
    """A movable object (a "slider") that slides on the table.

    Attributes:
        name: unique name, used by the mocap mapping and the interfaces.
        shape: one of :data:`SHAPES`: ``"cylinder"``, ``"box"``, ``"ellipse"`` or ``"polygon"``.
        radius: cylinder radius, m (paper: 5.12 cm); ignored for other shapes.
        half_extents: box half sizes, or ellipse semi-axes, (x, y) in the object frame, m;
            ignored for cylinders and polygons.
        height: m (geometry only; the motion is planar).
        mass: kg.
        friction: object/table sliding friction coefficient.
        pose: initial (x, y, yaw) in the table frame, m and rad.
        patches: regions with their own mass and support friction (:class:`ObjectPatch`;
            mappings are converted); empty: a uniform object. ``mass`` is the total, the
            patches' masses included.
        vertices: polygon vertices [[x, y], ...] in the object frame, m (polygons only; the
            pose is the frame's origin, which need not be the centroid).
        uncertainty: how far its true mass, frictions and centre of mass may lie from these
            (:class:`~parapush.scene.uncertainty.ParameterSpread`; a mapping is converted, omitted
            fields take its defaults): where robust planning starts its belief about the object;
            None: the planner file's ``robust.spread``.
    """

    name: str
    shape: str = "cylinder"
    radius: float = 0.0512
    half_extents: tuple[float, float] = (0.0545, 0.077)
    height: float = 0.0245
    mass: float = 0.5
    friction: float = 1.0
    pose: tuple[float, float, float] = (0.0, 0.0, 0.0)
    patches: tuple[ObjectPatch, ...] = ()
    vertices: tuple[tuple[float, float], ...] = ()
    uncertainty: ParameterSpread | None = None

    def __post_init__(self) -> None:
        where = _check_body(self, "object", "objects")
        if self.uncertainty is not None and not isinstance(self.uncertainty, ParameterSpread):
            try:
                object.__setattr__(self, "uncertainty",
                                   settings_from_mapping(ParameterSpread, self.uncertainty, f"{where}.uncertainty"))
            except SettingsError as error:
                raise SceneError(str(error)) from None
        _check_fields(self, where, check_positive, "height", "mass")
        _check_fields(self, where, check_non_negative, "friction")
        if isinstance(self.patches, (str, bytes, Mapping)) or not isinstance(self.patches, Sequence):
            raise SceneError(f"{where}.patches: expected a list of patches, got {self.patches!r}")
        patches = []
        for index, patch in enumerate(self.patches):
            if isinstance(patch, Mapping):
                patch = ObjectPatch(**_mapping(patch, "patch", f"{where}.patches[{index}]"))
            if not isinstance(patch, ObjectPatch):
                raise SceneError(f"{where}.patches[{index}]: expected a patch, got {patch!r}")
            patch.check(f"{where}.patches[{index}]")
            if not self._contains_region(patch):
                raise SceneError(f"{where}.patches[{index}]: the region must lie inside the object's outline")
            patches.append(patch)
        object.__setattr__(self, "patches", tuple(patches))
        if patches and sum(patch.mass for patch in patches) >= self.mass:
            raise SceneError(f"{where}.patches: their masses must sum to less than the object's mass {self.mass} kg")
        if patches and self.uncertainty is not None and self.uncertainty.com_offset > 0.0:
            raise SceneError(f"{where}.uncertainty.com_offset: the object has patches (they place its centre of "
                             "mass): use 0")

    @property
    def base_mass(self) -> float:
        """kg, the mass spread evenly over the footprint (``mass`` less the patches')."""
        return self.mass - sum(patch.mass for patch in self.patches)

    @property
    def outline(self) -> Outline:
        """The object's planar outline in its body frame."""
        return self._outline  # type: ignore[attr-defined]

    def contains(self, point: Sequence[float], tolerance: float = 1e-9) -> bool:
        """Whether a body-frame point (x, y) m lies inside the object's outline."""
        return bool(self.outline.contains(np.asarray(point, dtype=float), tolerance))

    def _contains_region(self, patch: ObjectPatch, tolerance: float = 1e-9) -> bool:
        """Whether the patch's rectangle lies inside the outline: its corners inside, and (a
        non-convex outline) no outline edge passing through its inside (which also catches a
        rectangle spanning a notch whose vertices all lie outside it)."""
        if not all(self.contains(corner, tolerance) for corner in patch.corners()):
            return False
        if self.outline.is_convex:
            return True
        return not _edges_enter_rectangle(self.outline.boundary(), np.asarray(patch.center),
                                          np.asarray(patch.half_extents) - tolerance)

    @property
    def bounding_radius(self) -> float:
        """Radius of the smallest disc around the object's origin (its pose) that contains it, m."""
        return self.outline.bounding_radius


def _edges_enter_rectangle(vertices: np.ndarray, center: np.ndarray, half_extents: np.ndarray) -> bool:
    """Whether any edge of the closed polygon ``vertices`` (N, 2) passes through the open
    axis-aligned rectangle (``center``, ``half_extents``): Liang-Barsky clipping of every edge."""
    starts = vertices - center
    moves = np.roll(vertices, -1, axis=0) - vertices
    low, high = np.zeros(len(starts)), np.ones(len(starts))
    for axis in range(2):
        for sign in (-1.0, 1.0):  # the slab sign * (start + t move) < half_extent
            speed, room = sign * moves[:, axis], half_extents[axis] - sign * starts[:, axis]
            with np.errstate(divide="ignore", invalid="ignore"):
                bound = room / speed
            parallel = speed == 0.0
            low = np.where(~parallel & (speed < 0.0), np.maximum(low, bound), low)
            high = np.where(~parallel & (speed > 0.0), np.minimum(high, bound), high)
            high = np.where(parallel & (room <= 0.0), -1.0, high)
    return bool(np.any(low < high))


def _body_outline(body: ObjectSpec | Obstacle, where: str) -> Outline:
    """The outline of a validated body, its ``vertices`` normalised in place."""
    if body.shape != "polygon":
        if body.vertices is not None and len(body.vertices) > 0:
            raise SceneError(f"{where}.vertices: only polygons have vertices (shape is {body.shape!r})")
        object.__setattr__(body, "vertices", ())
    try:
        if body.shape == "cylinder":
            return Outline("disc", radius=body.radius)
        if body.shape == "box":
            return Outline("rectangle", half_extents=body.half_extents)
        if body.shape == "ellipse":
            return Outline("ellipse", half_extents=body.half_extents)
        outline = Outline("polygon", vertices=body.vertices)
    except ValueError as error:
        raise SceneError(f"{where}.{error}") from None
    object.__setattr__(body, "vertices", outline.vertices)
    return outline


def _check_body(body: ObjectSpec | Obstacle, kind: str, section: str) -> str:
    """Validate and normalise ``name``, ``shape``, ``radius``, ``half_extents``, ``vertices`` and
    ``pose`` of a frozen body in place and set its outline; returns where it is in the scene
    (``<section>[<name>]``)."""
    if not isinstance(body.name, str) or not body.name.strip():
        raise SceneError(f"{kind}.name: expected a non-empty string, got {body.name!r}")
    where = f"{section}[{body.name}]"
    if body.shape not in SHAPES:
        raise SceneError(f"{where}.shape: expected one of {SHAPES}, got {body.shape!r}")
    _check_fields(body, where, check_positive, "radius")
    extents = _vector(body.half_extents, 2, f"{where}.half_extents")
    for index, value in enumerate(extents):
        _checked(check_positive, f"{where}.half_extents[{index}]", value)
    object.__setattr__(body, "half_extents", extents)
    object.__setattr__(body, "pose", _vector(body.pose, 3, f"{where}.pose"))
    object.__setattr__(body, "_outline", _body_outline(body, where))
    return where


@dataclass(frozen=True)
class Obstacle:
    """A static obstacle the target object and the pusher must not hit.

    Attributes:
        name: unique name.
        shape: one of :data:`SHAPES` (as :class:`ObjectSpec`).
        radius: cylinder radius, m (ISRR: 3.75 cm).
        half_extents: box half sizes, or ellipse semi-axes, (x, y), m.
        pose: (x, y, yaw), m and rad.
        vertices: polygon vertices [[x, y], ...] in the obstacle's frame, m (polygons only).
    """

    name: str
    shape: str = "cylinder"
    radius: float = 0.0375
    half_extents: tuple[float, float] = (0.05, 0.05)
    pose: tuple[float, float, float] = (0.0, 0.0, 0.0)
    vertices: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        _check_body(self, "obstacle", "obstacles")

    @property
    def outline(self) -> Outline:
        """The obstacle's planar outline in its body frame."""
        return self._outline  # type: ignore[attr-defined]

    @property
    def bounding_radius(self) -> float:
        """Radius of the smallest disc around the obstacle's origin (its pose) that contains it, m."""
        return self.outline.bounding_radius


@dataclass(frozen=True)
class GoalRegion:
    """Circular goal region on the table.

    Attributes:
        center: (x, y), m.
        radius: m; the target is in the goal when its centre is within this distance.
    """

    center: tuple[float, float] = (0.0, 0.0)
    radius: float = 0.05

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", _vector(self.center, 2, "goal.center"))
        _check_fields(self, "goal", check_positive, "radius")

    def contains(self, x: float, y: float) -> bool:
        return math.hypot(x - self.center[0], y - self.center[1]) <= self.radius


@dataclass(frozen=True)
class Scene:
    """A complete pushing scene.

    Attributes:
        name: scene name.
        table: the table top.
        pusher: the pusher and its initial position.
        objects: the movable objects, 1..n, in state order.
        obstacles: static obstacles (may be empty).
        goal: the goal region, or None when the scene has no task.
        target: name of the object to push into the goal (defaults to the first object).
        object_friction: object/object friction coefficient.
    """

    name: str
    table: Table = field(default_factory=Table)
    pusher: Pusher = field(default_factory=Pusher)
    objects: tuple[ObjectSpec, ...] = ()
    obstacles: tuple[Obstacle, ...] = ()
    goal: GoalRegion | None = None
    target: str | None = None
    object_friction: float = 0.2

    def __post_init__(self) -> None:
        object.__setattr__(self, "objects", tuple(self.objects))
        object.__setattr__(self, "obstacles", tuple(self.obstacles))
        if not self.objects:
            raise SceneError("objects: a scene needs at least one object")
        names = [spec.name for spec in self.objects] + [ob.name for ob in self.obstacles]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise SceneError(f"objects/obstacles: duplicate names {duplicates}")
        if self.target is None:
            object.__setattr__(self, "target", self.objects[0].name)
        elif self.target not in self.object_names:
            raise SceneError(
                f"target: {self.target!r} is not an object of the scene {list(self.object_names)}"
            )
        _check_fields(self, "", check_non_negative, "object_friction")

    @property
    def object_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.objects)

    @property
    def target_index(self) -> int:
        return self.object_names.index(self.target)

    def object_index(self, name: str) -> int:
        """Index of the object called ``name`` in the state; raises KeyError naming it."""
        try:
            return self.object_names.index(name)
        except ValueError:
            raise KeyError(f"unknown object {name!r}; scene has {list(self.object_names)}") from None

    @property
    def layout(self) -> StateLayout:
        return StateLayout(len(self.objects))


_KNOWN_KEYS = {
    "scene": {"name", "table", "pusher", "objects", "obstacles", "goal", "target", "object_friction"},
    "table": {"length", "width", "friction"},
    "pusher": {"radius", "height", "mass", "friction", "position", "max_speed"},
    "object": {"name", "shape", "radius", "half_extents", "height", "mass", "friction", "pose", "patches",
               "vertices", "uncertainty"},
    "patch": {"center", "half_extents", "mass", "friction"},
    "obstacle": {"name", "shape", "radius", "half_extents", "pose", "vertices"},
    "goal": {"center", "radius"},
}


def _mapping(value: Any, kind: str, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SceneError(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - _KNOWN_KEYS[kind])
    if unknown:
        raise SceneError(f"{where}: unknown field(s) {unknown}; known: {sorted(_KNOWN_KEYS[kind])}")
    return value


def scene_from_dict(data: Mapping[str, Any]) -> Scene:
    """Build a validated :class:`Scene` from plain data (e.g. parsed YAML)."""
    data = _mapping(data, "scene", "scene")
    if "name" not in data:
        raise SceneError("name: missing")
    objects_data = data.get("objects")
    if not isinstance(objects_data, Sequence) or isinstance(objects_data, (str, bytes)):
        raise SceneError("objects: expected a list of objects")
    objects = []
    for index, item in enumerate(objects_data):
        item = _mapping(item, "object", f"objects[{index}]")
        if "name" not in item:
            raise SceneError(f"objects[{index}].name: missing")
        objects.append(ObjectSpec(**item))
    obstacles = []
    for index, item in enumerate(data.get("obstacles") or ()):
        item = _mapping(item, "obstacle", f"obstacles[{index}]")
        if "name" not in item:
            raise SceneError(f"obstacles[{index}].name: missing")
        obstacles.append(Obstacle(**item))
    goal_data = data.get("goal")
    goal = GoalRegion(**_mapping(goal_data, "goal", "goal")) if goal_data is not None else None
    return Scene(
        name=str(data["name"]),
        table=Table(**_mapping(data.get("table") or {}, "table", "table")),
        pusher=Pusher(**_mapping(data.get("pusher") or {}, "pusher", "pusher")),
        objects=tuple(objects),
        obstacles=tuple(obstacles),
        goal=goal,
        target=data.get("target"),
        object_friction=data.get("object_friction", 0.2),
    )


def load_scene(path: str | Path) -> Scene:
    """Read a scene YAML file; errors name the file and the offending field."""
    return load_yaml(path, scene_from_dict, SceneError, "scene file")

