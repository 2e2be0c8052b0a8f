"""The simulated devices without ROS: ``python -m parapush.programs.sim_devices --scene ...``.

Runs :class:`parapush.sim.driver.SimDriver` (the MuJoCo world behind NatNet, Modbus and the
arm's twist interface), prints its endpoints as one JSON line, a status line every
``--status-period`` s, and runs until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
from pathlib import Path

from parapush.graph import config_dir, resolve_scene_path
from parapush.scene import load_scene
from parapush.sim.driver import SimDriver
from parapush.sim.driver_settings import COUPLINGS, DEFAULT_SETTINGS_FILE, DriverSettings, load_driver_settings
from parapush.stop_signals import StopSignals


def _settings_for_arguments(arguments: argparse.Namespace) -> DriverSettings:
    if arguments.config is not None:
        settings = load_driver_settings(arguments.config)
    else:
        default = config_dir() / DEFAULT_SETTINGS_FILE
        settings = load_driver_settings(default) if default.is_file() else DriverSettings()
    world, mocap, gripper = settings.world, settings.mocap, settings.gripper
    if arguments.real_time_factor is not None:
        world = dataclasses.replace(world, real_time_factor=arguments.real_time_factor)
    if arguments.seed is not None:
        world = dataclasses.replace(world, seed=arguments.seed)
        mocap = dataclasses.replace(mocap, seed=arguments.seed)
    if arguments.bodies_file is not None:
        bodies_file = None if arguments.bodies_file == "none" else arguments.bodies_file
        mocap = dataclasses.replace(mocap, bodies_file=bodies_file)
    if arguments.mocap_port is not None:
        mocap = dataclasses.replace(mocap, server=dataclasses.replace(mocap.server, command_port=arguments.mocap_port))
    if arguments.gripper_tcp_port is not None:
        emulator = dataclasses.replace(gripper.emulator, tcp=True, tcp_port=arguments.gripper_tcp_port)
        gripper = dataclasses.replace(gripper, emulator=emulator)
    if arguments.coupling is not None:
        gripper = dataclasses.replace(gripper, coupling=arguments.coupling)
    return dataclasses.replace(settings, world=world, mocap=mocap, gripper=gripper)


def main(argv: list[str] | None = None) -> int:
    """``python -m parapush.programs.sim_devices``: run the simulated driver until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m parapush.programs.sim_devices",
        description="Simulated robot driver: a MuJoCo world behind NatNet (mocap), Modbus (Robotiq 2F-85) "
        "and an end-effector twist interface.",
    )
    parser.add_argument("--scene", default="clutter_fig1.yaml", help="scene file, or a name in config/scenes")
    parser.add_argument("--config", type=Path, default=None, help="settings file (default: config/sim_world.yaml)")
    parser.add_argument("--real-time-factor", type=float, default=None)
    parser.add_argument("--seed", type=int, default=None, help="seed of the push and mocap noise")
    parser.add_argument("--bodies-file", default=None, help="mocap body mapping file, or 'none' for the generated one")
    parser.add_argument("--mocap-port", type=int, default=None, help="NatNet command port (0: ephemeral)")
    parser.add_argument("--gripper-tcp-port", type=int, default=None, help="also serve Modbus TCP on this port")
    parser.add_argument("--coupling", choices=COUPLINGS, default=None, help="how the pusher is held")
    parser.add_argument("--status-period", type=float, default=5.0, help="s between status lines (0: none)")
    parser.add_argument("--log-level", default="INFO")
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=arguments.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        scene = load_scene(resolve_scene_path(arguments.scene))
        settings = _settings_for_arguments(arguments)
        driver = SimDriver(scene, settings)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    stop_signals = StopSignals().install()  # Ctrl-C and SIGTERM, recorded by a handler that takes no lock
    try:
        driver.start()
    except (OSError, RuntimeError) as error:
        stop_signals.restore()
        print(f"error: cannot start the simulated driver: {error}", file=sys.stderr)
        return 1
    try:
        with driver:
            print(json.dumps({"scene": scene.name, **driver.endpoints().to_dict()}), flush=True)
            next_status = time.monotonic() + arguments.status_period
            while not stop_signals.wait(0.2):
                if arguments.status_period > 0 and time.monotonic() >= next_status:
                    next_status += arguments.status_period
                    status = driver.status()
                    print(
                        f"t={status.world.time:.1f} s rtf={status.world.real_time_factor:.2f} "
                        f"held={status.pusher_held} arm_v={status.arm.velocity} off_table={status.world.off_table} "
                        f"frames={status.mocap.frames_generated if status.mocap else 0} "
                        f"gripper={status.gripper.describe() if status.gripper else '-'}",
                        flush=True,
                    )
                if status_error := driver.world.status().error:
                    print(f"error: {status_error}", file=sys.stderr)
                    return 1
    finally:
        stop_signals.restore()
    return 0


if __name__ == "__main__":
    sys.exit(main())
