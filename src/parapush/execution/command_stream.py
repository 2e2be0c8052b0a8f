"""Planned pusher controls -> a fixed-rate stream of end-effector velocity commands.

A queue of :class:`~parapush.execution.commands.PlanarControl` forms an absolute schedule:
control k is active on ``[start_k, start_k + duration_k)``, each control starting when the
previous one ends. The caller samples the stream at the command rate (``rate_hz``, e.g. a ROS
timer) with the time of an injectable clock; a sample carries the velocity of the control
active at that time, so clock jitter never stretches or shortens the schedule. The first sample
after the queue runs out is a zero-velocity stop (:attr:`StreamPhase.STOP`).

Velocities are planned in the table frame; :meth:`CommandStream.to_twist` rotates them into
the robot base frame (``table_to_base``) as a :class:`~parapush.execution.commands.TwistCommand`
with zero angular velocity (the pusher does not rotate). The safety filter
(:mod:`parapush.execution.safety`) acts in the table frame between the two.
"""

from __future__ import annotations

import enum
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from parapush.execution.commands import PlanarControl, TwistCommand
from parapush.execution.frames import RigidTransform
from parapush.read_only import ReadOnly
from parapush.settings import check_settings, setting
from parapush.validation import check_not_empty

_BOUNDARY_TOLERANCE_S = 1e-9
"""Sample times within this of a control boundary count as past it (float rounding of t0 + k / rate)."""
MAX_RATE_HZ = 1000.0


@dataclass(frozen=True)
class CommandStreamSettings:
    """The stream's rate and output frame (each setting's meaning, unit and range: its
    :func:`setting`).

    Attributes:
        table_to_base: transform from the table frame to ``frame_id``.
    """

    rate_hz: float = setting(
        100.0, "command rate (the caller samples at this rate; the safety filter's step)", unit="Hz",
        above=0.0, maximum=MAX_RATE_HZ,
    )
    frame_id: str = setting("base_link", "frame of the emitted twists (the robot base frame)")
    # Not a setting: a RigidTransform object (the node builds it from its table_to_base list of numbers).
    table_to_base: RigidTransform = field(default_factory=RigidTransform.identity)

    def __post_init__(self) -> None:
        check_settings(self)
        check_not_empty("frame_id", self.frame_id)
        if not isinstance(self.table_to_base, RigidTransform):
            raise ValueError(f"table_to_base: expected a RigidTransform, got {self.table_to_base!r}")

    @property
    def period_s(self) -> float:
        """Command period, s."""
        return 1.0 / self.rate_hz


class StreamPhase(enum.Enum):
    """What a sample is."""

    ACTIVE = "active"
    """A control is active: its velocity."""
    WAITING = "waiting"
    """Controls are queued but start later: zero velocity."""
    STOP = "stop"
    """The first sample after the last control ended (or the queue was cleared): zero velocity."""
    IDLE = "idle"
    """Nothing to do: zero velocity."""


@dataclass(frozen=True, eq=False)
class StreamSample:
    """One sample of the stream.

    Attributes:
        time_s: sample time, s.
        velocity: (2,) desired pusher velocity in the table frame, m/s.
        phase: see :class:`StreamPhase`.
        control_number: number of the active control, counted from 0 over the stream's
            lifetime (None unless ACTIVE).
        control_elapsed_s: time since the active control started, s (0 unless ACTIVE).
    """

    time_s: float
    velocity: np.ndarray
    phase: StreamPhase
    control_number: int | None = None
    control_elapsed_s: float = 0.0


@dataclass(frozen=True)
class _ScheduledControl:
    number: int
    control: PlanarControl
    start_s: float

    @property
    def end_s(self) -> float:
        return self.start_s + self.control.duration_s


_ZERO = np.zeros(2)
_ZERO.setflags(write=False)


class CommandStream:
    """The control queue and its schedule; thread-safe.

    Args:
        settings: rate, frame and transform.
        clock: time source, s (monotonic); tests inject a fake clock.
    """

    def __init__(
        self, settings: CommandStreamSettings | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._settings = settings if settings is not None else CommandStreamSettings()
        self._clock = clock
        self._lock = threading.Lock()
        self._scheduled: deque[_ScheduledControl] = deque()
        self._unscheduled: deque[_ScheduledControl] = deque()  # wait for the next sample to start
        self._next_number = 0
        self._stop_pending = False

    settings: ReadOnly[CommandStreamSettings] = ReadOnly("_settings")

    # -- queue ---------------------------------------------------------------------------
    def enqueue(self, controls: Sequence[PlanarControl], *, start_time_s: float | None = None) -> None:
        """Append controls after those queued.

        Args:
            controls: the controls, in execution order.
            start_time_s: when the first of them starts if the stream is idle (None: at the next
                sample). Ignored while controls are queued: they follow the last one.
        """
        controls = self._checked(controls, start_time_s)
        with self._lock:
            entries = [self._number(control) for control in controls]
            if self._scheduled or self._unscheduled:
                self._append(entries)
            elif start_time_s is not None:
                self._schedule_from(start_time_s, entries)
            else:
                self._unscheduled.extend(entries)

    def replace(self, controls: Sequence[PlanarControl], *, start_time_s: float | None = None) -> int:
        """Drop the queue (including the active control) and schedule ``controls`` instead.

        Returns:
            how many queued controls were dropped.
        """
        controls = self._checked(controls, start_time_s)
        with self._lock:
            dropped = self._drop()
            entries = [self._number(control) for control in controls]
            if start_time_s is not None:
                self._schedule_from(start_time_s, entries)
            else:
                self._unscheduled.extend(entries)
            if not entries and dropped:
                self._stop_pending = True
            return dropped

    def clear(self) -> int:
        """Drop every queued control; the next sample is a STOP if anything was dropped."""
        with self._lock:
            dropped = self._drop()
            if dropped:
                self._stop_pending = True
            return dropped

    @property
    def queued(self) -> int:
        """Controls not finished yet (the active one included)."""
        with self._lock:
            return len(self._scheduled) + len(self._unscheduled)

    def remaining_s(self, now_s: float | None = None) -> float:
        """Time until the last queued control ends, s (unscheduled ones counted in full)."""
        now = self._clock() if now_s is None else now_s
        with self._lock:
            total = sum(entry.control.duration_s for entry in self._unscheduled)
            if self._scheduled:
                total += max(0.0, self._scheduled[-1].end_s - now)
            return total

    # -- sampling ------------------------------------------------------------------------
    def sample(self, now_s: float | None = None) -> StreamSample:
        """The desired table-frame velocity at ``now_s`` (default: the clock)."""
        now = self._clock() if now_s is None else float(now_s)
        if not math.isfinite(now):
            raise ValueError(f"now_s: expected a finite time, got {now_s!r}")
        with self._lock:
            if self._unscheduled and not self._scheduled:
                entries = list(self._unscheduled)
                self._unscheduled.clear()
                self._schedule_from(now, entries)
            finished = False
            while self._scheduled and now >= self._scheduled[0].end_s - _BOUNDARY_TOLERANCE_S:
                self._scheduled.popleft()
                finished = True
            if finished and not self._scheduled and not self._unscheduled:
                self._stop_pending = True
            if self._scheduled:
                current = self._scheduled[0]
                if now >= current.start_s - _BOUNDARY_TOLERANCE_S:
                    self._stop_pending = False
                    return StreamSample(
                        time_s=now,
                        velocity=current.control.velocity,
                        phase=StreamPhase.ACTIVE,
                        control_number=current.number,
                        control_elapsed_s=max(0.0, now - current.start_s),
                    )
                phase = StreamPhase.STOP if self._stop_pending else StreamPhase.WAITING
                self._stop_pending = False
                return StreamSample(time_s=now, velocity=_ZERO, phase=phase)
            phase = StreamPhase.STOP if self._stop_pending else StreamPhase.IDLE
            self._stop_pending = False
            return StreamSample(time_s=now, velocity=_ZERO, phase=phase)

    def to_twist(self, velocity: np.ndarray, *, stamp_s: float) -> TwistCommand:
        """A base-frame twist from a (2,) table-frame pusher velocity (m/s); angular velocity 0."""
        velocity = np.asarray(velocity, dtype=np.float64)
        if velocity.shape != (2,):
            raise ValueError(f"velocity: expected shape (2,), got {velocity.shape}")
        linear = self._settings.table_to_base.rotate(np.array([velocity[0], velocity[1], 0.0]))
        return TwistCommand(
            stamp_s=stamp_s, frame_id=self._settings.frame_id, linear=linear, angular=np.zeros(3)
        )

    def command(self, now_s: float | None = None) -> tuple[StreamSample, TwistCommand]:
        """Sample and convert in one go (unfiltered: the executor puts the safety filter between)."""
        sample = self.sample(now_s)
        return sample, self.to_twist(sample.velocity, stamp_s=sample.time_s)

    # -- internals -----------------------------------------------------------------------
    @staticmethod
    def _checked(controls: Sequence[PlanarControl], start_time_s: float | None) -> list[PlanarControl]:
        controls = list(controls)
        for index, control in enumerate(controls):
            if not isinstance(control, PlanarControl):
                raise ValueError(f"controls[{index}]: expected a PlanarControl, got {control!r}")
        if start_time_s is not None and not math.isfinite(start_time_s):
            raise ValueError(f"start_time_s: expected a finite time or None, got {start_time_s!r}")
        return controls

    def _number(self, control: PlanarControl) -> _ScheduledControl:
        entry = _ScheduledControl(number=self._next_number, control=control, start_s=math.nan)
        self._next_number += 1
        return entry

    def _schedule_from(self, start_s: float, entries: list[_ScheduledControl]) -> None:
        for entry in entries:
            self._scheduled.append(_ScheduledControl(entry.number, entry.control, start_s))
            start_s += entry.control.duration_s

    def _append(self, entries: list[_ScheduledControl]) -> None:
        if self._unscheduled:
            self._unscheduled.extend(entries)
        else:
            self._schedule_from(self._scheduled[-1].end_s, entries)

    def _drop(self) -> int:
        dropped = len(self._scheduled) + len(self._unscheduled)
        self._scheduled.clear()
        self._unscheduled.clear()
        return dropped
