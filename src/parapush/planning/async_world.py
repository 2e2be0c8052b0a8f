"""A world that executes a control while the planner thinks: the non-blocking counterpart of
:class:`parapush.planning.World`, and a clocked implementation for simulations.

:class:`AsyncWorld` is what :class:`parapush.planning.pipelined_mpc.PipelinedMpcLoop`
drives: ``start`` returns at once, the control runs on the world's clock (``time``), and
``wait_until`` blocks until that clock reaches a time. A control may carry a *fallback*:
if no new ``start`` arrives before the control ends, the world runs the fallback for one
more period, then stops (a velocity-streaming executor with one queued command).

:class:`VirtualClockWorld` implements it over any *physics* (an object with
``state()`` (D,) and ``advance(control (2,), duration)``; :class:`PropagatorPhysics`
wraps a propagator such as the analytical or fine model, and
:class:`parapush.sim.world_physics.SimWorldPhysics` the noisy simulated world). Its clock
runs with a *clock source* (wall time by default: ``time.perf_counter``) while the caller
computes, and the physics is simulated lazily, only when the caller looks (``observe``,
``start``, ``wait_until``); the time spent simulating is removed from the clock, and
``wait_until`` jumps the clock instead of sleeping. So planning costs its measured wall
time and execution costs its simulated duration, with no real-time waiting: the timeline
of a robot whose physics is free. :class:`BlockingWorld` turns any :class:`AsyncWorld`
into a :class:`parapush.planning.World` for the sequential :class:`MpcLoop`.
:class:`TransitionRecorder` passes an :class:`AsyncWorld` through and records each control
that ran alone with the states observed before and after it (what online identification
learns from: :mod:`parapush.identification.online_identification`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "AsyncWorld",
    "BlockingWorld",
    "Physics",
    "PropagatorPhysics",
    "Transition",
    "TransitionRecorder",
    "VirtualClockWorld",
]


@runtime_checkable
class AsyncWorld(Protocol):
    """What the pipelined MPC loop acts on: controls run on the world's clock."""

    def time(self) -> float:
        """The world's clock, s."""
        ...

    def observe(self) -> np.ndarray:
        """The current state (D,) (SI units)."""
        ...

    def start(self, control: np.ndarray, duration: float, fallback: np.ndarray | None = None) -> float:
        """Move the pusher at ``control`` (2,) m/s from now for ``duration`` s; returns at once.
        A running control (or fallback) is replaced. If no ``start`` arrives before the
        control ends, ``fallback`` (2,) m/s runs for one more ``duration``, then the pusher
        stops; with no fallback it stops when the control ends. Returns the world time at
        which the control began."""
        ...

    def wait_until(self, moment: float) -> None:
        """Return when the world's clock reads ``moment`` s or later."""
        ...

    def stop(self) -> None:
        """Bring the pusher to rest now (whenever the loop ends)."""
        ...


class Physics(Protocol):
    """What :class:`VirtualClockWorld` simulates."""

    def state(self) -> np.ndarray:
        """(D,) the current state."""
        ...

    def advance(self, control: np.ndarray, duration: float) -> None:
        """Move the pusher at ``control`` (2,) m/s (zero: stand still) for ``duration`` s."""
        ...


class PropagatorPhysics:
    """:class:`Physics` from a one-step propagator (``propagate(states, controls, durations)``).

    Args:
        propagator: e.g. the analytical coarse model or the fine model.
        initial_state: (D,) the starting state.
    """

    def __init__(self, propagator: Any, initial_state: np.ndarray) -> None:
        if not callable(getattr(propagator, "propagate", None)):
            raise TypeError("propagator: expected an object with `propagate(states, controls, durations)`")
        self.propagator = propagator
        self._state = np.array(initial_state, dtype=float)
        if self._state.ndim != 1 or not np.all(np.isfinite(self._state)):
            raise ValueError(f"initial_state: expected a finite vector (D,), got shape {self._state.shape}")

    def state(self) -> np.ndarray:
        return self._state.copy()

    def advance(self, control: np.ndarray, duration: float) -> None:
        result = np.asarray(
            self.propagator.propagate(self._state[None], np.asarray(control, dtype=float)[None], np.array([duration])),
            dtype=float,
        )[0]
        if not np.all(np.isfinite(result)):
            raise RuntimeError(f"propagator: non-finite state after control {np.asarray(control).tolist()} m/s")
        self._state = result


@dataclass(frozen=True)
class _Segment:
    """The pusher moves at ``control`` over [begin, end) s of world time."""

    begin: float
    end: float
    control: np.ndarray


def _checked_control(control: Any, name: str) -> np.ndarray:
    control = np.array(control, dtype=float)
    if control.shape != (2,) or not np.all(np.isfinite(control)):
        raise ValueError(f"{name}: expected 2 finite numbers (m/s), got {control.tolist()}")
    return control


class VirtualClockWorld:
    """An :class:`AsyncWorld` over a :class:`Physics`, on a clock that runs while the caller
    computes and jumps while it waits (module docstring).

    Args:
        physics: what is simulated.
        clock: the clock source, s (default ``time.perf_counter``); tests pass a fake one.
        max_segment: s, the longest piece the physics is advanced by at once (a streaming
            executor's command period; the simulated arm halts without a command for 0.1 s).

    Attributes:
        controls_started: ``start`` calls so far.
        motion_time: s of world time the pusher was commanded to move (controls and fallbacks).
    """

    def __init__(
        self, physics: Physics, *, clock: Callable[[], float] = time.perf_counter, max_segment: float = 0.02
    ) -> None:
        if not callable(getattr(physics, "advance", None)) or not callable(getattr(physics, "state", None)):
            raise TypeError("physics: expected an object with `state()` and `advance(control, duration)`")
        if not (isinstance(max_segment, (int, float)) and math.isfinite(max_segment) and max_segment > 0):
            raise ValueError(f"max_segment: expected a finite number > 0, got {max_segment!r}")
        self.physics = physics
        self._clock = clock
        self.max_segment = float(max_segment)
        self._simulated = 0.0  # world time up to which the physics has been advanced
        self._anchor_world = 0.0
        self._anchor_source = clock()
        self._segments: list[_Segment] = []
        self.controls_started = 0
        self.motion_time = 0.0

    def time(self) -> float:
        return self._anchor_world + (self._clock() - self._anchor_source)

    def _catch_up(self, moment: float | None = None) -> None:
        """Advance the physics to ``moment`` (default: now) and take the time it took off the clock."""
        target = self.time() if moment is None else moment
        while self._simulated < target - 1e-12:
            control, until = self._command_at(self._simulated)
            piece = min(target, until, self._simulated + self.max_segment) - self._simulated
            self.physics.advance(control, piece)
            if np.any(control != 0.0):
                self.motion_time += piece
            self._simulated += piece
        self._segments = [segment for segment in self._segments if segment.end > self._simulated]
        self._anchor_world = max(target, self._simulated)
        self._anchor_source = self._clock()

    def _command_at(self, moment: float) -> tuple[np.ndarray, float]:
        """(control, end of that command) at world time ``moment``."""
        for segment in self._segments:
            if segment.begin <= moment < segment.end:
                return segment.control, segment.end
        later = [segment.begin for segment in self._segments if segment.begin > moment]
        return np.zeros(2), min(later) if later else math.inf

    def observe(self) -> np.ndarray:
        self._catch_up()
        return self.physics.state()

    def start(self, control: np.ndarray, duration: float, fallback: np.ndarray | None = None) -> float:
        control = _checked_control(control, "control")
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not duration > 0.0:
            raise ValueError(f"duration: expected a number of seconds > 0, got {duration!r}")
        fallback = None if fallback is None else _checked_control(fallback, "fallback")
        self._catch_up()
        now = self._simulated
        self._segments = [_Segment(now, now + duration, control)]
        if fallback is not None:
            self._segments.append(_Segment(now + duration, now + 2.0 * duration, fallback))
        self.controls_started += 1
        return now

    def wait_until(self, moment: float) -> None:
        if moment > self.time():
            self._catch_up(moment)

    def stop(self) -> None:
        self._catch_up()
        self._segments = []


class BlockingWorld:
    """A :class:`parapush.planning.World` (blocking ``execute``) over an :class:`AsyncWorld`."""

    def __init__(self, world: AsyncWorld) -> None:
        self.world = world

    def observe(self) -> np.ndarray:
        return self.world.observe()

    def execute(self, control: np.ndarray, duration: float) -> None:
        started = self.world.start(control, duration)
        self.world.wait_until(started + duration)

    def stop(self) -> None:
        self.world.stop()


@dataclass(frozen=True)
class Transition:
    """One executed control with the states observed around it.

    Attributes:
        state: (D,) observed before the control started.
        control: (2,) m/s.
        duration: s.
        next_state: (D,) observed when it ended.
    """

    state: np.ndarray
    control: np.ndarray
    duration: float
    next_state: np.ndarray


class TransitionRecorder:
    """An :class:`AsyncWorld` that passes everything to ``world`` and records :class:`Transition` s.

    A control counts when it was started right after an observation (no other ``start`` or
    ``stop`` between) and the next observation comes when it has just ended (within
    ``tolerance``): a control cut short by a ``start`` or ``stop``, or followed by its fallback,
    moved the world in a way no single control explains and is not recorded.

    Args:
        world: the world acted on.
        tolerance: s; how late after a control's end its observation may come.

    Attributes:
        pending: transitions recorded and not yet taken (:meth:`take`).
    """

    def __init__(self, world: AsyncWorld, *, tolerance: float = 0.05) -> None:
        if not isinstance(world, AsyncWorld):
            raise TypeError(f"world: expected an AsyncWorld, got {type(world).__name__}")
        if not (isinstance(tolerance, (int, float)) and tolerance >= 0.0):
            raise ValueError(f"tolerance: expected a number of seconds >= 0, got {tolerance!r}")
        self.world = world
        self.tolerance = float(tolerance)
        self.pending: list[Transition] = []
        self._observed: np.ndarray | None = None
        self._running: tuple[np.ndarray, np.ndarray, float, float] | None = None  # state, control, duration, end

    def time(self) -> float:
        return self.world.time()

    def observe(self) -> np.ndarray:
        state = np.array(self.world.observe(), dtype=float)
        running, self._running = self._running, None
        if running is not None:
            before, control, duration, end = running
            if end - 1e-9 <= self.world.time() <= end + self.tolerance:
                self.pending.append(Transition(before, control, duration, state.copy()))
        self._observed = state
        return state

    def start(self, control: np.ndarray, duration: float, fallback: np.ndarray | None = None) -> float:
        begin = self.world.start(control, duration, fallback)
        observed, self._observed = self._observed, None
        self._running = None if observed is None else (observed, np.array(control, dtype=float), float(duration),
                                                       begin + float(duration))
        return begin

    def wait_until(self, moment: float) -> None:
        self.world.wait_until(moment)

    def stop(self) -> None:
        self.world.stop()
        self._running = None
        self._observed = None

    def take(self) -> list[Transition]:
        """The transitions recorded since the last call (oldest first); clears them."""
        taken, self.pending = self.pending, []
        return taken
