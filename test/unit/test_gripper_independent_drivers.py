"""The emulator driven by independent Robotiq drivers: pyrobotiqgripper (pymodbus) and robotiq2f
(minimalmodbus), so the emulator is not only checked against our own reading of the protocol."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pyrobotiqgripper
import pytest
import robotiq2f

from parapush.robotiq.device_model import DeviceModelSettings
from parapush.robotiq.registers import ObjectStatus
from parapush.sim.gripper_emulator import GripperEmulator, GripperEmulatorSettings

TOOL_WIDTH_M = 0.030
CALL_LIMIT_S = 10.0


def call_with_limit(function: Callable[[], Any], limit_s: float = CALL_LIMIT_S) -> Any:
    """Run a library call that has no timeout of its own in a thread; fail the test if it hangs."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function()
        except BaseException as error:  # noqa: BLE001 - re-raised in the test thread
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit_s)
    assert not thread.is_alive(), f"library call did not return within {limit_s} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


@pytest.fixture
def start_emulator() -> Iterator[Callable[..., GripperEmulator]]:
    started: list[GripperEmulator] = []

    def start(*, latency_s: float = 0.0, **overrides) -> GripperEmulator:
        device = DeviceModelSettings(
            activation_duration_s=0.1, command_latency_s=latency_s, object_width_m=TOOL_WIDTH_M
        )
        emulator = GripperEmulator(GripperEmulatorSettings(device=device, **overrides)).start()
        started.append(emulator)
        return emulator

    yield start
    for emulator in started:
        emulator.stop()


# -- pyrobotiqgripper ---------------------------------------------------------------------------
def pyrobotiq_serial(emulator: GripperEmulator) -> pyrobotiqgripper.RobotiqGripper:
    return call_with_limit(lambda: pyrobotiqgripper.RobotiqGripper(com_port=emulator.serial_port))


def pyrobotiq_rtu_over_tcp(emulator: GripperEmulator) -> pyrobotiqgripper.RobotiqGripper:
    host, port = emulator.tcp_address
    return call_with_limit(
        lambda: pyrobotiqgripper.RobotiqGripper(
            connection_type=pyrobotiqgripper.GRIPPER_MODE_RTU_VIA_TCP, tcp_host=host, tcp_port=port
        )
    )


@pytest.mark.parametrize("transport", ["serial", "rtu_over_tcp"])
def test_pyrobotiqgripper_activates_moves_and_detects_the_tool(start_emulator, transport):
    if transport == "serial":
        emulator = start_emulator()
        gripper = pyrobotiq_serial(emulator)
    else:
        emulator = start_emulator(serial=False, tcp=True, tcp_framing="rtu")
        gripper = pyrobotiq_rtu_over_tcp(emulator)
    try:
        call_with_limit(gripper.activate)  # reset, rACT rising edge, wait for gSTA = 3 (uses FC16 and FC4)
        assert gripper.isActivated()
        call_with_limit(lambda: gripper.move(100, speed=255, force=100))  # FC23 write + read
        assert gripper.position() == 100
        assert gripper.objectDetection() == ObjectStatus.AT_POSITION
        call_with_limit(lambda: gripper.close(speed=255, force=150))
        assert gripper.objectDetection() == ObjectStatus.CONTACT_CLOSING
        status = gripper.status()
        assert status["gPR"] == 255 and status["gPO"] == emulator.status().position
        assert 140 <= status["gPO"] <= 155  # the 30 mm tool, ~0.37 mm per count
        assert status["gCU"] > 0
        call_with_limit(gripper.open)
        assert gripper.position() == 0 and gripper.objectDetection() == ObjectStatus.AT_POSITION
    finally:
        gripper.disconnect()


def test_pyrobotiqgripper_raises_on_an_injected_major_fault(start_emulator):
    emulator = start_emulator()
    gripper = pyrobotiq_serial(emulator)
    try:
        call_with_limit(gripper.activate)
        emulator.inject_fault(0x0E)
        with pytest.raises(pyrobotiqgripper.GripperFaultError) as caught:
            gripper.readStatus()
        assert caught.value.code == 0x0E
        call_with_limit(gripper.activate)  # reset + rising edge clears the major fault
        assert gripper.status()["gFLT"] == 0 and gripper.isActivated()
    finally:
        gripper.disconnect()


def test_pyrobotiqgripper_blocking_move_returns_before_a_latent_gripper_moves(start_emulator):
    """Why parapush.execution.gripper does not wrap pyrobotiqgripper: with a command latency its
    blocking move reads the previous move's gOBJ = 3 and returns before gPR echoes the request."""
    emulator = start_emulator(latency_s=0.5)
    gripper = pyrobotiq_serial(emulator)
    try:
        call_with_limit(gripper.activate)
        call_with_limit(lambda: gripper.move(0))
        wait_until(lambda: emulator.status().object_status is ObjectStatus.AT_POSITION)
        call_with_limit(lambda: gripper.move(120, speed=255))
        assert emulator.status().requested_position == 0  # returned while the request was not applied
        assert emulator.status().position == 0
        wait_until(lambda: emulator.status().position == 120)  # the gripper moves later
    finally:
        gripper.disconnect()


# -- robotiq2f ----------------------------------------------------------------------------------
@pytest.fixture
def robotiq2f_gripper(start_emulator) -> Iterator[tuple[robotiq2f.Robotiq2F85, GripperEmulator]]:
    emulator = start_emulator()
    # robotiq2f finds its port only by USB serial number (udevadm); point it at the pty instead.
    with mock.patch.object(robotiq2f.LinuxFindTTYWithSerialNumber, "find", return_value=emulator.serial_port):
        gripper = robotiq2f.Robotiq2F85("EMULATED-2F85", async_control=False)
    try:
        yield gripper, emulator
    finally:
        gripper.close()


def test_robotiq2f_activates_moves_and_detects_the_tool(robotiq2f_gripper):
    gripper, emulator = robotiq2f_gripper
    call_with_limit(gripper.activate)  # blocking: polls FC4 until gSTA = 3
    status = gripper.read_status_sync()
    assert status.is_activated and status.activated and not gripper.in_fault

    gripper.go_to(opening=60.0, speed=150.0, force=100.0)  # FC16
    goal_count = gripper.opening_to_count(60.0)
    # robotiq2f's go_to returns before the motion ends; poll its own status instead.
    # The motion is over when gOBJ leaves MOVING (one emulator step after the position is reached).
    wait_until(lambda: emulator.status().position == goal_count
               and emulator.status().object_status is not ObjectStatus.MOVING)
    time.sleep(0.01)  # robotiq2f caches its status for 5 ms
    status = gripper.read_status_sync()
    assert status.goal_opening == pytest.approx(gripper.count_to_opening(goal_count))
    assert status.opening == pytest.approx(status.goal_opening) and not status.moving
    assert not status.obj_detected

    gripper.go_to(opening=0.0, speed=150.0, force=235.0)
    wait_until(lambda: emulator.status().object_status is ObjectStatus.CONTACT_CLOSING)
    time.sleep(0.01)  # robotiq2f caches its status for 5 ms
    status = gripper.read_status_sync()
    assert status.obj_detected and not status.moving
    assert status.opening == pytest.approx(gripper.count_to_opening(emulator.status().position))
    assert status.current > 0


def test_robotiq2f_reports_injected_faults(robotiq2f_gripper):
    gripper, emulator = robotiq2f_gripper
    call_with_limit(gripper.activate)
    emulator.inject_fault(0x08)
    time.sleep(0.01)  # robotiq2f caches its status for 5 ms
    status = gripper.read_status_sync()
    assert status.fault.overheating and gripper.in_fault
    emulator.clear_fault()
    emulator.inject_fault(0x0E)
    time.sleep(0.01)
    assert gripper.read_status_sync().fault.overcurrent
