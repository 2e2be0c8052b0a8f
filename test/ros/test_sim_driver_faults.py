"""Fault injection of the sim_driver node from outside, as a test or a user scripts it: the
``faults.*`` parameters set at run time through rclpy's parameter client (what ``ros2 param
set`` sends) and the ``~/untrack_body`` service, observed over the devices' own protocols
(NatNet frames, Modbus registers) as the rest of the stack sees them."""

from __future__ import annotations

import time

import pytest
import rclpy
import yaml
from parareal_pushing.srv import UntrackBody
from pymodbus.client import ModbusTcpClient
from pymodbus.exceptions import ModbusIOException
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

from parapush.estimation.natnet_client import NatNetClient, NatNetClientSettings
from parapush.execution.commands import TwistCommand
from parapush.graph import config_dir
from parapush.nodes.sim_driver import SimDriverNode
from parapush.robotiq.registers import GripperStatus
from parapush.sim.arm import ArmFault

GRIPPER_DEVICE_ID = 9


def twist(vx: float) -> TwistCommand:
    return TwistCommand(stamp_s=time.monotonic(), frame_id="table", linear=(vx, 0.0, 0.0))


@pytest.fixture
def driver_node(tmp_path, ros_context, spinning):
    """The sim_driver node on ephemeral ports (NatNet, Modbus TCP only); stopped after."""
    settings = yaml.safe_load((config_dir() / "sim_world.yaml").read_text())
    settings["mocap"]["server"]["command_port"] = 0
    settings["gripper"]["emulator"].update(serial=False, tcp=True, tcp_port=0)
    path = tmp_path / "sim_world.yaml"
    path.write_text(yaml.safe_dump(settings))
    node = SimDriverNode(context=ros_context, parameter_overrides=[
        Parameter("settings_file", value=str(path)), Parameter("true_state_rate", value=5.0)])
    spinning.add(node)
    try:
        yield node
    finally:
        node.close()


@pytest.fixture
def tester(ros_context, spinning):
    return spinning.add(rclpy.create_node("fault_tester", context=ros_context))


def wait_for(future, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while not future.done():
        assert time.monotonic() < deadline, "no answer in time"
        time.sleep(0.01)
    return future.result()


def set_parameter(client: AsyncParameterClient, name: str, value):
    """The SetParametersResult of setting one parameter, as ``ros2 param set`` does."""
    assert client.wait_for_services(timeout_sec=10.0)
    return wait_for(client.set_parameters([Parameter(name, value=value)])).results[0]


def untrack(tester, request: UntrackBody.Request) -> UntrackBody.Response:
    client = tester.create_client(UntrackBody, "/sim_driver/untrack_body")
    assert client.wait_for_service(timeout_sec=10.0)
    return wait_for(client.call_async(request))


def natnet_client(node) -> NatNetClient:
    host, port = node.driver.endpoints().mocap_command_address
    client = NatNetClient(NatNetClientSettings(server_address=host, command_port=port)).start()
    client.wait_for_server(5.0)
    return client


def pusher_tracked(node, client: NatNetClient, count: int, *, skip: int = 3) -> list[bool]:
    """tracking_valid of the pusher in ``count`` frames, after ``skip`` frames (built or in flight
    before a fault was set)."""
    pusher = node.driver.body_map.entry("pusher").rigid_body_id
    latest = client.latest_frame()
    tracked, last = [], latest.frame.frame_number if latest is not None else None
    for _ in range(skip):
        last = client.wait_for_frame(2.0, newer_than=last).frame.frame_number
    for _ in range(count):
        frame = client.wait_for_frame(2.0, newer_than=last).frame
        last = frame.frame_number
        tracked += [body.tracking_valid for body in frame.rigid_bodies if body.id == pusher]
    return tracked


def test_natnet_loss_set_at_run_time_drops_frames(driver_node, tester):
    parameters = AsyncParameterClient(tester, "sim_driver")
    client = natnet_client(driver_node)
    try:
        pusher_tracked(driver_node, client, 10)
        assert driver_node.driver.status().mocap.datagrams_dropped == 0
        assert set_parameter(parameters, "faults.natnet_loss", 0.5).successful
        pusher_tracked(driver_node, client, 30)
        dropped = driver_node.driver.status().mocap.datagrams_dropped
        assert dropped >= 10, f"{dropped} datagrams dropped at 50 % loss"
        assert set_parameter(parameters, "faults.natnet_loss", 0.0).successful
        pusher_tracked(driver_node, client, 1)  # a frame being sent as the loss was set may still be lost
        dropped = driver_node.driver.status().mocap.datagrams_dropped
        pusher_tracked(driver_node, client, 10)
        assert driver_node.driver.status().mocap.datagrams_dropped == dropped
        refused = set_parameter(parameters, "faults.natnet_loss", 1.5)
        assert not refused.successful
        assert wait_for(parameters.get_parameters(["faults.natnet_loss"])).values[0].double_value == 0.0
    finally:
        client.stop()


def test_untrack_body_service_streams_the_pusher_untracked_for_the_window(driver_node, tester):
    client = natnet_client(driver_node)
    try:
        assert all(pusher_tracked(driver_node, client, 5))
        frequency = client.server_info.high_resolution_clock_frequency
        called = time.monotonic()
        response = untrack(tester, UntrackBody.Request(body="pusher", duration=1.0, delay=0.0, omit=False))
        answered = time.monotonic()
        assert response.success, response.message
        # The window in the frames' own clock (mid-exposure ticks, from this host's monotonic
        # clock): the frames exposed between the answer and 1 s after the call are untracked,
        # those exposed 1 s after the answer tracked, however many a loaded machine sent.
        pusher = driver_node.driver.body_map.entry("pusher").rigid_body_id
        frames, last = [], client.latest_frame().frame.frame_number
        while not frames or frames[-1].mid_exposure_ticks / frequency < answered + 1.02:
            assert time.monotonic() < answered + 10.0, "no frame exposed after the window within 10 s"
            frames.append(client.wait_for_frame(5.0, newer_than=last).frame)
            last = frames[-1].frame_number
        tick = 2.0 / frequency
        tracked = [(frame.mid_exposure_ticks / frequency, body.tracking_valid)
                   for frame in frames for body in frame.rigid_bodies if body.id == pusher]
        inside = [valid for moment, valid in tracked if answered + tick <= moment < called + 1.0 - tick]
        after = [valid for moment, valid in tracked if moment >= answered + 1.0 + tick]
        # Generous bound for a loaded machine: one frame of the ~120 in the window (the service
        # answered within the 1 s window).
        assert inside, f"no frame exposed in the window (answer after {answered - called:.2f} s?)"
        assert not any(inside), "the pusher was tracked in the window"
        assert after and all(after), "the pusher was still untracked after the window"
        refused = untrack(tester, UntrackBody.Request(body="ghost", duration=0.5))
        assert not refused.success and "ghost" in refused.message
        refused = untrack(tester, UntrackBody.Request(body="pusher", duration=0.0))
        assert not refused.success and "duration" in refused.message
    finally:
        client.stop()


def test_arm_fault_parameter_stops_the_arm_following_twists(driver_node, tester):
    parameters = AsyncParameterClient(tester, "sim_driver")
    assert set_parameter(parameters, "faults.arm", "protective_stop").successful
    assert driver_node.driver.world.arm.fault is ArmFault.PROTECTIVE_STOP
    assert not driver_node.driver.submit_twist(twist(0.01)).accepted
    refused = set_parameter(parameters, "faults.arm", "on_fire")
    assert not refused.successful and "faults.arm" in refused.reason
    assert driver_node.driver.world.arm.fault is ArmFault.PROTECTIVE_STOP
    assert set_parameter(parameters, "faults.arm", "none").successful
    assert driver_node.driver.world.arm.fault is ArmFault.NONE
    assert driver_node.driver.submit_twist(twist(0.01)).accepted


def test_gripper_fault_parameters_reach_the_modbus_registers(driver_node, tester):
    parameters = AsyncParameterClient(tester, "sim_driver")
    host, port = driver_node.driver.endpoints().gripper_tcp_address
    modbus = ModbusTcpClient(host, port=port, timeout=0.3, retries=0)
    assert modbus.connect()

    def gripper_fault() -> int:
        response = modbus.read_input_registers(2000, count=3, device_id=GRIPPER_DEVICE_ID)
        assert not response.isError(), response
        return GripperStatus.from_registers(response.registers).fault

    try:
        assert gripper_fault() == 0
        assert set_parameter(parameters, "faults.gripper", 0x08).successful
        assert gripper_fault() == 0x08
        assert set_parameter(parameters, "faults.gripper", 0).successful
        assert gripper_fault() == 0
        assert set_parameter(parameters, "faults.gripper_responding", False).successful
        with pytest.raises(ModbusIOException):
            modbus.read_input_registers(2000, count=3, device_id=GRIPPER_DEVICE_ID)
        assert set_parameter(parameters, "faults.gripper_responding", True).successful
        assert gripper_fault() == 0
    finally:
        modbus.close()


def test_other_parameters_stay_read_only(driver_node, tester):
    parameters = AsyncParameterClient(tester, "sim_driver")
    refused = set_parameter(parameters, "seed", 5)
    assert not refused.successful and "read-only" in refused.reason.lower()
    descriptor = wait_for(parameters.describe_parameters(["faults.natnet_loss", "seed"])).descriptors
    assert [d.read_only for d in descriptor] == [False, True]
