"""Copies of the fine model's ``MjModel`` with other values of one object's parameters.

A copy has the same sizes as the fine model's, so a batch of them runs in one
``mujoco.rollout`` call (one model per row: :meth:`parapush.physics.backends.ThreadBackend.propagate`
with ``models=``), which is how identification evaluates a whole population of hypotheses
at once. Only runtime fields are changed (``body_mass``, ``body_inertia``, ``body_ipos``,
``pair_friction``), which MuJoCo reads at every step.
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np

from parapush.identification.parameters import ObjectParameters
from parapush.physics.fine import FineModel
from parapush.physics.mjcf import object_body_name


class ObjectModelVariants:
    """Makes variants of ``fine_model.mj_model`` for object ``object_index``.

    Args:
        fine_model: the fine model whose ``mj_model`` is copied (never modified).
        object_index: the object whose parameters vary, in scene order.

    Attributes:
        nominal: the object's parameters in the fine model (:meth:`ObjectParameters.from_scene`).
    """

    def __init__(self, fine_model: FineModel, object_index: int) -> None:
        if not isinstance(fine_model, FineModel):
            raise TypeError(f"fine_model: expected FineModel, got {type(fine_model).__name__}")
        self.fine_model = fine_model
        self.nominal = ObjectParameters.from_scene(fine_model.scene, object_index)
        self.object_index = object_index
        model = fine_model.mj_model
        name = object_body_name(object_index)
        self._body = model.body(name).id
        self._com_height = float(model.body_ipos[self._body][2])
        # Inertia per kg: unchanged by apply(), so a model already changed gives the same variants.
        self._inertia_per_kg = model.body_inertia[self._body] / model.body_mass[self._body]
        self._support_pair = self._pair(model, "table", f"{name}_support")
        self._pusher_pair = self._pair(model, "pusher_collider", f"{name}_collider")

    @staticmethod
    def _pair(model: mujoco.MjModel, first: str, second: str) -> int:
        wanted = {model.geom(first).id, model.geom(second).id}
        for index in range(model.npair):
            if {int(model.pair_geom1[index]), int(model.pair_geom2[index])} == wanted:
                return index
        raise RuntimeError(f"the fine model has no contact pair {first}/{second}")

    def apply(self, model: mujoco.MjModel, parameters: ObjectParameters) -> None:
        """Write ``parameters`` for the object into ``model`` (the fine model's or a copy), in place.

        The inertia scales with the mass (same shape, same density distribution about the
        centre of mass); the centre of mass keeps its height.
        """
        if not isinstance(parameters, ObjectParameters):
            raise TypeError(f"parameters: expected ObjectParameters, got {type(parameters).__name__}")
        body = self._body
        model.body_mass[body] = parameters.mass
        model.body_inertia[body] = self._inertia_per_kg * parameters.mass
        model.body_ipos[body] = (*parameters.com_offset, self._com_height)
        model.pair_friction[self._support_pair, :2] = parameters.support_friction
        model.pair_friction[self._pusher_pair, :2] = parameters.pusher_friction

    def current(self, model: mujoco.MjModel | None = None) -> ObjectParameters:
        """The object's parameters in ``model`` (default: the fine model's)."""
        model = self.fine_model.mj_model if model is None else model
        body = self._body
        return ObjectParameters(
            mass=float(model.body_mass[body]),
            support_friction=float(model.pair_friction[self._support_pair, 0]),
            pusher_friction=float(model.pair_friction[self._pusher_pair, 0]),
            com_offset=(float(model.body_ipos[body][0]), float(model.body_ipos[body][1])),
        )

    def make(self, parameters: ObjectParameters) -> mujoco.MjModel:
        """A copy of the fine model with ``parameters`` for the object (see :meth:`apply`)."""
        variant = copy.copy(self.fine_model.mj_model)
        self.apply(variant, parameters)
        return variant

    def make_many(self, vectors: np.ndarray) -> list[mujoco.MjModel]:
        """Variants for parameter vectors (P, 5) in the order of ``PARAMETER_NAMES``."""
        return [self.make(ObjectParameters.from_vector(vector)) for vector in np.atleast_2d(vectors)]
