"""Which sliders a push can move: the authors' contact gate and its closure over slider chains.

The authors' learned model is only evaluated when the pusher's straight path would
penetrate a slider by more than 0.5 mm; otherwise objects stay where they are and their
velocities are zeroed. Here the path is the exact segment swept by the pusher's centre
(start -> start + u T) instead of 9 points on it.

With several sliders a pushed slider can push others. :func:`involved_sliders` closes the
gate over such chains: a slider is *involved* if the pusher's path reaches it, or if it
lies within reach of an involved slider (centre distance < r_i + r_j + L + margin, with
L = |u| T the pusher's travel, an upper bound of how far a pushed slider moves: with the
table friction of 1.0 a slider stops within ~0.5 mm once it loses contact). Sliders that
are not involved cannot be moved by the push; the learned model keeps them in place and
only the involved ones are passed to the network.
"""

from __future__ import annotations

import numpy as np

from parapush.physics.planar_geometry import segment_point_distance

GATE_PENETRATION = 5.0e-4
"""The path must overlap a slider by more than this to count as a contact, m (authors)."""

REACH_MARGIN = 0.01
"""Added to the pusher's travel when deciding whether a pushed slider can reach another, m."""


def path_contacts(
    pusher_positions: np.ndarray,
    displacements: np.ndarray,
    slider_positions: np.ndarray,
    slider_active: np.ndarray,
    contact_distance: float,
) -> np.ndarray:
    """The authors' gate per slider: does the pusher's path overlap it by > :data:`GATE_PENETRATION`?

    Args:
        pusher_positions: (M, 2) pusher centres at the start, m.
        displacements: (M, 2) pusher travel u T, m.
        slider_positions: (M, S, 2) slider centres, m.
        slider_active: (M, S) bool; inactive (parked or absent) sliders never count.
        contact_distance: pusher radius + slider radius, m.
    Returns:
        (M, S) bool.
    """
    ends = pusher_positions + displacements
    distances = segment_point_distance(pusher_positions[:, None], ends[:, None], slider_positions)
    return slider_active & (distances < contact_distance - GATE_PENETRATION)


def involved_sliders(
    pusher_positions: np.ndarray,
    displacements: np.ndarray,
    slider_positions: np.ndarray,
    slider_active: np.ndarray,
    pusher_radius: float,
    slider_radius: float,
) -> np.ndarray:
    """Sliders the push can move: the gate's contacts closed over slider-slider reach.

    Args:
        pusher_positions: (M, 2) m.
        displacements: (M, 2) pusher travel u T, m.
        slider_positions: (M, S, 2) m.
        slider_active: (M, S) bool.
        pusher_radius: m.
        slider_radius: m.
    Returns:
        (M, S) bool; all False in a row where the path touches no slider (the gate is off).
    """
    involved = path_contacts(
        pusher_positions, displacements, slider_positions, slider_active, pusher_radius + slider_radius
    )
    reach = 2.0 * slider_radius + np.linalg.norm(displacements, axis=-1) + REACH_MARGIN
    separation = np.linalg.norm(slider_positions[:, :, None, :] - slider_positions[:, None, :, :], axis=-1)
    near = (separation < reach[:, None, None]) & slider_active[:, :, None] & slider_active[:, None, :]
    for _ in range(slider_positions.shape[1]):
        grown = involved | np.any(near & involved[:, :, None], axis=1)
        if np.array_equal(grown, involved):
            break
        involved = grown
    return involved
