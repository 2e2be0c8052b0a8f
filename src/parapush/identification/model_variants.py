"""Copies of the fine model's ``MjModel`` with other values of one object's parameters.

A copy has the same sizes as the fine model's, so a batch of them runs in one
``mujoco.rollout`` call (one model per row: :meth:`parapush.physics.backends.ThreadBackend.propagate`
with ``models=``), which is how identification evaluates a whole population of hypotheses
at once. Only runtime fields are changed (``body_mass``, ``body_inertia``, ``body_ipos``,
``pair_friction``: every support and pusher pair of the object's geoms, several for a
non-convex polygon), which MuJoCo reads at every step. An object built with patches
(:class:`~parapush.scene.ObjectPatch` geoms) keeps them: parameters with the same patches
(same regions and masses) change only the frictions; parameters with other patches need a
model built for them (:meth:`ObjectModelVariants.matches`).
"""

from __future__ import annotations

import copy
import dataclasses

import mujoco
import numpy as np

from parapush.identification.parameters import ObjectParameters
from parapush.physics.fine import FineModel
from parapush.physics.mjcf import object_body_name, object_geom_names


def patch_layout(patches) -> np.ndarray:
    """(P, 5) centre x, y, half extents x, y (m) and mass (kg) of each patch: what its geom is built from."""
    return np.array([(*patch.center, *patch.half_extents, patch.mass) for patch in patches]).reshape(-1, 5)


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
        # A non-convex polygon is several geoms, each with its own pairs: all take the same friction.
        spec = fine_model.scene.objects[object_index]
        support_geoms = object_geom_names(object_index, spec, "support", fine_model.settings)
        self._support_pairs = [self._pair(model, "table", geom) for geom in support_geoms]
        # a torsion support's torsional friction is the sliding one times the outline's uniform-pressure
        # radius (FineSettings.support 'torsion'): it follows the identified support friction
        torsional = model.pair_dim[self._support_pairs] == 4
        self._torsion_pairs = np.asarray(self._support_pairs)[torsional]
        # a torsion support's one contact lies under the centre of mass (where a rigid object's
        # pressure centre is), so it moves with it: without that an offset centre of mass would
        # not turn the object at all
        self._torsion_geoms = [model.geom(geom).id for geom, torsion in zip(support_geoms, torsional, strict=True)
                               if torsion]
        pairs = self._torsion_pairs
        self._torsion_radius = model.pair_friction[pairs, 2] / model.pair_friction[pairs, 0]
        self._pusher_pairs = [self._pair(model, "pusher_collider", geom)
                              for geom in object_geom_names(object_index, spec, "collider")]
        self._patches = fine_model.scene.objects[object_index].patches
        self._patch_pairs = [self._pair(model, "table", f"{name}_patch{number}")
                             for number in range(len(self._patches))]

    @staticmethod
    def _pair(model: mujoco.MjModel, first: str, second: str) -> int:
        wanted = {model.geom(first).id, model.geom(second).id}
        for index in range(model.npair):
            if {int(model.pair_geom1[index]), int(model.pair_geom2[index])} == wanted:
                return index
        raise RuntimeError(f"the fine model has no contact pair {first}/{second}")

    def matches(self, parameters: ObjectParameters) -> bool:
        """Whether ``parameters`` fit the model's geoms: no patches in either, or the same
        patches (regions and masses; their frictions may differ) and the same total mass."""
        if not parameters.patches and not self._patches:
            return True
        built, wanted = patch_layout(self._patches), patch_layout(parameters.patches)
        mass = self.fine_model.scene.objects[self.object_index].mass
        return built.shape == wanted.shape and np.allclose(built, wanted, rtol=0.0, atol=1e-12) \
            and abs(parameters.mass - mass) <= 1e-12

    def apply(self, model: mujoco.MjModel, parameters: ObjectParameters) -> None:
        """Write ``parameters`` for the object into ``model`` (the fine model's or a copy), in place.

        Without patches: the inertia scales with the mass (same shape, same density
        distribution about the centre of mass); the centre of mass keeps its height, and a torsion
        support's contact moves under it (``FineSettings.support``). With
        patches (which must :meth:`match` the model's): the frictions of the footprint's and
        each patch's table contact and the pusher's; mass and inertia are the geoms'.

        Raises:
            ValueError: ``parameters`` has patches the model was not built with.
        """
        if not isinstance(parameters, ObjectParameters):
            raise TypeError(f"parameters: expected ObjectParameters, got {type(parameters).__name__}")
        if parameters.patches:
            if not self.matches(parameters):
                raise ValueError("parameters.patches: not the model's patches (regions and masses); "
                                 "build a model for them")
            for pair, patch in zip(self._patch_pairs, parameters.patches, strict=True):
                model.pair_friction[pair, :2] = patch.friction
        else:
            body = self._body
            model.body_mass[body] = parameters.mass
            model.body_inertia[body] = self._inertia_per_kg * parameters.mass
            model.body_ipos[body] = (*parameters.com_offset, self._com_height)
            model.geom_pos[self._torsion_geoms, :2] = parameters.com_offset
        model.pair_friction[self._support_pairs, :2] = parameters.support_friction
        model.pair_friction[self._torsion_pairs, 2] = parameters.support_friction * self._torsion_radius
        model.pair_friction[self._pusher_pairs, :2] = parameters.pusher_friction

    def current(self, model: mujoco.MjModel | None = None) -> ObjectParameters:
        """The object's parameters in ``model`` (default: the fine model's)."""
        model = self.fine_model.mj_model if model is None else model
        body = self._body
        patches = tuple(dataclasses.replace(patch, friction=float(model.pair_friction[pair, 0]))
                        for patch, pair in zip(self._patches, self._patch_pairs, strict=True))
        return ObjectParameters(
            mass=float(model.body_mass[body]),
            support_friction=float(model.pair_friction[self._support_pairs[0], 0]),
            pusher_friction=float(model.pair_friction[self._pusher_pairs[0], 0]),
            com_offset=(0.0, 0.0) if patches else (float(model.body_ipos[body][0]), float(model.body_ipos[body][1])),
            patches=patches,
        )

    def make(self, parameters: ObjectParameters) -> mujoco.MjModel:
        """A copy of the fine model with ``parameters`` for the object (see :meth:`apply`)."""
        variant = copy.copy(self.fine_model.mj_model)
        self.apply(variant, parameters)
        return variant

    def make_many(self, vectors: np.ndarray) -> list[mujoco.MjModel]:
        """Variants for parameter vectors (P, 5) in the order of ``PARAMETER_NAMES``."""
        return [self.make(ObjectParameters.from_vector(vector)) for vector in np.atleast_2d(vectors)]
