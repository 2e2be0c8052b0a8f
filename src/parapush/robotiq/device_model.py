"""Behaviour of a 2F-85 at register level: activation, go-to motion, object detection, faults.

Transport-free and clock-free: the caller passes the time (s, any monotonic origin) to every
call, so the model is deterministic and testable without Modbus; the emulator
(:mod:`parapush.sim.gripper_emulator`) puts it behind a Modbus server and a periodic step.
Not thread-safe: the caller serialises access.

Behaviour (Robotiq 2F-85 manual, simplified where noted):

* Every written command takes effect ``command_latency_s`` after it arrives; until then the
  status (gPR, gOBJ, ...) still describes the previous command. This is why clients must wait
  until gPR echoes the request before trusting gOBJ.
* rACT = 0 resets: gACT = 0, gSTA = 0, the fingers stop. A rising edge 0 -> 1 activates:
  gSTA = 1 for ``activation_duration_s`` while the fingers travel to fully open (the real
  gripper also closes once to calibrate; not modelled), then gSTA = 3. A rising edge also
  clears a major fault.
* With gSTA = 3 and rGTO = 1, a new go-to starts whenever rGTO rises or rPR/rSP/rFR change:
  gPR echoes rPR, gOBJ = 0 while the fingers move at the speed given by rSP, then gOBJ = 3 at
  the requested position (requests past the mechanical limit stop there), or gOBJ = 2 when
  closing onto the object (``object_width_m``; the pads stop at its width plus a force-dependent
  squeeze). rGTO = 0 stops the fingers where they are. No obstacle outside the fingers is
  modelled, so gOBJ = 1 (contact while opening) never occurs.
* rATR = 1 starts the emergency automatic release: gFLT = 0x0B while the fingers move (at the
  slowest speed) fully open (rARD = 1) or closed (rARD = 0), then gFLT = 0x0F; both are major
  faults, cleared by a reset and a rising edge on rACT (with rATR = 0).
* Priority faults are derived: gFLT = 0x07 while rGTO = 1 without rACT, 0x05 while rGTO = 1
  during the activation.
* Injected faults: major codes (0x0A-0x0F) stop the fingers until a rising edge on rACT;
  0x08 (overtemperature) stops them until :meth:`GripperDeviceModel.clear_fault`; other codes
  (e.g. 0x09) are only reported until cleared.
* gCU: ``moving_current_a`` while moving, a force-dependent holding current while gripping an
  object, 0 otherwise.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from parapush.read_only import ReadOnly
from parapush.robotiq.finger_geometry import FingerGeometry
from parapush.robotiq.registers import (
    CURRENT_A_PER_COUNT,
    ActivationStatus,
    FaultCode,
    FaultSeverity,
    GripperCommand,
    GripperStatus,
    ObjectStatus,
    fault_severity,
)
from parapush.settings import check_settings, setting
from parapush.validation import check_integer, check_real

_COUNT_MAX = 255


@dataclass(frozen=True)
class DeviceModelSettings:
    """Behavioural parameters of the emulated gripper (each field's meaning, unit and range: its
    :func:`setting`).

    Attributes:
        geometry: count <-> SI conversions (stroke, speed and force ranges).
    """

    geometry: FingerGeometry = field(default_factory=FingerGeometry)
    activation_duration_s: float = setting(1.0, "time spent in gSTA = 1 after a rising edge on rACT", unit="s",
                                           minimum=0.0)
    command_latency_s: float = setting(0.008, "delay between a command write and its effect", unit="s", minimum=0.0)
    object_width_m: float | None = setting(
        None, "width of the object between the fingers (e.g. the pusher tool's diameter)", kind=float, unit="m",
        minimum=0.0, none="nothing between the fingers", ros_none=-1.0,
    )
    squeeze_counts: float = setting(2.0, "how far past the contact point the pads press at full force",
                                    unit="counts", minimum=0.0)
    moving_current_a: float = setting(0.25, "motor current while the fingers move", unit="A", minimum=0.0)
    holding_current_min_a: float = setting(0.10, "current while gripping at rFR = 0", unit="A", minimum=0.0)
    holding_current_max_a: float = setting(0.60, "current while gripping at rFR = 255", unit="A", minimum=0.0)

    def __post_init__(self) -> None:
        if not isinstance(self.geometry, FingerGeometry):
            raise ValueError(f"geometry: expected a FingerGeometry, got {self.geometry!r}")
        check_settings(self)
        if self.holding_current_max_a < self.holding_current_min_a:
            raise ValueError(
                f"holding_current_max_a: expected >= holding_current_min_a, got {self.holding_current_max_a}"
            )
        for name in ("moving_current_a", "holding_current_max_a"):
            if getattr(self, name) > _COUNT_MAX * CURRENT_A_PER_COUNT:
                raise ValueError(f"{name}: expected <= {_COUNT_MAX * CURRENT_A_PER_COUNT} A (gCU range)")
        if self.object_width_m is not None and self.object_width_m > self.geometry.stroke_m:
            raise ValueError(
                f"object_width_m: expected <= the stroke ({self.geometry.stroke_m} m), got {self.object_width_m}"
            )


@dataclass
class _Motion:
    """Fingers travelling at constant speed to ``stop_position`` (counts)."""

    stop_position: float
    speed_counts_per_s: float
    arrival_status: ObjectStatus | None  # gOBJ on arrival; None: not a go-to (activation, release)


class GripperDeviceModel:
    """The gripper's state machine and finger dynamics; see the module docstring."""

    def __init__(self, settings: DeviceModelSettings | None = None, *, now_s: float) -> None:
        self._settings = settings if settings is not None else DeviceModelSettings()
        self._geometry = self._settings.geometry
        self._time_s = float(now_s)
        self._command = GripperCommand()
        self._pending: deque[tuple[float, GripperCommand]] = deque()
        self._activation = ActivationStatus.RESET
        self._activation_end_s: float | None = None
        self._position = float(self._geometry.open_count)
        self._requested_position = 0
        self._object_status = ObjectStatus.MOVING
        self._motion: _Motion | None = None
        self._auto_releasing = False
        self._latched_fault = 0
        self._controller_fault = 0
        self._object_width_m = self._settings.object_width_m

    # -- inputs --------------------------------------------------------------------------
    settings: ReadOnly[DeviceModelSettings] = ReadOnly("_settings")

    def write_command(self, command: GripperCommand, *, now_s: float) -> None:
        """A command written to registers 1000-1002 at ``now_s``; it acts after the latency."""
        self.advance(now_s)
        self._pending.append((self._time_s + self._settings.command_latency_s, command))
        self.advance(now_s)

    def inject_fault(self, code: int, *, now_s: float) -> None:
        """Report gFLT = ``code`` (1-15) from now on; see the module docstring for its effect."""
        if fault_severity(code) is FaultSeverity.NONE:
            raise ValueError(f"code: expected a fault code in [1, 15], got {code!r}; use clear_fault()")
        self.advance(now_s)
        self._latched_fault = code
        if self._fault_blocks_motion():
            self._motion = None

    def clear_fault(self, *, now_s: float) -> None:
        """Clear an injected fault as if its cause disappeared (cool-down, power restored)."""
        self.advance(now_s)
        self._latched_fault = 0
        self._auto_releasing = False

    def set_controller_fault(self, code: int, *, now_s: float) -> None:
        """Report kFLT = ``code`` (0-15)."""
        code = check_integer("code", code, minimum=0, maximum=0x0F)
        self.advance(now_s)
        self._controller_fault = code

    def set_object_width(self, width_m: float | None, *, now_s: float) -> None:
        """Put an object of ``width_m`` (m) between the fingers, or remove it (None).

        Removing a gripped object lets the fingers continue to the requested position (the
        real gripper then reports gOBJ = 3: object lost).
        """
        if width_m is not None:
            check_real("width_m", width_m, minimum=0.0, maximum=self._geometry.stroke_m)
        self.advance(now_s)
        self._object_width_m = width_m
        holding_or_moving = self._object_status is not ObjectStatus.MOVING or self._motion is not None
        if (
            self._activation is ActivationStatus.ACTIVE
            and self._command.go_to
            and not self._fault_blocks_motion()
            and holding_or_moving
        ):
            self._plan_go_to()

    # -- outputs -------------------------------------------------------------------------
    time_s: ReadOnly[float] = ReadOnly("_time_s")

    command: ReadOnly[GripperCommand] = ReadOnly(
        "_command", "The command in effect (the last write once its latency has elapsed)."
    )

    position: ReadOnly[float] = ReadOnly("_position", "Finger position, counts (real-valued).")

    def status(self) -> GripperStatus:
        """The status registers' content at the model's current time."""
        active = self._activation is ActivationStatus.ACTIVE
        return GripperStatus(
            activated=self._command.activate,
            go_to=self._command.go_to and self._command.activate,
            activation=self._activation,
            object_status=self._object_status if active else ObjectStatus.MOVING,
            fault=self._current_fault(),
            controller_fault=self._controller_fault,
            requested_position=self._requested_position,
            position=round(self._position),
            current=min(_COUNT_MAX, round(self._current_a() / CURRENT_A_PER_COUNT)),
        )

    # -- dynamics ------------------------------------------------------------------------
    def advance(self, now_s: float) -> None:
        """Integrate up to ``now_s`` exactly: constant-speed motion between discrete events."""
        now_s = float(now_s)
        self._process_events()
        while self._time_s < now_s:
            event_s = now_s
            if self._pending:
                event_s = min(event_s, self._pending[0][0])
            if self._activation_end_s is not None:
                event_s = min(event_s, self._activation_end_s)
            arrives = False
            if self._motion is not None:
                remaining = abs(self._motion.stop_position - self._position)
                arrival_s = self._time_s + remaining / self._motion.speed_counts_per_s
                if arrival_s <= event_s:
                    event_s, arrives = arrival_s, True
            if arrives:
                self._position = self._motion.stop_position
            else:
                self._move_fingers(event_s - self._time_s)
            self._time_s = max(self._time_s, event_s)
            self._process_events()

    def _move_fingers(self, duration_s: float) -> None:
        if self._motion is None or duration_s <= 0:
            return
        step = self._motion.speed_counts_per_s * duration_s
        delta = self._motion.stop_position - self._position
        if abs(delta) <= step:
            self._position = self._motion.stop_position
        else:
            self._position += math.copysign(step, delta)

    def _settle_motion(self) -> None:
        """Finish a motion whose fingers are at its stop position."""
        if self._motion is None or self._position != self._motion.stop_position:
            return
        arrival = self._motion.arrival_status
        self._motion = None
        if self._auto_releasing:
            self._auto_releasing = False
            self._latched_fault = FaultCode.AUTO_RELEASE_COMPLETED
        elif arrival is not None:
            self._object_status = arrival

    def _process_events(self) -> None:
        """Handle everything due at the current time, in order, until nothing is left."""
        while True:
            self._settle_motion()
            if self._activation_end_s is not None and self._time_s >= self._activation_end_s:
                self._activation_end_s = None
                self._activation = ActivationStatus.ACTIVE
                self._object_status = ObjectStatus.MOVING
                if self._command.go_to and not self._fault_blocks_motion():
                    self._plan_go_to(new_request=True)
            elif self._pending and self._pending[0][0] <= self._time_s:
                _, command = self._pending.popleft()
                self._apply(command)
            else:
                return

    # -- command semantics ---------------------------------------------------------------
    def _apply(self, command: GripperCommand) -> None:
        previous = self._command
        self._command = command
        if command.auto_release and not previous.auto_release:
            self._start_auto_release(command)
            return
        if self._auto_releasing:
            return  # nothing interrupts the automatic release
        if self._latched_fault == FaultCode.AUTO_RELEASE_COMPLETED:
            if command.activate and not previous.activate and not command.auto_release:
                self._start_activation()
            return
        if not command.activate:
            self._reset()
            return
        if not previous.activate:
            self._start_activation()
            return
        if self._activation is not ActivationStatus.ACTIVE:
            return
        if not command.go_to:
            self._motion = None
            return
        changed = (command.position, command.speed, command.force) != (
            previous.position,
            previous.speed,
            previous.force,
        )
        if (not previous.go_to or changed) and not self._fault_blocks_motion():
            self._plan_go_to(new_request=True)

    def _reset(self) -> None:
        self._activation = ActivationStatus.RESET
        self._activation_end_s = None
        self._motion = None
        self._auto_releasing = False
        self._object_status = ObjectStatus.MOVING

    def _start_activation(self) -> None:
        if fault_severity(self._latched_fault) is FaultSeverity.MAJOR:
            self._latched_fault = 0
        self._activation = ActivationStatus.ACTIVATING
        duration = self._settings.activation_duration_s
        self._activation_end_s = self._time_s + duration
        self._object_status = ObjectStatus.MOVING
        distance = abs(self._position - self._geometry.open_count)
        if distance > 0 and duration > 0:
            self._motion = _Motion(float(self._geometry.open_count), distance / duration, None)
        else:
            self._position = float(self._geometry.open_count)
            self._motion = None

    def _start_auto_release(self, command: GripperCommand) -> None:
        self._activation = ActivationStatus.RESET
        self._activation_end_s = None
        self._object_status = ObjectStatus.MOVING
        self._latched_fault = FaultCode.AUTO_RELEASE_IN_PROGRESS
        self._auto_releasing = True
        end = self._geometry.open_count if command.release_direction_open else self._geometry.closed_count
        self._motion = _Motion(float(end), self._geometry.speed_counts_per_s(0), None)
        self._settle_motion()

    def _plan_go_to(self, *, new_request: bool = False) -> None:
        """Start (or re-plan after an object change) the go-to of the command in effect."""
        command = self._command
        if new_request:
            self._requested_position = command.position
        target = self._geometry.clamp_position(command.position)
        stop, arrival = target, ObjectStatus.AT_POSITION
        if self._object_width_m is not None and target > self._position:
            contact = self._geometry.position_for_opening(self._object_width_m)
            squeezed = min(
                float(self._geometry.closed_count),
                contact + self._settings.squeeze_counts * command.force / _COUNT_MAX,
            )
            if squeezed < target:
                stop, arrival = max(squeezed, self._position), ObjectStatus.CONTACT_CLOSING
        self._object_status = ObjectStatus.MOVING
        self._motion = _Motion(stop, self._geometry.speed_counts_per_s(command.speed), arrival)
        self._settle_motion()

    # -- derived quantities --------------------------------------------------------------
    def _fault_blocks_motion(self) -> bool:
        severity = fault_severity(self._latched_fault)
        return severity is FaultSeverity.MAJOR or self._latched_fault == FaultCode.OVERTEMPERATURE

    def _current_fault(self) -> int:
        if self._latched_fault:
            return self._latched_fault
        if self._command.go_to and not self._command.activate:
            return FaultCode.ACTIVATION_BIT_NOT_SET
        if self._command.go_to and self._activation is ActivationStatus.ACTIVATING:
            return FaultCode.ACTION_DELAYED
        return 0

    def _current_a(self) -> float:
        if self._motion is not None:
            return self._settings.moving_current_a
        if (
            self._activation is ActivationStatus.ACTIVE
            and self._object_status is ObjectStatus.CONTACT_CLOSING
        ):
            low, high = self._settings.holding_current_min_a, self._settings.holding_current_max_a
            return low + (high - low) * self._command.force / _COUNT_MAX
        return 0.0
