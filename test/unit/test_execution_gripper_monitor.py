"""GripperMonitor (the executor's watch over the gripper holding the pusher) against the
emulated Robotiq 2F-85 over Modbus TCP on loopback, without ROS: start-up, problems reported
once per kind, the reset blocker, silence, release."""

from __future__ import annotations

import time

import pytest

from parapush.execution.execution_settings import GripperSettings
from parapush.execution.gripper_monitor import ExecutorStartupError, GripperMonitor
from parapush.robotiq.device_model import DeviceModelSettings
from parapush.robotiq.registers import ObjectStatus
from parapush.settings import SettingsError
from parapush.sim.gripper_emulator import GripperEmulator, GripperEmulatorSettings

pytestmark = pytest.mark.timeout(60)

TOOL_WIDTH = 0.029


@pytest.fixture
def device():
    emulator = GripperEmulator(GripperEmulatorSettings(
        serial=False, tcp=True, tcp_port=0,
        device=DeviceModelSettings(activation_duration_s=0.1, object_width_m=TOOL_WIDTH),
    )).start()
    yield emulator
    emulator.stop()


def settings_for(device: GripperEmulator, **overrides) -> GripperSettings:
    values = dict(address="{}:{}".format(*device.tcp_address), tool_width=TOOL_WIDTH, activation_timeout=2.0,
                  grasp_timeout=3.0, connect_timeout=1.0, no_answer_timeout=0.25)
    return GripperSettings(**{**values, **overrides})


def test_problems_are_reported_once_and_block_the_reset(device):
    problems = []
    settings = settings_for(device)
    monitor = GripperMonitor.from_settings(settings, on_problem=problems.append)
    try:
        status = monitor.start_up(settings)
        assert status.object_status is ObjectStatus.CONTACT_CLOSING
        assert monitor.snapshot().grasp_width_m == pytest.approx(TOOL_WIDTH, abs=0.002)
        assert monitor.poll() is None and monitor.reset_blocker() is None and problems == []
        device.inject_fault(0x0E)  # overcurrent
        assert "gripper fault" in monitor.poll()
        monitor.poll()
        assert len(problems) == 1 and "0x0E" in problems[0]  # one report while the kind stays
        assert monitor.reset_blocker() == monitor.snapshot().problem
        device.clear_fault()
        assert monitor.poll() is None and monitor.reset_blocker() is None
        snapshot = monitor.snapshot()
        assert snapshot.polls == 4 and snapshot.failed_polls == 0
        device.set_responding(False)
        time.sleep(0.3)
        assert "not answering" in monitor.check_silence()
        assert len(problems) == 2 and "not answering" in monitor.reset_blocker()
        device.set_responding(True)
        assert monitor.poll() is None
        assert monitor.release(timeout_s=3.0).object_status is not ObjectStatus.CONTACT_CLOSING
    finally:
        monitor.close()


def test_start_up_failures_name_the_stage(device):
    without_tool = settings_for(device, tool_width=0.05)
    monitor = GripperMonitor.from_settings(without_tool, on_problem=print)
    with pytest.raises(ExecutorStartupError, match="the tool is not held"):
        monitor.start_up(without_tool)
    unreachable = settings_for(device, connect_timeout=0.3)
    device.stop()
    with pytest.raises(ExecutorStartupError, match="while connecting"):
        GripperMonitor.from_settings(unreachable, on_problem=print).start_up(unreachable)
    with pytest.raises(SettingsError, match="address"):
        GripperMonitor.from_settings(GripperSettings(address="tcp://robot"), on_problem=print)


def test_a_second_executor_cannot_take_the_gripper_of_a_running_one(device):
    """Two stacks pointed at one (simulated) gripper: the second start-up fails, saying why, and
    the first one still holds the tool (the emulator obeys the client that activated it)."""
    settings = settings_for(device)
    first = GripperMonitor.from_settings(settings, on_problem=print)
    second = GripperMonitor.from_settings(settings, on_problem=print)
    try:
        first.start_up(settings)
        with pytest.raises(ExecutorStartupError, match="device busy: another Modbus client controls this gripper"):
            second.start_up(settings)
        assert device.requests_refused >= 1
        assert first.poll() is None  # still holding the tool, no problem
        assert device.status().object_status is ObjectStatus.CONTACT_CLOSING
    finally:
        second.close()
        first.close()
