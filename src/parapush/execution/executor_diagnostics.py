"""The executor's counters and its two diagnostics statuses (velocity commands, gripper) as
plain data (:class:`~parapush.reporting.diagnostic_report.DiagnosticReport`), ROS-free."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from parapush.execution.gripper_monitor import GripperSnapshot
from parapush.execution.safety import SafetyReason
from parapush.reporting.diagnostic_report import DiagnosticLevel, DiagnosticReport

#: The event counters always shown (0 until counted), in display order.
EVENT_KEYS = (
    "commands_sent",
    "zero_commands_sent",
    "control_messages",
    "controls_accepted",
    "controls_replaced",
    "controls_aborted",
    "stop_requests",
    "watchdog_stops",
    "late_ticks",
)


@dataclass(frozen=True)
class CountsSnapshot:
    """Copies of :class:`ExecutorCounters`' counters: events, safety limits by reason value,
    refused control sequences by reason."""

    events: dict[str, int]
    limits: dict[str, int]
    refusals: dict[str, int]


class ExecutorCounters:
    """Thread-safe counters of the executor (its threads and callbacks all count)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: Counter[str] = Counter()
        self._limits: Counter[str] = Counter()
        self._refusals: Counter[str] = Counter()

    def count(self, key: str, amount: int = 1) -> None:
        """Count an event (``latched_stops.<source>`` keys are shown as they come)."""
        with self._lock:
            self._events[key] += amount

    def count_limit(self, reason: SafetyReason) -> None:
        with self._lock:
            self._limits[reason.value] += 1

    def count_refusal(self, reason: str) -> None:
        with self._lock:
            self._refusals[reason] += 1

    def snapshot(self) -> CountsSnapshot:
        with self._lock:
            return CountsSnapshot(dict(self._events), dict(self._limits), dict(self._refusals))


def executor_report(
    node_name: str,
    *,
    base_frame: str,
    counts: CountsSnapshot,
    stop_latched: bool,
    latch_reason: str,
    controls_queued: int,
    state_age_s: float,
    stale_state_timeout_s: float,
) -> DiagnosticReport:
    """The velocity-commands status: ERROR while a stop is latched, WARN while the pusher
    estimate is stale or missing, else OK; every counter."""
    if stop_latched:
        level, message = DiagnosticLevel.ERROR, f"stop latched: {latch_reason}"
    elif not state_age_s <= stale_state_timeout_s:
        level, message = DiagnosticLevel.WARN, "pusher estimate stale or missing: motion refused"
    else:
        level, message = DiagnosticLevel.OK, "ready"
    events = counts.events
    values: dict[str, object] = {"stop_latched": stop_latched, "latch_reason": latch_reason}
    values.update({key: events.get(key, 0) for key in EVENT_KEYS})
    values.update(
        controls_queued=controls_queued,
        states_received=events.get("states_received", 0),
        states_rejected=events.get("states_rejected", 0),
        state_age_s=f"{state_age_s:.4f}",
    )
    values.update({key: value for key, value in events.items() if key.startswith("latched_stops.")})
    values.update({f"limit.{reason.value}": counts.limits.get(reason.value, 0) for reason in SafetyReason})
    values.update({f"refused.{reason}": count for reason, count in counts.refusals.items()})
    return DiagnosticReport.of(f"{node_name}: velocity commands", level, message, base_frame, values)


def latched_stop_reason(status: Any) -> str | None:
    """What :func:`executor_report` says once published: the reason (the status's message) while
    the executor holds a latched stop, else None.

    Args:
        status: the velocity-commands status as received (a ``diagnostic_msgs/DiagnosticStatus``,
            or anything with its ``message`` and ``values`` of ``key``/``value`` strings).
    """
    latched = any(value.key == "stop_latched" and value.value == "True" for value in status.values)
    return status.message if latched else None


def gripper_report(node_name: str, snapshot: GripperSnapshot | None) -> DiagnosticReport:
    """The gripper status (``snapshot`` None: no gripper): ERROR with its problem, else OK."""
    name = f"{node_name}: gripper"
    if snapshot is None:
        return DiagnosticReport(name, DiagnosticLevel.OK, "disabled", "none")
    if snapshot.problem is not None:
        level, message = DiagnosticLevel.ERROR, snapshot.problem
    else:
        level, message = DiagnosticLevel.OK, "tool held"
    status = snapshot.status
    values = {
        "status": status.describe() if status is not None else "unknown",
        "object_detected": status is not None and status.object_detected,
        "fault": f"0x{status.fault:02X}" if status is not None else "unknown",
        "last_answer_age_s": f"{snapshot.last_answer_age_s:.4f}",
        "polls": snapshot.polls,
        "failed_polls": snapshot.failed_polls,
        "grasp_width_m": f"{snapshot.grasp_width_m:.4f}",
    }
    return DiagnosticReport.of(name, level, message, snapshot.endpoint, values)


__all__ = ["EVENT_KEYS", "CountsSnapshot", "ExecutorCounters", "executor_report", "gripper_report"]
