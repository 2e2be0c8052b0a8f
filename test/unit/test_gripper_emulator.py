"""The emulated 2F-85 over its real transports, driven by raw pymodbus clients (FC3/4/6/16/23)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
from pymodbus.client import ModbusSerialClient, ModbusTcpClient
from pymodbus.exceptions import ModbusIOException
from pymodbus.framer import FramerType

from parapush.robotiq.device_model import DeviceModelSettings
from parapush.robotiq.registers import ActivationStatus, GripperStatus, ObjectStatus
from parapush.sim.gripper_emulator import GripperEmulator, GripperEmulatorError, GripperEmulatorSettings

DEVICE = 9
FAST_DEVICE = DeviceModelSettings(activation_duration_s=0.05, command_latency_s=0.0, object_width_m=0.03)


@pytest.fixture
def start_emulator() -> Iterator[Callable[..., GripperEmulator]]:
    started: list[GripperEmulator] = []

    def start(**overrides) -> GripperEmulator:
        options = {"device": FAST_DEVICE} | overrides
        emulator = GripperEmulator(GripperEmulatorSettings(**options)).start()
        started.append(emulator)
        return emulator

    yield start
    for emulator in started:
        emulator.stop()


def serial_client(emulator: GripperEmulator) -> ModbusSerialClient:
    client = ModbusSerialClient(emulator.serial_port, baudrate=115200, timeout=0.3, retries=0)
    assert client.connect()
    return client


def tcp_client(emulator: GripperEmulator, framer: FramerType = FramerType.SOCKET) -> ModbusTcpClient:
    host, port = emulator.tcp_address
    client = ModbusTcpClient(host, port=port, framer=framer, timeout=0.3, retries=0)
    assert client.connect()
    return client


def read_status(client) -> GripperStatus:
    response = client.read_input_registers(2000, count=3, device_id=DEVICE)
    assert not response.isError(), response
    return GripperStatus.from_registers(response.registers)


def wait_status(client, predicate, timeout_s: float = 3.0) -> GripperStatus:
    deadline = time.monotonic() + timeout_s
    while True:
        status = read_status(client)
        if predicate(status):
            return status
        assert time.monotonic() < deadline, f"timed out; last status {status.describe()}"
        time.sleep(0.005)


def activate(client) -> GripperStatus:
    client.write_registers(1000, [0, 0, 0], device_id=DEVICE)
    client.write_registers(1000, [0x0100], device_id=DEVICE)
    return wait_status(client, lambda status: status.is_active)


def test_serial_activation_and_grip_with_fc4_and_fc16(start_emulator):
    device = DeviceModelSettings(activation_duration_s=0.3, command_latency_s=0.0, object_width_m=0.03)
    emulator = start_emulator(device=device)
    with closing(serial_client(emulator)) as client:
        assert read_status(client) == GripperStatus()
        client.write_registers(1000, [0x0100], device_id=DEVICE)
        assert wait_status(client, lambda status: status.activation is ActivationStatus.ACTIVATING).activated
        activate(client)
        client.write_registers(1000, [0x0900, 255, 0xFF80], device_id=DEVICE)
        status = wait_status(client, lambda status: status.object_status is not ObjectStatus.MOVING)
        assert status.object_status is ObjectStatus.CONTACT_CLOSING and status.requested_position == 255
        assert status == emulator.status()


def test_the_pty_serves_successive_clients(start_emulator):
    emulator = start_emulator()
    for position in (30, 70):
        with closing(serial_client(emulator)) as client:
            if not read_status(client).is_active:
                activate(client)
            client.write_registers(1000, [0x0900, position, 0xFF00], device_id=DEVICE)
            assert wait_status(client, lambda status, p=position: status.position == p).is_active


def test_fc23_writes_then_reads_in_one_transaction(start_emulator):
    emulator = start_emulator()
    with closing(serial_client(emulator)) as client:
        activate(client)
        response = client.readwrite_registers(
            read_address=2000,
            read_count=3,
            write_address=1000,
            values=[0x0900, 120, 0xFF10],
            device_id=DEVICE,
        )
        assert not response.isError()
        status = GripperStatus.from_registers(response.registers)
        assert status.requested_position == 120 and status.go_to  # zero latency: already applied
        assert emulator.command().position == 120 and emulator.command().speed == 255


def test_partial_writes_and_holding_register_reads_share_one_block(start_emulator):
    emulator = start_emulator(serial=False, tcp=True)
    with closing(tcp_client(emulator)) as client:
        activate(client)
        client.write_registers(1000, [0x0900, 10, 0xFF40], device_id=DEVICE)
        client.write_register(1001, 60, device_id=DEVICE)  # FC6: only rPR changes
        wait_status(client, lambda status: status.position == 60)
        command = emulator.command()
        assert (command.position, command.speed, command.force) == (60, 255, 0x40)
        holding = client.read_holding_registers(1000, count=3, device_id=DEVICE)  # FC3 of the same block
        assert holding.registers == [0x0900, 60, 0xFF40]
        status_via_fc3 = client.read_holding_registers(2000, count=3, device_id=DEVICE)
        assert GripperStatus.from_registers(status_via_fc3.registers).position == 60


def test_status_registers_are_read_only_and_gaps_are_illegal(start_emulator):
    emulator = start_emulator(serial=False, tcp=True)
    with closing(tcp_client(emulator)) as client:
        assert client.write_registers(2000, [0xFFFF], device_id=DEVICE).isError()
        assert client.read_input_registers(1500, count=1, device_id=DEVICE).isError()
        assert read_status(client).activation is ActivationStatus.RESET


@pytest.mark.parametrize("framing", ["socket", "rtu"])
def test_tcp_framings(start_emulator, framing):
    emulator = start_emulator(serial=False, tcp=True, tcp_framing=framing)
    framer = FramerType.SOCKET if framing == "socket" else FramerType.RTU
    with closing(tcp_client(emulator, framer)) as client:
        activate(client)
        client.write_registers(1000, [0x0900, 40, 0xFF00], device_id=DEVICE)
        status = wait_status(client, lambda status: status.object_status is ObjectStatus.AT_POSITION)
        assert status.position == 40


def test_serial_and_tcp_serve_the_same_gripper(start_emulator):
    emulator = start_emulator(tcp=True)
    serial, tcp = serial_client(emulator), tcp_client(emulator)
    try:
        activate(serial)
        serial.write_registers(1000, [0x0900, 90, 0xFF00], device_id=DEVICE)
        assert wait_status(tcp, lambda status: status.position == 90).is_active
    finally:
        serial.close()
        tcp.close()


def test_only_the_client_that_activated_the_gripper_can_change_it(start_emulator):
    """A second client (another stack's executor) cannot open, close, reset or re-activate a
    gripper that the first one activated; it can read it. Once the owner has closed its
    connection, the next client to activate it owns it."""
    emulator = start_emulator(serial=False, tcp=True)
    owner, second = tcp_client(emulator), tcp_client(emulator)
    try:
        assert not emulator.owned
        activate(owner)
        owner.write_registers(1000, [0x0900, 230, 0xFF00], device_id=DEVICE)  # close on the object
        held = wait_status(owner, lambda status: status.object_status is ObjectStatus.CONTACT_CLOSING)
        assert emulator.owned
        for registers in ([0x0900, 0, 0xFF00], [0x0900, 255, 0xFF00], [0, 0, 0], [0x0100]):  # open, close, reset
            response = second.write_registers(1000, registers, device_id=DEVICE)
            assert response.isError() and response.exception_code == 0x06, response  # SLAVE DEVICE BUSY
        response = second.readwrite_registers(read_address=2000, read_count=3, write_address=1000,
                                              values=[0x0900, 0, 0xFF00], device_id=DEVICE)  # FC23
        assert response.isError() and response.exception_code == 0x06, response
        assert emulator.requests_refused == 5
        time.sleep(0.1)
        status = read_status(second)  # reads are open to everyone
        assert status.object_status is ObjectStatus.CONTACT_CLOSING and status.position == held.position
        assert emulator.command().position == 230
        # The owner still drives it.
        owner.write_registers(1000, [0x0900, 0, 0xFF00], device_id=DEVICE)
        assert wait_status(second, lambda status: status.object_status is ObjectStatus.AT_POSITION).position == 0
        # The owner disconnects: the gripper is free; the second client activates it and owns it.
        owner.close()
        deadline = time.monotonic() + 2.0
        while emulator.owned:
            assert time.monotonic() < deadline, "the owner's closed connection still owns the gripper"
            time.sleep(0.01)
        activate(second)
        second.write_registers(1000, [0x0900, 120, 0xFF00], device_id=DEVICE)
        assert wait_status(second, lambda status: status.position == 120).is_active
        assert emulator.requests_refused == 5
    finally:
        owner.close()
        second.close()


def test_deactivating_gives_the_gripper_up(start_emulator):
    emulator = start_emulator(serial=False, tcp=True)
    first, second = tcp_client(emulator), tcp_client(emulator)
    try:
        activate(first)
        first.write_registers(1000, [0], device_id=DEVICE)  # rACT = 0: reset, no longer owned
        assert not emulator.owned
        activate(second)
        response = first.write_registers(1000, [0x0900, 0, 0xFF00], device_id=DEVICE)
        assert response.isError() and response.exception_code == 0x06
    finally:
        first.close()
        second.close()


def test_other_device_ids_get_no_answer(start_emulator):
    emulator = start_emulator(serial=False, tcp=True)
    with closing(tcp_client(emulator)) as client:
        with pytest.raises(ModbusIOException):
            client.read_input_registers(2000, count=3, device_id=1)
        assert emulator.requests_ignored == 1
        assert read_status(client).activation is ActivationStatus.RESET


def test_not_responding_drops_requests_without_applying_them(start_emulator):
    emulator = start_emulator()
    with closing(serial_client(emulator)) as client:
        answered = emulator.requests_answered
        emulator.set_responding(False)
        with pytest.raises(ModbusIOException):
            client.write_registers(1000, [0x0100], device_id=DEVICE)
        assert emulator.command().activate is False and emulator.requests_answered == answered
        emulator.set_responding(True)
        assert read_status(client).activation is ActivationStatus.RESET


def test_injected_faults_are_served(start_emulator):
    emulator = start_emulator(serial=False, tcp=True)
    with closing(tcp_client(emulator)) as client:
        emulator.inject_fault(0x0E)
        emulator.set_controller_fault(0x2)
        status = read_status(client)
        assert (status.fault, status.controller_fault) == (0x0E, 0x2)
        emulator.clear_fault()
        emulator.set_controller_fault(0)
        assert read_status(client).fault == 0


def test_stop_releases_every_resource(start_emulator):
    emulator = start_emulator(tcp=True)
    pty_link = Path(emulator.serial_port)
    directory = pty_link.parent
    socat = emulator._socat
    host, port = emulator.tcp_address
    assert pty_link.exists() and emulator.running
    emulator.stop()
    assert not emulator.running
    assert socat.poll() is not None
    assert not directory.exists()
    client = ModbusTcpClient(host, port=port, timeout=0.2, retries=0)
    assert not client.connect()
    emulator.stop()  # idempotent
    with pytest.raises(GripperEmulatorError, match="serial_port"):
        _ = emulator.serial_port


def test_missing_socat_is_a_clear_error():
    emulator = GripperEmulator(GripperEmulatorSettings(socat_executable="no-such-socat-binary"))
    with pytest.raises(GripperEmulatorError, match="socat_executable"):
        emulator.start()
    assert not emulator.running


def test_busy_tcp_port_is_a_clear_error(start_emulator):
    first = start_emulator(serial=False, tcp=True)
    _, port = first.tcp_address
    second = GripperEmulator(GripperEmulatorSettings(serial=False, tcp=True, tcp_port=port))
    with pytest.raises(GripperEmulatorError, match="start"):
        second.start()
    assert not second.running


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"serial": False, "tcp": False}, "serial, tcp"),
        ({"device_id": 0}, "device_id"),
        ({"tcp_port": 70000}, "tcp_port"),
        ({"tcp_framing": "ascii"}, "tcp_framing"),
        ({"step_period_s": 0.0}, "step_period_s"),
        ({"baudrate": -1}, "baudrate"),
    ],
)
def test_settings_validation_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        GripperEmulatorSettings(**kwargs)


def test_no_threads_or_ptys_leak_after_context_exit():
    with GripperEmulator(GripperEmulatorSettings(device=FAST_DEVICE)) as emulator:
        link = emulator.serial_port
        assert os.path.exists(link)
    assert not os.path.exists(link)
    assert not emulator.running
