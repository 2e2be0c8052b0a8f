"""Our production driver (parapush.execution.gripper) against the emulator, over the pty and TCP."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from parapush.execution.gripper import GripperDriverSettings, RobotiqGripper
from parapush.execution.gripper_endpoint import SerialEndpoint, TcpEndpoint, parse_endpoint
from parapush.execution.gripper_errors import (
    GraspError,
    GripperCommunicationError,
    GripperFault,
    GripperStateError,
    GripperTimeout,
)
from parapush.robotiq.device_model import DeviceModelSettings
from parapush.robotiq.registers import ActivationStatus, GripperCommand, ObjectStatus
from parapush.sim.gripper_emulator import GripperEmulator, GripperEmulatorSettings

TOOL_WIDTH_M = 0.025
TRANSPORTS = ["serial", "tcp", "rtu+tcp"]
DRIVER_SETTINGS = GripperDriverSettings(request_timeout_s=0.1, retries=0, poll_period_s=0.005)


@pytest.fixture
def connect() -> Iterator[Callable[..., tuple[RobotiqGripper, GripperEmulator]]]:
    resources: list[GripperEmulator | RobotiqGripper] = []

    def start(transport: str = "serial", **device_overrides) -> tuple[RobotiqGripper, GripperEmulator]:
        device = {"activation_duration_s": 0.1, "command_latency_s": 0.02, "object_width_m": TOOL_WIDTH_M}
        device |= device_overrides
        settings = GripperEmulatorSettings(
            device=DeviceModelSettings(**device),
            serial=transport == "serial",
            tcp=transport != "serial",
            tcp_framing="rtu" if transport == "rtu+tcp" else "socket",
        )
        emulator = GripperEmulator(settings).start()
        resources.append(emulator)
        if transport == "serial":
            address = emulator.serial_port
        else:
            host, port = emulator.tcp_address
            address = f"{transport}://{host}:{port}"
        gripper = RobotiqGripper.from_address(address, settings=DRIVER_SETTINGS).connect()
        resources.append(gripper)
        return gripper, emulator

    yield start
    for resource in reversed(resources):
        resource.close() if isinstance(resource, RobotiqGripper) else resource.stop()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_activate_grasp_release(connect, transport):
    gripper, emulator = connect(transport)
    status = gripper.activate(timeout_s=2.0)
    assert status.is_active and emulator.status().is_active

    moved = gripper.move(60, speed=255, force=50, timeout_s=3.0)
    assert moved.requested_position == 60 and moved.position == 60
    assert moved.object_status is ObjectStatus.AT_POSITION

    grasp = gripper.grasp_tool(expected_width_m=TOOL_WIDTH_M, speed=255, timeout_s=3.0)
    assert grasp.status.object_status is ObjectStatus.CONTACT_CLOSING
    assert grasp.width_m == pytest.approx(TOOL_WIDTH_M, abs=0.001)
    assert emulator.status().object_detected

    released = gripper.release(timeout_s=3.0)
    assert released.position == 0 and released.object_status is ObjectStatus.AT_POSITION


def test_move_waits_for_the_echo_despite_the_stale_object_status(connect):
    gripper, emulator = connect(command_latency_s=0.15)
    gripper.activate(timeout_s=2.0)
    gripper.move(0, timeout_s=2.0)
    assert emulator.status().object_status is ObjectStatus.AT_POSITION
    status = gripper.move(100, speed=255, timeout_s=3.0)  # gOBJ reads 3 (stale) for the first 150 ms
    assert status.requested_position == 100 and status.position == 100
    assert emulator.status().position == 100


def test_activate_leaves_an_active_gripper_alone_unless_asked(connect):
    gripper, emulator = connect()
    gripper.activate(timeout_s=2.0)
    gripper.move(40, timeout_s=2.0)
    assert gripper.activate(timeout_s=2.0).position == 40
    assert gripper.activate(timeout_s=2.0, reactivate=True).is_active
    assert emulator.finger_position() == 0  # the activation opened the fingers


def test_activation_clears_a_major_fault(connect):
    gripper, emulator = connect()
    gripper.activate(timeout_s=2.0)
    emulator.inject_fault(0x0E)
    assert gripper.status().fault == 0x0E
    assert gripper.activate(timeout_s=2.0).fault == 0


def test_activate_keeps_a_held_tool_when_the_fault_does_not_block(connect):
    gripper, emulator = connect()
    gripper.activate(timeout_s=2.0)
    gripper.grasp_tool(expected_width_m=TOOL_WIDTH_M, speed=255, timeout_s=3.0)
    emulator.inject_fault(0x09)  # minor: no communication for 1 s; reactivating would drop the tool
    status = gripper.activate(timeout_s=2.0)
    assert status.object_status is ObjectStatus.CONTACT_CLOSING and status.fault == 0x09
    assert emulator.status().object_detected


def test_grasp_without_the_tool_raises(connect):
    gripper, emulator = connect(object_width_m=None)
    gripper.activate(timeout_s=2.0)
    with pytest.raises(GraspError, match="no object detected") as caught:
        gripper.grasp_tool(expected_width_m=TOOL_WIDTH_M, speed=255, timeout_s=4.0)
    assert caught.value.status.object_status is ObjectStatus.AT_POSITION
    assert caught.value.measured_width_m == pytest.approx(0.0)


def test_grasp_of_the_wrong_width_raises(connect):
    gripper, emulator = connect(object_width_m=0.040)
    gripper.activate(timeout_s=2.0)
    with pytest.raises(GraspError, match="expected 25.0") as caught:
        gripper.grasp_tool(expected_width_m=TOOL_WIDTH_M, width_tolerance_m=0.003, timeout_s=3.0)
    assert caught.value.measured_width_m == pytest.approx(0.040, abs=0.001)


def test_move_before_activation_raises_a_state_error(connect):
    gripper, _ = connect()
    with pytest.raises(GripperStateError, match="not activated") as caught:
        gripper.move(100)
    assert caught.value.status.activation is ActivationStatus.RESET


@pytest.mark.parametrize(("code", "words"), [(0x0E, "overcurrent"), (0x08, "temperature"), (0x0A, "voltage")])
def test_faults_before_a_move_raise(connect, code, words):
    gripper, emulator = connect()
    gripper.activate(timeout_s=2.0)
    emulator.inject_fault(code)
    with pytest.raises(GripperFault, match=words) as caught:
        gripper.move(100, timeout_s=2.0)
    assert caught.value.fault_code == code and "move to 100" in caught.value.state


def test_a_fault_during_the_motion_raises(connect):
    gripper, emulator = connect()
    gripper.activate(timeout_s=2.0)
    threading.Timer(0.15, emulator.inject_fault, args=(0x0E,)).start()
    with pytest.raises(GripperFault, match="overcurrent") as caught:
        gripper.move(200, speed=0, timeout_s=5.0)  # ~3.7 s at the slowest speed
    assert "waiting for" in caught.value.state
    assert 0 < emulator.finger_position() < 200


def test_a_controller_fault_raises(connect):
    gripper, emulator = connect()
    gripper.activate(timeout_s=2.0)
    emulator.set_controller_fault(0x3)
    with pytest.raises(GripperFault, match="kFLT") as caught:
        gripper.move(10, timeout_s=2.0)
    assert caught.value.controller_fault == 0x3


def test_activation_fault_raises_during_activation(connect):
    gripper, emulator = connect(activation_duration_s=0.5)
    threading.Timer(0.2, emulator.inject_fault, args=(0x0D,)).start()
    with pytest.raises(GripperFault, match="activation fault") as caught:
        gripper.activate(timeout_s=3.0)
    assert caught.value.state.startswith("activation")


def test_activation_timeout_names_the_state(connect):
    gripper, _ = connect(activation_duration_s=5.0)
    started = time.monotonic()
    with pytest.raises(GripperTimeout, match=r"activation: waiting for gSTA = 3") as caught:
        gripper.activate(timeout_s=0.3)
    assert 0.3 <= time.monotonic() - started < 0.3 + 1.0  # bounded: no hang on pymodbus defaults
    assert caught.value.last_status.activation is ActivationStatus.ACTIVATING
    assert caught.value.timeout_s == 0.3


def test_motion_timeout_names_the_state(connect):
    gripper, _ = connect()
    gripper.activate(timeout_s=2.0)
    with pytest.raises(GripperTimeout, match=r"waiting for the fingers to stop \(gOBJ != 0\)") as caught:
        gripper.move(200, speed=0, timeout_s=0.4)
    assert caught.value.last_status.object_status is ObjectStatus.MOVING
    assert caught.value.last_error is None


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_gripper_that_stops_answering_times_out(connect, transport):
    gripper, emulator = connect(transport)
    gripper.activate(timeout_s=2.0)
    threading.Timer(0.1, emulator.set_responding, args=(False,)).start()
    started = time.monotonic()
    with pytest.raises(GripperTimeout, match="waiting for the fingers to stop") as caught:
        gripper.move(200, speed=0, timeout_s=0.6)
    elapsed = time.monotonic() - started
    assert 0.6 <= elapsed < 0.6 + DRIVER_SETTINGS.request_timeout_s + 1.0  # bounded: one request late at most
    assert isinstance(caught.value.last_error, GripperCommunicationError)
    assert "last communication error" in str(caught.value)
    assert caught.value.last_status is not None  # the statuses read before it went silent


def test_a_silent_gripper_fails_status_and_move(connect):
    gripper, emulator = connect()
    emulator.set_responding(False)
    with pytest.raises(GripperCommunicationError, match="reading status registers 2000-2002"):
        gripper.status()
    with pytest.raises(GripperCommunicationError):
        gripper.move(10)
    with pytest.raises(GripperCommunicationError):
        gripper.activate(timeout_s=0.3)
    emulator.set_responding(True)
    assert gripper.activate(timeout_s=2.0).is_active


def test_stop_halts_the_fingers(connect):
    gripper, emulator = connect()
    gripper.activate(timeout_s=2.0)
    threading.Timer(0.2, gripper.stop).start()
    with pytest.raises(GripperTimeout):
        gripper.move(200, speed=0, timeout_s=0.6)
    time.sleep(0.05)
    halted = emulator.finger_position()
    time.sleep(0.2)
    assert emulator.finger_position() == halted < 200
    assert emulator.command() == GripperCommand(activate=True)


def test_connection_errors_are_clear():
    with pytest.raises(GripperCommunicationError, match="no such device"):
        RobotiqGripper(SerialEndpoint("/dev/does-not-exist-gripper")).connect()
    with pytest.raises(GripperCommunicationError, match="cannot open Modbus TCP 127.0.0.1:1"):
        RobotiqGripper(TcpEndpoint("127.0.0.1", 1), settings=DRIVER_SETTINGS).connect()
    with pytest.raises(GripperCommunicationError, match="not connected"):
        RobotiqGripper(TcpEndpoint("127.0.0.1", 1)).status()


def test_move_arguments_are_validated(connect):
    gripper, _ = connect()
    with pytest.raises(ValueError, match="position"):
        gripper.move(256)
    with pytest.raises(ValueError, match="speed"):
        gripper.move(10, speed=-1)
    with pytest.raises(ValueError, match="timeout_s"):
        gripper.move(10, timeout_s=0.0)
    with pytest.raises(ValueError, match="expected_width_m"):
        gripper.grasp_tool(expected_width_m=float("nan"))


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("/dev/ttyUSB0", SerialEndpoint("/dev/ttyUSB0")),
        ("serial:///dev/ttyUSB1", SerialEndpoint("/dev/ttyUSB1")),
        ("tcp://10.0.0.2:502", TcpEndpoint("10.0.0.2", 502)),
        ("rtu+tcp://robot.local:54321", TcpEndpoint("robot.local", 54321, framing="rtu")),
    ],
)
def test_parse_endpoint(address, expected):
    assert parse_endpoint(address) == expected


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("", "address"),
        ("auto", "explicit serial device"),
        ("udp://host:1", "unknown scheme"),
        ("tcp://host", "host:port"),
        ("tcp://host:99999", "port"),
    ],
)
def test_parse_endpoint_errors(address, words):
    with pytest.raises(ValueError, match=words):
        parse_endpoint(address)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"request_timeout_s": 0}, "request_timeout_s"),
        ({"retries": -1}, "retries"),
        ({"poll_period_s": -1}, "poll"),
    ],
)
def test_driver_settings_validation(kwargs, field):
    with pytest.raises(ValueError, match=field):
        GripperDriverSettings(**kwargs)
