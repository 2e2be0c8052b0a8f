"""Checks of what reaches the executor: a control sequence (refused with a reason,
:class:`~parapush.execution.control_refusal.ControlsRefused`, or its controls and start time)
and the time a pusher estimate was measured at (ROS-free).

Times: the executor runs on ``time.monotonic()``; messages are stamped on the ROS clock. A
stamp is converted with the two clocks' readings taken at receipt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from parapush.execution.commands import PlanarControl
from parapush.execution.control_refusal import ControlsRefused
from parapush.execution.execution_settings import ExecutionSettings


def check_controls(
    controls: Sequence[tuple[float, float, float]],
    *,
    frame_id: str,
    stamp_s: float,
    ros_now_s: float,
    monotonic_now_s: float,
    settings: ExecutionSettings,
) -> tuple[list[PlanarControl], float | None]:
    """The controls of a non-empty sequence and when the first one starts.

    Args:
        controls: (vx m/s, vy m/s, duration s) of each control, table frame.
        frame_id: the sequence's frame ("" is taken as the table frame).
        stamp_s: its stamp on the ROS clock, s (0: start at the next tick).
        ros_now_s, monotonic_now_s: the ROS clock and ``time.monotonic()`` now, s.
        settings: the table frame and the limits on count, duration, age and start delay.

    Returns:
        (controls, start time on ``time.monotonic()``, or None: at the next tick).

    Raises:
        ControlsRefused: wrong frame, too many controls, an invalid control, a stale plan or
            a start too far in the future.
    """
    if frame_id and frame_id != settings.table_frame:
        raise ControlsRefused(
            "wrong_frame", f"header.frame_id {frame_id!r}: controls must be in {settings.table_frame!r}"
        )
    if len(controls) > settings.max_controls:
        raise ControlsRefused(
            "too_many_controls", f"{len(controls)} controls, at most {settings.max_controls} per message"
        )
    checked = []
    for index, values in enumerate(controls):
        vx, vy, duration = values
        if not all(math.isfinite(value) for value in values):
            raise ControlsRefused("invalid_control", f"controls[{index}]: non-finite value in {tuple(values)}")
        if duration <= 0.0:
            raise ControlsRefused("invalid_control", f"controls[{index}].duration: must be > 0, got {duration}")
        if duration > settings.max_control_duration:
            raise ControlsRefused(
                "invalid_control",
                f"controls[{index}].duration: {duration} s is longer than "
                f"max_control_duration ({settings.max_control_duration} s)",
            )
        checked.append(PlanarControl(float(vx), float(vy), float(duration)))
    if stamp_s == 0.0:
        return checked, None
    offset = stamp_s - ros_now_s  # > 0: in the future
    age_limit = settings.max_control_age
    if age_limit > 0.0 and -offset > age_limit:
        raise ControlsRefused(
            "stale_plan",
            f"stamped {-offset:.3f} s ago (max_control_age {age_limit} s): stale plan, "
            "or the planner's clock disagrees with this node's",
        )
    if offset > settings.max_start_delay:
        raise ControlsRefused(
            "start_too_late", f"stamped {offset:.3f} s in the future (max_start_delay {settings.max_start_delay} s)"
        )
    if offset <= 0.0:
        return checked, None  # due now: start at the next tick, with the full durations
    return checked, monotonic_now_s + offset


def measurement_time(*, stamp_s: float, ros_now_s: float, monotonic_now_s: float, valid: bool, age_s: float) -> float:
    """When a pusher estimate was measured, on ``time.monotonic()``, s: its ROS stamp moved to
    the monotonic clock, and backdated by the estimator's ``age_s`` (time since the body's last
    valid observation) when valid, so estimator latency, transport latency and a dead
    estimator all age it."""
    measured = monotonic_now_s - (ros_now_s - stamp_s)
    if valid and math.isfinite(age_s) and age_s > 0.0:
        measured = min(measured, monotonic_now_s - age_s)
    return measured


__all__ = ["check_controls", "measurement_time"]
