"""Production driver of the Robotiq 2F-85: a thin client over the documented Modbus registers.

Why our own driver instead of wrapping pyrobotiqgripper (evaluated, 3.3.14):

* Waits. Our contract is "write the request, wait until gPR echoes it, then until gOBJ != 0,
  and raise when a wait times out". pyrobotiqgripper's blocking ``move`` polls gOBJ without
  checking the gPR echo, so when the device applies the command a few ms after the write it
  returns at once on the previous move's gOBJ = 3 (reproduced against our emulator in
  ``test/unit/test_gripper_independent_drivers.py``), and its wait loop ends silently
  when its fixed 5 s ``timeOut`` runs out instead of raising.
* Explicit ports. Its default ``com_port`` is auto-detection, which probes every serial port
  with Modbus frames in subprocesses and prints; it is usable only when pinned with an explicit
  ``com_port``. Here an endpoint is always explicit (:mod:`parapush.execution.gripper_endpoint`)
  and can also be standard Modbus TCP, which pyrobotiqgripper does not speak (it only does RTU
  frames over TCP).
* Size. It keeps numpy command/status histories and calibration state we do not need; the
  register map is three registers each way (:mod:`parapush.robotiq.registers`), so the driver
  stays small and every failure path is ours to test.

The transport is pymodbus's synchronous client (pin ``pymodbus==3.16.*``: its keyword names
changed across 3.x): RTU on a serial port, Modbus TCP, or RTU over TCP; each request has its own
timeout and every wait has an overall deadline. pyrobotiqgripper and robotiq2f remain in the
tests as independent drivers of the emulator.

Thread safety: transactions are serialised by a lock; do not run two motions concurrently.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pymodbus import FramerType
from pymodbus.client import ModbusSerialClient, ModbusTcpClient
from pymodbus.exceptions import ModbusException

from parapush.execution.gripper_endpoint import SerialEndpoint, TcpEndpoint, parse_endpoint
from parapush.execution.gripper_errors import (
    GraspError,
    GripperCommunicationError,
    GripperFault,
    GripperStateError,
    GripperTimeout,
)
from parapush.lifecycle import Closeable
from parapush.read_only import ReadOnly
from parapush.robotiq.finger_geometry import FingerGeometry
from parapush.robotiq.registers import (
    COMMAND_ADDRESS,
    STATUS_ADDRESS,
    USED_REGISTER_COUNT,
    ActivationStatus,
    FaultCode,
    FaultSeverity,
    GripperCommand,
    GripperStatus,
    ObjectStatus,
)
from parapush.settings import check_settings, setting
from parapush.validation import check_integer, check_positive

_LOGGER = logging.getLogger(__name__)
_COUNT_MAX = 255

#: Modbus exception 0x06, SLAVE DEVICE BUSY: what the simulated gripper answers a client that does not
#: own it (parapush.sim.gripper_emulator).
_DEVICE_BUSY = 0x06


def _count(name: str, value: int) -> int:
    """A register count 0-255."""
    return check_integer(name, value, minimum=0, maximum=_COUNT_MAX)


@dataclass(frozen=True)
class GripperDriverSettings:
    """Timing and calibration of the driver (each setting's meaning, unit and range: its
    :func:`setting`).

    Attributes:
        geometry: count <-> metre conversions used by :meth:`RobotiqGripper.grasp_tool`.
    """

    request_timeout_s: float = setting(0.25, "limit for one Modbus answer", unit="s", above=0.0)
    retries: int = setting(
        1, "extra attempts of a failed single request outside waits (waits retry until their deadline anyway)",
        minimum=0, maximum=10,
    )
    poll_period_s: float = setting(0.01, "pause between status reads while waiting", unit="s", above=0.0)
    # A nested section: the finger calibration (its fields are FingerGeometry's settings).
    geometry: FingerGeometry = field(default_factory=FingerGeometry)

    def __post_init__(self) -> None:
        check_settings(self)
        if not isinstance(self.geometry, FingerGeometry):
            raise ValueError(f"geometry: expected a FingerGeometry, got {self.geometry!r}")


@dataclass(frozen=True)
class GraspResult:
    """A successful grasp: the final status and the measured pad distance (m)."""

    status: GripperStatus
    width_m: float


class RobotiqGripper(Closeable):
    """A Robotiq 2F-85 on a serial port or over TCP; a context manager that connects and closes.

    Positions, speeds and forces are register counts 0-255 (0 = open / slowest / weakest);
    see :mod:`parapush.robotiq.finger_geometry` for SI values.
    """

    def __init__(
        self, endpoint: SerialEndpoint | TcpEndpoint, *, settings: GripperDriverSettings | None = None
    ):
        if not isinstance(endpoint, (SerialEndpoint, TcpEndpoint)):
            raise ValueError(f"endpoint: expected a SerialEndpoint or TcpEndpoint, got {endpoint!r}")
        self._endpoint = endpoint
        self._settings = settings if settings is not None else GripperDriverSettings()
        self._lock = threading.RLock()
        self._client: ModbusSerialClient | ModbusTcpClient | None = None

    @classmethod
    def from_address(
        cls,
        address: str,
        *,
        settings: GripperDriverSettings | None = None,
        device_id: int = 9,
        baudrate: int = 115200,
    ) -> RobotiqGripper:
        """A driver for ``/dev/ttyUSB0``, ``tcp://host:port`` or ``rtu+tcp://host:port``."""
        return cls(parse_endpoint(address, device_id=device_id, baudrate=baudrate), settings=settings)

    endpoint: ReadOnly[SerialEndpoint | TcpEndpoint] = ReadOnly("_endpoint")

    # -- connection ----------------------------------------------------------------------
    def __enter__(self) -> RobotiqGripper:
        """Connect (:meth:`connect`); the exit closes (:meth:`close`)."""
        return self.connect()

    @property
    def connected(self) -> bool:
        return self._client is not None

    def connect(self) -> RobotiqGripper:
        """Open the port or socket (no request is sent).

        Raises:
            GripperCommunicationError: the port does not exist or cannot be opened, or the TCP
                connection is refused.
        """
        with self._lock:
            if self._client is not None:
                return self
            endpoint, timeout = self._endpoint, self._settings.request_timeout_s
            if isinstance(endpoint, SerialEndpoint):
                if not os.path.exists(endpoint.port):
                    raise GripperCommunicationError(f"cannot open {endpoint.describe()}: no such device")
                client: ModbusSerialClient | ModbusTcpClient = ModbusSerialClient(
                    endpoint.port,
                    framer=FramerType.RTU,
                    baudrate=endpoint.baudrate,
                    bytesize=8,
                    parity="N",
                    stopbits=1,
                    timeout=timeout,
                    retries=0,
                )
            else:
                client = ModbusTcpClient(
                    endpoint.host,
                    port=endpoint.port,
                    framer=FramerType.SOCKET if endpoint.framing == "socket" else FramerType.RTU,
                    timeout=timeout,
                    retries=0,
                )
            if not client.connect():
                client.close()
                raise GripperCommunicationError(
                    f"cannot open {endpoint.describe()} (in use by another program, no permission, "
                    "or nothing listening)"
                )
            self._client = client
            return self

    def close(self) -> None:
        """Close the port or socket. Idempotent."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- single transactions -------------------------------------------------------------
    def status(self) -> GripperStatus:
        """Read the status registers 2000-2002 (FC4).

        Raises:
            GripperCommunicationError: no valid answer after ``retries`` extra attempts.
        """
        last_error: GripperCommunicationError | None = None
        for _ in range(self._settings.retries + 1):
            try:
                return self._read_status()
            except GripperCommunicationError as error:
                last_error = error
        assert last_error is not None
        raise last_error

    def stop(self) -> None:
        """Stop the fingers where they are (rGTO = 0), keeping the activation."""
        current = self.status()
        self._write_command(GripperCommand(activate=current.activated, go_to=False))

    # -- operations ----------------------------------------------------------------------
    def activate(self, *, timeout_s: float = 5.0, reactivate: bool = False) -> GripperStatus:
        """Activate: reset (rACT = 0), wait for gSTA = 0, set rACT = 1, wait for gSTA = 3.

        An already active gripper is left alone unless ``reactivate`` or it reports a fault that
        blocks motion (major, overtemperature, controller fault); a rising edge on rACT clears
        major faults. The activation routine moves the fingers (to fully open here): a held tool
        is released.

        Raises:
            GripperTimeout: a phase did not complete within ``timeout_s`` (overall).
            GripperFault: the gripper reports a major fault (e.g. 0x0D activation fault).
            GripperCommunicationError: a write was not acknowledged.
        """
        check_positive("timeout_s", timeout_s)
        deadline = time.monotonic() + timeout_s
        current = self.status()
        if current.is_active and not self._blocking_fault(current) and not reactivate:
            return current
        self._write_command(GripperCommand())
        self._wait_for(
            lambda status: status.activation is ActivationStatus.RESET and not status.activated,
            state="activation: waiting for the reset (gSTA = 0, gACT = 0)",
            deadline=deadline,
            timeout_s=timeout_s,
            faults_apply=lambda status: False,
        )
        self._write_command(GripperCommand(activate=True))
        return self._wait_for(
            lambda status: status.is_active,
            state="activation: waiting for gSTA = 3 (activation completed)",
            deadline=deadline,
            timeout_s=timeout_s,
            # A major fault is still reported until the rising edge takes effect (gSTA leaves 0).
            faults_apply=lambda status: status.activation is not ActivationStatus.RESET,
        )

    def move(
        self, position: int, *, speed: int = 255, force: int = 100, timeout_s: float = 5.0
    ) -> GripperStatus:
        """Go to ``position`` and return the status once the fingers stopped.

        Waits until gPR echoes ``position`` (gGTO = 1), then until gOBJ != 0: 3 at the
        position, 2 (or 1) stopped on an object.

        Raises:
            GripperStateError: the gripper is not activated.
            GripperFault: a fault appears before or during the motion.
            GripperTimeout: the echo or the stop did not come within ``timeout_s`` (overall).
            GripperCommunicationError: the command write was not acknowledged.
        """
        command = GripperCommand(
            activate=True,
            go_to=True,
            position=_count("position", position),
            speed=_count("speed", speed),
            force=_count("force", force),
        )
        check_positive("timeout_s", timeout_s)
        deadline = time.monotonic() + timeout_s
        current = self.status()
        self._raise_on_fault(current, state=f"move to {position}: before the request", include_priority=False)
        if not current.is_active:
            raise GripperStateError(
                f"move to {position}: the gripper is not activated; call activate()", status=current
            )
        self._write_command(command)
        self._wait_for(
            lambda status: status.go_to and status.requested_position == position,
            state=f"move to {position}: waiting for gPR to echo {position} with gGTO = 1",
            deadline=deadline,
            timeout_s=timeout_s,
        )
        return self._wait_for(
            lambda status: (
                status.requested_position == position and status.object_status is not ObjectStatus.MOVING
            ),
            state=f"move to {position}: waiting for the fingers to stop (gOBJ != 0)",
            deadline=deadline,
            timeout_s=timeout_s,
        )

    def grasp_tool(
        self,
        *,
        expected_width_m: float,
        width_tolerance_m: float = 0.003,
        speed: int = 128,
        force: int = 150,
        timeout_s: float = 5.0,
    ) -> GraspResult:
        """Close on the tool and check that an object of the expected width is held.

        Args:
            expected_width_m: the tool's width between the pads (e.g. pusher diameter), m.
            width_tolerance_m: allowed |measured - expected| pad distance, m.
            speed, force: counts 0-255.
            timeout_s: overall limit, s.

        Raises:
            GraspError: the fingers closed without contact (gOBJ = 3), or stopped at a width
                outside the tolerance.
            plus the errors of :meth:`move`.
        """
        for name, value in (("expected_width_m", expected_width_m), ("width_tolerance_m", width_tolerance_m)):
            check_positive(name, value)
        status = self.move(_COUNT_MAX, speed=speed, force=force, timeout_s=timeout_s)
        width = self._settings.geometry.opening_m(status.position)
        expected_mm, width_mm = expected_width_m * 1e3, width * 1e3
        if status.object_status is not ObjectStatus.CONTACT_CLOSING:
            raise GraspError(
                f"grasp: no object detected (gOBJ = {int(status.object_status)}); the fingers closed to "
                f"{width_mm:.1f} mm, expected the tool at {expected_mm:.1f} mm",
                status=status,
                measured_width_m=width,
                expected_width_m=expected_width_m,
            )
        if abs(width - expected_width_m) > width_tolerance_m:
            raise GraspError(
                f"grasp: object detected at {width_mm:.1f} mm, expected {expected_mm:.1f} +/- "
                f"{width_tolerance_m * 1e3:.1f} mm: wrong or misplaced tool",
                status=status,
                measured_width_m=width,
                expected_width_m=expected_width_m,
            )
        return GraspResult(status=status, width_m=width)

    def release(
        self, *, position: int = 0, speed: int = 255, force: int = 100, timeout_s: float = 5.0
    ) -> GripperStatus:
        """Open to ``position`` (default fully open) and check that the fingers got there.

        Raises:
            GripperStateError: the fingers stopped on something while opening (gOBJ = 1).
            plus the errors of :meth:`move`.
        """
        status = self.move(position, speed=speed, force=force, timeout_s=timeout_s)
        if status.object_status is ObjectStatus.CONTACT_OPENING:
            raise GripperStateError(
                f"release to {position}: the fingers stopped on an obstacle", status=status
            )
        return status

    # -- internals -----------------------------------------------------------------------
    def _require_client(self) -> ModbusSerialClient | ModbusTcpClient:
        if self._client is None:
            raise GripperCommunicationError(f"not connected to {self._endpoint.describe()}; call connect()")
        return self._client

    def _read_status(self) -> GripperStatus:
        with self._lock:
            client = self._require_client()
            what = f"reading status registers {STATUS_ADDRESS}-{STATUS_ADDRESS + 2}"
            what += f" from {self._endpoint.describe()}"
            try:
                response = client.read_input_registers(
                    STATUS_ADDRESS, count=USED_REGISTER_COUNT, device_id=self._endpoint.device_id
                )
            except (ModbusException, OSError) as error:  # OSError: the peer reset or closed the socket
                raise GripperCommunicationError(f"{what}: {error}") from error
            if response.isError():
                raise GripperCommunicationError(f"{what}: exception response {response}")
            if len(response.registers) != USED_REGISTER_COUNT:
                raise GripperCommunicationError(
                    f"{what}: expected {USED_REGISTER_COUNT} registers, got {response.registers}"
                )
            return GripperStatus.from_registers(response.registers)

    def _write_command(self, command: GripperCommand) -> None:
        with self._lock:
            client = self._require_client()
            what = f"writing command registers {COMMAND_ADDRESS}-{COMMAND_ADDRESS + 2} {command}"
            last_error: GripperCommunicationError | None = None
            for _ in range(self._settings.retries + 1):
                try:
                    response = client.write_registers(
                        COMMAND_ADDRESS, list(command.to_registers()), device_id=self._endpoint.device_id
                    )
                except (ModbusException, OSError) as error:  # OSError: the peer reset or closed the socket
                    last_error = GripperCommunicationError(f"{what} to {self._endpoint.describe()}: {error}")
                    continue
                if response.isError():
                    busy = getattr(response, "exception_code", None) == _DEVICE_BUSY
                    raise GripperCommunicationError(
                        f"{what} to {self._endpoint.describe()}: exception response {response}"
                        + (" (device busy: another Modbus client controls this gripper, e.g. another stack's "
                           "executor)" if busy else "")
                    )
                return
            assert last_error is not None
            raise last_error

    @staticmethod
    def _blocking_fault(status: GripperStatus) -> bool:
        """A fault that stops the fingers: controller fault, major fault, or overtemperature."""
        return bool(
            status.controller_fault
            or status.fault_severity is FaultSeverity.MAJOR
            or status.fault == FaultCode.OVERTEMPERATURE
        )

    def _raise_on_fault(self, status: GripperStatus, *, state: str, include_priority: bool = True) -> None:
        if self._blocking_fault(status):
            raise GripperFault(state=state, status=status)
        if include_priority and status.fault_severity is FaultSeverity.PRIORITY:
            raise GripperFault(state=state, status=status)
        if status.fault == FaultCode.NO_COMMUNICATION:
            _LOGGER.warning("gripper reports 0x09 (no communication for >= 1 s) in %s; continuing", state)

    def _wait_for(
        self,
        condition: Callable[[GripperStatus], bool],
        *,
        state: str,
        deadline: float,
        timeout_s: float,
        faults_apply: Callable[[GripperStatus], bool] = lambda status: True,
    ) -> GripperStatus:
        """Poll until ``condition``; raise on faults where ``faults_apply``, on timeout at ``deadline``."""
        last_status: GripperStatus | None = None
        last_error: GripperCommunicationError | None = None
        while True:
            try:
                status = self._read_status()
            except GripperCommunicationError as error:
                last_error = error
            else:
                last_status = status
                if faults_apply(status):
                    # 0x05 (action delayed) is the normal state while an activation completes.
                    self._raise_on_fault(status, state=state, include_priority=status.is_active)
                if condition(status):
                    return status
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise GripperTimeout(
                    state=state, timeout_s=timeout_s, last_status=last_status, last_error=last_error
                )
            time.sleep(min(self._settings.poll_period_s, remaining))
