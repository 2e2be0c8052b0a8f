"""Conversions between the 2F-85's register counts and SI units (opening, speed, force, current).

The 2F-85 has an 85 mm stroke: position count ``open_count`` is fully open (85 mm between
the finger pads) and the fingers reach their mechanical limit at ``closed_count`` (0 mm);
requests above ``closed_count`` stop there. Finger speed spans 20-150 mm/s and grip force
20-235 N over counts 0-255 (Robotiq 2F-85 specifications). The real gripper is only
approximately linear; these conversions are what the driver and the emulator agree on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_COUNT_MAX = 255


def _positive(name: str, value: float) -> None:
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class FingerGeometry:
    """Calibration of the counts of one 2F-85.

    Attributes:
        stroke_m: distance between the pads when fully open, m.
        open_count: position count when fully open.
        closed_count: position count at the mechanical closed limit (0 m opening).
        min_speed_m_s, max_speed_m_s: finger closing speed at rSP = 0 and 255, m/s.
        min_force_n, max_force_n: grip force at rFR = 0 and 255, N.
    """

    stroke_m: float = 0.085
    open_count: int = 0
    closed_count: int = 230
    min_speed_m_s: float = 0.020
    max_speed_m_s: float = 0.150
    min_force_n: float = 20.0
    max_force_n: float = 235.0

    def __post_init__(self) -> None:
        _positive("stroke_m", self.stroke_m)
        for name in ("open_count", "closed_count"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _COUNT_MAX:
                raise ValueError(f"{name}: expected an integer in [0, {_COUNT_MAX}], got {value!r}")
        if self.closed_count <= self.open_count:
            raise ValueError(
                f"closed_count: expected > open_count ({self.open_count}), got {self.closed_count}"
            )
        _positive("min_speed_m_s", self.min_speed_m_s)
        _positive("max_speed_m_s", self.max_speed_m_s)
        if self.max_speed_m_s < self.min_speed_m_s:
            raise ValueError(f"max_speed_m_s: expected >= min_speed_m_s, got {self.max_speed_m_s}")
        _positive("min_force_n", self.min_force_n)
        _positive("max_force_n", self.max_force_n)
        if self.max_force_n < self.min_force_n:
            raise ValueError(f"max_force_n: expected >= min_force_n, got {self.max_force_n}")

    @property
    def metres_per_count(self) -> float:
        """Opening change per position count, m."""
        return self.stroke_m / (self.closed_count - self.open_count)

    def clamp_position(self, count: float) -> float:
        """A position count limited to the mechanical range [open_count, closed_count]."""
        return min(max(float(count), float(self.open_count)), float(self.closed_count))

    def opening_m(self, count: float) -> float:
        """Distance between the pads at a position count, m (clamped to [0, stroke])."""
        return (self.closed_count - self.clamp_position(count)) * self.metres_per_count

    def position_for_opening(self, opening_m: float) -> float:
        """Position count (real-valued, within the mechanical range) for a pad distance, m."""
        if not math.isfinite(opening_m):
            raise ValueError(f"opening_m: expected a finite number, got {opening_m!r}")
        return self.clamp_position(self.closed_count - opening_m / self.metres_per_count)

    def speed_m_s(self, speed_count: int) -> float:
        """Finger speed for an rSP count, m/s."""
        return self.min_speed_m_s + (self.max_speed_m_s - self.min_speed_m_s) * speed_count / _COUNT_MAX

    def speed_counts_per_s(self, speed_count: int) -> float:
        """Finger speed for an rSP count, position counts per second."""
        return self.speed_m_s(speed_count) / self.metres_per_count

    def force_n(self, force_count: int) -> float:
        """Grip force for an rFR count, N."""
        return self.min_force_n + (self.max_force_n - self.min_force_n) * force_count / _COUNT_MAX
