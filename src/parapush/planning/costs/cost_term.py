"""The interface every cost term implements, and the checks they share.

A term scores a batch of predicted trajectories and their controls::

    trajectories  (S, N+1, D)  states x_0..x_N in the layout of :mod:`parapush.scene.state`
    controls      (S, N, 2)    pusher velocities u_0..u_{N-1}, m/s
    -> values     (S,)         the *unweighted* term; :class:`CostFunction` multiplies by ``weight``

Terms are frozen dataclasses built from a scene with ``from_scene(scene, **parameters)``;
``PARAMETERS`` lists the parameter names accepted in ``config/planner.yaml``. Terms
return finite numbers for finite input; non-finite predictions are the optimizer's
business (it never passes them on as usable).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np


class CostConfigError(ValueError):
    """A cost configuration is invalid; the message names the offending field."""


@runtime_checkable
class CostTerm(Protocol):
    """One weighted term of the planning cost (Eq 10 of the ISRR paper)."""

    name: ClassVar[str]
    PARAMETERS: ClassVar[tuple[str, ...]]
    weight: float

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        """Unweighted values (S,) for trajectories (S, N+1, D) and controls (S, N, 2)."""
        ...


def checked_number(value: Any, field: str, *, minimum: float = 0.0, strict: bool = False) -> float:
    """``value`` as a finite float >= ``minimum`` (> if ``strict``); errors name ``field``."""
    if isinstance(value, bool):
        raise CostConfigError(f"{field}: expected a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CostConfigError(f"{field}: expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise CostConfigError(f"{field}: must be finite, got {value!r}")
    if number < minimum or (strict and number == minimum):
        relation = ">" if strict else ">="
        raise CostConfigError(f"{field}: must be {relation} {minimum}, got {number!r}")
    return number


def check_term_fields(term: Any, *fields: str, minimum: float = 0.0, strict: bool = False) -> None:
    """Replace each of ``fields`` of the frozen cost ``term`` by :func:`checked_number` of it
    (errors name ``<term name>.<field>``), in ``__post_init__``."""
    for field in fields:
        value = checked_number(getattr(term, field), f"{term.name}.{field}", minimum=minimum, strict=strict)
        object.__setattr__(term, field, value)


def check_batch(
    trajectories: np.ndarray, controls: np.ndarray, dimension: int
) -> tuple[np.ndarray, np.ndarray]:
    """Validate and return (trajectories (S, N+1, D), controls (S, N, 2)) as float arrays."""
    trajectories = np.asarray(trajectories, dtype=float)
    controls = np.asarray(controls, dtype=float)
    if trajectories.ndim != 3 or trajectories.shape[-1] != dimension:
        raise ValueError(f"trajectories: expected shape (S, N+1, {dimension}), got {trajectories.shape}")
    samples, points = trajectories.shape[:2]
    if controls.shape != (samples, points - 1, 2):
        raise ValueError(
            f"controls: expected shape ({samples}, {points - 1}, 2) to match trajectories "
            f"{trajectories.shape}, got {controls.shape}"
        )
    return trajectories, controls
