"""Executor node: the MPC's pusher controls as end-effector velocity commands, with hard safety limits.

Topics, services
----------------
``controls`` (parareal_pushing/ControlSequence, subscribed)
    Each message is a new plan: its controls (table-frame pusher velocities held for their
    durations) replace whatever is still queued (``queue_mode: replace``, the MPC's receding
    horizon) or are appended (``queue_mode: append``). An **empty** sequence means *stop now*:
    the next command is exactly zero (no deceleration ramp; the arm's own limits apply) and
    nothing is latched. ``header.stamp`` zero: start at the next command tick; otherwise the
    first control starts at that time (a stamp older than ``max_control_age`` is refused as a
    stale plan, one further than ``max_start_delay`` in the future is refused too).
    ``header.frame_id`` must be ``table_frame`` (or empty). A refused sequence (malformed,
    stale, too long, wrong frame, while a stop is latched) is logged with its reason and
    counted, and the pusher is stopped: the plan it was meant to replace is not continued.
    Only ``allowed_publisher`` (default ``mpc``: this stack's MPC, in this node's namespace) may
    move the robot: each message's publisher GID is mapped to its node through the ROS graph
    (refreshed whenever a publisher is matched, :mod:`parapush.execution.control_source`); a
    message from any other node, an empty one included, is refused, counted
    (``refused.foreign_publisher``) and otherwise ignored: this stack's plan goes on.
``scene_state`` (parareal_pushing/SceneState, subscribed)
    The pusher position, ``valid`` flag and measurement time feed the workspace check and the
    stale-state watchdog. The ROS stamp is converted to this node's monotonic clock with the
    offset between the two clocks at receipt, and backdated by ``pusher.age``, so estimator
    latency, DDS latency and a dead estimator all age the estimate.
``twist_topic`` (geometry_msgs/TwistStamped, published; default MoveIt Servo's input)
    At ``rate`` Hz while a control is active or the pusher is still decelerating, then zero
    ``stop_repeats`` times, then silence until the next control. The commands come from a
    dedicated thread ticking on an absolute 1/``rate`` grid (a late tick is not made up: the
    next one stays on the grid), not from an executor timer, so subscription callbacks cannot
    delay them; the controls' schedule is absolute, so jitter never stretches a control.
    ``frame_id = base_frame``; the table-frame velocity is rotated by ``table_to_base``
    (angular velocity zero).
    Every command goes through the :class:`~parapush.execution.safety.SafetyFilter`
    (speed, workspace braking envelope, acceleration, stale/invalid state, latched stop).
``/diagnostics`` (diagnostic_msgs/DiagnosticArray, every ``diagnostics_period``)
    Commands sent, controls received/refused/aborted, limits applied by reason, the latched
    stop and its reason, the pusher estimate's age, the gripper's status and problem.
``executor_status`` (diagnostic_msgs/DiagnosticStatus, transient local, depth 1)
    The velocity-commands status of ``/diagnostics`` (``stop_latched``, ``latch_reason``, counters),
    published at start-up and whenever a stop is latched or cleared: what a planner watches to
    end its goal with the executor's reason (e.g. ``motion_check: pusher does not follow ...``).
``~/stop``, ``~/reset`` (std_srvs/Trigger)
    ``stop`` latches zero velocity (queue dropped, controls refused) until ``reset``.
    ``reset`` is refused while the gripper reports a problem.

Watchdogs
---------
* Stale state: every command tick checks the estimate's age; an estimate older than
  ``limits.stale_state_timeout`` (or invalid, or missing) gives an exact zero at once, so
  motion stops within one command period of the timeout. The control that was running is
  aborted (dropped, not latched): the planner observes the stop and re-plans once the
  state is back.
* The pusher does not follow: the commanded displacement (published commands) against the
  estimated one over a sliding window (:mod:`parapush.execution.pusher_following`, ``following.*``);
  a pusher moving less than ``following.min_fraction`` of it (dropped pusher, arm fault, blocked
  pusher) **latches a stop** naming both displacements.
* Controls stop arriving: a control is executed only for its duration, never extrapolated;
  when the queue runs out the stream stops (deceleration ramp, then zero). An independent
  timer (``watchdog_period``, its own callback group) sends zero if this node's own command
  stream stalls for ``limits.command_timeout`` while the last command was non-zero.

Gripper (Robotiq 2F-85 holding the pusher)
------------------------------------------
With ``gripper_enabled``, start-up connects to ``gripper.address``, activates, closes on the
tool and checks it is detected (:mod:`parapush.execution.gripper_monitor`). **Any failure there
is a start-up error** (the node exits with status 3 naming the stage and the endpoint): a node
that is up always holds the tool. A gripper problem (fault, lost activation, tool lost, no
answer for ``gripper.no_answer_timeout``) **latches a stop**; ``~/reset`` is refused while it
persists. ``close()`` commands zero, waits until the arm has stopped (``limits.command_timeout``
after the last non-zero command) and opens the gripper (``gripper.release_on_shutdown``). On
Ctrl-C rclpy shuts the context down before ``close()`` runs, so that final zero cannot be
published: the arm then halts by its own command timeout (MoveIt Servo:
``incoming_command_timeout``), which must not exceed ``limits.command_timeout``.

Parameters: generated from :class:`~parapush.execution.execution_settings.ExecutionSettings`
(default, range and description declared there; the workspace ``limits.stall_margin`` is explained
there), plus ``table_to_base``. The control logic is :class:`~parapush.execution.executor_control.ExecutorControl`.

Every refusal or limiting action is logged with its reason, at most once per
``log_throttle_period`` per reason (with the count of repeats), and counted in diagnostics.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import TwistStamped
from parareal_pushing.msg import ControlSequence, SceneState
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.exceptions import InvalidNamespaceException, InvalidTopicNameException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_srvs.srv import Trigger

from parapush.execution.commands import TwistCommand
from parapush.execution.control_intake import check_controls, measurement_time
from parapush.execution.control_refusal import ControlsRefused
from parapush.execution.control_source import ControlPublishers, resolve_node_name
from parapush.execution.execution_settings import ExecutionSettings
from parapush.execution.executor_control import ExecutorControl
from parapush.execution.executor_diagnostics import gripper_report
from parapush.execution.gripper_errors import GripperError
from parapush.execution.gripper_monitor import ExecutorStartupError, GripperMonitor
from parapush.execution.throttled_log import ThrottledLog
from parapush.execution.velocity_executor import VelocityExecutor
from parapush.nodes.conversions import report_to_status, time_to_seconds
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import (
    ParameterError,
    declare_parameters,
    parameter_specs,
    settings_from_parameters,
)
from parapush.settings import SettingsError

PARAMETERS = parameter_specs(ExecutionSettings)
MODBUS_LOGGER = "pymodbus"


@contextlib.contextmanager
def quiet_modbus_connection_errors():
    """pymodbus logs every refused connection attempt at ERROR (``Connection to (host, port) failed:
    [Errno 111] Connection refused``, then ``Repeating....``). At start-up the executor retries
    until the gripper answers (``gripper.connect_timeout``: a simulated driver started beside it is
    still coming up) and reports the outcome itself, naming the endpoint; so pymodbus's own errors
    are held back while it does, and only then."""
    logger = logging.getLogger(MODBUS_LOGGER)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)

__all__ = ["PARAMETERS", "ExecutorNode", "ExecutorStartupError", "main"]


class ExecutorNode(Node):
    """Executes ``controls`` on the arm as safe ``TwistStamped`` commands; holds the pusher in the gripper."""

    def __init__(self, **node_options) -> None:
        super().__init__("executor", **node_options)
        self.settings = settings = settings_from_parameters(ExecutionSettings, declare_parameters(self, PARAMETERS))
        self.control = ExecutorControl(settings.executor_settings(), self._publish,
                                       ThrottledLog(self.get_logger(), settings.log_throttle_period),
                                       following=settings.following)
        self.sources = ControlPublishers(resolve_node_name(settings.allowed_publisher, self.get_namespace()))
        self.gripper: GripperMonitor | None = None
        if settings.gripper_enabled:
            try:
                self.gripper = self._start_gripper()  # nothing else exists yet if this fails
            except BaseException:
                self.destroy_node()
                raise
        try:
            self._create_interfaces()
        except BaseException:
            if self.gripper is not None:
                self.gripper.close()  # no longer polled; the fingers stay closed on the tool
            self.destroy_node()
            raise
        if self.gripper is not None:
            self.gripper.start()
        limits = settings.limits
        if limits.stall_margin < limits.recommended_stall_margin - 1e-12:
            self.get_logger().warning(
                f"limits.stall_margin {limits.stall_margin} m is below max_speed x command_timeout + "
                f"max_speed^2 / (2 max_acceleration) = {limits.recommended_stall_margin:.4f} m: if this node "
                "stalls, the arm (holding its last command until its own timeout) may leave the workspace box"
            )
        self.get_logger().info(
            f"ready: {settings.rate:g} Hz TwistStamped on '{settings.twist_topic}' in '{settings.base_frame}'; "
            f"workspace x [{limits.x_min}, {limits.x_max}] y [{limits.y_min}, {limits.y_max}] m, kept "
            f"{limits.stall_margin} m inside, {limits.max_speed} m/s, {limits.max_acceleration} m/s^2, stale after "
            f"{limits.stale_state_timeout} s; gripper: "
            + (self.gripper.snapshot().endpoint + " (tool held)" if self.gripper is not None else "disabled")
            + f"; controls from {self.sources.allowed or 'any node'}"
        )
        if not self.sources.allowed:
            self.get_logger().warning("allowed_publisher is empty: controls from ANY node on this ROS domain move "
                                      "this robot; set it to this stack's MPC")

    @property
    def executor_core(self) -> VelocityExecutor:
        return self.control.core

    def _create_interfaces(self) -> None:
        """Publishers, subscriptions, services, the command thread and the timers."""
        settings = self.settings
        try:
            self._twist_publisher = self.create_publisher(TwistStamped, settings.twist_topic, 10)
        except (InvalidTopicNameException, InvalidNamespaceException) as error:
            raise ParameterError(f"parameter 'twist_topic': {error}") from None
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._status = self.create_publisher(DiagnosticStatus, "executor_status",
                                             QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._publish_status()
        self._controls = self.create_subscription(
            ControlSequence, "controls", self._on_controls, 10, callback_group=MutuallyExclusiveCallbackGroup(),
            event_callbacks=SubscriptionEventCallbacks(matched=lambda _: self._refresh_publishers()))
        self.create_subscription(SceneState, "scene_state", self._on_state, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        services = MutuallyExclusiveCallbackGroup()
        self.create_service(Trigger, "~/stop", self._on_stop, callback_group=services)
        self.create_service(Trigger, "~/reset", self._on_reset, callback_group=services)
        self._command_thread = threading.Thread(target=self.control.run_commands, args=(self.context.ok,),
                                                name="executor-commands", daemon=True)
        self._command_thread.start()
        self.create_timer(settings.watchdog_period, self._watchdog, callback_group=MutuallyExclusiveCallbackGroup())
        self.create_timer(settings.diagnostics_period, self._publish_diagnostics,
                          callback_group=MutuallyExclusiveCallbackGroup())

    def _start_gripper(self) -> GripperMonitor:
        settings = self.settings.gripper
        try:
            monitor = GripperMonitor.from_settings(settings, on_problem=self._latch_gripper_problem)
        except SettingsError as error:
            raise ParameterError(f"parameter 'gripper.{error.path}': {error.problem}") from None
        endpoint = monitor.gripper.endpoint.describe()
        self.get_logger().info(f"gripper: connecting to {endpoint}, activating, closing on the tool")
        with quiet_modbus_connection_errors():
            status = monitor.start_up(settings)
        width = monitor.snapshot().grasp_width_m
        self.get_logger().info(f"gripper: tool held at {width * 1e3:.1f} mm; {status.describe()}")
        return monitor

    def _latch_gripper_problem(self, problem: str) -> None:
        self._latch(problem, source="gripper")

    def _latch(self, message: str, *, source: str) -> None:
        if self.control.latch(message, source=source):
            self.get_logger().error(f"stop latched by {source}: {message}; zero velocity until ~/reset")
            self._publish_status()

    def _publish_status(self) -> None:
        """The velocity-commands status on ``executor_status`` (latched: the last one reaches late joiners)."""
        self._status.publish(report_to_status(self.control.report(self.get_name(), self.settings.base_frame)))

    def _publish(self, command: TwistCommand) -> None:
        """Publish one command (the control's lock held)."""
        message = TwistStamped()
        message.header.stamp = self.get_clock().now().to_msg()
        message.header.frame_id = command.frame_id
        message.twist.linear.x, message.twist.linear.y, message.twist.linear.z = (float(v) for v in command.linear)
        message.twist.angular.x, message.twist.angular.y, message.twist.angular.z = (
            float(v) for v in command.angular
        )
        self._twist_publisher.publish(message)

    def _watchdog(self) -> None:
        if self.gripper is not None and not self.control.closed:
            self.gripper.check_silence()  # latches through _latch_gripper_problem
        self.control.watchdog()

    # -- inputs --------------------------------------------------------------------------------
    def _refresh_publishers(self) -> None:
        """Map the publishers of ``controls`` to their nodes (graph API); warn about foreign ones."""
        topic = self._controls.topic_name
        for name in self.sources.update((bytes(info.endpoint_gid), info.node_namespace, info.node_name)
                                        for info in self.get_publishers_info_by_topic(topic)):
            self.get_logger().warning(f"{name} publishes on {topic}: its controls will be refused "
                                      f"(allowed_publisher: {self.sources.allowed})")

    def _on_controls(self, message: ControlSequence, info: dict) -> None:
        self.control.counters.count("control_messages")
        gid = info.get("publisher_gid")
        try:
            self.sources.check(bytes(gid["data"]) if gid else None, self._refresh_publishers)
        except ControlsRefused as refused:
            self.control.refuse(refused, stop=False)
            return
        if not message.controls:
            if self.control.stop_requested():
                self.get_logger().info("empty ControlSequence: stopped")
            return
        try:
            controls, start = check_controls(
                [(control.vx, control.vy, control.duration) for control in message.controls],
                frame_id=message.header.frame_id,
                stamp_s=time_to_seconds(message.header.stamp),
                ros_now_s=self.get_clock().now().nanoseconds * 1e-9,
                monotonic_now_s=time.monotonic(),
                settings=self.settings,
            )
            self.control.accept(controls, start, replace=self.settings.queue_mode == "replace")
        except ControlsRefused as refused:
            self.control.refuse(refused)

    def _on_state(self, message: SceneState) -> None:
        frame, table_frame = message.header.frame_id, self.settings.table_frame
        stamp = time_to_seconds(message.header.stamp)
        if frame and frame != table_frame:
            key, text = "state_frame", (f"scene_state in frame {frame!r} ignored: expected {table_frame!r} "
                                        "(the estimate will go stale and stop the pusher)")
        elif stamp == 0.0:
            key, text = "state_stamp", "scene_state without a stamp ignored: its age cannot be checked"
        else:
            pusher = message.pusher
            measured = measurement_time(stamp_s=stamp, ros_now_s=self.get_clock().now().nanoseconds * 1e-9,
                                        monotonic_now_s=time.monotonic(), valid=pusher.valid, age_s=pusher.age)
            problem = self.control.update_state((pusher.x, pusher.y), stamp_s=measured, valid=bool(pusher.valid))
            if problem is not None:
                self._latch(problem, source="motion_check")
            return
        self.control.reject_state(key, text)

    # -- services ------------------------------------------------------------------------------
    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self._latch("stop service called", source="service")
        response.success = True
        response.message = "stop latched: zero velocity, controls refused until ~/reset"
        return response

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        gripper = self.gripper
        response.success, response.message = self.control.reset(
            gripper.reset_blocker if gripper is not None else lambda: None
        )
        if not response.success:
            self.get_logger().error(response.message)
        elif response.message.startswith("stop cleared"):
            self.get_logger().warning(response.message)
            self._publish_status()
        return response

    # -- diagnostics ---------------------------------------------------------------------------
    def diagnostics(self) -> DiagnosticArray:
        executor = self.control.report(self.get_name(), self.settings.base_frame)
        gripper = gripper_report(self.get_name(), self.gripper.snapshot() if self.gripper is not None else None)
        array = DiagnosticArray(status=[report_to_status(executor), report_to_status(gripper)])
        array.header.stamp = self.get_clock().now().to_msg()
        return array

    def _publish_diagnostics(self) -> None:
        self._diagnostics.publish(self.diagnostics())

    # -- shutdown ------------------------------------------------------------------------------
    def close(self) -> None:
        """Command zero, wait until the arm has stopped, release the gripper and disconnect. Idempotent."""
        try:
            if not self.control.close_output("executor shutting down"):
                return
        except Exception as error:  # noqa: BLE001 - the context may already be shut down (Ctrl-C)
            self._log_close(f"could not publish the final zero command ({error}); "
                            "the arm's own command timeout stops it")
        self._stop_command_thread()
        if self.gripper is None:
            return
        self.gripper.stop()
        try:
            if self.settings.gripper.release_on_shutdown:
                wait = self.settings.limits.command_timeout - (time.monotonic() - self.control.last_nonzero_publish)
                if wait > 0.0:
                    time.sleep(wait)  # the arm halts at its command timeout at the latest
                status = self.gripper.release(timeout_s=self.settings.gripper.release_timeout)
                self._log_close(f"gripper released: {status.describe()}")
        except GripperError as error:
            self._log_close(f"gripper release failed: {error}", error=True)
        finally:
            self.gripper.close()

    def _stop_command_thread(self) -> None:
        thread = getattr(self, "_command_thread", None)
        if thread is not None:
            self.control.stop_commands()
            if thread is not threading.current_thread():
                thread.join(2.0)

    def destroy_node(self) -> None:
        self._stop_command_thread()  # also without close(): never publish through a destroyed node
        super().destroy_node()

    def _log_close(self, text: str, *, error: bool = False) -> None:
        try:
            if error:
                self.get_logger().error(text)
            else:
                self.get_logger().info(text)
        except Exception:  # noqa: BLE001 - logging after the context shut down
            print(f"[executor] {text}", flush=True)


def main(args=None) -> int:
    return run_node(ExecutorNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
