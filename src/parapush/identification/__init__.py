"""Identification of an object's physical parameters from observed pushes (no ROS).

:class:`ObjectIdentifier` fits the mass, support and pusher friction and centre of mass of
one object so that the fine model reproduces observed pushes (:class:`PushRecord`) by a
cross-entropy search. :mod:`parapush.identification.grid_identifier` (torch, the ``learning``
extra; import it from there) identifies per-cell mass and friction maps by projected gradient
descent through a differentiable sliding model (:mod:`parapush.identification.grid_model`).
"""

from parapush.identification.identifier import (
    IdentificationResult,
    IdentificationSettings,
    ObjectIdentifier,
    PushRecord,
)
from parapush.identification.model_variants import ObjectModelVariants
from parapush.identification.parameters import PARAMETER_NAMES, ObjectParameters, ParameterBounds, scene_with_object
from parapush.identification.timeline import SkippedPush, push_records_from_timeline

__all__ = [
    "PARAMETER_NAMES",
    "IdentificationResult",
    "IdentificationSettings",
    "ObjectIdentifier",
    "ObjectModelVariants",
    "ObjectParameters",
    "ParameterBounds",
    "PushRecord",
    "SkippedPush",
    "push_records_from_timeline",
    "scene_with_object",
]
