"""The 2F-85 register model: hand-checked encodings, round trips, fault meanings, validation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parapush.robotiq.finger_geometry import FingerGeometry
from parapush.robotiq.registers import (
    ActivationStatus,
    FaultSeverity,
    GripperCommand,
    GripperStatus,
    ObjectStatus,
    RegisterError,
    describe_fault,
    fault_severity,
)

PROPERTY_SETTINGS = settings(max_examples=300, derandomize=True, database=None, deadline=None)


def test_activation_request_is_0x0100():
    assert GripperCommand(activate=True).to_registers() == (0x0100, 0, 0)


def test_go_to_request_packs_position_speed_force():
    command = GripperCommand(activate=True, go_to=True, position=0xE1, speed=0x80, force=0x40)
    # action byte 0b0000_1001 in the high byte; rPR in the low byte of 1001; rSP high, rFR low of 1002.
    assert command.to_registers() == (0x0900, 0x00E1, 0x8040)


def test_auto_release_bits():
    command = GripperCommand(activate=True, auto_release=True, release_direction_open=True)
    assert command.to_registers()[0] == 0b0011_0001 << 8


def test_status_decoding_hand_checked():
    # 0xF9 = 0b11_11_1_00_1: gOBJ 3, gSTA 3, gGTO 1, gACT 1; fault 0x0E, kFLT 0x2; gPR 100; gPO 101, gCU 25.
    status = GripperStatus.from_registers([0xF900, 0x2E64, 0x6519])
    assert status.activated and status.go_to
    assert status.activation is ActivationStatus.ACTIVE
    assert status.object_status is ObjectStatus.AT_POSITION
    assert status.fault == 0x0E and status.controller_fault == 0x2
    assert status.requested_position == 100 and status.position == 101 and status.current == 25
    assert status.current_a == pytest.approx(0.25)
    assert status.is_active and not status.is_moving and not status.object_detected


def test_status_flags():
    moving = GripperStatus(activated=True, go_to=True, activation=ActivationStatus.ACTIVE)
    assert moving.is_moving and not moving.object_detected
    holding = GripperStatus(
        activated=True,
        go_to=True,
        activation=ActivationStatus.ACTIVE,
        object_status=ObjectStatus.CONTACT_CLOSING,
    )
    assert holding.object_detected and not holding.is_moving
    activating = GripperStatus(activated=True, activation=ActivationStatus.ACTIVATING)
    assert not activating.is_active


def test_reserved_bits_are_ignored():
    assert GripperCommand.from_registers([0x0900 | 0x00FF, 0xAB00 | 7, 0x0102, 0xFFFF]) == GripperCommand(
        activate=True, go_to=True, position=7, speed=1, force=2
    )


@PROPERTY_SETTINGS
@given(
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(0, 255),
    st.integers(0, 255),
    st.integers(0, 255),
)
def test_command_round_trip(activate, go_to, auto_release, direction, position, speed, force):
    command = GripperCommand(activate, go_to, auto_release, direction, position, speed, force)
    registers = command.to_registers()
    assert all(0 <= register <= 0xFFFF for register in registers)
    assert GripperCommand.from_registers(registers) == command


@PROPERTY_SETTINGS
@given(
    st.booleans(),
    st.booleans(),
    st.sampled_from(list(ActivationStatus)),
    st.sampled_from(list(ObjectStatus)),
    st.integers(0, 15),
    st.integers(0, 15),
    st.integers(0, 255),
    st.integers(0, 255),
    st.integers(0, 255),
)
def test_status_round_trip(
    activated, go_to, activation, objects, fault, controller, requested, position, current
):
    status = GripperStatus(
        activated, go_to, activation, objects, fault, controller, requested, position, current
    )
    assert GripperStatus.from_registers(status.to_registers()) == status


@pytest.mark.parametrize(
    ("code", "severity", "words"),
    [
        (0x00, FaultSeverity.NONE, "no fault"),
        (0x05, FaultSeverity.PRIORITY, "action delayed"),
        (0x07, FaultSeverity.PRIORITY, "activation bit"),
        (0x08, FaultSeverity.MINOR, "temperature"),
        (0x09, FaultSeverity.MINOR, "no communication"),
        (0x0A, FaultSeverity.MAJOR, "voltage"),
        (0x0B, FaultSeverity.MAJOR, "automatic release in progress"),
        (0x0C, FaultSeverity.MAJOR, "internal fault"),
        (0x0D, FaultSeverity.MAJOR, "activation fault"),
        (0x0E, FaultSeverity.MAJOR, "overcurrent"),
        (0x0F, FaultSeverity.MAJOR, "automatic release completed"),
        (0x03, FaultSeverity.MAJOR, "undocumented"),
    ],
)
def test_fault_meanings(code, severity, words):
    assert fault_severity(code) is severity
    text = describe_fault(code)
    assert text.startswith(f"0x{code:02X}") and words in text


def test_describe_status_names_the_fault():
    text = GripperStatus(fault=0x0E).describe()
    assert "gFLT=0x0E" in text and "overcurrent" in text


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: GripperCommand(position=256), "position"),
        (lambda: GripperCommand(speed=-1), "speed"),
        (lambda: GripperCommand(force=1.5), "force"),
        (lambda: GripperCommand(activate=1), "activate"),
        (lambda: GripperStatus(fault=16), "fault"),
        (lambda: GripperStatus(position=300), "position"),
        (lambda: GripperCommand.from_registers([1, 2]), "command registers"),
        (lambda: GripperStatus.from_registers([0x10000, 0, 0]), "status registers[0]"),
        (lambda: fault_severity(16), "gFLT"),
    ],
)
def test_invalid_values_name_the_field(call, field):
    with pytest.raises(RegisterError, match=field.replace("[", r"\[").replace("]", r"\]")):
        call()


def test_finger_geometry_conversions():
    geometry = FingerGeometry()
    assert geometry.opening_m(0) == pytest.approx(0.085)
    assert geometry.opening_m(230) == pytest.approx(0.0)
    assert geometry.opening_m(255) == pytest.approx(0.0)  # past the mechanical limit
    assert geometry.position_for_opening(0.0425) == pytest.approx(115.0)
    assert geometry.position_for_opening(geometry.opening_m(77)) == pytest.approx(77)
    assert geometry.speed_m_s(0) == pytest.approx(0.020) and geometry.speed_m_s(255) == pytest.approx(0.150)
    assert geometry.force_n(0) == pytest.approx(20.0) and geometry.force_n(255) == pytest.approx(235.0)
    assert geometry.speed_counts_per_s(255) == pytest.approx(0.150 / (0.085 / 230))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"stroke_m": 0.0}, "stroke_m"),
        ({"closed_count": 0}, "closed_count"),
        ({"open_count": 256}, "open_count"),
        ({"max_speed_m_s": 0.01}, "max_speed_m_s"),
        ({"min_force_n": float("nan")}, "min_force_n"),
    ],
)
def test_finger_geometry_validation(kwargs, field):
    with pytest.raises(ValueError, match=field):
        FingerGeometry(**kwargs)
