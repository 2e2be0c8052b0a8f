"""Faults the demo injects into the running stack (``demo --fault NAME``, issue 17).

Each fault goes in through the simulated driver's fault interface (its ``faults.*``
parameters, set with rclpy's parameter client as ``ros2 param set`` does, and its
``~/untrack_body`` service) or, for ``prediction_service_killed``, by SIGKILL to the
bringup's prediction service process (the graph respawns it). ``natnet_loss`` is set before
the goal is sent (it lasts the whole goal); the others once the goal has executed
``after_steps`` controls.

:class:`FaultInjector` also measures what the stack did, for ``metrics.json``, on the wall
clock (the ROS clock of every node): the arm commands (``/servo_node/delta_twist_cmds``) by
their header stamps (when the executor published them: on a loaded machine the demo receives
them up to a few hundred ms later), the executor's latched stop (``executor_status``, which
has no stamp) by when the demo received it, so a detection time is an upper bound.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import TwistStamped
from parareal_pushing.srv import UntrackBody
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rclpy.qos import DurabilityPolicy, QoSProfile

from parapush.execution.executor_diagnostics import latched_stop_reason


@dataclass(frozen=True)
class Fault:
    """One injectable fault.

    Attributes:
        name: the ``--fault`` name.
        description: what it does to the stack.
        before_goal: injected before the goal is sent (it lasts the whole goal).
    """

    name: str
    description: str
    before_goal: bool = False


FAULTS = {fault.name: fault for fault in (
    Fault("prediction_service_killed", "SIGKILL to the prediction service process (the graph respawns it)"),
    Fault("pusher_untracked", "the simulated Motive streams the pusher untracked for 0.5 s"),
    Fault("target_untracked", "the simulated Motive streams the target untracked for 3 s"),
    Fault("natnet_loss", "30 % of the NatNet frame datagrams are lost for the whole goal", before_goal=True),
    Fault("gripper_fault", "the simulated gripper reports fault 0x08 (gFLT)"),
    Fault("arm_fault", "the simulated arm goes into a protective stop (it no longer follows twists)"),
)}
UNTRACKED_SECONDS = {"pusher_untracked": 0.5, "target_untracked": 3.0}
NATNET_LOSS = 0.3
GRIPPER_FAULT_CODE = 0x08
DRIVER = "/sim_driver"
TWIST_TOPIC = "/servo_node/delta_twist_cmds"


class FaultInjectionError(RuntimeError):
    """The fault could not be injected (names the fault and why)."""


def wait_for_future(future, timeout: float, what: str, error: type[Exception] = FaultInjectionError):
    """The result of the rclpy ``future`` (spun by another thread); raises ``error`` naming ``what``
    when it is not done within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not future.done():
        if time.monotonic() > deadline:
            raise error(f"no answer from {what} within {timeout:.0f} s")
        time.sleep(0.01)
    return future.result()


class FaultInjector:
    """Injects ``fault`` into the stack that ``bringup`` runs and measures the safe stop.

    Args:
        node: the demo's node (spun by the demo's executor).
        bringup: the running :class:`parapush.programs.bringup.Bringup`.
        fault: one of :data:`FAULTS`.
        target: the scene's target object (``target_untracked``).
    """

    def __init__(self, node, bringup, fault: Fault, target: str) -> None:
        self.node = node
        self.bringup = bringup
        self.fault = fault
        self.target = target
        self.lock = threading.Lock()
        self.injected_wall: float | None = None  # s since the epoch
        self.detail = ""
        self.twists: list[tuple[float, bool]] = []  # (header stamp, s since the epoch; zero) of every command
        self.latched_stop: tuple[float, str] | None = None  # (received, s since the epoch; executor's reason)
        node.create_subscription(TwistStamped, TWIST_TOPIC, self._on_twist, 50)
        node.create_subscription(DiagnosticStatus, "/executor_status", self._on_status,
                                 QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._parameters = AsyncParameterClient(node, DRIVER)
        self._untrack = node.create_client(UntrackBody, f"{DRIVER}/untrack_body")

    def _on_twist(self, message: TwistStamped) -> None:
        linear = message.twist.linear
        stamp = message.header.stamp.sec + 1e-9 * message.header.stamp.nanosec
        with self.lock:
            self.twists.append((stamp, linear.x == 0.0 and linear.y == 0.0 and linear.z == 0.0))

    def _on_status(self, message: DiagnosticStatus) -> None:
        reason = latched_stop_reason(message)
        with self.lock:
            if reason is not None and self.injected_wall is not None and self.latched_stop is None:
                self.latched_stop = (time.time(), reason)

    def inject(self, timeout: float = 10.0) -> None:
        """Inject the fault now (blocking up to ``timeout`` s for the driver's answer).

        Raises:
            FaultInjectionError: the driver refused or did not answer, or no such process.
        """
        name = self.fault.name
        if name == "prediction_service_killed":
            running = [node for node in self.bringup.nodes if node.entry.name == "prediction_service"]
            if not running or running[0].process.poll() is not None:
                raise FaultInjectionError(f"{name}: no running prediction_service process")
            self._mark(f"SIGKILL to pid {running[0].process.pid}")
            running[0].process.send_signal(signal.SIGKILL)
        elif name in UNTRACKED_SECONDS:
            body = "pusher" if name == "pusher_untracked" else self.target
            request = UntrackBody.Request(body=body, duration=UNTRACKED_SECONDS[name], delay=0.0, omit=False)
            if not self._untrack.wait_for_service(timeout_sec=timeout):
                raise FaultInjectionError(f"{name}: {DRIVER}/untrack_body is not available")
            self._mark(f"{body} untracked for {request.duration} s")
            response = wait_for_future(self._untrack.call_async(request), timeout, DRIVER)
            if not response.success:
                raise FaultInjectionError(f"{name}: {response.message}")
        else:
            parameter = {"natnet_loss": Parameter("faults.natnet_loss", value=NATNET_LOSS),
                         "gripper_fault": Parameter("faults.gripper", value=GRIPPER_FAULT_CODE),
                         "arm_fault": Parameter("faults.arm", value="protective_stop")}[name]
            if not self._parameters.wait_for_services(timeout_sec=timeout):
                raise FaultInjectionError(f"{name}: {DRIVER}'s parameter services are not available")
            self._mark(f"{parameter.name} = {parameter.value}")
            response = wait_for_future(self._parameters.set_parameters([parameter]), timeout, DRIVER)
            if not response.results[0].successful:
                raise FaultInjectionError(f"{name}: {parameter.name} refused: {response.results[0].reason}")

    def _mark(self, detail: str) -> None:
        with self.lock:
            self.injected_wall, self.detail = time.time(), detail

    def metrics(self) -> dict:
        """The fault's entry of ``metrics.json`` (times in s; None: not seen): name, what was done,
        when (``injected_at_unix_s``); ``first_zero_twist_after_s``: the first zero arm command
        stamped after the injection; ``executor_stop_after_s`` and ``executor_stop_reason``: the
        executor's latched stop (received); ``last_motion_after_executor_stop_s``: the last
        non-zero arm command stamped after it was received (None: none, the pusher stayed
        stopped); ``stop_twist_after_s``: the zero command that ended the last motion stamped
        after the injection; ``time_to_safe_stop_s``: the earliest of the first zero command and
        the executor's stop."""
        with self.lock:
            injected = self.injected_wall
            twists = [(stamp, zero) for stamp, zero in self.twists if injected is not None and stamp >= injected]
            latched = self.latched_stop
            entry = {"name": self.fault.name, "description": self.fault.description, "detail": self.detail,
                     "injected": injected is not None, "injected_at_unix_s": injected}
        zeros = [stamp for stamp, zero in twists if zero]
        moving = [stamp for stamp, zero in twists if not zero]
        entry["first_zero_twist_after_s"] = zeros[0] - injected if zeros else None
        ending = [stamp for stamp in zeros if not moving or stamp > moving[-1]]
        entry["stop_twist_after_s"] = ending[0] - injected if ending else None
        entry["executor_stop_after_s"] = latched[0] - injected if latched and injected is not None else None
        entry["executor_stop_reason"] = latched[1] if latched else ""
        late = [stamp for stamp in moving if latched and stamp > latched[0]]
        entry["last_motion_after_executor_stop_s"] = late[-1] - latched[0] if late else None
        stops = [value for value in (entry["first_zero_twist_after_s"], entry["executor_stop_after_s"])
                 if value is not None]
        entry["time_to_safe_stop_s"] = min(stops) if stops else None
        return entry
