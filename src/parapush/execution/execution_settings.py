"""The executor's settings, declared once (:mod:`parapush.settings`): each field carries its
default, range, unit and description; the executor node's parameters are generated from
:class:`ExecutionSettings` (``limits.*`` and ``gripper.*`` are its nested sections) and
``config/executor.yaml`` lists the same keys. The table -> base transform ``table_to_base``
is a list of numbers, read by :meth:`~parapush.execution.frames.RigidTransform.from_parameters`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from parapush.execution.command_stream import CommandStreamSettings
from parapush.execution.control_source import check_node_name
from parapush.execution.frames import RigidTransform
from parapush.execution.gripper import GripperDriverSettings
from parapush.execution.gripper_endpoint import SerialEndpoint, TcpEndpoint, parse_endpoint
from parapush.execution.pusher_following import FollowingSettings
from parapush.execution.safety import SafetyLimits
from parapush.execution.velocity_executor import ExecutorSettings
from parapush.reporting.diagnostic_report import diagnostics_period_setting
from parapush.robotiq.finger_geometry import FingerGeometry
from parapush.settings import SettingsError, check_settings, same_setting, setting
from parapush.validation import check_not_empty

QUEUE_MODES = ("replace", "append")

DEFAULT_TABLE_TO_BASE = (0.5, 0.0, 0.0, 0.0)
"""Pose of the table frame in the base frame: [x, y, z, yaw] (m, rad)."""
TABLE_TO_BASE_DESCRIPTION = (
    "pose of the table frame in the base frame: [x, y, z, yaw] (m, rad) or [x, y, z, qx, qy, qz, qw]; "
    "velocities are rotated by it"
)


@dataclass(frozen=True)
class LimitSettings:
    """Hard limits, table frame: the workspace box of the pusher centre, speed, acceleration,
    watchdogs.

    Workspace margin: the safety filter's braking envelope assumes one command per period. If
    the executor stalls (an overloaded machine), the arm holds its last command until its own
    timeout and then decelerates, so the filter is given the box shrunk by ``stall_margin`` on
    every side (:meth:`safety_limits`; default 15 mm = 0.1 m/s x 0.1 s + 0.1^2 / (2 x 1 m/s^2)):
    normally the pusher stops that far inside the configured box, and a stall of up to the
    arm's timeout still stops it inside.
    """

    x_min: float = setting(-0.35, "workspace box of the pusher centre, table frame", unit="m",
                           minimum=-10.0, maximum=10.0)
    x_max: float = setting(0.35, "workspace box, upper x", unit="m", minimum=-10.0, maximum=10.0)
    y_min: float = setting(-0.45, "workspace box, lower y", unit="m", minimum=-10.0, maximum=10.0)
    y_max: float = setting(0.45, "workspace box, upper y", unit="m", minimum=-10.0, maximum=10.0)
    stall_margin: float = setting(
        0.015,
        "the safety filter keeps the pusher this far inside the workspace box, so that a command held until "
        "the arm's own timeout (this node stalled) still stops inside the box; at least max_speed x "
        "command_timeout + max_speed^2 / (2 max_acceleration) (0.015 m at the defaults)",
        unit="m", minimum=0.0, maximum=1.0,
    )
    max_speed: float = setting(0.1, "pusher speed limit (faster commands are scaled down)", unit="m/s",
                               minimum=1e-4, maximum=2.0)
    max_acceleration: float = setting(1.0, "limit on the change of the commanded velocity", unit="m/s^2",
                                      minimum=1e-3, maximum=50.0)
    stale_state_timeout: float = setting(0.1, "an older pusher estimate stops the pusher", unit="s",
                                         minimum=0.001, maximum=10.0)
    command_timeout: float = setting(
        0.1, "commands further apart count as stopped (the arm's own timeout must not be longer)", unit="s",
        minimum=0.002, maximum=10.0,
    )

    def __post_init__(self) -> None:
        check_settings(self)
        if self.x_max <= self.x_min:
            raise ValueError(f"x_max: expected > x_min ({self.x_min}), got {self.x_max}")
        if self.y_max <= self.y_min:
            raise ValueError(f"y_max: expected > y_min ({self.y_min}), got {self.y_max}")
        if self.x_max - self.stall_margin <= self.x_min + self.stall_margin or (
            self.y_max - self.stall_margin <= self.y_min + self.stall_margin
        ):
            raise ValueError(
                f"stall_margin: {self.stall_margin} m on every side leaves no workspace in "
                f"x [{self.x_min}, {self.x_max}] y [{self.y_min}, {self.y_max}] m"
            )

    def safety_limits(self) -> SafetyLimits:
        """The safety filter's limits: the box shrunk by ``stall_margin`` on every side."""
        margin = self.stall_margin
        return SafetyLimits(
            x_min_m=self.x_min + margin, x_max_m=self.x_max - margin,
            y_min_m=self.y_min + margin, y_max_m=self.y_max - margin,
            max_speed_m_s=self.max_speed, max_acceleration_m_s2=self.max_acceleration,
            stale_state_timeout_s=self.stale_state_timeout, command_timeout_s=self.command_timeout,
        )

    @property
    def recommended_stall_margin(self) -> float:
        """max_speed x command_timeout + max_speed^2 / (2 max_acceleration), m: how far the pusher
        may travel while the arm holds a command until its own timeout and then brakes."""
        return self.max_speed * self.command_timeout + self.max_speed**2 / (2.0 * self.max_acceleration)


@dataclass(frozen=True)
class GripperSettings:
    """The Robotiq 2F-85 holding the pusher: where it is, start-up, polling, release."""

    address: str = setting(
        "/dev/ttyUSB0",
        "serial device (Modbus RTU), host:port or tcp://host:port (Modbus TCP), rtu+tcp://host:port",
    )
    device_id: int = setting(9, "Modbus device (slave) id", minimum=1, maximum=247)
    baudrate: int = setting(115200, "bit rate on a serial port (8N1)", unit="bit/s", minimum=1200, maximum=4000000)
    request_timeout: float = setting(0.25, "limit for one Modbus answer", unit="s", minimum=0.001, maximum=10.0)
    retries: int = same_setting(GripperDriverSettings, "retries")
    connect_timeout: float = setting(10.0, "time to keep retrying the connection at start-up", unit="s",
                                     minimum=0.0, maximum=600.0)
    activation_timeout: float = setting(5.0, "limit for the activation", unit="s", minimum=0.01, maximum=60.0)
    grasp_timeout: float = setting(5.0, "limit for closing on the tool", unit="s", minimum=0.01, maximum=60.0)
    release_timeout: float = setting(5.0, "limit for opening at shutdown", unit="s", minimum=0.01, maximum=60.0)
    tool_width: float = setting(0.029, "width of the pusher tool between the pads", unit="m",
                                minimum=0.001, maximum=0.085)
    width_tolerance: float = setting(0.003, "allowed |measured - tool_width| after the grasp", unit="m",
                                     minimum=1e-4, maximum=0.085)
    grasp_speed: int = setting(128, "finger speed count (0-255)", minimum=0, maximum=255)
    grasp_force: int = setting(150, "grip force count (0-255)", minimum=0, maximum=255)
    poll_period: float = setting(0.02, "time between status polls (faults latch a stop)", unit="s",
                                 minimum=0.002, maximum=1.0)
    no_answer_timeout: float = setting(0.25, "time without a status answer that latches a stop", unit="s",
                                       minimum=0.005, maximum=10.0)
    release_on_shutdown: bool = setting(True, "open the gripper when the node shuts down")

    def __post_init__(self) -> None:
        check_settings(self)
        check_not_empty("address", self.address)

    def endpoint(self) -> SerialEndpoint | TcpEndpoint:
        """The endpoint of ``address``; a bare ``host:port`` means Modbus TCP.

        Raises:
            SettingsError: naming ``address``.
        """
        text = self.address.strip()
        if "://" not in text and not text.startswith("/") and ":" in text:
            host, _, port = text.rpartition(":")
            if host and port.isdigit():
                text = f"tcp://{text}"
        try:
            return parse_endpoint(text, device_id=self.device_id, baudrate=self.baudrate)
        except ValueError as error:
            raise SettingsError("address", str(error)) from None

    def driver_settings(self) -> GripperDriverSettings:
        """The driver's timing (and the default finger geometry)."""
        return GripperDriverSettings(
            request_timeout_s=self.request_timeout, retries=self.retries, geometry=FingerGeometry()
        )


@dataclass(frozen=True)
class ExecutionSettings:
    """Everything the executor node is configured with."""

    twist_topic: str = setting(
        "/servo_node/delta_twist_cmds",
        "topic of the end-effector velocity commands (MoveIt Servo's TwistStamped input)",
    )
    base_frame: str = setting(
        "base_link", "frame_id of the commands: the robot base frame (Servo's robot_link_command_frame)"
    )
    table_frame: str = setting("table", "frame of the controls and of scene_state; others are refused")
    allowed_publisher: str = setting(
        "mpc",
        "the only node whose controls are executed: a name relative to this node's namespace ('mpc': this "
        "stack's MPC) or absolute ('/lab1/mpc'); controls from any other node are refused and counted; "
        "empty: any node (warned at start-up)",
    )
    rate: float = setting(100.0, "command rate while moving", unit="Hz", minimum=1.0, maximum=1000.0)
    stop_repeats: int = same_setting(ExecutorSettings, "stop_repeats")
    queue_mode: str = setting("replace", "a new ControlSequence replaces the queue or is appended to it",
                              choices=QUEUE_MODES)
    max_controls: int = setting(100, "most controls in one ControlSequence", minimum=1, maximum=10000)
    max_control_duration: float = setting(10.0, "a longer control is refused", unit="s",
                                          minimum=0.001, maximum=600.0)
    max_control_age: float = setting(
        0.25, "a ControlSequence stamped longer ago is refused as a stale plan (0: no check)", unit="s",
        minimum=0.0, maximum=60.0,
    )
    max_start_delay: float = setting(1.0, "a ControlSequence stamped further in the future is refused", unit="s",
                                     minimum=0.0, maximum=60.0)
    limits: LimitSettings = field(default_factory=LimitSettings)
    following: FollowingSettings = field(default_factory=FollowingSettings)
    watchdog_period: float = setting(0.02, "time between command-silence checks", unit="s",
                                     minimum=0.001, maximum=1.0)
    diagnostics_period: float = diagnostics_period_setting()
    log_throttle_period: float = setting(1.0, "each reason is logged at most once per period", unit="s",
                                         minimum=0.0, maximum=600.0)
    gripper_enabled: bool = setting(True, "drive a Robotiq 2F-85 holding the pusher (false: arm without one)")
    gripper: GripperSettings = field(default_factory=GripperSettings)
    table_to_base: tuple[float, ...] = setting(DEFAULT_TABLE_TO_BASE, TABLE_TO_BASE_DESCRIPTION, lengths=(4, 7))

    def __post_init__(self) -> None:
        check_settings(self)
        try:
            RigidTransform.from_parameters(self.table_to_base)
        except ValueError as error:  # a quaternion that is no rotation
            raise ValueError(f"table_to_base: {error}") from None
        for name in ("twist_topic", "base_frame", "table_frame"):
            check_not_empty(name, getattr(self, name))
        check_node_name(self.allowed_publisher, "allowed_publisher")
        if not isinstance(self.limits, LimitSettings):
            raise ValueError(f"limits: expected LimitSettings, got {self.limits!r}")
        if not isinstance(self.following, FollowingSettings):
            raise ValueError(f"following: expected FollowingSettings, got {self.following!r}")
        if not isinstance(self.gripper, GripperSettings):
            raise ValueError(f"gripper: expected GripperSettings, got {self.gripper!r}")
        period = 1.0 / self.rate
        if 2.0 * period > self.limits.command_timeout:
            raise ValueError(
                f"rate: {self.rate} Hz gives a command period of {period:.4g} s, more than half of "
                f"limits.command_timeout ({self.limits.command_timeout} s): timer jitter would count as a gap"
            )

    def executor_settings(self) -> ExecutorSettings:
        """The core's settings: command stream, the safety filter's limits, stop repeats."""
        stream = CommandStreamSettings(rate_hz=self.rate, frame_id=self.base_frame,
                                       table_to_base=RigidTransform.from_parameters(self.table_to_base))
        return ExecutorSettings(stream=stream, limits=self.limits.safety_limits(), stop_repeats=self.stop_repeats)


__all__ = [
    "DEFAULT_TABLE_TO_BASE",
    "FollowingSettings",
    "QUEUE_MODES",
    "TABLE_TO_BASE_DESCRIPTION",
    "ExecutionSettings",
    "GripperSettings",
    "LimitSettings",
]
