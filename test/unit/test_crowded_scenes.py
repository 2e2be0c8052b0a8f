"""The crowded scenes (8, 16, 32 objects) load, get a body map, and stream over the simulated mocap."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from parapush.estimation.natnet_client import NatNetClient, NatNetClientSettings
from parapush.robotiq.device_model import DeviceModelSettings
from parapush.scene import load_scene
from parapush.sim.driver import SimDriver
from parapush.sim.driver_settings import DriverSettings, GripperLinkSettings, MocapStreamSettings
from parapush.sim.gripper_emulator import GripperEmulatorSettings
from parapush.sim.mocap_server import MocapServerSettings
from parapush.sim.world import WorldSettings

CONFIG = Path(__file__).resolve().parents[2] / "config"


def loopback_settings() -> DriverSettings:
    """Ephemeral ports on loopback, Modbus over TCP only."""
    emulator = GripperEmulatorSettings(serial=False, tcp=True, tcp_port=0,
                                       device=DeviceModelSettings(activation_duration_s=0.05))
    return DriverSettings(
        world=WorldSettings(seed=1),
        mocap=MocapStreamSettings(server=MocapServerSettings(command_port=0, rng_seed=3), seed=2),
        gripper=GripperLinkSettings(emulator=emulator),
        config_dir=CONFIG,
    )


@pytest.mark.parametrize("count", [8, 16, 32])
def test_the_sim_driver_streams_every_object_of_a_crowded_scene(count: int) -> None:
    scene = load_scene(CONFIG / "scenes" / f"crowded_{count}.yaml")
    driver = SimDriver(scene, loopback_settings())
    assert [entry.body for entry in driver.body_map.entries] == ["pusher", *scene.object_names]
    started = [driver.start()]
    try:
        host, port = driver.endpoints().mocap_command_address
        client = NatNetClient(NatNetClientSettings(server_address=host, command_port=port))
        started.append(client.start())
        client.wait_for_server(3.0)
        definitions = client.request_model_definitions(2.0)
        assert len(definitions.ids_by_name) == count + 1
        deadline = time.monotonic() + 5.0
        received = client.wait_for_frame(max(0.01, deadline - time.monotonic()))
        frame = received.frame
        assert len(frame.rigid_bodies) == count + 1
        assert all(body.tracking_valid for body in frame.rigid_bodies)
        truth = driver.world.true_state()
        transform = driver.settings.mocap.mocap_to_table
        entries = driver.body_map.entries_by_id()
        for body in frame.rigid_bodies:
            entry = entries[body.id]
            pose = transform.body_pose(body.position, body.orientation, entry.centre_offset, entry.yaw_offset)
            if entry.body == "pusher":
                expected = truth[:2]
            else:
                expected = truth[scene.layout.object_pose(scene.object_index(entry.body))][:2]
            assert np.all(np.abs(pose.planar[:2] - expected) < 0.005), entry.body
    finally:
        for device in reversed(started):
            device.stop()
