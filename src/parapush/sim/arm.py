"""The simulated arm: end-effector velocity commands in MoveIt Servo's convention -> pusher motion.

Command convention (MoveIt Servo ``TwistStamped``)
--------------------------------------------------
A command is an end-effector twist: ``linear`` (3,) m/s and ``angular`` (3,) rad/s,
expressed in the frame named by ``frame_id`` (Servo's ``robot_link_command_frame``,
typically the arm's base frame). Servo moves the end effector at that twist until the
next command, and halts when no command arrived for ``incoming_command_timeout``
(0.1 s by default); :class:`SimArm` does the same.

Accepted frames: the configured base frame (default ``base_link``) and the table frame
(default ``table``); any other ``frame_id`` is rejected (counted and reported), as Servo
rejects frames it cannot transform. The pose of the table in the base frame is
configurable (:attr:`ArmSettings.table_position_in_base`, :attr:`ArmSettings.table_rpy_in_base`);
a base-frame twist is rotated into the table frame with it.

What the pusher does with a twist: the gripper holds the pusher vertically and the arm
keeps it at table height, so only the planar part of the table-frame linear velocity
moves it. The vertical component and the angular velocity (a round pusher has no
orientation that matters) are discarded and counted (``ArmStatus.out_of_plane_commands``).

Limits: the planar speed is clipped to ``max_speed`` (the whole vector scaled, direction
kept), velocity changes are limited to ``max_acceleration``, and a halt (timeout,
protective stop) decelerates at ``max_acceleration`` too. All times are the simulated
world's (s since its reset), so a world run faster than real time times out faster in
wall-clock terms.

Faults (:class:`ArmFault`): ``PROTECTIVE_STOP`` halts the arm and rejects every command
until cleared (a real arm's protective stop); ``COMMANDS_IGNORED`` silently drops
commands (a stalled driver link), so the command timeout halts the arm.
"""

from __future__ import annotations

import enum
import math
import threading
from dataclasses import dataclass

import numpy as np

from parapush.estimation.rotations import rpy_to_matrix
from parapush.execution.commands import TwistCommand
from parapush.read_only import LockedReadOnly
from parapush.settings import check_settings, setting

__all__ = ["ArmFault", "ArmSettings", "ArmStatus", "CommandOutcome", "SimArm"]


@dataclass(frozen=True)
class ArmSettings:
    """Frames and limits of the simulated arm (see the module docstring; each field's meaning,
    unit and range: its :func:`setting`)."""

    base_frame: str = setting("base_link", "the arm's base frame name (MoveIt's planning frame)")
    table_frame: str = setting("table", "the table frame name")
    table_position_in_base: tuple[float, float, float] = setting(
        (0.5, 0.0, 0.0), "origin of the table frame in the base frame", kind=tuple, unit="m", lengths=(3,)
    )
    table_rpy_in_base: tuple[float, float, float] = setting(
        (0.0, 0.0, 0.0), "orientation of the table frame in the base frame: fixed-axis roll, pitch, yaw "
        "(R = Rz(yaw) Ry(pitch) Rx(roll), ROS setRPY)", kind=tuple, unit="rad", lengths=(3,),
    )
    max_speed: float = setting(0.1, "largest planar end-effector speed", unit="m/s", above=0.0)
    max_acceleration: float = setting(
        1.0, "largest change of the planar velocity (also the halt deceleration)", unit="m/s^2", above=0.0
    )
    command_timeout: float = setting(
        0.1, "the arm halts when no command arrived for this long (world time)", unit="s", above=0.0
    )
    out_of_plane_tolerance: float = setting(
        1e-6, "a vertical speed (m/s) or angular speed (rad/s) above this counts the command as out of plane",
        above=0.0,
    )

    def __post_init__(self) -> None:
        check_settings(self)
        for name in ("base_frame", "table_frame"):
            if not getattr(self, name).strip():
                raise ValueError(f"{name}: expected a non-empty frame name, got {getattr(self, name)!r}")
        if self.base_frame == self.table_frame:
            raise ValueError(f"table_frame: must differ from base_frame {self.base_frame!r}")

    @property
    def table_rotation_in_base(self) -> np.ndarray:
        """(3, 3) rotation matrix: base-frame coordinates of the table axes (v_base = R v_table)."""
        return rpy_to_matrix(*self.table_rpy_in_base)


class ArmFault(enum.Enum):
    """Injected arm faults."""

    NONE = "none"
    PROTECTIVE_STOP = "protective_stop"
    COMMANDS_IGNORED = "commands_ignored"


@dataclass(frozen=True)
class CommandOutcome:
    """What the arm did with one command.

    Attributes:
        accepted: True when the command now drives the arm.
        reason: why it was not accepted ("" when accepted).
        planar_velocity: (2,) the table-frame velocity target it set, m/s (after clipping;
            zeros when not accepted).
        clipped: True when the speed was reduced to ``max_speed``.
    """

    accepted: bool
    reason: str = ""
    planar_velocity: tuple[float, float] = (0.0, 0.0)
    clipped: bool = False


@dataclass(frozen=True)
class ArmStatus:
    """A snapshot of the arm's state.

    Attributes:
        time: world time of the last :meth:`SimArm.advance`, s.
        velocity: (2,) current planar end-effector velocity in the table frame, m/s.
        target_velocity: (2,) the velocity it is heading for, m/s (zero when halted).
        fault: the injected fault.
        timed_out: True when the last command is older than the timeout (or none came).
        last_command_age: s since the last accepted command (inf if none).
        commands_accepted: count.
        commands_rejected: count (wrong frame, protective stop).
        commands_ignored: count dropped by the ``COMMANDS_IGNORED`` fault.
        commands_clipped: count whose speed was clipped.
        out_of_plane_commands: count with vertical or angular parts (discarded).
        halts_without_command: how often the arm halted while commanded to move because no command
            came within the timeout (a stalled executor, or a driver too starved of CPU to take its
            commands in time).
        longest_command_gap: longest world time between two accepted commands while the arm was
            commanded to move, s (0 before two such commands).
    """

    time: float
    velocity: tuple[float, float]
    target_velocity: tuple[float, float]
    fault: ArmFault
    timed_out: bool
    last_command_age: float
    commands_accepted: int
    commands_rejected: int
    commands_ignored: int
    commands_clipped: int
    out_of_plane_commands: int
    halts_without_command: int
    longest_command_gap: float


class SimArm:
    """Turns end-effector twist commands into the pusher's planar velocity; thread-safe.

    Commands arrive from any thread (:meth:`command`); the world calls :meth:`advance`
    once per simulation step from its own thread.

    Args:
        settings: frames and limits.
    """

    def __init__(self, settings: ArmSettings | None = None) -> None:
        settings = ArmSettings() if settings is None else settings
        if not isinstance(settings, ArmSettings):
            raise TypeError(f"settings: expected ArmSettings, got {type(settings).__name__}")
        self.settings = settings
        self._base_to_table = settings.table_rotation_in_base.T  # v_table = R^T v_base
        self._lock = threading.Lock()
        self._fault = ArmFault.NONE
        self._counts = dict.fromkeys(("accepted", "rejected", "ignored", "clipped", "out_of_plane",
                                      "halts_without_command"), 0)
        self._longest_gap = 0.0
        self.reset(0.0)

    # -- commands ---------------------------------------------------------------------------
    def command(self, twist: TwistCommand, *, received_at: float) -> CommandOutcome:
        """Take one command received at world time ``received_at`` (s)."""
        if not isinstance(twist, TwistCommand):
            raise TypeError(f"twist: expected TwistCommand, got {type(twist).__name__}")
        settings = self.settings
        if twist.frame_id == settings.base_frame:
            table_linear = self._base_to_table @ twist.linear
        elif twist.frame_id == settings.table_frame:
            table_linear = np.asarray(twist.linear, dtype=float)
        else:
            with self._lock:
                self._counts["rejected"] += 1
            return CommandOutcome(
                False,
                f"frame_id {twist.frame_id!r} is neither the base frame {settings.base_frame!r} "
                f"nor the table frame {settings.table_frame!r}",
            )
        planar = table_linear[:2].copy()
        speed = float(np.hypot(*planar))
        clipped = speed > settings.max_speed
        if clipped:
            planar *= settings.max_speed / speed
        out_of_plane = abs(table_linear[2]) > settings.out_of_plane_tolerance or bool(
            np.any(np.abs(twist.angular) > settings.out_of_plane_tolerance)
        )
        with self._lock:
            if self._fault is ArmFault.PROTECTIVE_STOP:
                self._counts["rejected"] += 1
                return CommandOutcome(False, "arm is in a protective stop")
            if self._fault is ArmFault.COMMANDS_IGNORED:
                self._counts["ignored"] += 1
                return CommandOutcome(False, "arm ignores commands (injected fault)")
            self._counts["accepted"] += 1
            self._counts["clipped"] += int(clipped)
            self._counts["out_of_plane"] += int(out_of_plane)
            if self._commanded.any() and math.isfinite(self._last_command_time):
                self._longest_gap = max(self._longest_gap, float(received_at) - self._last_command_time)
            self._commanded = planar
            self._last_command_time = float(received_at)
            self._halt_counted = not planar.any()  # a stop command cannot time out into a halt
        return CommandOutcome(True, "", (float(planar[0]), float(planar[1])), clipped)

    # -- faults -----------------------------------------------------------------------------
    def inject_fault(self, fault: ArmFault) -> None:
        """Set the arm's fault (``ArmFault.NONE`` clears it)."""
        if not isinstance(fault, ArmFault):
            raise TypeError(f"fault: expected ArmFault, got {fault!r}")
        with self._lock:
            self._fault = fault
            if fault is not ArmFault.NONE:
                self._commanded = np.zeros(2)
                self._last_command_time = -math.inf
                self._halt_counted = True  # a fault's halt is not one for lack of commands

    fault: LockedReadOnly[ArmFault] = LockedReadOnly("_fault")

    # -- stepping ---------------------------------------------------------------------------
    def reset(self, time: float) -> None:
        """Halt at once (zero velocity) and forget the last command; the fault is kept."""
        with self._lock:
            self._time = float(time)
            self._velocity = np.zeros(2)
            self._commanded = np.zeros(2)
            self._last_command_time = -math.inf
            self._halt_counted = True  # nothing to halt

    def advance(self, time: float, duration: float) -> np.ndarray:
        """The planar velocity (2,) m/s, table frame, for the step [time, time + duration].

        Applies the command timeout, the faults and the acceleration limit.
        """
        settings = self.settings
        with self._lock:
            self._time = float(time)
            target = self._target_locked()
            change = target - self._velocity
            largest = settings.max_acceleration * duration
            norm = float(np.hypot(*change))
            if norm > largest:
                change *= largest / norm
            self._velocity = self._velocity + change
            return self._velocity.copy()

    def _target_locked(self) -> np.ndarray:
        if self._fault is not ArmFault.NONE:
            return np.zeros(2)
        if self._time - self._last_command_time > self.settings.command_timeout:
            if not self._halt_counted:
                self._counts["halts_without_command"] += 1
                self._halt_counted = True
            return np.zeros(2)
        return self._commanded

    def status(self) -> ArmStatus:
        with self._lock:
            target = self._target_locked()
            age = self._time - self._last_command_time
            return ArmStatus(
                time=self._time,
                velocity=(float(self._velocity[0]), float(self._velocity[1])),
                target_velocity=(float(target[0]), float(target[1])),
                fault=self._fault,
                timed_out=age > self.settings.command_timeout,
                last_command_age=float(age),
                commands_accepted=self._counts["accepted"],
                commands_rejected=self._counts["rejected"],
                commands_ignored=self._counts["ignored"],
                commands_clipped=self._counts["clipped"],
                out_of_plane_commands=self._counts["out_of_plane"],
                halts_without_command=self._counts["halts_without_command"],
                longest_command_gap=self._longest_gap,
            )
