"""The physical parameters of one object that identification estimates, and their bounds.

The fine model (:mod:`parapush.physics.mjcf`) gives an object four parameters that shape how
it moves when pushed: its mass, the friction coefficient of its support contact with the
table (MJCF: ``max(table.friction, object.friction)``), the friction coefficient of the
pusher/object contact and the position of its centre of mass in its body frame (which sets
how the normal force, and with it the friction, is spread under it: the papers' mass and
friction distribution, summarised by its centroid). A heterogeneous object's distribution
travels as ``patches``: regions with their own mass and support friction, the scene format's
:class:`~parapush.scene.ObjectPatch` (from a cell map:
:meth:`parapush.identification.grid_identifier.GridIdentifier.object_parameters`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from parapush.scene import ObjectPatch, Scene
from parapush.validation import check_fields, check_non_negative, check_positive, check_real

PARAMETER_NAMES = ("mass", "support_friction", "pusher_friction", "com_x", "com_y")
"""The order of the parameter vector (kg, -, -, m, m)."""


def parameter_names(name: str, value) -> tuple[str, ...]:
    """``value`` (names of ``PARAMETER_NAMES``, e.g. a list from a file) as a tuple; ValueError
    naming ``name`` unless it holds at least one name, each known and at most once."""
    names = tuple(value)
    if not names or len(set(names)) != len(names) or any(item not in PARAMETER_NAMES for item in names):
        raise ValueError(f"{name}: expected distinct names of {PARAMETER_NAMES}, got {value!r}")
    return names


@dataclass(frozen=True)
class ObjectParameters:
    """Physical parameters of one object (SI units).

    Attributes:
        mass: kg, > 0.
        support_friction: object/table sliding friction coefficient, >= 0.
        pusher_friction: pusher/object sliding friction coefficient, >= 0.
        com_offset: (x, y) m, centre of mass in the object's body frame (0, 0: its centre).
        patches: regions with their own mass and support friction (body frame; each patch's
            friction is its table contact's coefficient, as ``support_friction`` is the rest of
            the footprint's). With patches, ``mass`` is the total (the rest spread evenly over
            the footprint) and the patches place the centre of mass, so ``com_offset`` must be
            (0, 0). The fine model builds them as geoms, so a change of patches rebuilds it
            (:meth:`parapush.prediction.PredictionEngine.apply_object_parameters`).
    """

    mass: float
    support_friction: float
    pusher_friction: float
    com_offset: tuple[float, float] = (0.0, 0.0)
    patches: tuple[ObjectPatch, ...] = ()

    def __post_init__(self) -> None:
        check_fields(self, check_positive, "mass")
        check_fields(self, check_non_negative, "support_friction", "pusher_friction")
        offset = tuple(self.com_offset) if isinstance(self.com_offset, (tuple, list, np.ndarray)) else None
        if offset is None or len(offset) != 2:
            raise ValueError(f"com_offset: expected (x, y) in m, got {self.com_offset!r}")
        object.__setattr__(self, "com_offset", tuple(check_real(f"com_offset[{i}]", v) for i, v in enumerate(offset)))
        if not isinstance(self.patches, (tuple, list)):
            raise ValueError(f"patches: expected a sequence of ObjectPatch, got {self.patches!r}")
        for index, patch in enumerate(self.patches):
            if not isinstance(patch, ObjectPatch):
                raise ValueError(f"patches[{index}]: expected ObjectPatch, got {type(patch).__name__}")
            patch.check(f"patches[{index}]")
        object.__setattr__(self, "patches", tuple(self.patches))
        if self.patches and any(self.com_offset):
            raise ValueError(f"com_offset: must be (0, 0) with patches (they place the centre of mass), "
                             f"got {self.com_offset}")
        if self.patches and sum(patch.mass for patch in self.patches) >= self.mass:
            raise ValueError(f"patches: their masses must sum to less than mass {self.mass} kg")

    @classmethod
    def from_scene(cls, scene: Scene, object_index: int) -> ObjectParameters:
        """The parameters the scene file gives object ``object_index`` (centre of mass at its centre)."""
        scene.layout.object_pose(object_index)  # IndexError when out of range
        spec = scene.objects[object_index]
        table = scene.table.friction
        return cls(
            mass=spec.mass,
            support_friction=max(table, spec.friction),
            pusher_friction=scene.pusher.friction,
            patches=tuple(dataclasses.replace(patch, friction=max(table, patch.friction)) for patch in spec.patches),
        )

    def as_vector(self) -> np.ndarray:
        """(5,) in the order of :data:`PARAMETER_NAMES` (the patches are not in it)."""
        return np.array([self.mass, self.support_friction, self.pusher_friction, *self.com_offset])

    @classmethod
    def from_vector(cls, vector: np.ndarray) -> ObjectParameters:
        """Inverse of :meth:`as_vector`."""
        vector = np.asarray(vector, dtype=float)
        if vector.shape != (len(PARAMETER_NAMES),):
            raise ValueError(f"vector: expected shape ({len(PARAMETER_NAMES)},), got {vector.shape}")
        mass, support, pusher, com_x, com_y = (float(v) for v in vector)
        return cls(mass=mass, support_friction=support, pusher_friction=pusher, com_offset=(com_x, com_y))


def scene_with_object(scene: Scene, index: int, parameters: ObjectParameters) -> Scene:
    """``scene`` with object ``index`` built as ``parameters`` describe it: its mass and patches, the
    geoms a fine model compiles (the frictions and the rest are written into the model afterwards:
    :meth:`parapush.identification.ObjectModelVariants.apply`).

    Raises:
        SceneError (a ValueError): patches outside the object's outline.
    """
    spec = dataclasses.replace(scene.objects[index], mass=parameters.mass, patches=parameters.patches)
    return dataclasses.replace(scene, objects=(*scene.objects[:index], spec, *scene.objects[index + 1:]))


@dataclass(frozen=True)
class ParameterBounds:
    """The box the search stays in; a parameter whose bounds are equal is held fixed.

    Attributes:
        mass: (low, high) kg, low > 0.
        support_friction: (low, high), low >= 0 (steel on ABS: 0.13-0.15; the papers' sliders: 1.0).
        pusher_friction: (low, high), low >= 0.
        com_offset: m, largest |x| and |y| of the centre of mass (keep it well inside the
            object's footprint: outside it the object tips over).
    """

    mass: tuple[float, float] = (0.1, 2.0)
    support_friction: tuple[float, float] = (0.05, 1.5)
    pusher_friction: tuple[float, float] = (0.02, 1.0)
    com_offset: float = 0.02

    def __post_init__(self) -> None:
        for name, minimum in (("mass", 1e-6), ("support_friction", 0.0), ("pusher_friction", 0.0)):
            pair = getattr(self, name)
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"{name}: expected (low, high), got {pair!r}")
            low, high = (check_real(f"{name}[{i}]", v) for i, v in enumerate(pair))
            if low < minimum or high < low:
                raise ValueError(f"{name}: expected {minimum} <= low <= high, got {pair!r}")
            object.__setattr__(self, name, (low, high))
        object.__setattr__(self, "com_offset", check_non_negative("com_offset", self.com_offset))

    @property
    def low(self) -> np.ndarray:
        """(5,) lower bounds in the order of :data:`PARAMETER_NAMES`."""
        return np.array([self.mass[0], self.support_friction[0], self.pusher_friction[0],
                         -self.com_offset, -self.com_offset])

    @property
    def high(self) -> np.ndarray:
        """(5,) upper bounds in the order of :data:`PARAMETER_NAMES`."""
        return np.array([self.mass[1], self.support_friction[1], self.pusher_friction[1],
                         self.com_offset, self.com_offset])

    def contains(self, parameters: ObjectParameters) -> bool:
        vector = parameters.as_vector()
        return bool(np.all(vector >= self.low - 1e-12) and np.all(vector <= self.high + 1e-12))
