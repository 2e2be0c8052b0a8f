"""Discrete-time braking envelope along one axis.

A velocity command holds for one period ``T``; between commands the velocity may drop by at most
``a T`` (deceleration limit ``a``). From speed ``u`` towards a wall, the shortest stop commands
``u, u - aT, u - 2aT, ...`` (never below 0), covering

    B(u) = T * sum_{k >= 0} max(0, u - k a T)

before standing still. ``B`` is increasing, and ``B(u - aT) = B(u) - u T`` for ``u >= 0``: if
``B(u) <= d`` (distance to the wall) then after one period at ``u`` the remaining distance
``d - u T`` still admits ``u - aT``. So keeping every command inside ``B(u) <= d`` is invariant
under the deceleration limit, and it implies ``u T <= d``: the period never crosses the wall.
:func:`max_speed_within` is the exact inverse of ``B``.

With ``u = (n + f) a T`` (integer ``n``, ``0 <= f < 1``): ``B(u) = a T^2 (n + 1)(n / 2 + f)``.
"""

from __future__ import annotations

import math


def braking_distance(speed_m_s: float, *, deceleration_m_s2: float, period_s: float) -> float:
    """B(u): distance (m) covered from ``speed_m_s`` before standing still, see the module docstring."""
    if speed_m_s <= 0:
        return 0.0
    quantum = deceleration_m_s2 * period_s
    steps = speed_m_s / quantum
    whole = math.floor(steps)
    fraction = steps - whole
    return deceleration_m_s2 * period_s * period_s * (whole + 1) * (whole / 2.0 + fraction)


def max_speed_within(distance_m: float, *, deceleration_m_s2: float, period_s: float) -> float:
    """The largest speed u (m/s) with B(u) <= ``distance_m``; 0 for distances <= 0."""
    if distance_m <= 0:
        return 0.0
    scaled = distance_m / (deceleration_m_s2 * period_s * period_s)
    whole = math.floor((math.sqrt(8.0 * scaled + 1.0) - 1.0) / 2.0)
    while whole > 0 and whole * (whole + 1) / 2.0 > scaled:  # float rounding of the root
        whole -= 1
    while (whole + 1) * (whole + 2) / 2.0 <= scaled:
        whole += 1
    fraction = (scaled - whole * (whole + 1) / 2.0) / (whole + 1)
    return (whole + min(max(fraction, 0.0), 1.0)) * deceleration_m_s2 * period_s
