"""The executor core: command stream -> safety filter -> base-frame twist, one call per tick.

The executor node owns one :class:`VelocityExecutor`, feeds it controls
(:meth:`~VelocityExecutor.enqueue` / :meth:`~VelocityExecutor.replace`) and pusher estimates
(:meth:`~VelocityExecutor.update_pusher`), calls :meth:`~VelocityExecutor.step` from a timer at
``rate_hz`` and publishes ``step.command`` when ``step.publish``; a second timer calls
:meth:`~VelocityExecutor.watchdog`; the stop service calls :meth:`~VelocityExecutor.stop` and
the reset service :meth:`~VelocityExecutor.reset`. Every safety action comes back with the
step for logging.

After the last control the stream asks for a stop; the filter ramps the velocity down at the
acceleration limit (a normal stop), and zero commands are published ``stop_repeats`` times so
that a lost message cannot leave the arm moving; then the executor stays silent until the next
control. Stops forced by the safety filter (stale state, latched stop, ...) are immediate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from parapush.execution.command_stream import CommandStream, CommandStreamSettings, StreamPhase, StreamSample
from parapush.execution.commands import PlanarControl, TwistCommand
from parapush.execution.safety import SafetyFilter, SafetyLimits, SafeVelocity
from parapush.read_only import ReadOnly
from parapush.settings import check_settings, setting


@dataclass(frozen=True)
class ExecutorSettings:
    """The executor core's settings (``stop_repeats``' meaning and range: its :func:`setting`).

    Attributes:
        stream: command rate, output frame and table -> base transform.
        limits: the hard safety limits.
    """

    # Sections without a default: SafetyLimits has none (its workspace box is required), so both are given.
    stream: CommandStreamSettings
    limits: SafetyLimits
    stop_repeats: int = setting(3, "zero commands published after the pusher came to rest", minimum=1, maximum=100)

    def __post_init__(self) -> None:
        if not isinstance(self.stream, CommandStreamSettings):
            raise ValueError(f"stream: expected CommandStreamSettings, got {self.stream!r}")
        if not isinstance(self.limits, SafetyLimits):
            raise ValueError(f"limits: expected SafetyLimits, got {self.limits!r}")
        check_settings(self)


@dataclass(frozen=True, eq=False)
class ExecutorStep:
    """One tick.

    Attributes:
        command: the base-frame twist to send.
        safe: the table-frame command and the safety actions taken.
        sample: what the stream asked for.
        publish: whether to send ``command`` (False once at rest and the stop was repeated).
    """

    command: TwistCommand
    safe: SafeVelocity
    sample: StreamSample | None
    publish: bool


class VelocityExecutor:
    """Stream + filter; thread-safe (see the module docstring).

    Args:
        settings: stream, limits, stop repetitions.
        clock: time source, s (monotonic); injectable for tests. It must be the clock of the
            pusher estimates' stamps.
    """

    def __init__(self, settings: ExecutorSettings, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(settings, ExecutorSettings):
            raise ValueError(f"settings: expected ExecutorSettings, got {settings!r}")
        self._settings = settings
        self._clock = clock
        self._stream = CommandStream(settings.stream, clock=clock)
        self._filter = SafetyFilter(settings.limits, command_period_s=settings.stream.period_s)
        self._lock = threading.Lock()
        self._zero_outputs = 0

    settings: ReadOnly[ExecutorSettings] = ReadOnly("_settings")

    stream: ReadOnly[CommandStream] = ReadOnly("_stream")

    safety_filter: ReadOnly[SafetyFilter] = ReadOnly("_filter")

    # -- inputs --------------------------------------------------------------------------
    def enqueue(self, controls: Sequence[PlanarControl], *, start_time_s: float | None = None) -> None:
        """Queue controls after the current ones (see :meth:`CommandStream.enqueue`)."""
        self._stream.enqueue(controls, start_time_s=start_time_s)

    def replace(self, controls: Sequence[PlanarControl], *, start_time_s: float | None = None) -> int:
        """Replace the queue (e.g. a new MPC plan); returns the number of controls dropped."""
        return self._stream.replace(controls, start_time_s=start_time_s)

    def update_pusher(self, position_m: Sequence[float], *, stamp_s: float, valid: bool = True) -> None:
        """The latest pusher estimate (table frame, m), measured at ``stamp_s`` (executor clock, s)."""
        self._filter.update_pusher(position_m, stamp_s=stamp_s, valid=valid)

    # -- ticks ---------------------------------------------------------------------------
    def step(self, now_s: float | None = None) -> ExecutorStep:
        """Sample the stream, filter, convert to the base frame."""
        with self._lock:
            now = self._clock() if now_s is None else float(now_s)
            sample = self._stream.sample(now)
            safe = self._filter.filter(sample.velocity, now_s=now)
            return self._finish(safe, sample, now)

    def watchdog(self, now_s: float | None = None) -> ExecutorStep | None:
        """A zero command if commands stopped arriving or the state went stale while moving."""
        with self._lock:
            now = self._clock() if now_s is None else float(now_s)
            safe = self._filter.watchdog(now_s=now)
            return None if safe is None else self._finish(safe, None, now)

    def stop(self, message: str, now_s: float | None = None) -> ExecutorStep:
        """Latched stop: drop the queue, command zero now, refuse motion until :meth:`reset`."""
        with self._lock:
            now = self._clock() if now_s is None else float(now_s)
            self._stream.clear()
            safe = self._filter.latch_stop(message, now_s=now)
            self._zero_outputs = 0
            return self._finish(safe, None, now)

    def reset(self) -> bool:
        """Clear a latched stop; returns whether one was latched."""
        with self._lock:
            return self._filter.reset()

    @property
    def stop_latched(self) -> bool:
        return self._filter.stop_latched

    def _finish(self, safe: SafeVelocity, sample: StreamSample | None, now: float) -> ExecutorStep:
        moving = bool(safe.velocity[0] or safe.velocity[1])
        wants_motion = sample is not None and sample.phase is StreamPhase.ACTIVE
        if moving or wants_motion:
            self._zero_outputs = 0
            publish = True
        else:
            self._zero_outputs += 1
            publish = self._zero_outputs <= self._settings.stop_repeats
        return ExecutorStep(
            command=self._stream.to_twist(safe.velocity, stamp_s=now),
            safe=safe,
            sample=sample,
            publish=publish,
        )
