"""How far an object's true physics may lie from what the scene file says: :class:`ParameterSpread`.

A scene object may carry its own ``uncertainty`` (``ObjectSpec.uncertainty``: a mapping with these
fields in the scene file); robust planning (:mod:`parapush.planning.robust_planning`) starts its
belief about the target from it, and from ``config/planner.yaml``'s ``robust.spread`` for an object
without one. The parameter vectors it draws are :class:`~parapush.identification.ObjectParameters`
vectors (mass kg, support friction, pusher friction, centre of mass x, y m).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from parapush.settings import check_settings, setting

__all__ = ["ParameterSpread"]

_COM_X, _COM_Y = 3, 4  # the centre of mass in an ObjectParameters vector


@dataclass(frozen=True)
class ParameterSpread:
    """How far one object's true parameters may lie from the nominal ones (a uniform prior).

    Attributes:
        mass: relative half-width: the mass lies in nominal x [1 - mass, 1 + mass].
        support_friction: relative half-width of the object/table friction.
        pusher_friction: relative half-width of the pusher/object friction.
        com_offset: m, radius of the disc around the nominal centre of mass.
    """

    mass: float = setting(0.5, "relative half-width of the object's mass", minimum=0.0, below=1.0)
    support_friction: float = setting(0.3, "relative half-width of the object/table friction", minimum=0.0,
                                      below=1.0)
    pusher_friction: float = setting(0.0, "relative half-width of the pusher/object friction", minimum=0.0,
                                     below=1.0)
    com_offset: float = setting(0.02, "radius of the disc around the nominal centre of mass", unit="m",
                                minimum=0.0)

    def __post_init__(self) -> None:
        check_settings(self)

    def relative_widths(self) -> np.ndarray:
        """(3,) the relative half-widths of mass, support and pusher friction."""
        return np.array([self.mass, self.support_friction, self.pusher_friction])

    def check_nominal(self, nominal: Any) -> None:
        """Raises ValueError naming ``com_offset`` for an object with patches (they place its centre
        of mass, which cannot then move) when this spread moves it. ``nominal``: an
        :class:`~parapush.identification.ObjectParameters` (the identification package builds on
        scenes, so this module does not import it)."""
        if not callable(getattr(nominal, "as_vector", None)) or not hasattr(nominal, "patches"):
            raise TypeError(f"nominal: expected ObjectParameters, got {type(nominal).__name__}")
        if nominal.patches and self.com_offset > 0.0:
            raise ValueError("com_offset: the object has patches (they place its centre of mass): use a spread of 0")

    def sample(self, nominal: Any, count: int, rng: np.random.Generator) -> np.ndarray:
        """(count, 5) parameter vectors drawn uniformly within the spread around ``nominal`` (an
        :class:`~parapush.identification.ObjectParameters`)."""
        self.check_nominal(nominal)
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"count: expected an integer >= 1, got {count!r}")
        vectors = np.tile(nominal.as_vector(), (count, 1))
        widths = self.relative_widths()
        vectors[:, :3] *= 1.0 + rng.uniform(-widths, widths, (count, 3))
        radius = self.com_offset * np.sqrt(rng.uniform(0.0, 1.0, count))
        angle = rng.uniform(0.0, 2.0 * math.pi, count)
        vectors[:, _COM_X] += radius * np.cos(angle)
        vectors[:, _COM_Y] += radius * np.sin(angle)
        return vectors
