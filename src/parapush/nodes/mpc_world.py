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
  the pusher is at rest by then (no fallback queued); stale or invalid states are refused
  after ``state_timeout``.
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
        state_timeout: s; a boundary without a valid state for this long is an error.
        latched_stop: polled; the executor's reason while it holds a latched stop, else None.
    """

    def __init__(
        self, node, *, cancel_requested: Callable[[], bool], settle_time: float, state_timeout: float,
        latched_stop: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.node = node
        self.cancel_requested = cancel_requested
        self.latched_stop = latched_stop
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
        while True:
            received, message = self.node.latest_state()
            if message is not None and received >= not_before:
                try:
                    return msg_to_snapshot(message, self.node.scene, require_valid=True).state
                except MessageError as error:
                    if time.monotonic() > deadline:
                        raise WorldError(f"scene state unusable: {error}") from None
            if time.monotonic() > deadline:
                raise WorldError(f"no scene state on 'scene_state' within {timeout} s")
            self._check_canceled()
            time.sleep(0.005)

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
        while (now := time.monotonic()) < moment:
            if self.cancel_requested():
                self.stop()
                return
            self._check_canceled()  # a stop latched by the executor
            time.sleep(min(0.005, moment - now))
        self._boundary = max(self._boundary, moment)

    def stop(self) -> None:
        message = ControlSequence()
        message.header.stamp = self.node.get_clock().now().to_msg()
        message.header.frame_id = "table"
        self.node.control_publisher.publish(message)
        self._rest_from = min(self._rest_from, time.monotonic())
