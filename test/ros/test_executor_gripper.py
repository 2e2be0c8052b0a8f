"""The executor node's gripper handling against the Robotiq 2F-85 emulator (Modbus TCP, ephemeral port).

* Start-up connects (retrying until ``gripper.connect_timeout`` for a gripper that comes up
  later), activates, closes on the tool and detects it (the emulator holds an object of the
  tool's width); without the tool, with a tool of the wrong width, or with nothing listening,
  start-up fails with a message naming the stage (and the process exits with status 3).
* An injected gripper fault latches a stop within one control period (measured from the
  injection to the zero command received over DDS); ``~/reset`` is refused while the fault
  is reported and accepted once it is gone. A gripper that stops answering latches a stop.
* ``close()`` (shutdown) opens the gripper.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from test_executor_support import Harness, plateau, start_executor, wait_until

from parapush.execution.frames import RigidTransform
from parapush.execution.gripper_monitor import ExecutorStartupError
from parapush.robotiq.device_model import DeviceModelSettings
from parapush.robotiq.registers import ObjectStatus
from parapush.sim.gripper_emulator import GripperEmulator, GripperEmulatorSettings

pytestmark = pytest.mark.timeout(60)

TOOL_WIDTH = 0.029
CONTROL_DURATION = 0.5  # s, the control period of these tests (the planner's default is 1 s)


def emulator_settings(object_width: float | None = TOOL_WIDTH) -> GripperEmulatorSettings:
    return GripperEmulatorSettings(
        serial=False, tcp=True, tcp_port=0,
        device=DeviceModelSettings(activation_duration_s=0.1, object_width_m=object_width),
    )


@pytest.fixture
def emulator():
    started = []

    def start(object_width: float | None = TOOL_WIDTH) -> GripperEmulator:
        device = GripperEmulator(emulator_settings(object_width)).start()
        started.append(device)
        return device

    yield start
    for device in started:
        device.stop()


def gripper_parameters(device: GripperEmulator | str, **extra) -> dict:
    """Executor parameters for the emulator ``device`` (or a ``host:port``)."""
    address = device if isinstance(device, str) else "{}:{}".format(*device.tcp_address)
    values = {
        "gripper_enabled": True,
        "gripper.address": address,  # bare host:port = Modbus TCP
        "gripper.tool_width": TOOL_WIDTH,
        "gripper.activation_timeout": 2.0,
        "gripper.grasp_timeout": 3.0,
        "gripper.release_timeout": 3.0,
        # The fake arm and the emulator share this process (and 2 busy cores) with the node: keep
        # its scheduling hiccups from stopping the pusher here. The stale-state watchdog has its
        # own tests; the gripper-silence one is tested below at the shipped 0.25 s.
        "limits.stale_state_timeout": 0.5,
        "gripper.no_answer_timeout": 2.0,
    }
    values.update(extra)
    return values


@pytest.fixture
def running(ros_context, spinning, emulator):
    """(emulator, node, harness) with the tool held; the node is closed after."""
    device = emulator()
    node = start_executor(ros_context, spinning, **gripper_parameters(device))
    try:
        harness = Harness(ros_context, spinning, table_to_base=RigidTransform.from_parameters([0.5, 0, 0, 0]))
        wait_until(lambda: node.diagnostics().status[0].level == b"\x00", 5.0, what="a valid pusher estimate")
        yield device, node, harness
    finally:
        node.close()


def test_start_up_activates_and_grasps_the_tool(running):
    device, node, harness = running
    status = device.status()
    assert status.is_active and status.object_status is ObjectStatus.CONTACT_CLOSING
    assert device.command().position == 255 and device.command().go_to
    values = harness.gripper_values()
    assert values["level"] == 0 and values["message"] == "tool held", values
    assert values["object_detected"] == "True"
    assert float(values["grasp_width_m"]) == pytest.approx(TOOL_WIDTH, abs=0.002)
    assert int(values["polls"]) > 0 and values["failed_polls"] == "0"
    # The arm moves normally with the tool held.
    sent = harness.send((0.05, 0.0, 0.3))
    wait_until(lambda: plateau(harness.received(sent), 0.05), 5.0, what="motion")


STARTUP_FAILURES = [
    pytest.param(None, {}, "the tool is not held: grasp: no object detected", id="no-tool"),
    pytest.param(0.05, {}, "the tool is not held: grasp: object detected at", id="wrong-width"),
    pytest.param(TOOL_WIDTH, {"gripper.device_id": 3, "gripper.request_timeout": 0.05, "gripper.retries": 0,
                              "gripper.activation_timeout": 0.3},
                 "while activating", id="wrong-device-id"),
]


@pytest.mark.parametrize(("width", "extra", "message"), STARTUP_FAILURES)
def test_start_up_failures_are_clear_errors(ros_context, emulator, width, extra, message):
    device = emulator(width)
    with pytest.raises(ExecutorStartupError, match=message) as error:
        start_executor(ros_context, None, **gripper_parameters(device, **extra))
    assert "Modbus TCP 127.0.0.1" in str(error.value)  # names the endpoint


def test_nothing_listening_exits_with_status_3_and_the_reason(tmp_path):
    """The node's executable: a start-up failure is reported on stderr and exits with 3."""
    import socket

    with socket.socket() as probe:  # a free port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = dict(os.environ, ROS_DOMAIN_ID=os.environ["ROS_DOMAIN_ID"])
    result = subprocess.run(
        [sys.executable, "-m", "parapush.nodes.executor", "--ros-args",
         "-p", f"gripper.address:=127.0.0.1:{port}", "-p", "gripper.request_timeout:=0.1",
         "-p", "gripper.connect_timeout:=0.5"],
        capture_output=True, text=True, timeout=30, env=environment,
    )
    assert result.returncode == 3, result.stderr
    assert "[FATAL] cannot start: ExecutorStartupError: gripper start-up failed while connecting" in result.stderr
    assert f"127.0.0.1:{port}" in result.stderr


def test_start_up_waits_for_a_gripper_that_comes_up_later(ros_context, spinning, tmp_path):
    """gripper.connect_timeout: the connection is retried (the simulated driver may start later)."""
    import dataclasses
    import socket
    import threading

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    device = GripperEmulator(dataclasses.replace(emulator_settings(), tcp_port=port))
    starter = threading.Timer(0.6, device.start)
    starter.start()
    node = None
    try:
        started = time.monotonic()
        node = start_executor(ros_context, spinning,
                              **gripper_parameters(f"127.0.0.1:{port}", **{"gripper.connect_timeout": 5.0}))
        assert time.monotonic() - started >= 0.6
        assert device.status().object_status is ObjectStatus.CONTACT_CLOSING
    finally:
        starter.join()
        if node is not None:
            node.close()
        device.stop()


def test_a_gripper_fault_latches_a_stop_within_one_control_period(running):
    device, node, harness = running
    harness.send((0.05, 0.0, CONTROL_DURATION))
    wait_until(lambda: plateau(harness.received(), 0.05), 5.0, what="full speed")
    injected = time.monotonic()
    device.inject_fault(0x0E)  # overcurrent (major)
    wait_until(lambda: node.executor_core.stop_latched, CONTROL_DURATION, what="a latched stop")
    wait_until(lambda: any(t.is_zero for t in harness.received(injected)), 1.0, what="a zero command")
    zero = next(t for t in harness.received(injected) if t.is_zero)
    latency = zero.receipt - injected
    print(f"\n[gripper fault] zero command received {latency * 1e3:.1f} ms after the injection "
          f"(poll period 20 ms, control period {CONTROL_DURATION * 1e3:.0f} ms)")
    assert latency < CONTROL_DURATION
    assert node.executor_core.stop_latched
    time.sleep(0.1)
    assert all(t.is_zero for t in harness.received(zero.receipt))
    values = harness.executor_values()
    assert values["stop_latched"] == "True" and "gripper fault" in values["latch_reason"]
    assert "0x0E" in values["latch_reason"] and values["latched_stops.gripper"] == "1"
    gripper = harness.gripper_values()
    assert gripper["level"] == 2 and "overcurrent" in gripper["message"]
    # Refused while the fault is reported, accepted once it is gone (and the tool still held).
    response = harness.call(harness.reset_client)
    assert not response.success and "gripper fault" in response.message, response.message
    assert node.executor_core.stop_latched
    device.clear_fault()
    wait_until(lambda: node.gripper.snapshot().problem is None, 1.0, what="the fault to clear")
    response = harness.call(harness.reset_client)
    assert response.success, response.message
    sent = harness.send((0.05, 0.0, 0.3))
    wait_until(lambda: plateau(harness.received(sent), 0.05), 5.0, what="motion after the reset")


def test_losing_the_tool_latches_a_stop_once(running):
    device, node, harness = running
    device.set_object_width(None)  # the tool slipped out: the fingers close further (gOBJ 0, then 3)
    wait_until(lambda: node.executor_core.stop_latched, 2.0, what="a latched stop")
    wait_until(lambda: device.status().object_status is ObjectStatus.AT_POSITION, 3.0, what="the fingers closed")
    values = harness.executor_values()
    assert "no longer detected" in values["latch_reason"]
    assert values["latched_stops.gripper"] == "1"  # one problem, one latch (not one per poll)


def test_a_gripper_that_stops_answering_latches_a_stop(ros_context, spinning, emulator):
    device = emulator()
    node = start_executor(ros_context, spinning, **gripper_parameters(device, **{"gripper.no_answer_timeout": 0.25}))
    harness = Harness(ros_context, spinning, table_to_base=RigidTransform.from_parameters([0.5, 0, 0, 0]))
    try:
        _silent_gripper_latches(device, node, harness)
    finally:
        node.close()


def _silent_gripper_latches(device, node, harness):
    silenced = time.monotonic()
    device.set_responding(False)
    wait_until(lambda: node.executor_core.stop_latched, 3.0, what="a latched stop")
    elapsed = time.monotonic() - silenced
    print(f"\n[gripper silent] stop latched {elapsed * 1e3:.0f} ms after the gripper stopped answering "
          "(no_answer_timeout 250 ms)")
    assert 0.2 <= elapsed < 0.6  # the last answer came up to one poll period before the silence
    assert "not answering" in harness.executor_values()["latch_reason"]
    response = harness.call(harness.reset_client)
    assert not response.success
    device.set_responding(True)
    wait_until(lambda: node.gripper.snapshot().problem is None, 2.0, what="answers again")
    assert harness.call(harness.reset_client).success


def test_close_commands_zero_and_releases_the_gripper(ros_context, spinning, emulator):
    device = emulator()
    node = start_executor(ros_context, spinning, **gripper_parameters(device))
    assert device.status().object_status is ObjectStatus.CONTACT_CLOSING
    harness = Harness(ros_context, spinning, table_to_base=RigidTransform.from_parameters([0.5, 0, 0, 0]))
    closed = time.monotonic()
    node.close()
    assert device.command().position == 0  # open requested
    assert device.status().object_status is ObjectStatus.AT_POSITION and device.finger_position() == 0
    wait_until(lambda: harness.received(closed), 1.0, what="the final zero command")
    zeros = harness.received(closed)
    assert zeros and all(t.is_zero for t in zeros)
    node.close()  # idempotent
