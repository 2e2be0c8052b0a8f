"""The scene family a learned coarse model is trained for, and the check that a scene belongs to it.

A learned model only knows the bodies it saw during training: one cylindrical pusher and
1..``max_sliders`` identical cylindrical objects ("sliders") with fixed size, mass and
friction coefficients. :class:`TrainedGeometry` records those numbers (in the dataset's
metadata, the checkpoint and the exported weights) and :meth:`TrainedGeometry.check_scene`
refuses any other scene with an error naming the offending field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from parapush.scene import Scene
from parapush.validation import check_fields, check_integer, check_non_negative, check_positive

LENGTH_TOLERANCE = 2.0e-4
"""Largest accepted difference of a radius or height from the trained one, m. It admits
the authors' slider radius 0.05115 m for the papers' 0.0512 m, far below the model's
one-step error, and refuses any visibly different object."""

RELATIVE_TOLERANCE = 0.01
"""Largest accepted relative difference of a mass or friction coefficient."""


class ModelMismatchError(ValueError):
    """A scene, dataset or checkpoint does not match what a learned model was made for;
    the message names the mismatching field and both values."""


_LENGTH_FIELDS = ("pusher_radius", "slider_radius", "slider_height")
_RELATIVE_FIELDS = (
    "pusher_mass",
    "pusher_friction",
    "slider_mass",
    "slider_friction",
    "table_friction",
    "object_friction",
)


@dataclass(frozen=True)
class TrainedGeometry:
    """Bodies and coefficients of the scenes a model is trained for (SI units).

    Attributes:
        max_sliders: largest number of sliders (cylindrical objects), >= 1.
        pusher_radius: m.
        pusher_mass: kg (the fine model's pusher body).
        pusher_friction: pusher/slider friction coefficient.
        slider_radius: m.
        slider_height: m.
        slider_mass: kg.
        slider_friction: slider/table coefficient of the objects.
        table_friction: table coefficient (the fine model uses the larger of the two).
        object_friction: slider/slider friction coefficient.
    """

    max_sliders: int
    pusher_radius: float
    pusher_mass: float
    pusher_friction: float
    slider_radius: float
    slider_height: float
    slider_mass: float
    slider_friction: float
    table_friction: float
    object_friction: float

    def __post_init__(self) -> None:
        check_integer("max_sliders", self.max_sliders, minimum=1)
        check_fields(self, check_positive, "pusher_radius", "pusher_mass")
        check_fields(self, check_positive, "slider_radius", "slider_height", "slider_mass")
        check_fields(self, check_non_negative, "pusher_friction", "slider_friction")
        check_fields(self, check_non_negative, "table_friction", "object_friction")

    @classmethod
    def from_scene(cls, scene: Scene, max_sliders: int | None = None) -> TrainedGeometry:
        """The geometry of ``scene`` (all objects must be identical cylinders).

        Args:
            scene: a scene whose objects are identical cylinders.
            max_sliders: defaults to the scene's object count.
        """
        first = scene.objects[0]
        geometry = cls(
            max_sliders=len(scene.objects) if max_sliders is None else max_sliders,
            pusher_radius=scene.pusher.radius,
            pusher_mass=scene.pusher.mass,
            pusher_friction=scene.pusher.friction,
            slider_radius=first.radius,
            slider_height=first.height,
            slider_mass=first.mass,
            slider_friction=first.friction,
            table_friction=scene.table.friction,
            object_friction=scene.object_friction,
        )
        geometry.check_scene(scene)
        return geometry

    @property
    def contact_distance(self) -> float:
        """Centre distance at which the pusher touches a slider, m."""
        return self.pusher_radius + self.slider_radius

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainedGeometry:
        names = {item.name for item in fields(cls)}
        missing = sorted(names - set(data))
        if missing:
            raise ModelMismatchError(f"geometry: missing field(s) {missing}")
        return cls(**{name: data[name] for name in names})

    def scene_dict(self, slider_count: int, name: str = "learned_coarse_training") -> dict[str, Any]:
        """A scene description (for :func:`parapush.scene.scene_from_dict`) with ``slider_count``
        sliders of this geometry, all at the origin (the fine model does not need poses)."""
        if not 1 <= slider_count <= self.max_sliders:
            raise ValueError(f"slider_count: expected 1..{self.max_sliders}, got {slider_count!r}")
        return {
            "name": name,
            "table": {"friction": self.table_friction},
            "pusher": {"radius": self.pusher_radius, "mass": self.pusher_mass, "friction": self.pusher_friction},
            "objects": [
                {
                    "name": f"slider{index}",
                    "shape": "cylinder",
                    "radius": self.slider_radius,
                    "height": self.slider_height,
                    "mass": self.slider_mass,
                    "friction": self.slider_friction,
                    "pose": [0.0, 0.0, 0.0],
                }
                for index in range(slider_count)
            ],
            "object_friction": self.object_friction,
        }

    def check_scene(self, scene: Scene) -> None:
        """Raise :class:`ModelMismatchError` naming the field if ``scene`` is not of this family.

        Checked: object count <= max_sliders, every object a cylinder with the trained
        radius/height (within :data:`LENGTH_TOLERANCE`) and mass/friction (within
        :data:`RELATIVE_TOLERANCE`), the pusher's radius, mass and friction, the table and
        object/object friction. Obstacles and the table size are not checked here.
        """
        if len(scene.objects) > self.max_sliders:
            raise ModelMismatchError(
                f"objects: the scene has {len(scene.objects)} objects but the model was trained for at most "
                f"{self.max_sliders}"
            )
        self._compare_length("pusher.radius", scene.pusher.radius, self.pusher_radius)
        self._compare_relative("pusher.mass", scene.pusher.mass, self.pusher_mass)
        self._compare_relative("pusher.friction", scene.pusher.friction, self.pusher_friction)
        self._compare_relative("table.friction", scene.table.friction, self.table_friction)
        self._compare_relative("object_friction", scene.object_friction, self.object_friction)
        for spec in scene.objects:
            where = f"objects[{spec.name}]"
            if spec.patches:
                raise ModelMismatchError(
                    f"{where}.patches: the learned model was trained for uniform objects; this one has "
                    f"{len(spec.patches)} patch(es) of their own mass or friction"
                )
            if spec.shape != "cylinder":
                raise ModelMismatchError(
                    f"{where}.shape: the learned model was trained for cylinders only, got {spec.shape!r}"
                )
            self._compare_length(f"{where}.radius", spec.radius, self.slider_radius)
            self._compare_length(f"{where}.height", spec.height, self.slider_height)
            self._compare_relative(f"{where}.mass", spec.mass, self.slider_mass)
            self._compare_relative(f"{where}.friction", spec.friction, self.slider_friction)

    def check_same(self, other: TrainedGeometry, what: str) -> None:
        """Raise :class:`ModelMismatchError` naming the first field in which ``other`` (from
        ``what``, e.g. a checkpoint path) differs from this geometry."""
        if other.max_sliders != self.max_sliders:
            raise ModelMismatchError(
                f"{what}: max_sliders is {other.max_sliders}, expected {self.max_sliders}"
            )
        for name in _LENGTH_FIELDS:
            self._compare_length(f"{what}: {name}", getattr(other, name), getattr(self, name))
        for name in _RELATIVE_FIELDS:
            self._compare_relative(f"{what}: {name}", getattr(other, name), getattr(self, name))

    @staticmethod
    def _compare_length(name: str, actual: float, trained: float) -> None:
        if abs(actual - trained) > LENGTH_TOLERANCE:
            raise ModelMismatchError(
                f"{name}: {actual!r} m differs from the trained {trained!r} m by more than {LENGTH_TOLERANCE} m"
            )

    @staticmethod
    def _compare_relative(name: str, actual: float, trained: float) -> None:
        if abs(actual - trained) > RELATIVE_TOLERANCE * max(abs(trained), 1e-12):
            raise ModelMismatchError(
                f"{name}: {actual!r} differs from the trained {trained!r} by more than {RELATIVE_TOLERANCE:.0%}"
            )
