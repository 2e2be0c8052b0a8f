"""The fine-model parameters of the nodes that run the fine model (prediction service,
identification), declared once so that both configure it alike."""

from __future__ import annotations

from typing import Any

from parapush.nodes.parameters import ParameterSpec
from parapush.physics.fine_settings import COLLIDERS, INTEGRATORS, FineSettings

_DEFAULTS = FineSettings()  # the fine model's measured defaults (bench/fine_model_defaults.py)

FINE_MODEL_PARAMETERS = (
    ParameterSpec("integrator", _DEFAULTS.integrator, "MuJoCo integrator of the fine model", choices=INTEGRATORS),
    ParameterSpec("timestep", _DEFAULTS.timestep, "fine-model time step, s", minimum=1e-5, maximum=0.01),
    ParameterSpec("pusher_collider", _DEFAULTS.pusher_collider, "pusher contact geometry", choices=COLLIDERS),
)


def fine_settings(values: dict[str, Any]) -> FineSettings:
    """The :class:`FineSettings` of declared :data:`FINE_MODEL_PARAMETERS` values.

    Raises:
        ValueError: naming the field, from :class:`FineSettings`.
    """
    return FineSettings(
        timestep=values["timestep"], integrator=values["integrator"], pusher_collider=values["pusher_collider"]
    )
