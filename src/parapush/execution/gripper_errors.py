"""Errors of the gripper driver (:mod:`parapush.execution.gripper`); every message names the state."""

from __future__ import annotations

from parapush.robotiq.registers import GripperStatus, describe_fault


class GripperError(RuntimeError):
    """Base class of the gripper driver's errors."""


class GripperCommunicationError(GripperError):
    """A Modbus transaction failed: no answer, an exception response, or the port is unavailable."""


class GripperStateError(GripperError):
    """The request is not allowed in the gripper's current state (e.g. moving before activation)."""

    def __init__(self, message: str, *, status: GripperStatus) -> None:
        super().__init__(f"{message}; status: {status.describe()}")
        self.status = status


class GripperTimeout(GripperError):  # noqa: N818 - the name the executor API uses
    """A wait did not complete in time.

    Attributes:
        state: what was awaited, e.g. ``"activation: waiting for gSTA = 3"``.
        timeout_s: the limit, s.
        last_status: the last status read (None: no answer at all).
        last_error: the last communication error during the wait, if any.
    """

    def __init__(
        self,
        *,
        state: str,
        timeout_s: float,
        last_status: GripperStatus | None,
        last_error: GripperCommunicationError | None,
    ) -> None:
        status_text = (
            last_status.describe() if last_status is not None else "none (the gripper never answered)"
        )
        message = f"gripper timed out after {timeout_s:g} s in {state}; last status: {status_text}"
        if last_error is not None:
            message += f"; last communication error: {last_error}"
        super().__init__(message)
        self.state = state
        self.timeout_s = timeout_s
        self.last_status = last_status
        self.last_error = last_error


class GripperFault(GripperError):  # noqa: N818 - the name the executor API uses
    """The gripper reports a fault (gFLT or kFLT) that stops the operation.

    Attributes:
        state: the operation during which it was seen.
        fault_code: gFLT.
        controller_fault: kFLT.
        status: the status that reported it.
    """

    def __init__(self, *, state: str, status: GripperStatus) -> None:
        parts = []
        if status.fault:
            parts.append(f"gFLT {describe_fault(status.fault)}")
        if status.controller_fault:
            parts.append(f"kFLT 0x{status.controller_fault:X} (controller fault)")
        super().__init__(f"gripper fault in {state}: {'; '.join(parts)}; status: {status.describe()}")
        self.state = state
        self.fault_code = status.fault
        self.controller_fault = status.controller_fault
        self.status = status


class GraspError(GripperError):
    """A grasp ended without the expected object between the fingers.

    Attributes:
        status: the final status.
        measured_width_m: pad distance at the end, m.
        expected_width_m: the width that was expected, m.
    """

    def __init__(
        self, message: str, *, status: GripperStatus, measured_width_m: float, expected_width_m: float
    ):
        super().__init__(f"{message}; status: {status.describe()}")
        self.status = status
        self.measured_width_m = measured_width_m
        self.expected_width_m = expected_width_m
