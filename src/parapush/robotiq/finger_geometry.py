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

from parapush.settings import check_settings, setting

_COUNT_MAX = 255


@dataclass(frozen=True)
class FingerGeometry:
    """Calibration of the counts of one 2F-85 (each field's meaning, unit and range: its :func:`setting`)."""

    stroke_m: float = setting(0.085, "distance between the pads when fully open", unit="m", above=0.0)
    open_count: int = setting(0, "position count when fully open", minimum=0, maximum=_COUNT_MAX)
    closed_count: int = setting(
        230, "position count at the mechanical closed limit (0 m opening)", minimum=0, maximum=_COUNT_MAX
    )
    min_speed_m_s: float = setting(0.020, "finger closing speed at rSP = 0", unit="m/s", above=0.0)
    max_speed_m_s: float = setting(0.150, "finger closing speed at rSP = 255", unit="m/s", above=0.0)
    min_force_n: float = setting(20.0, "grip force at rFR = 0", unit="N", above=0.0)
    max_force_n: float = setting(235.0, "grip force at rFR = 255", unit="N", above=0.0)

    def __post_init__(self) -> None:
        check_settings(self)
        if self.closed_count <= self.open_count:
            raise ValueError(
                f"closed_count: expected > open_count ({self.open_count}), got {self.closed_count}"
            )
        if self.max_speed_m_s < self.min_speed_m_s:
            raise ValueError(f"max_speed_m_s: expected >= min_speed_m_s, got {self.max_speed_m_s}")
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
