"""Simulated driver node: the MuJoCo world behind the real device protocols.

Runs :class:`parapush.sim.driver.SimDriver` (world, NatNet server, Robotiq emulator, arm)
and connects its arm to ROS: every ``TwistStamped`` on ``twist_topic`` (MoveIt Servo's
input) drives the end effector. Everything else reaches the rest of the stack over the
devices' own protocols (NatNet over UDP to the state estimator, Modbus to the executor's
gripper driver), exactly as on the robot. For analysis it also publishes the world's true
state on ``/sim/true_state`` (never used for control) and its status on ``/diagnostics``.
"""

from __future__ import annotations

import dataclasses
import math

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TwistStamped
from parareal_pushing.msg import SceneState
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from parapush.execution.commands import TwistCommand
from parapush.graph import config_dir
from parapush.nodes.conversions import state_to_msg, time_to_seconds
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import ParameterError, ParameterSpec, declare_parameters, load_scene_parameter
from parapush.sim.driver import DriverSettings, DriverSettingsError, SimDriver, load_driver_settings

PARAMETERS = (
    ParameterSpec("scene_file", "clutter_fig1.yaml", "scene YAML: a path or a name in config/scenes/"),
    ParameterSpec("settings_file", "sim_world.yaml",
                  "driver settings YAML (world, mocap, gripper): a path or a name in config/"),
    ParameterSpec("real_time_factor", 0.0, "simulated s per wall s; 0: the settings file's",
                  minimum=0.0, maximum=100.0),
    ParameterSpec("seed", -1, "seed of the world's noise; -1: the settings file's", minimum=-1, maximum=2**31 - 1),
    ParameterSpec("twist_topic", "/servo_node/delta_twist_cmds", "end-effector twists (MoveIt Servo input)",
                  allow_empty=False),
    ParameterSpec("natnet_command_port", 0, "UDP port of the NatNet command socket; 0: the settings file's",
                  minimum=0, maximum=65535),
    ParameterSpec("natnet_data_port", 0, "UDP port of the NatNet data (multicast) stream; 0: the settings file's",
                  minimum=0, maximum=65535),
    ParameterSpec("gripper_tcp_port", -1, "Modbus TCP port of the emulated gripper; -1: the settings file's, "
                  "0: an ephemeral port", minimum=-1, maximum=65535),
    ParameterSpec("true_state_rate", 30.0, "Hz of /sim/true_state", minimum=0.1, maximum=1000.0),
    ParameterSpec("diagnostics_period", 1.0, "s between diagnostics messages", minimum=0.05, maximum=60.0),
)


def driver_settings_from_parameters(values: dict) -> DriverSettings:
    """The settings file with the node's parameter overrides applied."""
    name = values["settings_file"]
    path = name if "/" in name else config_dir() / name
    settings = load_driver_settings(path)
    world = settings.world
    if values["real_time_factor"] > 0.0:
        world = dataclasses.replace(world, real_time_factor=values["real_time_factor"])
    if values["seed"] >= 0:
        world = dataclasses.replace(world, seed=values["seed"])
    server = settings.mocap.server
    if values["natnet_command_port"]:
        server = dataclasses.replace(server, command_port=values["natnet_command_port"])
    if values["natnet_data_port"]:
        server = dataclasses.replace(server, data_port=values["natnet_data_port"])
    emulator = settings.gripper.emulator
    if values["gripper_tcp_port"] >= 0:
        emulator = dataclasses.replace(emulator, tcp=True, tcp_port=values["gripper_tcp_port"])
    return dataclasses.replace(
        settings,
        world=world,
        mocap=dataclasses.replace(settings.mocap, server=server),
        gripper=dataclasses.replace(settings.gripper, emulator=emulator),
    )


class SimDriverNode(Node):
    """Runs the simulated devices; arm twists in, true state and diagnostics out."""

    def __init__(self, **node_options) -> None:
        super().__init__("sim_driver", **node_options)
        values = declare_parameters(self, PARAMETERS)
        self.scene = load_scene_parameter(values["scene_file"])
        try:
            settings = driver_settings_from_parameters(values)
        except (DriverSettingsError, ValueError, OSError) as error:
            raise ParameterError(f"parameter 'settings_file' (or an override): {error}") from None
        self.driver = SimDriver(self.scene, settings)
        self.driver.start()
        self._rejected = 0
        self.create_subscription(TwistStamped, values["twist_topic"], self._on_twist, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self._true_state = self.create_publisher(SceneState, "/sim/true_state", 10)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_timer(1.0 / values["true_state_rate"], self._publish_true_state)
        self.create_timer(values["diagnostics_period"], self._publish_diagnostics)
        endpoints = self.driver.endpoints()
        self.get_logger().info(f"simulating '{self.scene.name}': {endpoints.to_dict()}")

    def _on_twist(self, message: TwistStamped) -> None:
        linear, angular = message.twist.linear, message.twist.angular
        try:
            twist = TwistCommand(
                stamp_s=time_to_seconds(message.header.stamp),
                frame_id=message.header.frame_id,
                linear=(linear.x, linear.y, linear.z),
                angular=(angular.x, angular.y, angular.z),
            )
            self.driver.submit_twist(twist)
        except ValueError as error:
            self._rejected += 1
            if self._rejected == 1 or math.log2(self._rejected).is_integer():
                self.get_logger().warning(f"twist rejected ({self._rejected} so far): {error}")

    def _publish_true_state(self) -> None:
        snapshot = self.driver.world.snapshot()
        now = self.get_clock().now().nanoseconds * 1e-9
        self._true_state.publish(state_to_msg(snapshot.state, self.scene, stamp=now, frame_id="table"))

    def _publish_diagnostics(self) -> None:
        status = self.driver.status()
        values: dict[str, str] = {}
        _flatten("", dataclasses.asdict(status), values)
        values["rejected_twists"] = str(self._rejected)
        diagnostic = DiagnosticStatus(level=DiagnosticStatus.OK, name=f"{self.get_name()}: simulated devices",
                                      hardware_id="mujoco",
                                      message=f"pusher {'held' if status.pusher_held else 'not held'}")
        diagnostic.values = [KeyValue(key=key, value=value) for key, value in values.items()]
        array = DiagnosticArray(status=[diagnostic])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def close(self) -> None:
        self.driver.stop()


def _flatten(prefix: str, value, into: dict[str, str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, into)
    else:
        into[prefix] = str(value)


def main(args=None) -> int:
    return run_node(SimDriverNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
