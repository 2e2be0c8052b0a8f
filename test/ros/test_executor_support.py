"""Shared pieces of the executor node tests (no tests here).

* :class:`Harness`: a node that publishes ``controls`` and calls ``~/stop`` / ``~/reset``,
  records every ``TwistStamped`` (with its receipt time) and ``/diagnostics``, and plays a
  fake arm: the pusher follows the last command (base -> table frame) held until the next one
  (zero after 0.1 s without one, like Servo) unless dropped (``holding`` False), and
  ``scene_state`` is published at 50 Hz.
* :func:`start_executor`: an :class:`ExecutorNode` with test parameters, added to the spinner.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import TwistStamped
from parareal_pushing.msg import ControlSequence, PusherControl, SceneState
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from std_srvs.srv import Trigger

from parapush.execution.frames import RigidTransform
from parapush.nodes.conversions import seconds_to_time, time_to_seconds
from parapush.nodes.executor import ExecutorNode

TWIST_TOPIC = "servo/delta_twist_cmds"
RATE_HZ = 100.0
PERIOD = 1.0 / RATE_HZ
#: Parameters of every test executor (no gripper unless a test enables it).
BASE_PARAMETERS = {
    "twist_topic": TWIST_TOPIC,
    "gripper_enabled": False,
    "allowed_publisher": "executor_test_harness",  # the Harness node publishes the controls
    "rate": RATE_HZ,
    "diagnostics_period": 0.2,
    "log_throttle_period": 0.5,
    # The fake arm shares this process (and 2 busy cores) with the node: a 0.1 s stale timeout
    # would now and then stop a test's motion; the stale-state tests set the shipped 0.1 s.
    "limits.stale_state_timeout": 0.3,
}


@dataclass(frozen=True)
class Received:
    """One received command: receipt time (monotonic), header stamp (ROS s), frame, linear,
    angular, and the fake arm's pusher position (table frame) when it arrived."""

    receipt: float
    stamp: float
    frame_id: str
    linear: np.ndarray
    angular: np.ndarray
    position: np.ndarray | None = None

    @property
    def is_zero(self) -> bool:
        return not (np.any(self.linear) or np.any(self.angular))

    @property
    def speed(self) -> float:
        return float(np.linalg.norm(self.linear))


def ros_now(node) -> float:
    return node.get_clock().now().nanoseconds * 1e-9


class Harness:
    """Controls out, twists in, a fake arm publishing ``scene_state``; see the module docstring."""

    def __init__(self, context, spinning, *, table_to_base: RigidTransform, start=(0.0, 0.0),
                 executor_name: str = "executor") -> None:
        self.node = rclpy.create_node("executor_test_harness", context=context)
        self.lock = threading.Lock()
        self.base_to_table = table_to_base.rotation.T
        self.position = np.array(start, dtype=float)
        self.velocity = np.zeros(2)
        self.last_twist = -math.inf
        self.last_step = time.monotonic()
        self.publishing = True
        self.holding = True  # False: the pusher was dropped, it no longer moves with the arm
        self.valid = True
        self.frame_id = "table"
        self.twists: list[Received] = []
        self.states: list[tuple[float, float]] = []  # (receipt-free publish mono, ROS stamp)
        self.diagnostics: list[DiagnosticArray] = []
        self.controls = self.node.create_publisher(ControlSequence, "controls", 10)
        self.state_publisher = self.node.create_publisher(SceneState, "scene_state", 10)
        self.node.create_subscription(TwistStamped, TWIST_TOPIC, self._on_twist, QoSProfile(depth=1000))
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 50)
        self.stop_client = self.node.create_client(Trigger, f"/{executor_name}/stop")
        self.reset_client = self.node.create_client(Trigger, f"/{executor_name}/reset")
        self.node.create_timer(0.02, self._step)  # 50 Hz: enough for the watchdogs, light on the 2 cores
        spinning.add(self.node)

    # -- fake arm ------------------------------------------------------------------------------
    def _on_twist(self, message: TwistStamped) -> None:
        linear = np.array([message.twist.linear.x, message.twist.linear.y, message.twist.linear.z])
        angular = np.array([message.twist.angular.x, message.twist.angular.y, message.twist.angular.z])
        receipt = time.monotonic()
        with self.lock:
            self._advance(receipt)
            received = Received(receipt, time_to_seconds(message.header.stamp), message.header.frame_id,
                                linear, angular, self.position.copy())
            self.twists.append(received)
            self.velocity = (self.base_to_table @ linear)[:2]
            self.last_twist = received.receipt

    def _advance(self, now: float) -> None:
        held_until = min(now, self.last_twist + 0.1)
        if held_until > self.last_step and self.holding:
            self.position = self.position + self.velocity * (held_until - self.last_step)
        self.last_step = now

    def _step(self) -> None:
        with self.lock:
            self._advance(time.monotonic())
            if not self.publishing:
                return
            message = SceneState()
            stamp = ros_now(self.node)
            message.header.stamp = seconds_to_time(stamp)
            message.header.frame_id = self.frame_id
            message.pusher.name = "pusher"
            message.pusher.x, message.pusher.y = (float(v) for v in self.position)
            message.pusher.valid = self.valid
            message.pusher.age = 0.0 if self.valid else math.inf
            self.states.append((time.monotonic(), stamp))
        self.state_publisher.publish(message)

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        with self.lock:
            self.diagnostics.append(message)

    # -- helpers -------------------------------------------------------------------------------
    def send(self, *controls: tuple[float, float, float], stamp: float | None = None, frame_id: str = "table"):
        """Publish a ControlSequence; ``stamp`` None: now (as the MPC does)."""
        message = ControlSequence()
        message.header.frame_id = frame_id
        message.header.stamp = seconds_to_time(ros_now(self.node) if stamp is None else stamp)
        message.controls = [PusherControl(vx=vx, vy=vy, duration=duration) for vx, vy, duration in controls]
        sent = time.monotonic()
        self.controls.publish(message)
        return sent

    def received(self, since: float = -math.inf) -> list[Received]:
        with self.lock:
            return [twist for twist in self.twists if twist.receipt >= since]

    def pusher(self) -> np.ndarray:
        with self.lock:
            return self.position.copy()

    def place(self, position) -> None:
        """Put the (resting) pusher at ``position`` and wait for the states to say so."""
        with self.lock:
            self.position = np.array(position, dtype=float)
        time.sleep(0.05)

    def call(self, client, timeout: float = 5.0) -> Trigger.Response:
        assert client.wait_for_service(timeout_sec=timeout), f"service {client.srv_name} not available"
        future = client.call_async(Trigger.Request())
        wait_until(future.done, timeout, what=f"an answer from {client.srv_name}")
        return future.result()

    def executor_values(self, since: float = -math.inf, timeout: float = 3.0) -> dict[str, str]:
        """Values (plus 'level' and 'message') of the newest executor status on /diagnostics."""
        return self._status_values("velocity commands", timeout)

    def gripper_values(self, timeout: float = 3.0) -> dict[str, str]:
        return self._status_values("gripper", timeout)

    def _status_values(self, suffix: str, timeout: float) -> dict[str, str]:
        with self.lock:
            self.diagnostics.clear()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                arrays = list(self.diagnostics)
            for array in reversed(arrays):
                for status in array.status:
                    if status.name.endswith(suffix):
                        values = {pair.key: pair.value for pair in status.values}
                        level = status.level
                        values["level"] = level[0] if isinstance(level, bytes) else int(level)
                        values["message"] = status.message
                        return values
            time.sleep(0.02)
        raise AssertionError(f"no /diagnostics status '*{suffix}' within {timeout} s")


#: A longer gap between two received commands means the (shared, loaded) machine starved the
#: node or the fake arm: the arm then holds a command longer than one period, which is outside
#: what the safety filter's guarantees assume (see :func:`undisturbed`).
MAX_GAP = 0.05


def max_gap(twists: list[Received]) -> float:
    """The longest time between two consecutive received commands, s."""
    receipts = [twist.receipt for twist in twists]
    return max((b - a for a, b in zip(receipts, receipts[1:], strict=False)), default=0.0)


def undisturbed(attempt, what: str, attempts: int = 6):
    """Run ``attempt()`` -> (received commands, result) until no gap between its commands exceeds
    :data:`MAX_GAP`; return (commands, result). Each disturbed attempt is printed."""
    for number in range(1, attempts + 1):
        twists, result = attempt()
        gap = max_gap(twists)
        if gap <= MAX_GAP:
            return twists, result
        print(f"\n[{what}] attempt {number}: a {gap * 1e3:.0f} ms gap between commands (the machine starved "
              "this process); measuring again")
    raise AssertionError(f"{what}: {attempts} attempts in a row were disturbed by gaps > {MAX_GAP} s")


def wait_until(predicate, timeout: float = 5.0, what: str = "the condition", period: float = 0.005):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(period)


def start_executor(context, spinning, **parameters) -> ExecutorNode:
    values = dict(BASE_PARAMETERS)
    values.update(parameters)
    node = ExecutorNode(
        context=context, parameter_overrides=[Parameter(name, value=value) for name, value in values.items()]
    )
    spinning.add(node)
    return node


def plateau(twists: list[Received], speed: float, tolerance: float = 1e-9) -> list[Received]:
    """The commands at full ``speed``."""
    return [twist for twist in twists if abs(twist.speed - speed) <= tolerance]
