"""Whether objects are still supported by the table ("off the table" = task failure).

The fine model's table is an infinite plane (see :mod:`parapush.physics.mjcf`), so falling
is decided here from the planar state, identically for every model: an object is off the
table when its centre lies beyond an edge of the table rectangle, which is where a real
object's centre of mass passes the edge and it tips over.
"""

from __future__ import annotations

import numpy as np

from parapush.scene import Scene


def objects_off_table(scene: Scene, states: np.ndarray) -> np.ndarray:
    """Which objects have left the table.

    Args:
        scene: the scene (table size and object count).
        states: (..., D) states in the papers' layout.
    Returns:
        (..., n) bool, True where object i's centre is beyond an edge of the table.
        NaN states give True (a failed prediction never counts as on the table).
    """
    poses = scene.layout.poses(states)
    half_length, half_width = scene.table.half_extents
    with np.errstate(invalid="ignore"):
        inside = (np.abs(poses[..., 0]) <= half_length) & (np.abs(poses[..., 1]) <= half_width)
    return ~inside
