"""The Robotiq 2F-85 Modbus register model: commands (1000..), status (2000..), fault codes.

Register layout (Modbus RTU, 115200 8N1, device id 9; every register is 16 bits, big endian,
"high byte" is bits 15..8)::

    1000  high: action request   bit0 rACT, bit3 rGTO, bit4 rATR, bit5 rARD   low: reserved
    1001  high: reserved                                                      low: rPR (0-255)
    1002  high: rSP (0-255)                                                   low: rFR (0-255)

    2000  high: gripper status   bit0 gACT, bit3 gGTO, bits4-5 gSTA, bits6-7 gOBJ   low: reserved
    2001  high: fault status     low nibble gFLT, high nibble kFLT               low: gPR (0-255)
    2002  high: gPO (0-255)                                                   low: gCU (~10 mA per count)

Positions are counts: 0 is fully open, 255 the most closed request (the fingers stop at their
mechanical limit, see :mod:`parapush.robotiq.finger_geometry`). Speeds and forces are counts
0-255 mapped linearly onto the gripper's range.

Registers 1003-1007 and 2003-2007 are reserved by the manual (16 bytes per direction);
:data:`REGISTER_BLOCK_LENGTH` covers them so devices and clients can address the full block.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from parapush.validation import check_integer

COMMAND_ADDRESS = 1000
"""First command (output) register."""
STATUS_ADDRESS = 2000
"""First status (input) register."""
USED_REGISTER_COUNT = 3
"""Registers carrying data in each direction (1000-1002 and 2000-2002)."""
REGISTER_BLOCK_LENGTH = 8
"""Registers in each direction including the reserved ones (16 bytes)."""
DEFAULT_DEVICE_ID = 9
"""The gripper's factory Modbus device (slave) id."""
DEFAULT_BAUDRATE = 115200
"""The gripper's factory serial speed (8 data bits, no parity, 1 stop bit)."""

_BYTE_MAX = 0xFF
_REGISTER_MAX = 0xFFFF

# Bits of the action request byte (high byte of 1000).
_BIT_ACTIVATE = 0
_BIT_GO_TO = 3
_BIT_AUTO_RELEASE = 4
_BIT_RELEASE_DIRECTION_OPEN = 5
# Bits of the gripper status byte (high byte of 2000).
_BIT_ACTIVATED = 0
_BIT_GO_TO_ECHO = 3
_SHIFT_ACTIVATION_STATUS = 4
_SHIFT_OBJECT_STATUS = 6


class RegisterError(ValueError):
    """A register value or a command field is out of range; the message names it."""


class ActivationStatus(enum.IntEnum):
    """gSTA: the activation state machine."""

    RESET = 0
    """Gripper is in reset (or automatic release) state."""
    ACTIVATING = 1
    """Activation in progress."""
    UNUSED = 2
    """Not used by the gripper; decoded so that a corrupted value is still representable."""
    ACTIVE = 3
    """Activation is completed."""


class ObjectStatus(enum.IntEnum):
    """gOBJ: object detection. Only meaningful once gPR echoes the requested position."""

    MOVING = 0
    """Fingers are moving towards the requested position; no object detected."""
    CONTACT_OPENING = 1
    """Fingers stopped while opening: an object was detected."""
    CONTACT_CLOSING = 2
    """Fingers stopped while closing: an object was detected."""
    AT_POSITION = 3
    """Fingers are at the requested position: no object detected, or the object was lost."""


class FaultSeverity(enum.IntEnum):
    """How a gFLT code constrains the gripper (ordered: a larger value is more severe)."""

    NONE = 0
    PRIORITY = 1
    """Priority fault (LED blue): the request is delayed or refused until its condition is met."""
    MINOR = 2
    """Minor fault (LED continuous red): clears by itself once the condition disappears."""
    MAJOR = 3
    """Major fault (LED blinking red/blue): a reset and a rising edge on rACT are required."""


class FaultCode(enum.IntEnum):
    """The documented gFLT codes."""

    NONE = 0x00
    ACTION_DELAYED = 0x05
    ACTIVATION_BIT_NOT_SET = 0x07
    OVERTEMPERATURE = 0x08
    NO_COMMUNICATION = 0x09
    UNDERVOLTAGE = 0x0A
    AUTO_RELEASE_IN_PROGRESS = 0x0B
    INTERNAL_FAULT = 0x0C
    ACTIVATION_FAULT = 0x0D
    OVERCURRENT = 0x0E
    AUTO_RELEASE_COMPLETED = 0x0F


_FAULT_TABLE: dict[int, tuple[FaultSeverity, str]] = {
    FaultCode.NONE: (FaultSeverity.NONE, "no fault"),
    FaultCode.ACTION_DELAYED: (
        FaultSeverity.PRIORITY,
        "action delayed: the activation (reactivation) must complete before the action",
    ),
    FaultCode.ACTIVATION_BIT_NOT_SET: (
        FaultSeverity.PRIORITY,
        "the activation bit (rACT) must be set before an action",
    ),
    FaultCode.OVERTEMPERATURE: (
        FaultSeverity.MINOR,
        "maximum operating temperature exceeded (>= 85 C internally); wait for cool-down",
    ),
    FaultCode.NO_COMMUNICATION: (FaultSeverity.MINOR, "no communication during at least 1 second"),
    FaultCode.UNDERVOLTAGE: (FaultSeverity.MAJOR, "under minimum operating voltage"),
    FaultCode.AUTO_RELEASE_IN_PROGRESS: (FaultSeverity.MAJOR, "automatic release in progress"),
    FaultCode.INTERNAL_FAULT: (FaultSeverity.MAJOR, "internal fault; contact Robotiq support"),
    FaultCode.ACTIVATION_FAULT: (
        FaultSeverity.MAJOR,
        "activation fault: verify that no interference or other error occurred",
    ),
    FaultCode.OVERCURRENT: (FaultSeverity.MAJOR, "overcurrent triggered"),
    FaultCode.AUTO_RELEASE_COMPLETED: (FaultSeverity.MAJOR, "automatic release completed"),
}


def fault_severity(code: int) -> FaultSeverity:
    """Severity of a gFLT code; undocumented non-zero codes are treated as major."""
    _check_range("gFLT", code, 0x0F)
    entry = _FAULT_TABLE.get(code)
    return entry[0] if entry is not None else FaultSeverity.MAJOR


def describe_fault(code: int) -> str:
    """Human-readable meaning of a gFLT code, e.g. ``"0x0E (major): overcurrent triggered"``."""
    _check_range("gFLT", code, 0x0F)
    entry = _FAULT_TABLE.get(code)
    if entry is None:
        return f"0x{code:02X} (major): undocumented fault code, treated as major"
    severity, text = entry
    return f"0x{code:02X} ({severity.name.lower()}): {text}"


def _check_range(name: str, value: int, maximum: int) -> None:
    try:
        check_integer(name, value, minimum=0, maximum=maximum)
    except ValueError as error:
        raise RegisterError(str(error)) from None


def _check_registers(name: str, registers: Sequence[int]) -> tuple[int, ...]:
    values = tuple(registers)
    if len(values) < USED_REGISTER_COUNT:
        raise RegisterError(
            f"{name}: expected at least {USED_REGISTER_COUNT} registers, got {len(values)}: {values!r}"
        )
    for index, value in enumerate(values[:USED_REGISTER_COUNT]):
        _check_range(f"{name}[{index}]", value, _REGISTER_MAX)
    return values[:USED_REGISTER_COUNT]


def _bit(byte: int, index: int) -> bool:
    return bool((byte >> index) & 1)


@dataclass(frozen=True)
class GripperCommand:
    """The command registers 1000-1002.

    Attributes:
        activate: rACT; 0 resets the gripper, a rising edge 0 -> 1 starts the activation.
        go_to: rGTO; 1 moves to the requested position, 0 stops the fingers.
        auto_release: rATR; 1 starts the emergency automatic release (a major fault follows).
        release_direction_open: rARD; automatic release direction, True opens, False closes.
        position: rPR, counts 0 (open) .. 255 (closed).
        speed: rSP, counts 0 (slowest) .. 255 (fastest).
        force: rFR, counts 0 (lowest) .. 255 (highest).
    """

    activate: bool = False
    go_to: bool = False
    auto_release: bool = False
    release_direction_open: bool = False
    position: int = 0
    speed: int = 0
    force: int = 0

    def __post_init__(self) -> None:
        for name in ("activate", "go_to", "auto_release", "release_direction_open"):
            if not isinstance(getattr(self, name), bool):
                raise RegisterError(f"{name}: expected a bool, got {getattr(self, name)!r}")
        for name in ("position", "speed", "force"):
            _check_range(name, getattr(self, name), _BYTE_MAX)

    @property
    def action_byte(self) -> int:
        """The action request byte (high byte of register 1000)."""
        return (
            (int(self.activate) << _BIT_ACTIVATE)
            | (int(self.go_to) << _BIT_GO_TO)
            | (int(self.auto_release) << _BIT_AUTO_RELEASE)
            | (int(self.release_direction_open) << _BIT_RELEASE_DIRECTION_OPEN)
        )

    def to_registers(self) -> tuple[int, int, int]:
        """Registers 1000, 1001, 1002."""
        return (self.action_byte << 8, self.position, (self.speed << 8) | self.force)

    @classmethod
    def from_registers(cls, registers: Sequence[int]) -> GripperCommand:
        """Decode registers 1000-1002 (reserved bits and bytes are ignored)."""
        first, second, third = _check_registers("command registers", registers)
        action = first >> 8
        return cls(
            activate=_bit(action, _BIT_ACTIVATE),
            go_to=_bit(action, _BIT_GO_TO),
            auto_release=_bit(action, _BIT_AUTO_RELEASE),
            release_direction_open=_bit(action, _BIT_RELEASE_DIRECTION_OPEN),
            position=second & _BYTE_MAX,
            speed=third >> 8,
            force=third & _BYTE_MAX,
        )


@dataclass(frozen=True)
class GripperStatus:
    """The status registers 2000-2002.

    Attributes:
        activated: gACT, echo of rACT.
        go_to: gGTO, echo of rGTO.
        activation: gSTA.
        object_status: gOBJ; trust it only once ``requested_position`` echoes the request.
        fault: gFLT (0-15), see :func:`describe_fault`.
        controller_fault: kFLT (0-15), fault of an optional Robotiq controller.
        requested_position: gPR, echo of rPR (counts).
        position: gPO, finger position (counts, 0 open .. 255 closed).
        current: gCU, motor current (counts, about 10 mA each; see ``current_a``).
    """

    activated: bool = False
    go_to: bool = False
    activation: ActivationStatus = ActivationStatus.RESET
    object_status: ObjectStatus = ObjectStatus.MOVING
    fault: int = 0
    controller_fault: int = 0
    requested_position: int = 0
    position: int = 0
    current: int = 0

    def __post_init__(self) -> None:
        for name in ("activated", "go_to"):
            if not isinstance(getattr(self, name), bool):
                raise RegisterError(f"{name}: expected a bool, got {getattr(self, name)!r}")
        object.__setattr__(self, "activation", ActivationStatus(self.activation))
        object.__setattr__(self, "object_status", ObjectStatus(self.object_status))
        _check_range("fault", self.fault, 0x0F)
        _check_range("controller_fault", self.controller_fault, 0x0F)
        for name in ("requested_position", "position", "current"):
            _check_range(name, getattr(self, name), _BYTE_MAX)

    # -- derived -------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        """Activation completed (gSTA = 3) and gACT set."""
        return self.activated and self.activation is ActivationStatus.ACTIVE

    @property
    def is_moving(self) -> bool:
        """Go-to active and fingers still moving (gGTO = 1, gOBJ = 0)."""
        return self.go_to and self.object_status is ObjectStatus.MOVING

    @property
    def object_detected(self) -> bool:
        """Fingers stopped on an object (gOBJ 1 or 2)."""
        return self.object_status in (ObjectStatus.CONTACT_OPENING, ObjectStatus.CONTACT_CLOSING)

    @property
    def fault_severity(self) -> FaultSeverity:
        return fault_severity(self.fault)

    @property
    def current_a(self) -> float:
        """Motor current, A (10 mA per count)."""
        return self.current * CURRENT_A_PER_COUNT

    def describe(self) -> str:
        """One line for logs and error messages."""
        text = (
            f"gACT={int(self.activated)} gGTO={int(self.go_to)} gSTA={int(self.activation)} "
            f"({self.activation.name.lower()}) gOBJ={int(self.object_status)} "
            f"({self.object_status.name.lower()}) gFLT=0x{self.fault:02X} kFLT=0x{self.controller_fault:X} "
            f"gPR={self.requested_position} gPO={self.position} gCU={self.current}"
        )
        if self.fault:
            text += f" [{describe_fault(self.fault)}]"
        return text

    # -- encoding ------------------------------------------------------------------------
    @property
    def status_byte(self) -> int:
        """The gripper status byte (high byte of register 2000)."""
        return (
            (int(self.activated) << _BIT_ACTIVATED)
            | (int(self.go_to) << _BIT_GO_TO_ECHO)
            | (int(self.activation) << _SHIFT_ACTIVATION_STATUS)
            | (int(self.object_status) << _SHIFT_OBJECT_STATUS)
        )

    def to_registers(self) -> tuple[int, int, int]:
        """Registers 2000, 2001, 2002."""
        fault_byte = (self.controller_fault << 4) | self.fault
        return (
            self.status_byte << 8,
            (fault_byte << 8) | self.requested_position,
            (self.position << 8) | self.current,
        )

    @classmethod
    def from_registers(cls, registers: Sequence[int]) -> GripperStatus:
        """Decode registers 2000-2002 (reserved bits and bytes are ignored)."""
        first, second, third = _check_registers("status registers", registers)
        status = first >> 8
        fault_byte = second >> 8
        return cls(
            activated=_bit(status, _BIT_ACTIVATED),
            go_to=_bit(status, _BIT_GO_TO_ECHO),
            activation=ActivationStatus((status >> _SHIFT_ACTIVATION_STATUS) & 0b11),
            object_status=ObjectStatus((status >> _SHIFT_OBJECT_STATUS) & 0b11),
            fault=fault_byte & 0x0F,
            controller_fault=fault_byte >> 4,
            requested_position=second & _BYTE_MAX,
            position=third >> 8,
            current=third & _BYTE_MAX,
        )


CURRENT_A_PER_COUNT = 0.010
"""gCU scale: about 10 mA per count."""
