"""The MPC node's world: the robot (or simulator) seen through ROS topics.

:class:`RosAsyncWorld` implements :class:`parapush.planning.async_world.AsyncWorld` for
both planner loops (the sequential one through
:class:`~parapush.planning.async_world.BlockingWorld`):

- ``start(control, duration, fallback)`` publishes a ControlSequence ``[control, fallback]``
  (or ``[control]``) on ``controls`` with a zero stamp: the executor starts it at its next
  command tick and, in its default ``queue_mode: replace``, drops whatever was running. So
  the fallback runs only if no new sequence arrives before the control ends, and the pusher
  stops when the sequence runs out (the executor's stream ends with a stop).
- ``observe`` returns the first valid scene state (``scene_state``, from the estimator)
  received after the last control boundary the loop waited for, plus ``settle_time`` if
  the pusher is at rest by then (no fallback queued). A state whose pusher or objects are
  not tracked (``valid`` false), or no fresh state for ``PAUSE_AFTER``, *pauses* the goal:
  the pusher is stopped at once (no fallback runs on a blind world) and ``on_event`` says
  so (a body lost while a control runs stops the pusher at once too); the first usable
  state resumes it (the loop then compares it with its prediction and re-plans from it if
  a body moved, e.g. bumped while occluded). A pause longer than
  ``state_timeout`` is an error that ends the goal.
- ``wait_until`` sleeps on the monotonic clock (the world's ``time``); a cancelled goal
  (``cancel_requested``) stops the pusher at once and ends the wait; after that ``observe``
  and ``start`` raise :class:`GoalCanceledError`, so the loop ends without moving again.
- ``stop`` publishes an empty ControlSequence (the executor stops the pusher).
- a stop latched by the executor (``latched_stop()`` returns its reason: the pusher is
  already stopped) ends the goal: ``observe``, ``start`` and ``wait_until`` raise
  :class:`ExecutorStopError`, and ``executor_stop`` keeps the reason for the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from parareal_pushing.msg import ControlSequence

from parapush.nodes.conversions import MessageError, controls_to_msg, msg_to_snapshot

FIRST_STATE_TIMEOUT = 10.0
"""s to wait for the first scene state of a goal (DDS may still be matching the estimator)."""

PAUSE_AFTER = 0.1
"""s after a control boundary without a fresh scene state before the pusher is stopped (a
state that marks a body untracked stops it at once); the executor's stale-state timeout."""


class WorldError(RuntimeError):
    """The robot (or simulator) cannot be observed or commanded."""


class ExecutorStopError(WorldError):
    """The executor latched a stop (its reason is the message): the world no longer moves."""


class GoalCanceledError(WorldError):
    """The goal was cancelled: the world no longer observes or moves."""


class RosAsyncWorld:
    """An :class:`~parapush.planning.async_world.AsyncWorld` over ROS topics (module docstring).

    Args:
        node: the MPC node (``latest_state()``, ``scene``, ``control_publisher``).
        cancel_requested: polled; true once the goal is cancelled or the node closes.
        settle_time: s to wait after the pusher came to rest before observing.
        state_timeout: s; a pause (no usable state after a boundary) this long is an error.
        latched_stop: polled; the executor's reason while it holds a latched stop, else None.
        on_event: told (a sentence) when the goal pauses for tracking and when it resumes.
    """

    def __init__(
        self, node, *, cancel_requested: Callable[[], bool], settle_time: float, state_timeout: float,
        latched_stop: Callable[[], str | None] = lambda: None, on_event: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.node = node
        self.cancel_requested = cancel_requested
        self.latched_stop = latched_stop
        self.on_event = on_event
        self.executor_stop: str | None = None  # the executor's reason, once it ended the goal
        self.settle_time = settle_time
        self.state_timeout = state_timeout
        self._boundary = time.monotonic()  # observations must be received after this
        self._rest_from = self._boundary  # the pusher is at rest from this time on (if nothing new starts)
        self._observed = False

    def time(self) -> float:
        return time.monotonic()

    def _check_canceled(self) -> None:
        reason = self.latched_stop()
        if reason is not None:
            self.executor_stop = reason
            raise ExecutorStopError(reason)
        if self.cancel_requested():
            raise GoalCanceledError("the goal was cancelled")

    def observe(self) -> np.ndarray:
        self._check_canceled()
        not_before = self._boundary + (self.settle_time if self._rest_from <= self._boundary else 0.0)
        timeout = self.state_timeout if self._observed else max(self.state_timeout, FIRST_STATE_TIMEOUT)
        self._observed = True
        deadline = not_before + timeout
        paused_at, problem = None, ""
        while True:
            now = time.monotonic()
            received, message = self.node.latest_state()
            if message is not None and received >= not_before:
                try:
                    state = msg_to_snapshot(message, self.node.scene, require_valid=True).state
                except MessageError as error:
                    problem = str(error)
                    if now > deadline:
                        raise WorldError(f"scene state unusable: {error}") from None
                else:
                    if paused_at is not None:
                        self.on_event(f"resumed after {now - paused_at:.2f} s paused ({problem})")
                    return state
            elif now > not_before + PAUSE_AFTER:
                problem = self._tracking_problem(message) or \
                    f"no scene state on 'scene_state' for {now - not_before:.2f} s"
            if now > deadline:
                raise WorldError(f"no scene state on 'scene_state' within {timeout} s")
            if problem and paused_at is None:
                self.stop()  # no usable state: the pusher must not run its fallback blind
                paused_at = now
                self.on_event(f"paused: {problem}")
            self._check_canceled()
            time.sleep(0.005)

    def _tracking_problem(self, message) -> str:
        """Why the state ``message`` (or None) marks a body untracked; empty when all are tracked."""
        if message is None or (message.pusher.valid and all(body.valid for body in message.objects)):
            return ""
        try:
            msg_to_snapshot(message, self.node.scene, require_valid=True)
        except MessageError as error:
            return str(error)
        return ""

    def start(self, control: np.ndarray, duration: float, fallback: np.ndarray | None = None) -> float:
        self._check_canceled()
        controls = np.asarray(control, dtype=float)[None]
        if fallback is not None:
            controls = np.concatenate([controls, np.asarray(fallback, dtype=float)[None]])
        message = controls_to_msg(controls, duration)  # stamp zero: start at the executor's next tick
        self.node.control_publisher.publish(message)
        begin = time.monotonic()
        self._rest_from = begin + duration * len(controls)
        return begin

    def wait_until(self, moment: float) -> None:
        blind = False
        while (now := time.monotonic()) < moment:
            if self.cancel_requested():
                self.stop()
                return
            self._check_canceled()  # a stop latched by the executor
            problem = "" if blind else self._tracking_problem(self.node.latest_state()[1])
            if problem:
                blind = True  # a body is lost mid-control: stop now; observe pauses until it is back
                self.stop()
                self.on_event(f"stopped mid-control: {problem}")
            time.sleep(min(0.005, moment - now))
        self._boundary = max(self._boundary, moment)

    def stop(self) -> None:
        message = ControlSequence()
        message.header.stamp = self.node.get_clock().now().to_msg()
        message.header.frame_id = "table"
        self.node.control_publisher.publish(message)
        self._rest_from = min(self._rest_from, time.monotonic())
