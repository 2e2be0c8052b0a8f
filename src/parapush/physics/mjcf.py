"""Translate a :class:`~parapush.scene.Scene` into MuJoCo's MJCF XML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parapush.scene import Scene

if TYPE_CHECKING:
    from parapush.physics.fine import FineSettings


def scene_to_mjcf(scene: Scene, settings: FineSettings) -> str:
    """MJCF XML of the scene (see :mod:`parapush.physics.fine` for the modelling choices)."""
    raise NotImplementedError
