"""The simulated driver end to end: NatNet over UDP, Modbus TCP, arm twists (parapush.sim.driver)
and its settings (parapush.sim.driver_settings)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pymodbus.client import ModbusTcpClient
from pymodbus.exceptions import ModbusIOException

from parapush.estimation.body_map import BodyMapEntry, BodyMapError
from parapush.estimation.natnet_client import NatNetClient, NatNetClientSettings
from parapush.estimation.table_frame import TableTransform
from parapush.execution.commands import TwistCommand
from parapush.robotiq.device_model import DeviceModelSettings
from parapush.robotiq.registers import GripperCommand, GripperStatus, ObjectStatus
from parapush.scene import load_scene, wrap_angle
from parapush.sim.arm import ArmFault
from parapush.sim.driver import SimDriver
from parapush.sim.driver_settings import (
    DriverSettings,
    DriverSettingsError,
    GripperLinkSettings,
    MocapStreamSettings,
    load_driver_settings,
)
from parapush.sim.gripper_emulator import GripperEmulatorSettings
from parapush.sim.mocap_server import MocapServerSettings
from parapush.sim.noise import MocapNoiseSettings
from parapush.sim.world import BodyPose, WorldSettings

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
CLUTTER = load_scene(CONFIG / "scenes" / "clutter_fig1.yaml")
POSITION_STD = 0.0005
ORIENTATION_STD = 0.003


def settings(*, coupling: str = "rigid", drop_probability: float = 0.0, **mocap: object) -> DriverSettings:
    """Loopback, ephemeral ports; Modbus over TCP only (no pty); a fast gripper activation."""
    emulator = GripperEmulatorSettings(
        serial=False, tcp=True, tcp_port=0, device=DeviceModelSettings(activation_duration_s=0.05)
    )
    server = MocapServerSettings(command_port=0, drop_probability=drop_probability, rng_seed=3)
    return DriverSettings(
        world=WorldSettings(seed=1),
        mocap=MocapStreamSettings(server=server, seed=2, **mocap),
        gripper=GripperLinkSettings(emulator=emulator, coupling=coupling),
        config_dir=CONFIG,
    )


@pytest.fixture
def start_driver():
    """Start drivers (and NatNet clients) that are stopped at teardown, even on failure."""
    started: list = []

    def start(scene=CLUTTER, driver_settings: DriverSettings | None = None) -> tuple[SimDriver, NatNetClient]:
        driver = SimDriver(scene, driver_settings or settings())
        started.append(driver.start())
        host, port = driver.endpoints().mocap_command_address
        client = NatNetClient(NatNetClientSettings(server_address=host, command_port=port))
        started.append(client.start())
        client.wait_for_server(3.0)
        return driver, client

    yield start
    for device in reversed(started):
        device.stop()


def collect_frames(client: NatNetClient, count: int, timeout_s: float = 5.0) -> list:
    frames, last = [], None
    deadline = time.monotonic() + timeout_s
    while len(frames) < count:
        received = client.wait_for_frame(max(0.01, deadline - time.monotonic()), newer_than=last)
        last = received.frame.frame_number
        frames.append(received.frame)
    return frames


def planar_poses(driver: SimDriver, frame) -> dict[str, tuple[np.ndarray, bool]]:
    """Scene body -> (x, y, yaw) as the estimator computes it from the frame, and tracking_valid."""
    transform = driver.settings.mocap.mocap_to_table
    entries = driver.body_map.entries_by_id()
    poses = {}
    for body in frame.rigid_bodies:
        entry = entries[body.id]
        if not body.tracking_valid:
            poses[entry.body] = (np.full(3, np.nan), False)
            continue
        pose = transform.body_pose(body.position, body.orientation, entry.centre_offset, entry.yaw_offset)
        poses[entry.body] = (pose.planar, True)
    return poses


def twist(vx: float, vy: float = 0.0) -> TwistCommand:
    return TwistCommand(stamp_s=time.monotonic(), frame_id="table", linear=(vx, vy, 0.0))


def drive(driver: SimDriver, velocity: tuple[float, float], duration_s: float) -> None:
    """Send twists at 50 Hz for ``duration_s`` (wall clock)."""
    deadline = time.monotonic() + duration_s
    while time.monotonic() < deadline:
        assert driver.submit_twist(twist(*velocity)).accepted
        time.sleep(0.02)


# -- mocap over UDP -------------------------------------------------------------------------------
def test_natnet_frames_carry_the_world_poses_within_the_mocap_noise(start_driver):
    driver, client = start_driver()
    definitions = client.request_model_definitions(2.0)
    assert definitions.ids_by_name == {"pusher": 1, "target": 2, "clutter_a": 3, "clutter_b": 4, "clutter_c": 5}
    frames = collect_frames(client, 40)
    truth = driver.world.true_state()  # nothing moves: the scene is at rest
    layout = CLUTTER.layout
    expected = {"pusher": np.array([*truth[:2], 0.0])}
    expected |= {name: truth[layout.object_pose(index)] for index, name in enumerate(CLUTTER.object_names)}
    errors = {name: [] for name in expected}
    for frame in frames:
        assert len(frame.rigid_bodies) == 5
        for name, (planar, valid) in planar_poses(driver, frame).items():
            assert valid
            error = planar - expected[name]
            error[2] = wrap_angle(error[2])
            errors[name].append(error)
    for name, values in errors.items():
        values = np.array(values)
        assert np.all(np.abs(values[:, :2]) < 5 * POSITION_STD), (name, values)
        assert np.all(np.abs(values[:, 2]) < 5 * ORIENTATION_STD), (name, values)
    spread = np.std(np.concatenate([np.array(values)[:, :2] for values in errors.values()]), axis=0)
    assert np.all((spread > 0.6 * POSITION_STD) & (spread < 1.4 * POSITION_STD)), spread


def test_the_mocap_follows_the_pusher_driven_by_twists(start_driver):
    driver, client = start_driver()
    start = planar_poses(driver, client.wait_for_frame(2.0).frame)["pusher"][0]
    drive(driver, (0.0, 0.08), 0.4)
    frame = client.wait_for_frame(1.0, newer_than=client.latest_frame().frame.frame_number).frame
    seen = planar_poses(driver, frame)["pusher"][0]
    truth = driver.world.true_state()[:2]
    assert seen[1] - start[1] > 0.02
    assert np.linalg.norm(seen[:2] - truth) < 0.005  # noise + a frame of motion at 8 cm/s
    time.sleep(0.25)  # > command timeout: the arm halts
    halted = driver.status().arm
    assert halted.timed_out and halted.velocity == (0.0, 0.0)


def test_untracked_bodies_are_streamed_invalid_for_the_window(start_driver):
    """The window in the frames' own clock (mid-exposure ticks: the simulated Motive stamps them
    from this host's monotonic clock), not by sleeping into it: a loaded machine sends fewer
    frames, never other ones."""
    driver, client = start_driver()
    frequency = client.server_info.high_resolution_clock_frequency
    duration = 0.3
    called = time.monotonic()
    driver.untrack_body("target", duration_s=duration)
    returned = time.monotonic()
    frames, last = [], None
    # A stalled stream (0 Hz) fails here: no frame exposed after the window within 5 s.
    while not frames or frames[-1].mid_exposure_ticks / frequency < returned + duration + 0.02:
        assert time.monotonic() < called + 5.0, "no frame exposed after the window within 5 s"
        frames.append(client.wait_for_frame(5.0, newer_than=last).frame)
        last = frames[-1].frame_number
    tick = 2.0 / frequency  # the ticks are floored
    exposed = [(frame.mid_exposure_ticks / frequency, planar_poses(driver, frame)) for frame in frames]
    inside = [poses for moment, poses in exposed if returned + tick <= moment < called + duration - tick]
    after = [poses for moment, poses in exposed if moment >= returned + duration + tick]
    # Generous bound for a loaded machine: one frame of the 36 the window holds at 120 Hz.
    assert inside, "no frame exposed in the window (stream stalled?)"
    assert all(not poses["target"][1] and poses["clutter_a"][1] for poses in inside)
    assert after and all(poses["target"][1] for poses in after)
    with pytest.raises(KeyError, match="ghost"):
        driver.untrack_body("ghost", duration_s=0.1)


def test_udp_loss_is_delegated_to_the_mocap_server(start_driver):
    driver, client = start_driver(driver_settings=settings(drop_probability=0.5))
    collect_frames(client, 20)
    assert driver.status().mocap.datagrams_dropped > 5
    assert client.stats().frames_lost > 5


def test_udp_loss_can_be_changed_while_streaming(start_driver):
    driver, client = start_driver()
    collect_frames(client, 10)
    assert driver.status().mocap.datagrams_dropped == 0
    driver.set_natnet_loss(0.5)
    collect_frames(client, 20)
    dropped = driver.status().mocap.datagrams_dropped
    assert dropped > 5
    driver.set_natnet_loss(0.0)
    collect_frames(client, 10)
    assert driver.status().mocap.datagrams_dropped == dropped
    with pytest.raises(ValueError, match="drop_probability"):
        driver.set_natnet_loss(1.5)


def test_objects_on_the_floor_are_outside_the_capture_volume(start_driver):
    scene = dataclasses.replace(
        CLUTTER,
        pusher=dataclasses.replace(CLUTTER.pusher, position=(0.26, 0.0)),
        objects=(dataclasses.replace(CLUTTER.objects[0], pose=(0.34, 0.0, 0.0)), *CLUTTER.objects[1:]),
    )
    driver_settings = dataclasses.replace(settings(), world=WorldSettings(real_time_factor=3.0))
    driver, client = start_driver(scene, driver_settings)
    drive(driver, (0.1, 0.0), 0.5)  # 0.15 m simulated: the target goes over the edge
    time.sleep(0.4)
    assert driver.status().world.off_table[0]
    poses = planar_poses(driver, client.wait_for_frame(1.0, newer_than=client.latest_frame().frame.frame_number).frame)
    assert not poses["target"][1] and poses["clutter_a"][1]


# -- the pose Motive would stream -----------------------------------------------------------------
@pytest.mark.parametrize("transform", [
    TableTransform.y_up(), TableTransform.from_rpy(0.1, -0.2, 2.5, translation=(0.3, -1.2, 0.8)),
])
def test_streamed_poses_invert_the_estimators_transform(transform):
    mocap = MocapStreamSettings(mocap_to_table=transform, noise=MocapNoiseSettings(0.0, 0.0), bodies_file=None)
    driver = SimDriver(CLUTTER, dataclasses.replace(settings(), mocap=mocap))
    generator = np.random.default_rng(0)
    for _ in range(20):
        yaw = generator.uniform(-math.pi, math.pi)
        orientation = np.array([0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)])
        centre = generator.uniform(-0.4, 0.4, 3)
        entry = BodyMapEntry(body="target", rigid_body_id=2, centre_offset=tuple(generator.uniform(-0.05, 0.05, 3)),
                             yaw_offset=generator.uniform(-3, 3))
        position, body_orientation = driver.mocap_pose(BodyPose("target", centre, orientation), entry)
        recovered = transform.body_pose(position, body_orientation, entry.centre_offset, entry.yaw_offset)
        np.testing.assert_allclose(recovered.translation, centre, atol=1e-12)
        assert wrap_angle(recovered.yaw - yaw) == pytest.approx(0.0, abs=1e-12)


# -- the gripper holds the pusher -----------------------------------------------------------------
def write_command(client: ModbusTcpClient, command: GripperCommand) -> None:
    response = client.write_registers(1000, list(command.to_registers()), device_id=9)
    assert not response.isError(), response


def wait_for(predicate, timeout_s: float = 3.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def gripper_status(client: ModbusTcpClient) -> GripperStatus:
    response = client.read_input_registers(2000, count=3, device_id=9)
    assert not response.isError(), response
    return GripperStatus.from_registers(response.registers)


def test_the_pusher_moves_only_while_the_gripper_holds_it(start_driver):
    driver, _ = start_driver(driver_settings=settings(coupling="gripper"))
    host, port = driver.endpoints().gripper_tcp_address
    client = ModbusTcpClient(host, port=port, timeout=0.5, retries=0)
    assert client.connect()
    try:
        start = driver.world.true_state()[:2].copy()
        drive(driver, (0.0, 0.02), 0.15)  # the end effector moves a few mm; the pusher stays
        time.sleep(0.15)
        np.testing.assert_allclose(driver.world.true_state()[:2], start, atol=1e-9)
        assert not driver.status().pusher_held

        write_command(client, GripperCommand(activate=True))
        wait_for(lambda: gripper_status(client).is_active, what="activation")
        write_command(client, GripperCommand(activate=True, go_to=True, position=255, speed=255, force=128))
        wait_for(lambda: gripper_status(client).object_status is ObjectStatus.CONTACT_CLOSING, what="grip")
        wait_for(lambda: driver.status().pusher_held, what="the pusher held")

        drive(driver, (0.0, 0.05), 0.3)
        moved = driver.world.true_state()[1] - start[1]
        assert moved > 0.008

        write_command(client, GripperCommand(activate=True, go_to=True, position=0, speed=255, force=128))
        wait_for(lambda: not driver.status().pusher_held, what="the pusher released")
        time.sleep(0.15)
        released_at = driver.world.true_state()[1]
        drive(driver, (0.0, 0.05), 0.2)
        assert driver.world.true_state()[1] == pytest.approx(released_at, abs=1e-6)
    finally:
        client.close()


def test_faults_are_delegated_to_the_devices(start_driver):
    driver, _ = start_driver(driver_settings=settings(coupling="gripper"))
    driver.inject_gripper_fault(0x08)
    assert driver.status().gripper.fault == 0x08
    driver.clear_gripper_fault()
    assert driver.status().gripper.fault == 0
    driver.inject_arm_fault(ArmFault.PROTECTIVE_STOP)
    assert not driver.submit_twist(twist(0.01)).accepted
    driver.inject_arm_fault(ArmFault.NONE)
    assert driver.submit_twist(twist(0.01)).accepted
    driver.set_gripper_responding(False)
    host, port = driver.endpoints().gripper_tcp_address
    client = ModbusTcpClient(host, port=port, timeout=0.2, retries=0)
    assert client.connect()
    try:
        with pytest.raises(ModbusIOException):
            client.read_input_registers(2000, count=3, device_id=9)
        driver.set_gripper_responding(True)
        assert gripper_status(client).fault == 0
    finally:
        client.close()


# -- settings -------------------------------------------------------------------------------------
def test_the_shipped_settings_file_holds_the_code_defaults():
    loaded = load_driver_settings(CONFIG / "sim_world.yaml")
    assert dataclasses.replace(loaded, config_dir=None) == DriverSettings()
    assert loaded.mocap.bodies_file == "auto"


def test_auto_body_maps_use_the_scenes_file_or_the_generated_mapping():
    fig1 = SimDriver(load_scene(CONFIG / "scenes" / "clutter_fig1.yaml"), DriverSettings())
    assert fig1.body_map_source == str(CONFIG / "mocap" / "clutter_fig1.yaml")
    assert fig1.body_map.entries[0].centre_offset[2] < 0  # the file's pivot offsets, not the generated ones
    isrr = SimDriver(load_scene(CONFIG / "scenes" / "isrr_obstacle.yaml"), DriverSettings())
    assert isrr.body_map_source.startswith("generated")
    assert [entry.rigid_body_id for entry in isrr.body_map.entries] == [1, 2]


@pytest.mark.parametrize(("data", "field"), [
    ({"gripper": {"coupling": "glue"}}, r"gripper\.coupling"),
    ({"mocap": {"server": {"rate_hz": -1}}}, r"mocap\.server\.rate_hz"),
    ({"mocap": {"mocap_to_table": {"translation": [0, 0], "rotation": {"preset": "y_up"}}}},
     r"mocap\.mocap_to_table\.translation"),
    ({"mocap": {"noise": {"position_std": -1}}}, r"mocap\.noise\.position_std"),
    ({"world": {"arm": {"max_speed": 0}}}, r"world\.arm\.max_speed"),
    ({"gripper": {"device": {"object_width_m": 0.02}}}, r"gripper\.device: unknown field"),
    ({"robot": {}}, r"settings: unknown field\(s\) \['robot'\]"),
])
def test_settings_errors_name_the_field(data, field):
    with pytest.raises(DriverSettingsError, match=field):
        DriverSettings.from_mapping(data)


def test_a_body_mapping_for_another_scene_is_refused_and_the_generated_one_fits():
    scene = load_scene(CONFIG / "scenes" / "isrr_obstacle.yaml")
    fig1_map = dataclasses.replace(settings().mocap, bodies_file=str(CONFIG / "mocap" / "clutter_fig1.yaml"))
    with pytest.raises(BodyMapError, match="slider"):
        SimDriver(scene, dataclasses.replace(settings(), mocap=fig1_map))
    generated = dataclasses.replace(settings(), mocap=dataclasses.replace(settings().mocap, bodies_file=None))
    driver = SimDriver(scene, generated)
    assert [(entry.body, entry.rigid_body_id) for entry in driver.body_map.entries] == [("pusher", 1), ("slider", 2)]


# -- the entry point ------------------------------------------------------------------------------
@pytest.mark.parametrize("coupling", ["rigid", "gripper"])
def test_the_entry_point_prints_the_endpoints_and_stops_on_ctrl_c(coupling):
    if coupling == "gripper" and shutil.which("socat") is None:
        pytest.skip("socat is needed for the gripper's pty")
    command = [sys.executable, "-m", "parapush.programs.sim_devices", "--scene", "clutter_fig1.yaml",
               "--mocap-port", "0", "--coupling", coupling, "--status-period", "0", "--log-level", "WARNING"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = process.stdout.readline()
        endpoints = json.loads(line)
        assert endpoints["scene"] == "clutter_fig1"
        host, port = endpoints["mocap_command_address"]
        assert host == "127.0.0.1" and port > 0
        if coupling == "gripper":
            assert Path(endpoints["gripper_serial_port"]).exists()
        with NatNetClient(NatNetClientSettings(server_address=host, command_port=port)) as client:
            assert len(client.wait_for_frame(3.0).frame.rigid_bodies) == 5
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0, process.stderr.read()
        if coupling == "gripper":
            assert not Path(endpoints["gripper_serial_port"]).exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
