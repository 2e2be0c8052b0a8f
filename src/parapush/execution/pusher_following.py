"""Does the pusher follow the commanded motion? Detects a dropped pusher, an arm that stopped
following its twist commands (protective stop, a dead driver link) or a blocked pusher, from
what the estimator observes against what the executor commanded (ROS-free).

Commanded displacement: each published command's table-frame velocity is held until the next
command, at most ``command_hold_s`` (the arm's own command timeout; it halts after that), so
the commanded displacement up to time t is a piecewise-linear function X(t) and its path length
S(t) = integral |v| dt a non-decreasing one. The executor's safety filter already limits the
commanded acceleration, so a healthy arm follows X up to its latency.

Judgement at each valid estimate (position p2 measured at t2, on the executor's clock): the
window starts at the latest earlier estimate (p1, t1) such that the commanded path over
[t1 - d, t2 - d] (d = ``actuation_delay``: command to measured motion) is at least
``min_displacement``, within ``max_window`` of t2. With C = X(t2 - d) - X(t1 - d), the pusher
does not follow when it moved less than ``min_fraction`` |C| along C:
(p2 - p1) . C / |C| < min_fraction |C|, for every assumed delay d, d/2 and 0: d is the
longest delay tolerated, and an arm quicker than that (the simulated one stops within ~15 ms)
would otherwise be judged, at a stop command, against motion it was never asked to make
(the stack's bench latched "commanded 20.0 mm, moved 4.6 mm in 0.27 s" with the sim
profile's d = 0.2 s when a control queue ran out after a late plan). Slower motion (less path
than ``min_displacement`` in ``max_window``) and motion back and forth (|C| below half of it) are not judged. An invalid
estimate, or estimates further apart than ``max_estimate_gap`` (a stalled estimator or
simulator), restart the window: nothing is concluded across a gap.

Detection time after the pusher stops following at speed v: the window spans about
``min_displacement`` / v, and the pusher fails the test once more than (1 - ``min_fraction``) of
it lies after the fault, i.e. about (1 - min_fraction) min_displacement / v + d + the estimate
latency: ~0.15 s at 0.05 m/s with the defaults, well within one MPC control (1 s).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from parapush.settings import check_settings, setting


@dataclass(frozen=True)
class FollowingSettings:
    """The pusher-follows-the-commands check (see the module docstring)."""

    enabled: bool = setting(True, "stop (latched) when the pusher does not follow the commanded motion")
    min_displacement: float = setting(
        0.01, "a window is judged once the commanded path over it reaches this", unit="m", minimum=1e-4, maximum=1.0
    )
    min_fraction: float = setting(
        0.5, "the pusher must move at least this fraction of the commanded displacement along it",
        minimum=0.01, maximum=0.99,
    )
    max_window: float = setting(1.0, "longest window judged (slower commanded motion is not judged)", unit="s",
                                minimum=0.05, maximum=60.0)
    actuation_delay: float = setting(
        0.05, "longest time from a command to the pusher's measured motion (arm controller, network); "
        "the motion is also judged at half and no delay, and follows if it does at any", unit="s",
        minimum=0.0, maximum=1.0,
    )
    max_estimate_gap: float = setting(0.15, "pusher estimates further apart restart the window", unit="s",
                                      minimum=0.001, maximum=10.0)

    def __post_init__(self) -> None:
        check_settings(self)


class PusherFollowingCheck:
    """Commanded vs measured pusher displacement over a sliding window; not thread-safe (the
    executor calls it under its lock).

    Args:
        settings: thresholds and window.
        command_hold_s: how long the arm holds a command without a newer one, s (its timeout).
    """

    def __init__(self, settings: FollowingSettings, *, command_hold_s: float) -> None:
        if not isinstance(settings, FollowingSettings):
            raise ValueError(f"settings: expected FollowingSettings, got {settings!r}")
        if not (math.isfinite(command_hold_s) and command_hold_s > 0.0):
            raise ValueError(f"command_hold_s: expected a finite time > 0, got {command_hold_s!r}")
        self.settings = settings
        self._hold = float(command_hold_s)
        # Commands: time, velocity (vx, vy), and X, S at that time.
        self._command_times: list[float] = []
        self._commands: list[tuple[float, float, float, float, float]] = []  # vx, vy, X x, X y, S
        # Valid estimates since the last restart: measurement time and position.
        self._stamps: list[float] = []
        self._positions: list[tuple[float, float]] = []

    def clear(self) -> None:
        """Forget everything (after a stop: nothing before it is judged)."""
        self._command_times.clear()
        self._commands.clear()
        self._stamps.clear()
        self._positions.clear()

    # -- inputs ------------------------------------------------------------------------------------
    def command(self, time_s: float, velocity: Sequence[float]) -> None:
        """A command sent at ``time_s`` (s, the estimates' clock): table-frame velocity (2,), m/s."""
        if self._command_times and time_s < self._command_times[-1]:
            return  # out of order: ignored
        x, y, path = self._integral(time_s)
        self._command_times.append(float(time_s))
        self._commands.append((float(velocity[0]), float(velocity[1]), x, y, path))

    def observe(self, position_m: Sequence[float], *, stamp_s: float, valid: bool) -> str | None:
        """A pusher estimate (table frame, m) measured at ``stamp_s``; returns why the pusher does
        not follow (then everything is forgotten), or None."""
        if not valid or not math.isfinite(stamp_s):
            self._stamps.clear()
            self._positions.clear()
            return None
        if self._stamps and stamp_s <= self._stamps[-1]:
            return None  # not newer: nothing to judge
        if self._stamps and stamp_s - self._stamps[-1] > self.settings.max_estimate_gap:
            self._stamps.clear()
            self._positions.clear()
        self._stamps.append(float(stamp_s))
        self._positions.append((float(position_m[0]), float(position_m[1])))
        self._forget_before(stamp_s - self.settings.max_window)
        problem = self._judge()
        if problem is not None:
            self.clear()
        return problem

    # -- internals ---------------------------------------------------------------------------------
    def _integral(self, time_s: float) -> tuple[float, float, float]:
        """X(t) (x, y) and S(t), m; constant before the first command."""
        index = bisect.bisect_right(self._command_times, time_s) - 1
        if index < 0:
            return (self._commands[0][2], self._commands[0][3], self._commands[0][4]) if self._commands else (
                0.0, 0.0, 0.0)
        vx, vy, x, y, path = self._commands[index]
        held = min(max(time_s - self._command_times[index], 0.0), self._hold)
        return x + vx * held, y + vy * held, path + math.hypot(vx, vy) * held

    def _judge(self) -> str | None:
        """Why the pusher does not follow, judged at delays 0, d/2 and d: it follows when it does
        at any of them (an arm quicker than d, stopping at a stop command, is not at fault)."""
        delay = self.settings.actuation_delay
        problem = None
        for assumed in dict.fromkeys((delay, 0.5 * delay, 0.0)):
            problem = self._judge_at(assumed)
            if problem is None:
                return None
        return problem

    def _judge_at(self, delay: float) -> str | None:
        settings = self.settings
        end_x, end_y, end_path = self._integral(self._stamps[-1] - delay)
        wanted = end_path - settings.min_displacement
        # The latest estimate i with S(t_i - d) <= wanted (S is non-decreasing in i).
        low, high = 0, len(self._stamps) - 1
        if self._integral(self._stamps[0] - delay)[2] > wanted:
            return None  # not enough commanded motion in the window yet
        while high - low > 1:
            middle = (low + high) // 2
            if self._integral(self._stamps[middle] - delay)[2] <= wanted:
                low = middle
            else:
                high = middle
        start_x, start_y, _ = self._integral(self._stamps[low] - delay)
        commanded_x, commanded_y = end_x - start_x, end_y - start_y
        commanded = math.hypot(commanded_x, commanded_y)
        if commanded < 0.5 * settings.min_displacement:
            return None  # back and forth: not judged
        (x1, y1), (x2, y2) = self._positions[low], self._positions[-1]
        moved = ((x2 - x1) * commanded_x + (y2 - y1) * commanded_y) / commanded
        if moved >= settings.min_fraction * commanded:
            return None
        return (
            f"pusher does not follow the commanded motion: commanded {commanded * 1e3:.1f} mm, moved "
            f"{moved * 1e3:.1f} mm along it in {self._stamps[-1] - self._stamps[low]:.2f} s (dropped pusher, "
            "arm fault or blocked pusher)"
        )

    def _forget_before(self, time_s: float) -> None:
        """Drop estimates older than ``time_s`` and the commands no window can reach any more."""
        first = bisect.bisect_left(self._stamps, time_s)
        if first:
            del self._stamps[:first]
            del self._positions[:first]
        oldest = self._stamps[0] - self.settings.actuation_delay - self._hold
        keep_from = bisect.bisect_right(self._command_times, oldest) - 1  # the command in effect then
        if keep_from > 64:  # in batches: cheap amortized
            del self._command_times[:keep_from]
            del self._commands[:keep_from]


__all__ = ["FollowingSettings", "PusherFollowingCheck"]
