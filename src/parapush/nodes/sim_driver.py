"""Simulated driver node: the MuJoCo world behind the real device protocols.

Runs :class:`parapush.sim.driver.SimDriver` (world, NatNet server, Robotiq emulator, arm)
and connects its arm to ROS: every ``TwistStamped`` on ``twist_topic`` (MoveIt Servo's
input) drives the end effector. Everything else reaches the rest of the stack over the
devices' own protocols (NatNet over UDP to the state estimator, Modbus to the executor's
gripper driver), exactly as on the robot. For analysis it also publishes the world's true
state on ``/sim/true_state`` (never used for control) and its status on ``/diagnostics``.

Fault injection from outside (tests, users): the ``faults.*`` parameters may be set at run
time (``ros2 param set /sim_driver faults.natnet_loss 0.3``: NatNet datagram loss, arm fault,
gripper fault code, gripper not answering), and the ``~/untrack_body`` service
(parareal_pushing/srv/UntrackBody) streams one body untracked for a while.

Between tasks (benchmarks, tests): the ``~/reset_world`` service (std_srvs/Trigger) puts the
world back to the scene file's initial state (:meth:`parapush.sim.driver.SimDriver.reset`:
poses at rest, the arm halted at the pusher, the contact noise redrawn from the continuing
generator, a diverged world recovered); the devices keep running (the NatNet stream goes on,
so the estimator sees the pusher and the objects jump back; the gripper is not touched and
holds the pusher again at once when it was closed on it) and injected faults stay as set.
Refused (success false) when the world cannot be stopped or restarted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TwistStamped
from parareal_pushing.msg import SceneState
from parareal_pushing.srv import UntrackBody
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from std_srvs.srv import Trigger

from parapush.execution.commands import TwistCommand
from parapush.nodes.conversions import state_to_msg, time_to_seconds
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import ParameterError, ParameterSpec, declare_scene_parameters
from parapush.sim.arm import ArmFault, ArmStatus
from parapush.sim.driver import SimDriver
from parapush.sim.driver_settings import DriverSettings, DriverSettingsError, load_driver_settings
from parapush.sim.mocap_server import UntrackMode
from parapush.yaml_file import config_file

PARAMETERS = (
    ParameterSpec("settings_file", "sim_world.yaml",
                  "driver settings YAML (world, mocap, gripper): a path or a name in config/"),
    ParameterSpec("real_time_factor", 0.0, "simulated s per wall s; 0: the settings file's",
                  minimum=0.0, maximum=100.0),
    ParameterSpec("seed", -1, "seed of the world's noise; -1: the settings file's", minimum=-1, maximum=2**31 - 1),
    ParameterSpec("arm_command_timeout", 0.0, "s without a twist after which the simulated arm halts (MoveIt "
                  "Servo's incoming_command_timeout); 0: the settings file's", minimum=0.0, maximum=1.0),
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
    ParameterSpec("shutdown_grace", 4.0, "s the devices stay up after the stop while the executor still holds "
                  "the gripper (releasing it), when every node is stopped at once (ros2 launch); below the "
                  "5 s after which a stopping node writes its stacks",
                  minimum=0.0, maximum=4.5),
)
# Injected faults: settable at run time, applied to the driver at once (and at start-up).
FAULT_PARAMETERS = (
    ParameterSpec("faults.natnet_loss", 0.0, "probability that a NatNet frame datagram is lost",
                  minimum=0.0, maximum=1.0, read_only=False),
    ParameterSpec("faults.arm", ArmFault.NONE.value, "injected arm fault",
                  choices=tuple(fault.value for fault in ArmFault), read_only=False),
    ParameterSpec("faults.gripper", 0, "injected gripper fault code gFLT (e.g. 8, 10, 14); 0: none",
                  minimum=0, maximum=15, read_only=False),
    ParameterSpec("faults.gripper_responding", True, "false: the gripper stops answering Modbus requests",
                  read_only=False),
)
PARAMETERS = PARAMETERS + FAULT_PARAMETERS


def apply_fault(driver: SimDriver, name: str, value) -> None:
    """Apply one ``faults.*`` parameter value (validated) to the driver.

    Raises:
        RuntimeError: the driver has no such device (e.g. no gripper with ``coupling: rigid``).
    """
    if name == "faults.natnet_loss":
        driver.set_natnet_loss(value)
    elif name == "faults.arm":
        driver.inject_arm_fault(ArmFault(value))
    elif name == "faults.gripper" and value:
        driver.inject_gripper_fault(value)
    elif name == "faults.gripper":
        driver.clear_gripper_fault()
    elif name == "faults.gripper_responding":
        driver.set_gripper_responding(value)
    else:
        raise KeyError(f"no fault parameter {name!r}")


def driver_settings_from_parameters(values: dict) -> DriverSettings:
    """The settings file with the node's parameter overrides applied."""
    settings = load_driver_settings(config_file(values["settings_file"]))
    world = settings.world
    if values["real_time_factor"] > 0.0:
        world = dataclasses.replace(world, real_time_factor=values["real_time_factor"])
    if values["seed"] >= 0:
        world = dataclasses.replace(world, seed=values["seed"])
    if values["arm_command_timeout"] > 0.0:
        world = dataclasses.replace(world, arm=dataclasses.replace(world.arm,
                                                                   command_timeout=values["arm_command_timeout"]))
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
        values, self.scene = declare_scene_parameters(self, PARAMETERS)
        try:
            settings = driver_settings_from_parameters(values)
        except (DriverSettingsError, ValueError, OSError) as error:
            raise ParameterError(f"parameter 'settings_file' (or an override): {error}") from None
        self.driver = SimDriver(self.scene, settings)
        self.driver.start()
        self._faults = {spec.name: spec for spec in FAULT_PARAMETERS}
        for name in self._faults:
            if values[name] != self._faults[name].default:
                self._apply_fault(name, values[name])
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.create_service(UntrackBody, "~/untrack_body", self._untrack_body)
        self.create_service(Trigger, "~/reset_world", self._reset_world)
        self._rejected = 0
        self._resets = 0
        self._halts_reported = 0
        self._twists = self.create_subscription(TwistStamped, values["twist_topic"], self._on_twist, 10,
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

    def _apply_fault(self, name: str, value) -> None:
        try:
            apply_fault(self.driver, name, value)
        except (RuntimeError, ValueError) as error:
            raise ParameterError(f"parameter '{name}': {error}") from None
        self.get_logger().warning(f"fault injection: {name} = {value!r}")

    def _on_set_parameters(self, parameters) -> SetParametersResult:
        """Runtime changes of ``faults.*`` (the others are read-only: rclpy refuses them first)."""
        for parameter in parameters:
            spec = self._faults.get(parameter.name)
            if spec is None:
                continue
            try:
                self._apply_fault(parameter.name, spec.validate(parameter.value))
            except ParameterError as error:
                return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _untrack_body(self, request: UntrackBody.Request, response: UntrackBody.Response) -> UntrackBody.Response:
        mode = UntrackMode.OMIT if request.omit else UntrackMode.INVALID
        try:
            self.driver.untrack_body(request.body, duration_s=request.duration, mode=mode, delay_s=request.delay)
        except (KeyError, ValueError, RuntimeError) as error:
            response.success, response.message = False, f"not untracked: {error}"
            return response
        response.success = True
        response.message = (f"{request.body} untracked ({mode.value}) for {request.duration:.3f} s "
                            f"from {request.delay:.3f} s from now")
        self.get_logger().warning(f"fault injection: {response.message}")
        return response

    def _reset_world(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Back to the scene's initial state (see the module docstring); the message names the pusher's position."""
        try:
            self.driver.reset()
        except (RuntimeError, ValueError) as error:
            response.success, response.message = False, f"world not reset: {error}"
            self.get_logger().error(response.message)
            return response
        self._resets += 1
        pusher = self.scene.pusher.position
        response.success = True
        response.message = (f"world reset to scene '{self.scene.name}' (reset {self._resets}): pusher at "
                            f"({pusher[0]:.4f}, {pusher[1]:.4f}) m, objects at their initial poses, at rest")
        self.get_logger().info(response.message)
        return response

    def _publish_true_state(self) -> None:
        snapshot = self.driver.world.snapshot()
        now = self.get_clock().now().nanoseconds * 1e-9
        self._true_state.publish(state_to_msg(snapshot.state, self.scene, stamp=now, frame_id="table"))

    def _publish_diagnostics(self) -> None:
        status = self.driver.status()
        self._report_halts(status.arm)
        values: dict[str, str] = {}
        _flatten("", dataclasses.asdict(status), values)
        values["rejected_twists"] = str(self._rejected)
        values["world_resets"] = str(self._resets)
        # how many twist publishers the arm is matched with: the executor's twists reach it once >= 1
        values["twist_publishers"] = str(self._twists.get_publisher_count())
        values.update({name: str(self.get_parameter(name).value) for name in self._faults})
        diagnostic = DiagnosticStatus(level=DiagnosticStatus.OK, name=f"{self.get_name()}: simulated devices",
                                      hardware_id="mujoco",
                                      message=f"pusher {'held' if status.pusher_held else 'not held'}")
        diagnostic.values = [KeyValue(key=key, value=value) for key, value in values.items()]
        array = DiagnosticArray(status=[diagnostic])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def _report_halts(self, arm: ArmStatus) -> None:
        """Warn when the arm halted while commanded to move because the twists came too far apart."""
        if arm.halts_without_command > self._halts_reported:
            self.get_logger().warning(
                f"the arm halted {arm.halts_without_command - self._halts_reported} time(s) while commanded to "
                f"move: no twist within {self.driver.settings.world.arm.command_timeout} s (longest gap so far "
                f"{arm.longest_command_gap:.3f} s; the executor stalled, or this driver was starved of CPU); "
                f"{arm.halts_without_command} so far"
            )
            self._halts_reported = arm.halts_without_command

    def close(self) -> None:
        """Stop the devices once their clients are done (:meth:`wait_for_clients`), then the driver."""
        self.wait_for_clients(self.get_parameter("shutdown_grace").value)
        self.driver.stop()

    def clients_hold_devices(self) -> bool:
        """A client holds the devices: the executor owns the gripper (it activated it and is still
        connected: it has not released it yet). Its arm twists are not waited for: the simulated arm
        halts at its own command timeout, as MoveIt Servo does."""
        gripper = self.driver.gripper
        return gripper is not None and gripper.owned

    def wait_for_clients(self, grace: float) -> float:
        """Wait until no client holds the devices, at most ``grace`` s; return the s waited.

        Under ``ros2 launch`` every node gets its SIGINT at once: the executor then still commands
        zero and releases the gripper, which needs the devices up. Under the bringup the executor
        has exited before this node's stop (``shutdown_order``), so this returns at once.
        """
        started = time.monotonic()
        while time.monotonic() - started < grace and self.clients_hold_devices():
            time.sleep(0.05)
        waited = time.monotonic() - started
        if waited >= 0.05:
            with contextlib.suppress(Exception):  # logging after the context shut down
                self.get_logger().info(f"devices kept up {waited:.2f} s after the stop for their clients "
                                       f"({'released' if not self.clients_hold_devices() else 'still held'})")
        return waited


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
