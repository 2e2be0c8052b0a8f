"""The executor's control logic around :class:`~parapush.execution.velocity_executor.VelocityExecutor`
(ROS-free): the command clock, aborts, stops (halted or latched), refusals, counting and
throttled logging of every safety action. The executor node feeds it messages and gives it a
``publish`` callback for the commands.

Threads: the command clock runs in its own thread (:meth:`ExecutorControl.run_commands`);
controls, states, the watchdog, the services and the gripper monitor call in from others.
Everything that changes the output happens under one lock, so a latched stop is never
overtaken by a command.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence

from parapush.execution.command_stream import StreamPhase
from parapush.execution.commands import PlanarControl, TwistCommand
from parapush.execution.control_refusal import ControlsRefused
from parapush.execution.executor_diagnostics import ExecutorCounters, executor_report
from parapush.execution.pusher_following import FollowingSettings, PusherFollowingCheck
from parapush.execution.safety import SafetyReason
from parapush.execution.throttled_log import ThrottledLog
from parapush.execution.velocity_executor import ExecutorSettings, ExecutorStep, VelocityExecutor
from parapush.reporting.diagnostic_report import DiagnosticReport

#: Reasons that abort the running control (the stream would otherwise resume it later).
ABORTING_REASONS = frozenset(
    {
        SafetyReason.STATE_MISSING,
        SafetyReason.STATE_INVALID,
        SafetyReason.STATE_STALE,
        SafetyReason.INVALID_COMMAND,
        SafetyReason.CLOCK_ERROR,
    }
)
_INFO_REASONS = frozenset({SafetyReason.ACCELERATION_LIMITED})


class ExecutorControl:
    """Args:
    settings: the core's settings.
    publish: sends one command (called with the output lock held).
    log: the throttled log (key, severity, message).
    following: the pusher-follows-the-commands check (None or disabled: none).
    """

    def __init__(
        self, settings: ExecutorSettings, publish: Callable[[TwistCommand], None], log: ThrottledLog,
        following: FollowingSettings | None = None,
    ) -> None:
        self.core = VelocityExecutor(settings)
        self.following = (
            PusherFollowingCheck(following, command_hold_s=settings.limits.command_timeout_s)
            if following is not None and following.enabled else None
        )
        self.counters = ExecutorCounters()
        self.lock = threading.Lock()
        self._publish_command = publish
        self._log = log
        self.latch_reason = ""
        self.last_nonzero_publish = -math.inf  # time.monotonic()
        self.last_state_stamp = -math.inf
        self.closed = False
        self._stop_commands = threading.Event()

    # -- output (lock held) ----------------------------------------------------------------------
    def publish(self, step: ExecutorStep) -> None:
        """Send one step's command and count it (lock held)."""
        command = step.command
        self._publish_command(command)
        if self.following is not None:
            self.following.command(command.stamp_s, step.safe.velocity)
        self.counters.count("commands_sent")
        if command.is_zero:
            self.counters.count("zero_commands_sent")
        else:
            self.last_nonzero_publish = time.monotonic()

    def _emit(self, step: ExecutorStep, *, moving_before: bool) -> None:
        """Publish a step if it asks to; count and log its safety actions when they mattered."""
        if step.publish:
            self.publish(step)
        wanted_motion = step.sample is not None and step.sample.phase is StreamPhase.ACTIVE
        if not (wanted_motion or moving_before or step.sample is None):
            return  # e.g. "no estimate yet" while idle: nothing was limited or refused
        for action in step.safe.actions:
            reason = action.reason
            self.counters.count_limit(reason)
            severity = "info" if reason in _INFO_REASONS else "warning"
            self._log(f"limit:{reason.value}", severity, f"[{reason.value}] {action.message}")

    def halt(self, message: str) -> None:
        """Stop now without latching: exact zero at once, queue dropped (lock held)."""
        if self.core.stop_latched:
            return  # already commanding zero
        step = self.core.stop(message)
        self.core.reset()
        if step.publish:
            self.publish(step)

    # -- the command clock -----------------------------------------------------------------------
    def run_commands(self, keep_going: Callable[[], bool]) -> None:
        """One tick every period on absolute deadlines (a late tick is not made up), until
        :meth:`stop_commands`; a failing tick is logged unless ``keep_going()`` is False (then it returns)."""
        period = self.core.settings.stream.period_s
        deadline = time.monotonic()
        while not self._stop_commands.is_set():
            try:
                self.tick()
            except Exception as error:  # noqa: BLE001 - keep commanding; the watchdog covers a stall
                if not keep_going():
                    return
                self._log("tick_error", "error", f"command tick failed: {type(error).__name__}: {error}")
            deadline += period
            now = time.monotonic()
            if deadline <= now:  # late: stay on the grid, skip the missed ticks
                self.counters.count("late_ticks")
                deadline += math.ceil((now - deadline) / period) * period
            self._stop_commands.wait(deadline - now)

    def stop_commands(self) -> None:
        self._stop_commands.set()

    def tick(self) -> None:
        """One command; a control stopped by a stale/invalid state or a bad command is aborted."""
        with self.lock:
            if self.closed:
                return
            moving_before = bool(self.core.safety_filter.last_velocity.any())
            step = self.core.step()
            self._emit(step, moving_before=moving_before)
            sample = step.sample
            if step.safe.stopped and sample is not None and sample.phase is StreamPhase.ACTIVE:
                reasons = [a for a in step.safe.actions if a.reason in ABORTING_REASONS]
                if reasons:
                    dropped = self.core.replace([])
                    self.counters.count("controls_aborted", dropped)
                    text = "; ".join(f"[{a.reason.value}] {a.message}" for a in reasons)
                    self._log("abort", "error", f"control aborted, {dropped} queued control(s) dropped: {text}")

    def watchdog(self) -> None:
        """Zero when the command stream stalled while moving (from an independent timer)."""
        with self.lock:
            if self.closed:
                return
            step = self.core.watchdog()
            if step is not None:
                self.counters.count("watchdog_stops")
                self._emit(step, moving_before=True)

    # -- inputs ----------------------------------------------------------------------------------
    def latch(self, message: str, *, source: str) -> bool:
        """Latch a stop (zero until :meth:`reset`); False when closed."""
        with self.lock:
            if self.closed:
                return False
            step = self.core.stop(message)
            if self.following is not None:
                self.following.clear()
            self.latch_reason = f"{source}: {message}"
            self.counters.count(f"latched_stops.{source}")
            if step.publish:
                self.publish(step)
        return True

    def stop_requested(self) -> bool:
        """An empty control sequence: halt; False when closed."""
        with self.lock:
            if self.closed:
                return False
            self.counters.count("stop_requests")
            self.halt("empty ControlSequence: stop requested")
        return True

    def accept(self, controls: Sequence[PlanarControl], start_time_s: float | None, *, replace: bool) -> None:
        """Queue checked controls (replacing the queue or appended).

        Raises:
            ControlsRefused: ``stop_latched`` while a stop is latched.
        """
        with self.lock:
            if self.closed:
                return
            if self.core.stop_latched:
                raise ControlsRefused("stop_latched", f"a stop is latched ({self.latch_reason}); call ~/reset first")
            if replace:
                self.counters.count("controls_replaced", self.core.replace(controls, start_time_s=start_time_s))
            else:
                self.core.enqueue(controls, start_time_s=start_time_s)
            self.counters.count("controls_accepted", len(controls))

    def refuse(self, refused: ControlsRefused, *, stop: bool = True) -> None:
        """Count a refused sequence, halt (the plan it was to replace is not continued) unless
        ``stop`` is False (a message from another node: this stack's plan goes on), log."""
        self.counters.count_refusal(refused.reason)
        if stop:
            with self.lock:
                if not self.closed:
                    self.halt(f"ControlSequence refused: {refused.message}")
        self._log(f"refused:{refused.reason}", "error", f"ControlSequence refused [{refused.reason}]: "
                  f"{refused.message}; " + ("pusher stopped" if stop else "ignored"))

    def update_state(self, position_m: tuple[float, float], *, stamp_s: float, valid: bool) -> str | None:
        """A pusher estimate measured at ``stamp_s`` (``time.monotonic()``); returns why the
        pusher does not follow the commanded motion (the caller latches a stop), or None."""
        self.last_state_stamp = stamp_s
        self.counters.count("states_received")
        self.core.update_pusher(position_m, stamp_s=stamp_s, valid=valid)
        if self.following is None:
            return None
        with self.lock:
            if self.closed or self.core.stop_latched:
                return None
            return self.following.observe(position_m, stamp_s=stamp_s, valid=valid)

    def reject_state(self, key: str, message: str) -> None:
        """Count and log (throttled per ``key``) a pusher estimate that cannot be used."""
        self.counters.count("states_rejected")
        self._log(key, "error", message)

    def reset(self, blocker: Callable[[], str | None]) -> tuple[bool, str]:
        """Clear a latched stop unless ``blocker()`` (called under the lock, which the gripper
        monitor's latches take too) names a reason. Returns (success, message)."""
        with self.lock:
            problem = blocker()
            if problem is None:
                latched = self.core.reset()
                if self.following is not None:
                    self.following.clear()
                reason, self.latch_reason = self.latch_reason, ""
        if problem is not None:
            return False, f"reset refused: {problem}"
        if latched:
            return True, f"stop cleared ({reason}); waiting for the next control"
        return True, "no stop was latched"

    def close_output(self, message: str) -> bool:
        """Stop, publish a last zero (its failure is re-raised after closing), close; False if closed already."""
        with self.lock:
            if self.closed:
                return False
            self.closed = True
            step = self.core.stop(message)
            self.publish(step)
        return True

    def report(self, node_name: str, base_frame: str) -> DiagnosticReport:
        with self.lock:
            latch_reason = self.latch_reason
        return executor_report(
            node_name,
            base_frame=base_frame,
            counts=self.counters.snapshot(),
            stop_latched=self.core.stop_latched,
            latch_reason=latch_reason,
            controls_queued=self.core.stream.queued,
            state_age_s=time.monotonic() - self.last_state_stamp,
            stale_state_timeout_s=self.core.settings.limits.stale_state_timeout_s,
        )


__all__ = ["ABORTING_REASONS", "ExecutorControl"]
