"""Hard safety limits on the pusher velocity commands, applied to every emitted command.

Everything is in the table frame (where the workspace box and the pusher estimate live); the
command stream rotates the result into the base frame afterwards, which preserves speeds and
accelerations.

What :meth:`SafetyFilter.filter` does, in order (each intervention is reported as a
:class:`SafetyAction` with a machine-readable :class:`SafetyReason` and a message for the log):

1. **Stops** (output exactly zero at once, deliberately *not* rate-limited: a stop is always
   allowed): a latched stop (:meth:`SafetyFilter.latch_stop`, cleared only by
   :meth:`SafetyFilter.reset`); no pusher estimate, an invalid one, or one older than
   ``stale_state_timeout_s`` (or stamped that far in the future: the clocks disagree); a
   non-finite desired velocity; the clock going backwards.
2. **Speed**: a desired velocity faster than ``max_speed_m_s`` is scaled down to it (direction
   kept).
3. **Workspace** (the box ``[x_min, x_max] x [y_min, y_max]`` for the pusher centre): per axis,
   the component towards a wall is clamped so that the pusher can still stop before the wall
   under the deceleration limit (discrete braking envelope, :mod:`parapush.execution.braking`,
   with ``max_acceleration / sqrt(2)`` per axis so both axes can brake at once); in particular
   one period at the command never crosses the wall. Components pointing back inside are always
   allowed, so a pusher found outside the box (``OUTSIDE_WORKSPACE``) can only move back in. The
   envelope uses the worse of the measured position and the position predicted from the
   commands emitted since the measurement's stamp (latency compensation).
4. **Acceleration**: the change from the previous command is limited to
   ``max_acceleration_m_s2 * period``: the output moves from the previous command (first braked
   into the workspace envelope) towards the target as far as the limit allows.
   If braking into the envelope alone needs more than the limit (only possible when the pusher
   estimate jumps, not when the pusher follows the commands), the workspace wins:
   ``WORKSPACE_BRAKE`` reports the exceeded deceleration.
5. **Command gap**: if no command went through the filter for more than ``command_timeout_s``,
   the arm is assumed stopped (the velocity interface, e.g. MoveIt Servo, must time out no later
   than this) and the ramp restarts from zero (``COMMAND_GAP``).

The watchdog (:meth:`SafetyFilter.watchdog`, called from an independent timer) returns a zero
command when commands stopped arriving for ``command_timeout_s`` or the estimate went stale
while the last command was non-zero.

Guarantees (property-tested): every output is within the speed limit; the pusher position
advanced by one period at the output stays in the box (or the output points back inside); every
change between consecutive outputs is within the acceleration limit except at stops and
``WORKSPACE_BRAKE``; stale or missing state gives exactly zero.
"""

from __future__ import annotations

import bisect
import enum
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from parapush.execution.braking import max_speed_within
from parapush.read_only import ReadOnly
from parapush.settings import check_settings, setting
from parapush.validation import check_real

_WALL_MARGIN_M = 1e-9
"""Distance kept from the walls so float rounding never lands exactly on or past them, m."""
_RELATIVE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class SafetyLimits:
    """Hard limits of the executor (each setting's meaning, unit and range: its :func:`setting`).

    Attributes:
        x_min_m, x_max_m, y_min_m, y_max_m: workspace box of the pusher centre, table frame, m.
    """

    # Not settings: the box has no default (every caller gives its cell's; a setting has a default),
    # so these four stay required fields, checked below.
    x_min_m: float
    x_max_m: float
    y_min_m: float
    y_max_m: float
    max_speed_m_s: float = setting(0.2, "pusher speed limit", unit="m/s", above=0.0)
    max_acceleration_m_s2: float = setting(
        1.0, "limit on the change of the commanded velocity", unit="m/s^2", above=0.0
    )
    stale_state_timeout_s: float = setting(0.1, "an estimate older than this stops the pusher", unit="s", above=0.0)
    command_timeout_s: float = setting(0.1, "commands further apart than this count as stopped", unit="s", above=0.0)

    def __post_init__(self) -> None:
        for name in ("x_min_m", "x_max_m", "y_min_m", "y_max_m"):
            check_real(name, getattr(self, name))
        if self.x_max_m <= self.x_min_m:
            raise ValueError(f"x_max_m: expected > x_min_m ({self.x_min_m}), got {self.x_max_m}")
        if self.y_max_m <= self.y_min_m:
            raise ValueError(f"y_max_m: expected > y_min_m ({self.y_min_m}), got {self.y_max_m}")
        check_settings(self)

    def contains(self, position_m: Sequence[float]) -> bool:
        """Whether a (2,) table-frame position (m) is inside the workspace box (boundary included)."""
        x, y = float(position_m[0]), float(position_m[1])
        return self.x_min_m <= x <= self.x_max_m and self.y_min_m <= y <= self.y_max_m


class SafetyReason(str, enum.Enum):
    """Machine-readable reasons of :class:`SafetyAction` (the values are stable strings)."""

    STOP_LATCHED = "stop_latched"
    STATE_MISSING = "state_missing"
    STATE_INVALID = "state_invalid"
    STATE_STALE = "state_stale"
    INVALID_COMMAND = "invalid_command"
    CLOCK_ERROR = "clock_error"
    COMMAND_TIMEOUT = "command_timeout"
    COMMAND_GAP = "command_gap"
    OUTSIDE_WORKSPACE = "outside_workspace"
    SPEED_LIMITED = "speed_limited"
    WORKSPACE_LIMITED = "workspace_limited"
    ACCELERATION_LIMITED = "acceleration_limited"
    WORKSPACE_BRAKE = "workspace_brake"

    @property
    def stops(self) -> bool:
        """Whether this reason forces a zero command."""
        return self in _STOP_REASONS


_STOP_REASONS = frozenset(
    {
        SafetyReason.STOP_LATCHED,
        SafetyReason.STATE_MISSING,
        SafetyReason.STATE_INVALID,
        SafetyReason.STATE_STALE,
        SafetyReason.INVALID_COMMAND,
        SafetyReason.CLOCK_ERROR,
        SafetyReason.COMMAND_TIMEOUT,
    }
)


@dataclass(frozen=True)
class SafetyAction:
    """One refusal or limiting action: ``reason`` for programs, ``message`` for people."""

    reason: SafetyReason
    message: str


@dataclass(frozen=True, eq=False)
class SafeVelocity:
    """The filter's output.

    Attributes:
        velocity: (2,) pusher velocity command in the table frame, m/s (read-only).
        actions: what the filter did, in order; empty when the desired velocity passed unchanged.
        stopped: the output is a stop (zero) forced by a stop reason.
    """

    velocity: np.ndarray
    actions: tuple[SafetyAction, ...] = ()
    stopped: bool = False

    @property
    def reasons(self) -> tuple[SafetyReason, ...]:
        return tuple(action.reason for action in self.actions)

    @property
    def modified(self) -> bool:
        return bool(self.actions)


@dataclass(frozen=True)
class _PusherEstimate:
    x: float
    y: float
    stamp_s: float
    valid: bool
    problem: str


def _velocity_array(vx: float, vy: float) -> np.ndarray:
    array = np.array([vx, vy], dtype=np.float64)
    array.setflags(write=False)
    return array


class SafetyFilter:
    """Applies :class:`SafetyLimits` to every command; thread-safe. See the module docstring.

    Args:
        limits: the limits.
        command_period_s: time each command holds (the command stream's period), s.
    """

    def __init__(self, limits: SafetyLimits, *, command_period_s: float) -> None:
        if not isinstance(limits, SafetyLimits):
            raise ValueError(f"limits: expected SafetyLimits, got {limits!r}")
        check_real("command_period_s", command_period_s)
        if command_period_s <= 0:
            raise ValueError(f"command_period_s: expected > 0, got {command_period_s!r}")
        if 2.0 * command_period_s > limits.command_timeout_s:
            raise ValueError(
                f"command_period_s: {command_period_s} s is more than half of command_timeout_s "
                f"({limits.command_timeout_s} s): timer jitter would count as a command gap"
            )
        self._limits = limits
        self._period = float(command_period_s)
        self._velocity_step = limits.max_acceleration_m_s2 * self._period
        self._axis_deceleration = limits.max_acceleration_m_s2 / math.sqrt(2.0)
        self._lock = threading.Lock()
        self._previous = (0.0, 0.0)
        self._last_time: float | None = None
        self._estimate: _PusherEstimate | None = None
        self._latched_message: str | None = None
        # Emission history for latency compensation: times, cumulative displacement, velocity.
        self._history_times: list[float] = []
        self._history_displacement: list[tuple[float, float]] = []
        self._history_velocity: list[tuple[float, float]] = []

    limits: ReadOnly[SafetyLimits] = ReadOnly("_limits")

    command_period_s: ReadOnly[float] = ReadOnly("_period")

    @property
    def last_velocity(self) -> np.ndarray:
        """The last emitted (2,) velocity, m/s."""
        with self._lock:
            return _velocity_array(*self._previous)

    @property
    def stop_latched(self) -> bool:
        with self._lock:
            return self._latched_message is not None

    # -- inputs --------------------------------------------------------------------------
    def update_pusher(self, position_m: Sequence[float], *, stamp_s: float, valid: bool = True) -> None:
        """The latest pusher estimate: (2,) table-frame position (m) measured at ``stamp_s`` (s).

        Non-finite values or ``valid=False`` make the filter stop until a valid estimate comes.
        """
        if len(position_m) != 2:
            raise ValueError(f"position_m: expected 2 coordinates, got {len(position_m)}")
        x, y, stamp = float(position_m[0]), float(position_m[1]), float(stamp_s)
        problem = ""
        if not valid:
            problem = "the estimator marks the pusher invalid (not tracked)"
        elif not (math.isfinite(x) and math.isfinite(y) and math.isfinite(stamp)):
            problem = f"non-finite pusher estimate ({x}, {y}) at stamp {stamp}"
        estimate = _PusherEstimate(x, y, stamp, not problem, problem)
        with self._lock:
            self._estimate = estimate

    def latch_stop(self, message: str, *, now_s: float) -> SafeVelocity:
        """Latch a stop (e.g. the stop service): zero until :meth:`reset`. Returns the zero command."""
        text = message or "stop requested"
        with self._lock:
            self._latched_message = text
            self._emit(self._ordered_time(float(now_s)), 0.0, 0.0)
            return SafeVelocity(
                _velocity_array(0.0, 0.0),
                (SafetyAction(SafetyReason.STOP_LATCHED, f"stop latched: {text}; reset required"),),
                stopped=True,
            )

    def reset(self) -> bool:
        """Clear a latched stop; the next command ramps up from zero. Returns whether one was latched."""
        with self._lock:
            latched = self._latched_message is not None
            self._latched_message = None
            self._previous = (0.0, 0.0)
            return latched

    # -- filtering -----------------------------------------------------------------------
    def filter(self, desired_velocity_m_s: Sequence[float], *, now_s: float) -> SafeVelocity:
        """The safe command for a (2,) desired table-frame velocity (m/s) at time ``now_s`` (s)."""
        if len(desired_velocity_m_s) != 2:
            raise ValueError(f"desired_velocity_m_s: expected 2 components, got {len(desired_velocity_m_s)}")
        vx, vy = float(desired_velocity_m_s[0]), float(desired_velocity_m_s[1])
        with self._lock:
            now = self._ordered_time(float(now_s))
            actions: list[SafetyAction] = []
            stops = self._stop_actions(vx, vy, now)
            if not stops:
                self._handle_gap(now, actions)
            if stops:
                self._emit(now, 0.0, 0.0)
                return SafeVelocity(_velocity_array(0.0, 0.0), tuple(stops), stopped=True)
            vx, vy = self._limit_speed(vx, vy, actions)
            bounds = self._workspace_bounds(now, (vx, vy), actions)
            target = (_clamp(vx, bounds[0]), _clamp(vy, bounds[1]))
            if abs(target[0] - vx) + abs(target[1] - vy) > 1e-12:
                actions.append(
                    SafetyAction(
                        SafetyReason.WORKSPACE_LIMITED,
                        f"velocity ({vx:.4f}, {vy:.4f}) m/s limited to ({target[0]:.4f}, {target[1]:.4f}) "
                        "m/s to stay able to stop inside the workspace",
                    )
                )
            output = self._limit_acceleration(target, bounds, actions)
            self._emit(now, *output)
            return SafeVelocity(_velocity_array(*output), tuple(actions))

    def watchdog(self, *, now_s: float) -> SafeVelocity | None:
        """A zero command if the last command is non-zero and commands stopped arriving
        (``command_timeout_s``) or the estimate is stale; None when nothing needs doing."""
        with self._lock:
            if self._previous == (0.0, 0.0) or self._last_time is None:
                return None
            now = self._ordered_time(float(now_s))
            actions = []
            silence = now - self._last_time
            if silence > self._limits.command_timeout_s:
                actions.append(
                    SafetyAction(
                        SafetyReason.COMMAND_TIMEOUT,
                        f"no command for {silence:.3f} s "
                        f"(limit {self._limits.command_timeout_s} s): stopping",
                    )
                )
            actions.extend(
                action
                for action in self._state_actions(now)
                if action.reason is not SafetyReason.STATE_MISSING
            )
            if not actions:
                return None
            self._emit(now, 0.0, 0.0)
            return SafeVelocity(_velocity_array(0.0, 0.0), tuple(actions), stopped=True)

    # -- steps ---------------------------------------------------------------------------
    def _ordered_time(self, now: float) -> float:
        """Times up to one period before the last command (callers on different threads reading
        the clock just before each other) count as the last command's time; larger backward
        jumps are kept, and stop the pusher as a clock error."""
        if self._last_time is not None and self._last_time - self._period <= now < self._last_time:
            return self._last_time
        return now

    def _stop_actions(self, vx: float, vy: float, now: float) -> list[SafetyAction]:
        stops = []
        if self._latched_message is not None:
            stops.append(
                SafetyAction(
                    SafetyReason.STOP_LATCHED, f"stop latched: {self._latched_message}; reset required"
                )
            )
        if not math.isfinite(now):
            stops.append(SafetyAction(SafetyReason.CLOCK_ERROR, f"non-finite time {now!r}"))
            return stops
        if self._last_time is not None and now < self._last_time:  # beyond _ordered_time's tolerance
            stops.append(
                SafetyAction(
                    SafetyReason.CLOCK_ERROR,
                    f"time went backwards by {self._last_time - now:.6f} s: stopping",
                )
            )
        stops.extend(self._state_actions(now))
        if not (math.isfinite(vx) and math.isfinite(vy)):
            stops.append(
                SafetyAction(SafetyReason.INVALID_COMMAND, f"non-finite desired velocity ({vx}, {vy})")
            )
        return stops

    def _state_actions(self, now: float) -> list[SafetyAction]:
        estimate = self._estimate
        timeout = self._limits.stale_state_timeout_s
        if estimate is None:
            return [SafetyAction(SafetyReason.STATE_MISSING, "no pusher estimate received yet: stopping")]
        if not estimate.valid:
            return [SafetyAction(SafetyReason.STATE_INVALID, f"{estimate.problem}: stopping")]
        age = now - estimate.stamp_s
        if age > timeout:
            return [
                SafetyAction(
                    SafetyReason.STATE_STALE,
                    f"pusher estimate is {age:.3f} s old (limit {timeout} s): stopping",
                )
            ]
        if age < -timeout:
            return [
                SafetyAction(
                    SafetyReason.STATE_STALE,
                    f"pusher estimate is stamped {-age:.3f} s in the future (limit {timeout} s): "
                    "the estimator's and the executor's clocks disagree; stopping",
                )
            ]
        return []

    def _handle_gap(self, now: float, actions: list[SafetyAction]) -> None:
        if self._last_time is None:
            return
        gap = now - self._last_time
        if gap > self._limits.command_timeout_s and self._previous != (0.0, 0.0):
            actions.append(
                SafetyAction(
                    SafetyReason.COMMAND_GAP,
                    f"{gap:.3f} s since the last command (limit {self._limits.command_timeout_s} s): "
                    "the arm has stopped; ramping up from zero",
                )
            )
            self._emit(self._last_time + self._limits.command_timeout_s, 0.0, 0.0)
            self._previous = (0.0, 0.0)

    def _limit_speed(self, vx: float, vy: float, actions: list[SafetyAction]) -> tuple[float, float]:
        speed = math.hypot(vx, vy)
        limit = self._limits.max_speed_m_s
        if speed <= limit:
            return vx, vy
        scale = limit / speed
        actions.append(
            SafetyAction(
                SafetyReason.SPEED_LIMITED,
                f"speed {speed:.4f} m/s above the limit {limit} m/s: scaled down to the limit",
            )
        )
        return vx * scale, vy * scale

    def _workspace_bounds(
        self, now: float, target: tuple[float, float], actions: list[SafetyAction]
    ) -> tuple[tuple[float, float], tuple[float, float]]:
        """Per axis (lowest, highest) allowed velocity component, m/s.

        Only the bounds that can act on the target or the previous command are computed (the
        others are left infinite): a bound towards a wall matters only for components moving
        towards it.
        """
        estimate = self._estimate
        assert estimate is not None
        shift_x, shift_y = self._displacement_since(estimate.stamp_s, now)
        positions: tuple[tuple[float, float], ...] = ((estimate.x, estimate.y),)
        if shift_x or shift_y:
            positions += ((estimate.x + shift_x, estimate.y + shift_y),)
        limits = self._limits
        bounds = []
        for axis, (low_wall, high_wall, name) in enumerate(
            ((limits.x_min_m, limits.x_max_m, "x"), (limits.y_min_m, limits.y_max_m, "y"))
        ):
            towards_high = target[axis] > 0.0 or self._previous[axis] > 0.0
            towards_low = target[axis] < 0.0 or self._previous[axis] < 0.0
            highest, lowest = math.inf, -math.inf
            for position in positions:
                coordinate = position[axis]
                if towards_high:
                    highest = min(highest, self._envelope(high_wall - coordinate))
                if towards_low:
                    lowest = max(lowest, -self._envelope(coordinate - low_wall))
                if not low_wall <= coordinate <= high_wall:
                    side = "below" if coordinate < low_wall else "above"
                    wall = low_wall if coordinate < low_wall else high_wall
                    actions.append(
                        SafetyAction(
                            SafetyReason.OUTSIDE_WORKSPACE,
                            f"pusher {name} = {coordinate:.4f} m is {side} the workspace limit {wall} m: "
                            "only motion back inside is allowed",
                        )
                    )
            bounds.append((lowest, highest))
        return bounds[0], bounds[1]

    def _envelope(self, distance_m: float) -> float:
        return max_speed_within(
            distance_m - _WALL_MARGIN_M, deceleration_m_s2=self._axis_deceleration, period_s=self._period
        )

    def _limit_acceleration(
        self,
        target: tuple[float, float],
        bounds: tuple[tuple[float, float], tuple[float, float]],
        actions: list[SafetyAction],
    ) -> tuple[float, float]:
        previous_x, previous_y = self._previous
        braked_x, braked_y = _clamp(previous_x, bounds[0]), _clamp(previous_y, bounds[1])
        brake_x, brake_y = braked_x - previous_x, braked_y - previous_y
        step_limit = self._velocity_step
        brake = math.hypot(brake_x, brake_y)
        if brake > step_limit * (1.0 + _RELATIVE_TOLERANCE) + 1e-15:
            actions.append(
                SafetyAction(
                    SafetyReason.WORKSPACE_BRAKE,
                    f"braking at {brake / self._period:.3f} m/s^2 "
                    f"(limit {self._limits.max_acceleration_m_s2} m/s^2) to stay inside the workspace: "
                    "the pusher estimate jumped towards a wall",
                )
            )
            return braked_x, braked_y
        towards_x, towards_y = target[0] - braked_x, target[1] - braked_y
        if math.hypot(brake_x + towards_x, brake_y + towards_y) <= step_limit:
            return target
        # Largest s in [0, 1] with |brake + s * towards| <= step_limit (brake is within the limit).
        squared = towards_x * towards_x + towards_y * towards_y
        if squared == 0.0:  # the target is the braked command (within rounding of the limit)
            return braked_x, braked_y
        dot = brake_x * towards_x + brake_y * towards_y
        discriminant = dot * dot - squared * (brake * brake - step_limit * step_limit)
        fraction = (-dot + math.sqrt(max(0.0, discriminant))) / squared
        fraction = min(max(fraction, 0.0), 1.0)
        output = (braked_x + fraction * towards_x, braked_y + fraction * towards_y)
        actions.append(
            SafetyAction(
                SafetyReason.ACCELERATION_LIMITED,
                f"velocity change limited to {self._limits.max_acceleration_m_s2} m/s^2: "
                f"({output[0]:.4f}, {output[1]:.4f}) m/s instead of ({target[0]:.4f}, {target[1]:.4f}) m/s",
            )
        )
        return output

    # -- emission history ----------------------------------------------------------------
    def _emit(self, now: float, vx: float, vy: float) -> None:
        """Record an emitted command (it holds until the next one)."""
        if not math.isfinite(now):
            self._previous = (0.0, 0.0)
            return
        times = self._history_times
        if times and now < times[-1]:  # clock went backwards: the history is meaningless
            times.clear()
            self._history_displacement.clear()
            self._history_velocity.clear()
        if times:
            last_vx, last_vy = self._history_velocity[-1]
            last_dx, last_dy = self._history_displacement[-1]
            held = now - times[-1]
            displacement = (last_dx + last_vx * held, last_dy + last_vy * held)
        else:
            displacement = (0.0, 0.0)
        times.append(now)
        self._history_displacement.append(displacement)
        self._history_velocity.append((vx, vy))
        horizon = now - 2.0 * (self._limits.stale_state_timeout_s + self._limits.command_timeout_s)
        if len(times) > 64 and times[0] < horizon:
            cut = bisect.bisect_left(times, horizon)
            cut = min(cut, len(times) - 1)
            del times[:cut]
            del self._history_displacement[:cut]
            del self._history_velocity[:cut]
        self._previous = (vx, vy)
        self._last_time = now

    def _displacement_at(self, time_s: float) -> tuple[float, float]:
        times = self._history_times
        if not times or time_s <= times[0]:
            return self._history_displacement[0] if times else (0.0, 0.0)
        index = bisect.bisect_right(times, time_s) - 1
        dx, dy = self._history_displacement[index]
        vx, vy = self._history_velocity[index]
        held = time_s - times[index]
        return dx + vx * held, dy + vy * held

    def _displacement_since(self, stamp_s: float, now: float) -> tuple[float, float]:
        """Displacement commanded between the estimate's stamp and now, m."""
        if stamp_s >= now:
            return 0.0, 0.0
        start_x, start_y = self._displacement_at(stamp_s)
        end_x, end_y = self._displacement_at(now)
        return end_x - start_x, end_y - start_y


def _clamp(value: float, bounds: tuple[float, float]) -> float:
    return min(max(value, bounds[0]), bounds[1])
