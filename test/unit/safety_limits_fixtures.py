"""SafetyLimits shared by the safety and executor tests of test/unit (not a test module)."""

from __future__ import annotations

from parapush.execution.safety import SafetyLimits


def box_limits(
    centre_m: tuple[float, float] = (0.0, 0.0),
    *,
    half_x_m: float,
    half_y_m: float,
    max_speed_m_s: float,
    max_acceleration_m_s2: float,
    stale_state_timeout_s: float = 0.1,
    command_timeout_s: float = 0.1,
) -> SafetyLimits:
    """Limits whose workspace is the box ``centre_m`` +- (``half_x_m``, ``half_y_m``), table frame, m."""
    return SafetyLimits(
        x_min_m=centre_m[0] - half_x_m,
        x_max_m=centre_m[0] + half_x_m,
        y_min_m=centre_m[1] - half_y_m,
        y_max_m=centre_m[1] + half_y_m,
        max_speed_m_s=max_speed_m_s,
        max_acceleration_m_s2=max_acceleration_m_s2,
        stale_state_timeout_s=stale_state_timeout_s,
        command_timeout_s=command_timeout_s,
    )
