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
* Controls stop arriving: a control is executed only for its duration, never extrapolated;
  when the queue runs out the stream stops (deceleration ramp, then zero). An independent
  timer (``watchdog_period``, its own callback group) sends zero if this node's own command
  stream stalls for ``limits.command_timeout`` while the last command was non-zero.

Gripper (Robotiq 2F-85 holding the pusher)
------------------------------------------
With ``gripper_enabled``, start-up connects (``gripper.address``: a serial device, ``host:port``
or ``tcp://host:port`` for Modbus TCP, ``rtu+tcp://host:port``), activates, closes on the pusher
tool and checks that an object of ``gripper.tool_width`` is detected. **Decision: any failure
there is a start-up error** (the node exits with status 3 and a message naming the stage and
the endpoint): a node that is up always holds the tool, and nobody can send motion to an arm
whose pusher is not gripped. A thread then polls the status every ``gripper.poll_period``; a
fault (gFLT or kFLT), a lost activation or the tool no longer detected (gOBJ != 2) **latches a
stop**, and so does a gripper that has not answered for ``gripper.no_answer_timeout`` (checked
by the watchdog timer, so a poll blocked in request retries cannot delay it). ``~/reset`` is
refused while such a problem persists; a major fault (cleared only by re-activation, which
opens the fingers) needs a restart of the node. ``close()`` (shutdown) commands zero, waits
until the arm has stopped (``limits.command_timeout`` after the last non-zero command) and
opens the gripper (``gripper.release_on_shutdown``; the driver refuses while a major fault is
reported, which is logged). On Ctrl-C rclpy shuts the context down before ``close()`` runs, so
that final zero cannot be published: the arm then halts by its own command timeout (MoveIt
Servo: ``incoming_command_timeout``), which must not exceed ``limits.command_timeout``.

Workspace margin: the safety filter's braking envelope assumes one command per period. If this
node stalls (an overloaded machine), the arm holds its last command until its own timeout and
then decelerates, so the filter is given the workspace box shrunk by ``limits.stall_margin`` on
every side (default 15 mm = 0.1 m/s x 0.1 s + 0.1^2 / (2 x 1 m/s^2)): normally the pusher stops
that far inside the configured box, and a stall of up to the arm's timeout still stops it inside.

Every refusal or limiting action is logged with its reason, at most once per
``log_throttle_period`` per reason (with the count of repeats), and counted in diagnostics.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TwistStamped
from parareal_pushing.msg import ControlSequence, SceneState
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.exceptions import InvalidNamespaceException, InvalidTopicNameException
from rclpy.node import Node
from std_srvs.srv import Trigger

from parapush.execution.command_stream import CommandStreamSettings, StreamPhase
from parapush.execution.commands import PlanarControl, TwistCommand
from parapush.execution.frames import RigidTransform
from parapush.execution.gripper import GripperDriverSettings, RobotiqGripper
from parapush.execution.gripper_endpoint import SerialEndpoint, TcpEndpoint, parse_endpoint
from parapush.execution.gripper_errors import GraspError, GripperError
from parapush.execution.safety import SafetyLimits, SafetyReason
from parapush.execution.velocity_executor import ExecutorSettings, ExecutorStep, VelocityExecutor
from parapush.nodes.conversions import time_to_seconds
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import ParameterError, ParameterSpec, declare_parameters
from parapush.robotiq.finger_geometry import FingerGeometry
from parapush.robotiq.registers import GripperStatus, ObjectStatus

QUEUE_MODES = ("replace", "append")

PARAMETERS = (
    # Output.
    ParameterSpec("twist_topic", "/servo_node/delta_twist_cmds",
                  "topic of the end-effector velocity commands (MoveIt Servo's TwistStamped input)",
                  allow_empty=False),
    ParameterSpec("base_frame", "base_link",
                  "frame_id of the commands: the robot base frame (Servo's robot_link_command_frame)",
                  allow_empty=False),
    ParameterSpec("table_frame", "table", "frame of the controls and of scene_state; others are refused",
                  allow_empty=False),
    ParameterSpec("table_to_base", [0.5, 0.0, 0.0, 0.0],
                  "pose of the table frame in the base frame: [x, y, z, yaw] (m, rad) or "
                  "[x, y, z, qx, qy, qz, qw]; velocities are rotated by it"),
    ParameterSpec("rate", 100.0, "Hz, command rate while moving", minimum=1.0, maximum=1000.0),
    ParameterSpec("stop_repeats", 3, "zero commands sent after the pusher came to rest", minimum=1, maximum=100),
    # Controls.
    ParameterSpec("queue_mode", "replace", "a new ControlSequence replaces the queue or is appended to it",
                  choices=QUEUE_MODES),
    ParameterSpec("max_controls", 100, "most controls in one ControlSequence", minimum=1, maximum=10000),
    ParameterSpec("max_control_duration", 10.0, "s; a longer control is refused", minimum=0.001, maximum=600.0),
    ParameterSpec("max_control_age", 0.25,
                  "s; a ControlSequence stamped longer ago is refused as a stale plan (0: no check)",
                  minimum=0.0, maximum=60.0),
    ParameterSpec("max_start_delay", 1.0, "s; a ControlSequence stamped further in the future is refused",
                  minimum=0.0, maximum=60.0),
    # Hard limits (table frame).
    ParameterSpec("limits.x_min", -0.35, "m, workspace box of the pusher centre, table frame", minimum=-10.0,
                  maximum=10.0),
    ParameterSpec("limits.x_max", 0.35, "m", minimum=-10.0, maximum=10.0),
    ParameterSpec("limits.y_min", -0.45, "m", minimum=-10.0, maximum=10.0),
    ParameterSpec("limits.y_max", 0.45, "m", minimum=-10.0, maximum=10.0),
    ParameterSpec("limits.stall_margin", 0.015,
                  "m; the safety filter keeps the pusher this far inside the workspace box, so that a command "
                  "held until the arm's own timeout (this node stalled) still stops inside the box; at least "
                  "max_speed x command_timeout + max_speed^2 / (2 max_acceleration) (0.015 m at the defaults)",
                  minimum=0.0, maximum=1.0),
    ParameterSpec("limits.max_speed", 0.1, "m/s, pusher speed limit (faster commands are scaled down)",
                  minimum=1e-4, maximum=2.0),
    ParameterSpec("limits.max_acceleration", 1.0, "m/s^2, limit on the change of the commanded velocity",
                  minimum=1e-3, maximum=50.0),
    ParameterSpec("limits.stale_state_timeout", 0.1, "s; an older pusher estimate stops the pusher",
                  minimum=0.001, maximum=10.0),
    ParameterSpec("limits.command_timeout", 0.1,
                  "s; commands further apart count as stopped (the arm's own timeout must not be longer)",
                  minimum=0.002, maximum=10.0),
    ParameterSpec("watchdog_period", 0.02, "s between command-silence checks", minimum=0.001, maximum=1.0),
    # Reporting.
    ParameterSpec("diagnostics_period", 1.0, "s between diagnostics messages", minimum=0.05, maximum=60.0),
    ParameterSpec("log_throttle_period", 1.0, "s; each reason is logged at most once per period",
                  minimum=0.0, maximum=600.0),
    # Gripper.
    ParameterSpec("gripper_enabled", True, "drive a Robotiq 2F-85 holding the pusher (false: arm without one)"),
    ParameterSpec("gripper.address", "/dev/ttyUSB0",
                  "serial device (Modbus RTU), host:port or tcp://host:port (Modbus TCP), rtu+tcp://host:port",
                  allow_empty=False),
    ParameterSpec("gripper.device_id", 9, "Modbus device (slave) id", minimum=1, maximum=247),
    ParameterSpec("gripper.baudrate", 115200, "bit/s on a serial port (8N1)", minimum=1200, maximum=4000000),
    ParameterSpec("gripper.request_timeout", 0.25, "s, limit for one Modbus answer", minimum=0.001, maximum=10.0),
    ParameterSpec("gripper.retries", 1, "extra attempts of a failed single request", minimum=0, maximum=10),
    ParameterSpec("gripper.connect_timeout", 10.0, "s to keep retrying the connection at start-up",
                  minimum=0.0, maximum=600.0),
    ParameterSpec("gripper.activation_timeout", 5.0, "s, limit for the activation", minimum=0.01, maximum=60.0),
    ParameterSpec("gripper.grasp_timeout", 5.0, "s, limit for closing on the tool", minimum=0.01, maximum=60.0),
    ParameterSpec("gripper.release_timeout", 5.0, "s, limit for opening at shutdown", minimum=0.01, maximum=60.0),
    ParameterSpec("gripper.tool_width", 0.029, "m, width of the pusher tool between the pads",
                  minimum=0.001, maximum=0.085),
    ParameterSpec("gripper.width_tolerance", 0.003, "m, allowed |measured - tool_width| after the grasp",
                  minimum=1e-4, maximum=0.085),
    ParameterSpec("gripper.grasp_speed", 128, "finger speed count (0-255)", minimum=0, maximum=255),
    ParameterSpec("gripper.grasp_force", 150, "grip force count (0-255)", minimum=0, maximum=255),
    ParameterSpec("gripper.poll_period", 0.02, "s between status polls (faults latch a stop)",
                  minimum=0.002, maximum=1.0),
    ParameterSpec("gripper.no_answer_timeout", 0.25, "s without a status answer that latches a stop",
                  minimum=0.005, maximum=10.0),
    ParameterSpec("gripper.release_on_shutdown", True, "open the gripper when the node shuts down"),
)

_LIMIT_PARAMETERS = {
    "x_min_m": "limits.x_min",
    "x_max_m": "limits.x_max",
    "y_min_m": "limits.y_min",
    "y_max_m": "limits.y_max",
    "max_speed_m_s": "limits.max_speed",
    "max_acceleration_m_s2": "limits.max_acceleration",
    "stale_state_timeout_s": "limits.stale_state_timeout",
    "command_timeout_s": "limits.command_timeout",
}

#: Reasons that abort the running control (the stream would otherwise resume it later).
_ABORTING_REASONS = frozenset(
    {
        SafetyReason.STATE_MISSING,
        SafetyReason.STATE_INVALID,
        SafetyReason.STATE_STALE,
        SafetyReason.INVALID_COMMAND,
        SafetyReason.CLOCK_ERROR,
    }
)
_INFO_REASONS = frozenset({SafetyReason.ACCELERATION_LIMITED})


class ExecutorStartupError(RuntimeError):
    """The executor cannot start (the gripper could not be connected, activated or closed on the tool)."""


# -- ROS-free helpers --------------------------------------------------------------------------
def executor_settings(values: dict) -> ExecutorSettings:
    """The core settings from the node's parameter values.

    Raises:
        ParameterError: naming the parameter.
    """
    try:
        transform = RigidTransform.from_parameters(values["table_to_base"])
    except (ValueError, TypeError) as error:
        raise ParameterError(f"parameter 'table_to_base': {error}") from None
    try:
        SafetyLimits(**{field: values[name] for field, name in _LIMIT_PARAMETERS.items()})  # the configured box
    except ValueError as error:
        text = str(error)
        field = text.split(":", 1)[0]
        raise ParameterError(f"parameter '{_LIMIT_PARAMETERS.get(field, 'limits')}': {text}") from None
    margin = values["limits.stall_margin"]
    shrunk = {field: values[name] for field, name in _LIMIT_PARAMETERS.items()}
    shrunk.update(x_min_m=values["limits.x_min"] + margin, x_max_m=values["limits.x_max"] - margin,
                  y_min_m=values["limits.y_min"] + margin, y_max_m=values["limits.y_max"] - margin)
    if shrunk["x_max_m"] <= shrunk["x_min_m"] or shrunk["y_max_m"] <= shrunk["y_min_m"]:
        raise ParameterError(f"parameter 'limits.stall_margin': {margin} m on every side leaves no workspace in "
                             f"x [{values['limits.x_min']}, {values['limits.x_max']}] "
                             f"y [{values['limits.y_min']}, {values['limits.y_max']}] m")
    limits = SafetyLimits(**shrunk)
    period = 1.0 / values["rate"]
    if 2.0 * period > values["limits.command_timeout"]:
        raise ParameterError(
            f"parameter 'rate': {values['rate']} Hz gives a command period of {period:.4g} s, more than half of "
            f"limits.command_timeout ({values['limits.command_timeout']} s): timer jitter would count as a gap"
        )
    stream = CommandStreamSettings(rate_hz=values["rate"], frame_id=values["base_frame"], table_to_base=transform)
    return ExecutorSettings(stream=stream, limits=limits, stop_repeats=values["stop_repeats"])


def gripper_endpoint(address: str, *, device_id: int, baudrate: int) -> SerialEndpoint | TcpEndpoint:
    """The gripper endpoint of ``gripper.address``; a bare ``host:port`` means Modbus TCP.

    Raises:
        ParameterError: naming ``gripper.address``.
    """
    text = address.strip()
    if "://" not in text and not text.startswith("/") and ":" in text:
        host, _, port = text.rpartition(":")
        if host and port.isdigit():
            text = f"tcp://{text}"
    try:
        return parse_endpoint(text, device_id=device_id, baudrate=baudrate)
    except ValueError as error:
        raise ParameterError(f"parameter 'gripper.address': {error}") from None


def gripper_problem(status: GripperStatus) -> tuple[str, str] | None:
    """(kind, message) of why the gripper can no longer be trusted to hold the pusher, or None
    when it holds it. ``kind`` is stable while the problem lasts (the message carries the
    changing status), so a persisting problem is reported once."""
    if status.fault or status.controller_fault:
        return f"fault 0x{status.fault:02X}/0x{status.controller_fault:X}", f"gripper fault: {status.describe()}"
    if not status.is_active:
        return "not activated", f"gripper is not activated: {status.describe()}"
    if status.object_status is not ObjectStatus.CONTACT_CLOSING:
        return "tool lost", (
            f"the pusher tool is no longer detected between the fingers (gOBJ != 2): {status.describe()}"
        )
    return None


@dataclass(frozen=True)
class GripperSnapshot:
    """What the gripper monitor knows (for diagnostics and the reset service)."""

    endpoint: str
    status: GripperStatus | None
    problem: str | None
    last_answer_age_s: float
    polls: int
    failed_polls: int
    grasp_width_m: float


class GripperMonitor:
    """Start-up grasp, periodic status polling and release of the Robotiq gripper (ROS-free).

    Args:
        gripper: the driver (not connected yet).
        poll_period_s: time between status polls, s.
        no_answer_timeout_s: a problem is reported when no status came for this long, s.
        on_problem: called from the polling thread with a message when a problem appears or
            changes (not again while it stays the same).
    """

    def __init__(
        self,
        gripper: RobotiqGripper,
        *,
        poll_period_s: float,
        no_answer_timeout_s: float,
        on_problem: Callable[[str], None],
    ) -> None:
        self.gripper = gripper
        self._poll_period = poll_period_s
        self._no_answer_timeout = no_answer_timeout_s
        self._on_problem = on_problem
        self._lock = threading.Lock()
        self._status: GripperStatus | None = None
        self._problem: str | None = None
        self._problem_kind: str | None = None
        self._last_answer = time.monotonic()
        self._polls = 0
        self._failed_polls = 0
        self._grasp_width = math.nan
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start_up(
        self,
        *,
        connect_timeout_s: float,
        activation_timeout_s: float,
        tool_width_m: float,
        width_tolerance_m: float,
        speed: int,
        force: int,
        grasp_timeout_s: float,
    ) -> GripperStatus:
        """Connect, activate, close on the tool and check it is detected.

        Raises:
            ExecutorStartupError: naming the stage and the endpoint (the connection is closed).
        """
        where = self.gripper.endpoint.describe()
        stage = "connecting"
        try:
            # The gripper (or its driver, or the simulated one) may come up after this node:
            # keep trying to connect until the timeout, then fail naming the endpoint.
            deadline = time.monotonic() + connect_timeout_s
            while True:
                try:
                    self.gripper.connect()
                    break
                except GripperError:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.2)
            stage = "activating"
            self.gripper.activate(timeout_s=activation_timeout_s)
            stage = "closing on the pusher tool"
            grasp = self.gripper.grasp_tool(
                expected_width_m=tool_width_m,
                width_tolerance_m=width_tolerance_m,
                speed=speed,
                force=force,
                timeout_s=grasp_timeout_s,
            )
        except GraspError as error:
            self.gripper.close()
            raise ExecutorStartupError(f"gripper start-up failed ({where}): the tool is not held: {error}") from None
        except GripperError as error:
            self.gripper.close()
            raise ExecutorStartupError(f"gripper start-up failed while {stage} ({where}): {error}") from None
        with self._lock:
            self._status = grasp.status
            self._grasp_width = grasp.width_m
            self._last_answer = time.monotonic()
        return grasp.status

    def start(self) -> None:
        """Start polling the status in a background thread."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="executor-gripper-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None

    def poll(self) -> str | None:
        """One status read; returns the current problem (None: holding the tool).

        A new problem is reported to ``on_problem`` after the monitor's lock is released, so the
        callback may take the caller's locks (the node's output lock) without lock-order issues.
        """
        report: str | None = None
        try:
            status = self.gripper.status()
        except GripperError as error:
            with self._lock:
                self._polls += 1
                self._failed_polls += 1
                silence = time.monotonic() - self._last_answer
                if silence > self._no_answer_timeout:
                    report = self._set_problem((
                        "no answer",
                        f"gripper not answering for {silence:.3f} s (limit {self._no_answer_timeout} s): {error}",
                    ))
                problem = self._problem
        else:
            with self._lock:
                self._polls += 1
                self._status = status
                self._last_answer = time.monotonic()
                report = self._set_problem(gripper_problem(status))
                problem = self._problem
        if report is not None:
            self._on_problem(report)
        return problem

    def check_silence(self) -> str | None:
        """Report a gripper that has not answered for ``no_answer_timeout`` (call from a timer: the
        polling thread itself may be blocked in a request with retries for longer)."""
        report = None
        with self._lock:
            silence = time.monotonic() - self._last_answer
            if silence > self._no_answer_timeout:
                report = self._set_problem(
                    ("no answer", f"gripper not answering for {silence:.3f} s (limit {self._no_answer_timeout} s)")
                )
            problem = self._problem
        if report is not None:
            self._on_problem(report)
        return problem

    def _set_problem(self, problem: tuple[str, str] | None) -> str | None:
        """Record ``problem`` (kind, message) (lock held); return its message if its kind is new
        (to be reported), else None."""
        previous = self._problem_kind
        self._problem_kind, self._problem = problem if problem is not None else (None, None)
        if problem is not None and problem[0] != previous:
            return problem[1]
        return None

    def _run(self) -> None:
        while not self._stop.wait(self._poll_period):
            self.poll()

    def snapshot(self) -> GripperSnapshot:
        with self._lock:
            return GripperSnapshot(
                endpoint=self.gripper.endpoint.describe(),
                status=self._status,
                problem=self._problem,
                last_answer_age_s=time.monotonic() - self._last_answer,
                polls=self._polls,
                failed_polls=self._failed_polls,
                grasp_width_m=self._grasp_width,
            )

    def release(self, *, timeout_s: float) -> GripperStatus:
        """Open the fingers (polling must be stopped)."""
        return self.gripper.release(timeout_s=timeout_s)

    def close(self) -> None:
        self.stop()
        self.gripper.close()


class ThrottledLog:
    """Per-key rate limiting of log lines: the first at once, then at most one per period with a repeat count.

    Args:
        logger: an rclpy logger (or anything with ``info``, ``warning`` and ``error``).
        period_s: the least time between two lines of one key, s.
    """

    def __init__(self, logger, period_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._period = period_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._suppressed: Counter[str] = Counter()

    def __call__(self, key: str, severity: str, message: str) -> bool:
        """Log ``message`` at ``severity`` ("info", "warning" or "error") unless ``key`` was logged recently."""
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._period:
                self._suppressed[key] += 1
                return False
            repeats = self._suppressed.pop(key, 0)
            self._last[key] = now
        text = message + (f" ({repeats} more since the last report)" if repeats else "")
        # One call site per severity: rclpy refuses different severities from one line.
        if severity == "error":
            self._logger.error(text)
        elif severity == "warning":
            self._logger.warning(text)
        else:
            self._logger.info(text)
        return True


class _Refused(Exception):  # noqa: N818 - internal control flow, carries (reason, message)
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


# -- the node ----------------------------------------------------------------------------------
class ExecutorNode(Node):
    """Executes ``controls`` on the arm as safe ``TwistStamped`` commands; holds the pusher in the gripper."""

    def __init__(self, **node_options) -> None:
        super().__init__("executor", **node_options)
        values = declare_parameters(self, PARAMETERS)
        self.values = values
        settings = executor_settings(values)
        self.executor_core = VelocityExecutor(settings)
        self._period = settings.stream.period_s
        self._table_frame = values["table_frame"]
        self._log_throttled = ThrottledLog(self.get_logger(), values["log_throttle_period"])
        self._output_lock = threading.Lock()
        self._stats_lock = threading.Lock()  # the counters are updated from several threads
        self._counts: Counter[str] = Counter()
        self._limits: Counter[str] = Counter()
        self._refusals: Counter[str] = Counter()
        self._latch_reason = ""
        self._last_nonzero_publish = -math.inf
        self._last_state_stamp = -math.inf
        self._closed = False
        self.gripper: GripperMonitor | None = None
        if values["gripper_enabled"]:
            try:
                self.gripper = self._start_gripper(values)  # nothing else exists yet if this fails
            except BaseException:
                self.destroy_node()
                raise
        try:
            self._create_interfaces(values)
        except BaseException:
            if self.gripper is not None:
                self.gripper.close()  # no longer polled; the fingers stay closed on the tool
            self.destroy_node()
            raise
        if self.gripper is not None:
            self.gripper.start()
        limits = settings.limits
        recommended = limits.max_speed_m_s * limits.command_timeout_s + limits.max_speed_m_s ** 2 / (
            2.0 * limits.max_acceleration_m_s2)
        if values["limits.stall_margin"] < recommended - 1e-12:
            self.get_logger().warning(
                f"limits.stall_margin {values['limits.stall_margin']} m is below max_speed x command_timeout + "
                f"max_speed^2 / (2 max_acceleration) = {recommended:.4f} m: if this node stalls, the arm (holding "
                "its last command until its own timeout) may leave the workspace box"
            )
        self.get_logger().info(
            f"ready: {values['rate']:g} Hz TwistStamped on '{values['twist_topic']}' in '{values['base_frame']}'; "
            f"workspace x [{values['limits.x_min']}, {values['limits.x_max']}] y [{values['limits.y_min']}, "
            f"{values['limits.y_max']}] m, kept {values['limits.stall_margin']} m inside, "
            f"{limits.max_speed_m_s} m/s, {limits.max_acceleration_m_s2} m/s^2, stale after "
            f"{limits.stale_state_timeout_s} s; gripper: "
            + (self.gripper.snapshot().endpoint + " (tool held)" if self.gripper is not None else "disabled")
        )

    def _create_interfaces(self, values: dict) -> None:
        """Publishers, subscriptions, services, the command thread and the timers."""
        try:
            self._twist_publisher = self.create_publisher(TwistStamped, values["twist_topic"], 10)
        except (InvalidTopicNameException, InvalidNamespaceException) as error:
            raise ParameterError(f"parameter 'twist_topic': {error}") from None
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(ControlSequence, "controls", self._on_controls, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self.create_subscription(SceneState, "scene_state", self._on_state, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        services = MutuallyExclusiveCallbackGroup()
        self.create_service(Trigger, "~/stop", self._on_stop, callback_group=services)
        self.create_service(Trigger, "~/reset", self._on_reset, callback_group=services)
        self._stop_commands = threading.Event()
        self._command_thread = threading.Thread(target=self._run_commands, name="executor-commands", daemon=True)
        self._command_thread.start()
        self.create_timer(values["watchdog_period"], self._watchdog, callback_group=MutuallyExclusiveCallbackGroup())
        self.create_timer(values["diagnostics_period"], self._publish_diagnostics,
                          callback_group=MutuallyExclusiveCallbackGroup())

    def _count(self, key: str, amount: int = 1, counter: Counter[str] | None = None) -> None:
        with self._stats_lock:
            (self._counts if counter is None else counter)[key] += amount

    # -- gripper -------------------------------------------------------------------------------
    def _start_gripper(self, values: dict) -> GripperMonitor:
        endpoint = gripper_endpoint(values["gripper.address"], device_id=values["gripper.device_id"],
                                    baudrate=values["gripper.baudrate"])
        driver = RobotiqGripper(
            endpoint,
            settings=GripperDriverSettings(
                request_timeout_s=values["gripper.request_timeout"],
                retries=values["gripper.retries"],
                geometry=FingerGeometry(),
            ),
        )
        monitor = GripperMonitor(driver, poll_period_s=values["gripper.poll_period"],
                                 no_answer_timeout_s=values["gripper.no_answer_timeout"],
                                 on_problem=self._on_gripper_problem)
        self.get_logger().info(f"gripper: connecting to {endpoint.describe()}, activating, closing on the tool")
        status = monitor.start_up(
            connect_timeout_s=values["gripper.connect_timeout"],
            activation_timeout_s=values["gripper.activation_timeout"],
            tool_width_m=values["gripper.tool_width"],
            width_tolerance_m=values["gripper.width_tolerance"],
            speed=values["gripper.grasp_speed"],
            force=values["gripper.grasp_force"],
            grasp_timeout_s=values["gripper.grasp_timeout"],
        )
        width = monitor.snapshot().grasp_width_m
        self.get_logger().info(f"gripper: tool held at {width * 1e3:.1f} mm; {status.describe()}")
        return monitor

    def _on_gripper_problem(self, problem: str) -> None:
        self._latch(problem, source="gripper")

    # -- output --------------------------------------------------------------------------------
    def _publish(self, command: TwistCommand) -> None:
        """Publish one command (output lock held)."""
        message = TwistStamped()
        message.header.stamp = self.get_clock().now().to_msg()
        message.header.frame_id = command.frame_id
        message.twist.linear.x, message.twist.linear.y, message.twist.linear.z = (float(v) for v in command.linear)
        message.twist.angular.x, message.twist.angular.y, message.twist.angular.z = (
            float(v) for v in command.angular
        )
        self._twist_publisher.publish(message)
        self._count("commands_sent")
        if command.is_zero:
            self._count("zero_commands_sent")
        else:
            self._last_nonzero_publish = time.monotonic()

    def _emit(self, step: ExecutorStep, *, moving_before: bool) -> None:
        """Publish a step if it asks to; count and log its safety actions when they mattered."""
        if step.publish:
            self._publish(step.command)
        wanted_motion = step.sample is not None and step.sample.phase is StreamPhase.ACTIVE
        if not (wanted_motion or moving_before or step.sample is None):
            return  # e.g. "no estimate yet" while idle: nothing was limited or refused
        for action in step.safe.actions:
            reason = action.reason
            self._count(reason.value, counter=self._limits)
            severity = "info" if reason in _INFO_REASONS else "warning"
            self._log_throttled(f"limit:{reason.value}", severity, f"[{reason.value}] {action.message}")

    def _run_commands(self) -> None:
        """The command clock: one tick every period on absolute deadlines (a late tick is not made up)."""
        deadline = time.monotonic()
        while not self._stop_commands.is_set():
            try:
                self._tick()
            except Exception as error:  # noqa: BLE001 - keep commanding; the watchdog covers a stall
                if not self.context.ok():
                    return
                self._log_throttled("tick_error", "error",
                                    f"command tick failed: {type(error).__name__}: {error}")
            deadline += self._period
            now = time.monotonic()
            if deadline <= now:  # late: stay on the grid, skip the missed ticks
                self._count("late_ticks")
                deadline += math.ceil((now - deadline) / self._period) * self._period
            self._stop_commands.wait(deadline - now)

    def _tick(self) -> None:
        with self._output_lock:
            if self._closed:
                return
            moving_before = bool(self.executor_core.safety_filter.last_velocity.any())
            step = self.executor_core.step()
            self._emit(step, moving_before=moving_before)
            sample = step.sample
            if step.safe.stopped and sample is not None and sample.phase is StreamPhase.ACTIVE:
                reasons = [a for a in step.safe.actions if a.reason in _ABORTING_REASONS]
                if reasons:
                    dropped = self.executor_core.replace([])
                    self._count("controls_aborted", dropped)
                    text = "; ".join(f"[{a.reason.value}] {a.message}" for a in reasons)
                    self._log_throttled("abort", "error",
                                        f"control aborted, {dropped} queued control(s) dropped: {text}")

    def _watchdog(self) -> None:
        if self.gripper is not None and not self._closed:
            self.gripper.check_silence()  # latches through _on_gripper_problem
        with self._output_lock:
            if self._closed:
                return
            step = self.executor_core.watchdog()
            if step is not None:
                self._count("watchdog_stops")
                self._emit(step, moving_before=True)

    def _halt(self, message: str) -> None:
        """Stop now without latching: exact zero at once, queue dropped (output lock held)."""
        if self.executor_core.stop_latched:
            return  # already commanding zero
        step = self.executor_core.stop(message)
        self.executor_core.reset()
        if step.publish:
            self._publish(step.command)

    def _latch(self, message: str, *, source: str) -> None:
        with self._output_lock:
            if self._closed:
                return
            step = self.executor_core.stop(message)
            self._latch_reason = f"{source}: {message}"
            self._count(f"latched_stops.{source}")
            if step.publish:
                self._publish(step.command)
        self.get_logger().error(f"stop latched by {source}: {message}; zero velocity until ~/reset")

    # -- inputs --------------------------------------------------------------------------------
    def _on_controls(self, message: ControlSequence) -> None:
        self._count("control_messages")
        if not message.controls:
            with self._output_lock:
                if self._closed:
                    return
                self._count("stop_requests")
                self._halt("empty ControlSequence: stop requested")
            self.get_logger().info("empty ControlSequence: stopped")
            return
        try:
            controls, start = self._checked_controls(message)
        except _Refused as refused:
            self._refuse(refused.reason, refused.message)
            return
        with self._output_lock:
            if self._closed:
                return
            if self.executor_core.stop_latched:
                refused = _Refused("stop_latched", f"a stop is latched ({self._latch_reason}); call ~/reset first")
            else:
                refused = None
                if self.values["queue_mode"] == "replace":
                    dropped = self.executor_core.replace(controls, start_time_s=start)
                    self._count("controls_replaced", dropped)
                else:
                    self.executor_core.enqueue(controls, start_time_s=start)
                self._count("controls_accepted", len(controls))
        if refused is not None:
            self._refuse(refused.reason, refused.message)

    def _checked_controls(self, message: ControlSequence) -> tuple[list[PlanarControl], float | None]:
        frame = message.header.frame_id
        if frame and frame != self._table_frame:
            raise _Refused("wrong_frame", f"header.frame_id {frame!r}: controls must be in {self._table_frame!r}")
        if len(message.controls) > self.values["max_controls"]:
            raise _Refused("too_many_controls",
                           f"{len(message.controls)} controls, at most {self.values['max_controls']} per message")
        controls = []
        for index, control in enumerate(message.controls):
            values = (control.vx, control.vy, control.duration)
            if not all(math.isfinite(value) for value in values):
                raise _Refused("invalid_control", f"controls[{index}]: non-finite value in {values}")
            if control.duration <= 0.0:
                raise _Refused("invalid_control", f"controls[{index}].duration: must be > 0, got {control.duration}")
            if control.duration > self.values["max_control_duration"]:
                raise _Refused("invalid_control", f"controls[{index}].duration: {control.duration} s is longer than "
                                                  f"max_control_duration ({self.values['max_control_duration']} s)")
            controls.append(PlanarControl(float(control.vx), float(control.vy), float(control.duration)))
        stamp = time_to_seconds(message.header.stamp)
        if stamp == 0.0:
            return controls, None
        offset = stamp - self.get_clock().now().nanoseconds * 1e-9  # > 0: in the future
        age_limit = self.values["max_control_age"]
        if age_limit > 0.0 and -offset > age_limit:
            raise _Refused("stale_plan", f"stamped {-offset:.3f} s ago (max_control_age {age_limit} s): stale plan, "
                                         "or the planner's clock disagrees with this node's")
        if offset > self.values["max_start_delay"]:
            raise _Refused("start_too_late", f"stamped {offset:.3f} s in the future "
                                             f"(max_start_delay {self.values['max_start_delay']} s)")
        if offset <= 0.0:
            return controls, None  # due now: start at the next tick, with the full durations
        return controls, time.monotonic() + offset

    def _refuse(self, reason: str, message: str) -> None:
        self._count(reason, counter=self._refusals)
        with self._output_lock:
            if not self._closed:
                self._halt(f"ControlSequence refused: {message}")
        self._log_throttled(f"refused:{reason}", "error",
                            f"ControlSequence refused [{reason}]: {message}; pusher stopped")

    def _on_state(self, message: SceneState) -> None:
        frame = message.header.frame_id
        if frame and frame != self._table_frame:
            self._count("states_rejected")
            self._log_throttled("state_frame", "error",
                                f"scene_state in frame {frame!r} ignored: expected {self._table_frame!r} "
                                "(the estimate will go stale and stop the pusher)")
            return
        stamp = time_to_seconds(message.header.stamp)
        if stamp == 0.0:
            self._count("states_rejected")
            self._log_throttled("state_stamp", "error",
                                "scene_state without a stamp ignored: its age cannot be checked")
            return
        now = time.monotonic()
        ros_now = self.get_clock().now().nanoseconds * 1e-9
        measured = now - (ros_now - stamp)
        age = message.pusher.age
        if message.pusher.valid and math.isfinite(age) and age > 0.0:
            measured = min(measured, now - age)
        self._last_state_stamp = measured
        self._count("states_received")
        self.executor_core.update_pusher((message.pusher.x, message.pusher.y), stamp_s=measured,
                                         valid=bool(message.pusher.valid))

    # -- services ------------------------------------------------------------------------------
    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self._latch("stop service called", source="service")
        response.success = True
        response.message = "stop latched: zero velocity, controls refused until ~/reset"
        return response

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._output_lock:  # the gripper monitor latches under this lock too: no reset can clear a new latch
            problem = self._gripper_blocks_reset()
            if problem is None:
                latched = self.executor_core.reset()
                reason, self._latch_reason = self._latch_reason, ""
        if problem is not None:
            response.success = False
            response.message = f"reset refused: {problem}"
            self.get_logger().error(response.message)
            return response
        response.success = True
        if latched:
            response.message = f"stop cleared ({reason}); waiting for the next control"
            self.get_logger().warning(response.message)
        else:
            response.message = "no stop was latched"
        return response

    def _gripper_blocks_reset(self) -> str | None:
        """Why the gripper forbids a reset (its last polled problem, or a stalled poll), or None."""
        if self.gripper is None:
            return None
        snapshot = self.gripper.snapshot()
        if snapshot.problem is not None:
            return snapshot.problem
        limit = self.values["gripper.no_answer_timeout"]
        if snapshot.last_answer_age_s > limit:
            return f"no gripper status for {snapshot.last_answer_age_s:.3f} s (limit {limit} s)"
        return None

    # -- diagnostics ---------------------------------------------------------------------------
    def diagnostics(self) -> DiagnosticArray:
        now = time.monotonic()
        latched = self.executor_core.stop_latched
        state_age = now - self._last_state_stamp
        limits = self.executor_core.settings.limits
        with self._stats_lock:
            counts, limit_counts, refusals = dict(self._counts), dict(self._limits), dict(self._refusals)
        with self._output_lock:
            latch_reason = self._latch_reason
        executor = DiagnosticStatus(name=f"{self.get_name()}: velocity commands", hardware_id=self.values["base_frame"])
        if latched:
            executor.level, executor.message = DiagnosticStatus.ERROR, f"stop latched: {latch_reason}"
        elif not state_age <= limits.stale_state_timeout_s:
            executor.level = DiagnosticStatus.WARN
            executor.message = "pusher estimate stale or missing: motion refused"
        else:
            executor.level, executor.message = DiagnosticStatus.OK, "ready"
        values = {
            "stop_latched": str(latched),
            "latch_reason": latch_reason,
            "commands_sent": counts.get("commands_sent", 0),
            "zero_commands_sent": counts.get("zero_commands_sent", 0),
            "control_messages": counts.get("control_messages", 0),
            "controls_accepted": counts.get("controls_accepted", 0),
            "controls_replaced": counts.get("controls_replaced", 0),
            "controls_aborted": counts.get("controls_aborted", 0),
            "stop_requests": counts.get("stop_requests", 0),
            "watchdog_stops": counts.get("watchdog_stops", 0),
            "late_ticks": counts.get("late_ticks", 0),
            "controls_queued": self.executor_core.stream.queued,
            "states_received": counts.get("states_received", 0),
            "states_rejected": counts.get("states_rejected", 0),
            "state_age_s": f"{state_age:.4f}",
        }
        values.update({key: value for key, value in counts.items() if key.startswith("latched_stops.")})
        values.update({f"limit.{reason.value}": limit_counts.get(reason.value, 0) for reason in SafetyReason})
        values.update({f"refused.{reason}": count for reason, count in refusals.items()})
        executor.values = [KeyValue(key=key, value=str(value)) for key, value in values.items()]
        statuses = [executor, self._gripper_diagnostics()]
        array = DiagnosticArray(status=statuses)
        array.header.stamp = self.get_clock().now().to_msg()
        return array

    def _gripper_diagnostics(self) -> DiagnosticStatus:
        status = DiagnosticStatus(name=f"{self.get_name()}: gripper")
        if self.gripper is None:
            status.level, status.message, status.hardware_id = DiagnosticStatus.OK, "disabled", "none"
            return status
        snapshot = self.gripper.snapshot()
        status.hardware_id = snapshot.endpoint
        if snapshot.problem is not None:
            status.level, status.message = DiagnosticStatus.ERROR, snapshot.problem
        else:
            status.level, status.message = DiagnosticStatus.OK, "tool held"
        values = {
            "status": snapshot.status.describe() if snapshot.status is not None else "unknown",
            "object_detected": str(snapshot.status is not None and snapshot.status.object_detected),
            "fault": f"0x{snapshot.status.fault:02X}" if snapshot.status is not None else "unknown",
            "last_answer_age_s": f"{snapshot.last_answer_age_s:.4f}",
            "polls": snapshot.polls,
            "failed_polls": snapshot.failed_polls,
            "grasp_width_m": f"{snapshot.grasp_width_m:.4f}",
        }
        status.values = [KeyValue(key=key, value=str(value)) for key, value in values.items()]
        return status

    def _publish_diagnostics(self) -> None:
        self._diagnostics.publish(self.diagnostics())

    # -- shutdown ------------------------------------------------------------------------------
    def close(self) -> None:
        """Command zero, wait until the arm has stopped, release the gripper and disconnect. Idempotent."""
        with self._output_lock:
            if self._closed:
                return
            step = self.executor_core.stop("executor shutting down")
            try:
                self._publish(step.command)
            except Exception as error:  # noqa: BLE001 - the context may already be shut down (Ctrl-C)
                self._log_close(f"could not publish the final zero command ({error}); "
                                "the arm's own command timeout stops it")
            self._closed = True
        self._stop_command_thread()
        if self.gripper is None:
            return
        self.gripper.stop()
        try:
            if self.values["gripper.release_on_shutdown"]:
                wait = self.values["limits.command_timeout"] - (time.monotonic() - self._last_nonzero_publish)
                if wait > 0.0:
                    time.sleep(wait)  # the arm halts at its command timeout at the latest
                status = self.gripper.release(timeout_s=self.values["gripper.release_timeout"])
                self._log_close(f"gripper released: {status.describe()}")
        except GripperError as error:
            self._log_close(f"gripper release failed: {error}", error=True)
        finally:
            self.gripper.close()

    def _stop_command_thread(self) -> None:
        stop = getattr(self, "_stop_commands", None)
        if stop is not None:
            stop.set()
            if self._command_thread is not threading.current_thread():
                self._command_thread.join(2.0)

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
