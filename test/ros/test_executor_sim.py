"""The executor node against the simulated robot, every link real.

Two set-ups, both with the executor as its own process, as deployed (``python -m
parapush.nodes.executor --params-file config/executor.yaml`` plus the sim's endpoints and
frame); it grasps the pusher through Modbus TCP (the pusher only moves with the arm while the
emulated fingers hold it), executes ``controls`` as base-frame twists on Servo's topic and
releases the gripper on SIGINT. The arm's table frame is turned by +90 deg in the base frame.

* Tracking (``stack``): the simulated driver node (MuJoCo world, NatNet server, Robotiq
  emulator, arm) and the state estimator node run as processes too, as the bringup runs them;
  the test only publishes ``controls`` and reads ``/sim/true_state``, the twists and
  ``/diagnostics``. Measured: commanded pusher displacement against the world's.
* Faults (``robot``): the simulated driver and the estimator run in the test process so that
  faults can be injected: a gripper fault (measured: fault to arm at rest), an arm that stops
  following its commands (measured: fault to the executor's zero command), and a second Modbus
  client (another stack's executor) trying to open the held gripper (refused).
"""

from __future__ import annotations

import contextlib
import math
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import TwistStamped
from parareal_pushing.msg import ControlSequence, PusherControl, SceneState
from pymodbus.client import ModbusTcpClient
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from test_executor_support import wait_until

from local_ports import free_port
from parapush.graph import config_dir, resolve_scene_path
from parapush.nodes.conversions import seconds_to_time
from parapush.nodes.sim_driver import SimDriverNode
from parapush.nodes.state_estimator import StateEstimatorNode
from parapush.scene import load_scene
from parapush.sim.arm import ArmFault

pytestmark = pytest.mark.timeout(90)

#: The tracking tolerance claimed per push: |world displacement - commanded displacement| <=
#: 1 mm + ARM_TIMEOUT x the largest velocity change of the push. Measured on the shared, loaded
#: 2-core test machine (~30 valid pushes of 50 mm / 27 mm): median ~0.6 mm, most below 1.5 mm
#: (~0.5-1 mm along x of the two-control push is the acceleration limit at the change of
#: control). The rare larger errors (up to 6.0 mm seen) come from a command reaching the
#: simulated arm late, which then holds the previous one for at most its command timeout: a
#: change of velocity dv delivered late adds up to dv x 0.1 s (6.1 mm at the 0.061 m/s change of
#: the two-control push). Pushes during which a process visibly stalled are not measured.
TRACKING_MARGIN = 0.001
ARM_TIMEOUT = 0.1  # s, sim_world.yaml world.arm.command_timeout (MoveIt Servo's incoming_command_timeout)


def tracking_tolerance(controls) -> float:
    velocities = [np.zeros(2)] + [np.array([vx, vy]) for vx, vy, _ in controls] + [np.zeros(2)]
    largest_change = max(float(np.linalg.norm(b - a)) for a, b in zip(velocities, velocities[1:], strict=False))
    return TRACKING_MARGIN + ARM_TIMEOUT * largest_change
TABLE_YAW_IN_BASE = math.pi / 2
TWIST_TOPIC = "/servo_node/delta_twist_cmds"


def sim_settings(tmp_path):
    """sim_world.yaml with ephemeral ports, Modbus over TCP only, a fast activation, the table turned."""
    data = yaml.safe_load((config_dir() / "sim_world.yaml").read_text())
    data["mocap"]["server"]["command_port"] = 0
    data["mocap"]["bodies_file"] = str(config_dir() / "mocap" / "clutter_fig1.yaml")
    data["gripper"]["emulator"].update(serial=False, tcp=True, tcp_port=0)
    data["gripper"]["device"]["activation_duration_s"] = 0.2
    data["world"]["arm"]["table_rpy_in_base"] = [0.0, 0.0, TABLE_YAW_IN_BASE]
    path = tmp_path / "sim_world.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def overrides(values: dict) -> list[Parameter]:
    return [Parameter(name, value=value) for name, value in values.items()]


class Client:
    """Publishes controls; records twists (receipt time, table-frame velocity) and executor diagnostics."""

    def __init__(self, context, spinning) -> None:
        self.node = rclpy.create_node("executor_sim_client", context=context)
        self.lock = threading.Lock()
        self.twists: list[tuple[float, np.ndarray]] = []
        self.status: dict[str, str] = {}
        self.sim_message = ""
        self.sim_values: dict[str, str] = {}
        self.true_pusher: np.ndarray | None = None
        self.true_received = -math.inf
        self.publisher = self.node.create_publisher(ControlSequence, "controls", 10)
        self.twist_subscription = self.node.create_subscription(TwistStamped, TWIST_TOPIC, self._on_twist,
                                                                QoSProfile(depth=1000))
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 50)
        self.node.create_subscription(SceneState, "/sim/true_state", self._on_true_state, 10)
        spinning.add(self.node)

    def _on_true_state(self, message: SceneState) -> None:
        with self.lock:
            self.true_pusher = np.array([message.pusher.x, message.pusher.y])
            self.true_received = time.monotonic()

    def _on_twist(self, message: TwistStamped) -> None:
        base = np.array([message.twist.linear.x, message.twist.linear.y])
        yaw = TABLE_YAW_IN_BASE  # table = Rz(-yaw) base
        table = np.array([math.cos(yaw) * base[0] + math.sin(yaw) * base[1],
                          -math.sin(yaw) * base[0] + math.cos(yaw) * base[1]])
        with self.lock:
            self.twists.append((time.monotonic(), table))

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name == "sim_driver: simulated devices":
                with self.lock:
                    self.sim_message = status.message
                    self.sim_values = {pair.key: pair.value for pair in status.values}
            if status.name == "executor: velocity commands":
                with self.lock:
                    self.status = {pair.key: pair.value for pair in status.values}
                    self.status["level"] = str(status.level[0] if isinstance(status.level, bytes) else status.level)

    def _fresh(self, attribute: str, timeout: float, what: str) -> dict[str, str]:
        """The next diagnostics values stored in ``attribute`` (published every 0.25 s)."""
        with self.lock:
            setattr(self, attribute, {})
        wait_until(lambda: getattr(self, attribute), timeout, what=what)
        with self.lock:
            return dict(getattr(self, attribute))

    def fresh_status(self, timeout: float = 2.0) -> dict[str, str]:
        """The executor's next diagnostics values."""
        return self._fresh("status", timeout, "executor diagnostics")

    def true_position(self) -> np.ndarray:
        """The world's pusher position from a /sim/true_state received from now on."""
        now = time.monotonic()
        wait_until(lambda: self.true_received > now, 1.0, what="a fresh /sim/true_state")
        with self.lock:
            return self.true_pusher.copy()

    def fresh_sim_values(self, timeout: float = 2.0) -> dict[str, str]:
        """The simulated driver's next diagnostics values."""
        return self._fresh("sim_values", timeout, "simulated driver diagnostics")

    def connected(self) -> bool:
        """The executor's twist publisher and controls subscription are matched with ours, the twist
        topic has the simulated arm's subscription besides ours, and the arm itself reports a matched
        twist publisher (its diagnostics' ``twist_publishers``): a first push sent before the arm's
        subscription matched the executor's publisher would not move it (seen once in a fresh-clone CI
        run: the world did not move in the first push), and the executor's motion check would latch."""
        return (self.twist_subscription.get_publisher_count() >= 1 and self.publisher.get_subscription_count() >= 1
                and self.node.count_subscribers(TWIST_TOPIC) >= 2
                and int(self.fresh_sim_values().get("twist_publishers", "0")) >= 1)

    def received(self, since: float) -> list[tuple[float, np.ndarray]]:
        with self.lock:
            return [twist for twist in self.twists if twist[0] >= since]

    def push(self, controls) -> float:
        message = ControlSequence()
        message.header.frame_id = "table"
        message.header.stamp = seconds_to_time(self.node.get_clock().now().nanoseconds * 1e-9)
        message.controls = [PusherControl(vx=vx, vy=vy, duration=duration) for vx, vy, duration in controls]
        sent = time.monotonic()
        self.publisher.publish(message)
        return sent

    def wait_for_rest(self, since: float, timeout: float = 6.0) -> None:
        """Motion after ``since``, then a zero command and 0.2 s of silence or zeros."""
        wait_until(lambda: any(v.any() for _, v in self.received(since)), 3.0, what="motion")

        def at_rest():
            twists = self.received(since)
            last_moving = max(t for t, v in twists if v.any())
            return twists[-1][0] > last_moving and not twists[-1][1].any() and time.monotonic() - last_moving > 0.2

        wait_until(at_rest, timeout, what="the pusher at rest")




def executor_command(gripper_address: str, tool_width: float) -> list[str]:
    return [
        sys.executable, "-m", "parapush.nodes.executor", "--ros-args",
        "--params-file", str(config_dir() / "executor.yaml"),
        "-p", f"gripper.address:={gripper_address}",
        "-p", f"gripper.tool_width:={tool_width}",
        "-p", f"table_to_base:=[0.5, 0.0, 0.0, {TABLE_YAW_IN_BASE}]",
        "-p", "diagnostics_period:=0.25",
        "-p", "allowed_publisher:=executor_sim_client",  # the Client node publishes the controls
        # On this shared 2-core machine (load ~5-8 from other jobs) the simulated driver's process
        # now and then stalls for 0.1-0.6 s (its world thread catching up starves the NatNet and
        # Modbus threads), which the shipped limits (0.1 s stale state, 0.25 s gripper silence)
        # rightly turn into stops. Relax them so that the pushes being measured run to their end;
        # both watchdogs at their shipped values have their own tests (test_executor_node.py,
        # test_executor_gripper.py).
        "-p", "limits.stale_state_timeout:=0.4",
        "-p", "gripper.no_answer_timeout:=1.0",
    ]


class Processes:
    """Child processes (nodes) with their output in log files; stopped by SIGINT, then killed."""

    def __init__(self, directory) -> None:
        self.directory = directory
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, command: list[str]) -> subprocess.Popen:
        with (self.directory / f"{name}.log").open("w") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self.running[name] = process
        return process

    def check(self) -> None:
        for name, process in self.running.items():
            assert process.poll() is None, f"{name} exited: {self.log(name)}"

    def log(self, name: str) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def stop(self, name: str, timeout: float = 15.0) -> int:
        process = self.running[name]
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5.0)
        return process.returncode

    def stop_all(self) -> None:
        for name in reversed(list(self.running)):
            self.stop(name)
            print(f"\n--- {name} output (tail) ---\n{self.log(name)[-3000:]}")


@pytest.fixture
def stack(tmp_path, ros_context, spinning):
    """(client, processes): sim driver, state estimator and executor processes; all stopped after."""
    processes = Processes(tmp_path)
    natnet_port, gripper_port = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
    try:
        client = Client(ros_context, spinning)
        processes.start("sim_driver", [
            sys.executable, "-m", "parapush.nodes.sim_driver", "--ros-args",
            "--params-file", str(config_dir() / "sim_driver.yaml"),
            "-p", f"settings_file:={sim_settings(tmp_path)}",
            "-p", f"natnet_command_port:={natnet_port}", "-p", f"gripper_tcp_port:={gripper_port}",
            "-p", "true_state_rate:=20.0", "-p", "diagnostics_period:=0.25",
        ])
        processes.start("state_estimator", [
            sys.executable, "-m", "parapush.nodes.state_estimator", "--ros-args",
            "--params-file", str(config_dir() / "state_estimator.yaml"),
            "-p", f"command_port:={natnet_port}", "-p", "publish_tf:=false",
            "-p", "stale_timeout:=0.3",  # see executor_command: the simulator's process stalls at times
        ])
        wait_until(lambda: processes.check() or client.sim_message == "pusher not held", 30.0,
                   what="the simulated driver", period=0.05)
        radius = load_scene(resolve_scene_path("clutter_fig1.yaml")).pusher.radius  # the sim_driver's scene
        processes.start("executor", executor_command(f"tcp://127.0.0.1:{gripper_port}", 2 * radius))
        wait_until(lambda: processes.check() or client.status.get("level") == "0", 30.0,
                   what="the executor ready (tool held, valid state)", period=0.05)
        wait_until(lambda: client.sim_message == "pusher held", 2.0, what="the pusher held by the gripper")
        wait_until(client.connected, 10.0, what="the executor's topics matched")
        yield client, processes
    finally:
        processes.stop_all()


@pytest.fixture
def robot(tmp_path, ros_context, spinning):
    """(sim driver node, client, executor process); all stopped after (the executor by SIGINT)."""
    closing, process = [], None
    log_path = tmp_path / "executor.log"
    try:
        driver_node = SimDriverNode(context=ros_context, parameter_overrides=overrides(
            {"settings_file": str(sim_settings(tmp_path)), "true_state_rate": 5.0}))
        closing.append(driver_node)
        spinning.add(driver_node)
        endpoints = driver_node.driver.endpoints()
        estimator = StateEstimatorNode(context=ros_context, parameter_overrides=overrides(
            {"command_port": endpoints.mocap_command_address[1], "publish_tf": False, "diagnostics_period": 1.0,
             "stale_timeout": 0.3}))
        closing.append(estimator)
        spinning.add(estimator)
        client = Client(ros_context, spinning)
        assert not driver_node.driver.status().pusher_held  # the gripper is open at start
        host, port = endpoints.gripper_tcp_address
        command = executor_command(f"tcp://{host}:{port}", 2 * driver_node.scene.pusher.radius)
        log = log_path.open("w")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_until(lambda: driver_node.driver.status().pusher_held or process.poll() is not None, 20.0,
                   what="the pusher held by the gripper", period=0.05)
        assert process.poll() is None, f"the executor exited: {log_path.read_text()}"
        wait_until(lambda: client.status.get("level") == "0", 10.0, what="the executor ready with a valid state")
        wait_until(client.connected, 10.0, what="the executor's topics matched")
        yield driver_node, client, process
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(15.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5.0)
        print(f"\n--- executor output ---\n{log_path.read_text() if log_path.exists() else ''}")
        for node in reversed(closing):
            node.close()


#: Executor diagnostics that count the effects of a stalled process (its own, the estimator's).
STALL_COUNTERS = ("controls_aborted", "limit.command_gap", "limit.command_timeout", "limit.state_stale",
                  "limit.state_invalid")


def measure_push(client, controls) -> tuple[np.ndarray, np.ndarray, str]:
    """(commanded, world displacement, why the measurement is invalid: "" when it is valid) of one push."""
    executor_before = client.fresh_status()
    lag_before = client.fresh_sim_values()["world.lag_events"]
    start = client.true_position()
    sent = client.push(controls)
    with contextlib.suppress(AssertionError):  # no motion at all: refused or aborted at once (checked below)
        client.wait_for_rest(sent)
    time.sleep(0.3)  # the arm's own deceleration
    moved = client.true_position() - start
    commanded = sum(np.array([vx, vy]) * duration for vx, vy, duration in controls)
    executor_after = client.fresh_status()
    stalls = [key for key in STALL_COUNTERS if executor_after[key] != executor_before[key]]
    if stalls or not client.received(sent):
        # The machine starved the executor or the mocap stream: the executor stopped or ramped
        # down for safety, as it must, but this push measures the machine, not the tracking.
        return commanded, moved, f"the executor reported {stalls or 'no command'}"
    if client.fresh_sim_values()["world.lag_events"] != lag_before:
        return commanded, moved, "the simulated world fell behind real time and dropped simulated time"
    return commanded, moved, ""


def test_the_pusher_follows_commanded_pushes_and_is_released_on_shutdown(stack):
    client, processes = stack
    errors, attempts = [], 0
    # Free-space pushes from (-0.22, 0) in clutter_fig1 (no object within reach of them).
    for controls in ([(0.0, 0.05, 1.0)], [(0.04, -0.03, 0.5), (-0.02, -0.02, 0.5)]):
        for _ in range(4):
            attempts += 1
            commanded, moved, invalid = measure_push(client, controls)
            if not invalid:
                break
            print(f"\n[sim push] not measured ({invalid}) after {np.round(moved * 1e3, 1)} mm; pushing again")
        assert not invalid, f"four pushes in a row could not be measured: {invalid}"
        error = float(np.linalg.norm(moved - commanded))
        errors.append((error, tracking_tolerance(controls)))
        print(f"\n[sim push] commanded {np.round(commanded * 1e3, 2)} mm, world {np.round(moved * 1e3, 2)} mm, "
              f"error {error * 1e3:.2f} mm (tolerance {errors[-1][1] * 1e3:.1f} mm)")
    print(f"[sim push] {attempts} push(es) for {len(errors)} measurements")
    assert all(error <= tolerance for error, tolerance in errors)
    assert client.fresh_status()["stop_latched"] == "False"
    assert client.sim_message == "pusher held"
    # Shutdown (SIGINT): the gripper opens and the world releases the pusher.
    assert processes.stop("executor") == 0
    assert "gripper released" in processes.log("executor")
    wait_until(lambda: client.sim_message == "pusher not held", 2.0, what="the pusher released")


def push_at_speed(client, world, what: str) -> None:
    """Start a 2 s push at 0.05 m/s along -y and wait until the simulated arm is at speed."""
    for attempt in range(1, 5):
        before = client.fresh_status()
        sent = client.push([(0.0, -0.05, 2.0)])
        with contextlib.suppress(AssertionError):
            wait_until(lambda: abs(world.arm.status().velocity[1]) > 0.04, 3.0, what="the arm at speed")
        if abs(world.arm.status().velocity[1]) > 0.04:
            break
        # A stall of this loaded machine's processes (the estimator runs in this one) makes the
        # executor stop the push for safety, as it must; that push cannot show the fault.
        after = client.fresh_status()
        stalls = [key for key in STALL_COUNTERS if after[key] != before[key]]
        print(f"\n[{what}] push {attempt} did not reach speed (executor: {stalls or after}); again")
        assert stalls or not client.received(sent), f"a push without a stall did not reach speed: {after}"
        if any(velocity.any() for _, velocity in client.received(sent)):
            client.wait_for_rest(sent)
    else:
        raise AssertionError("four pushes in a row were stopped by stalls of this machine")


def test_a_gripper_fault_in_the_simulated_robot_stops_the_push(robot):
    driver_node, client, process = robot
    world = driver_node.driver.world
    push_at_speed(client, world, "sim gripper fault")
    injected = time.monotonic()
    driver_node.driver.inject_gripper_fault(0x0E)
    wait_until(lambda: world.arm.status().velocity == (0.0, 0.0), 1.0, what="the arm at rest")
    stopped = time.monotonic() - injected
    zero = next(t for t, v in client.received(injected) if not v.any())
    print(f"\n[sim gripper fault] zero command {(zero - injected) * 1e3:.0f} ms and the arm at rest "
          f"{stopped * 1e3:.0f} ms after the fault (the arm decelerates at 1 m/s^2)")
    assert stopped < 0.5
    wait_until(lambda: client.status.get("stop_latched") == "True", 2.0, what="the latched stop in diagnostics")
    assert "gripper fault" in client.status["latch_reason"]


@pytest.mark.parametrize("fault", [ArmFault.COMMANDS_IGNORED, ArmFault.PROTECTIVE_STOP], ids=lambda fault: fault.value)
def test_an_arm_that_stops_following_latches_a_stop_within_one_control(robot, fault):
    """The arm stops following mid-push (its driver link drops the commands, or a protective
    stop): the pusher no longer moves as commanded, the executor latches a stop naming it."""
    driver_node, client, process = robot
    world = driver_node.driver.world
    push_at_speed(client, world, f"sim arm {fault.value}")
    injected = time.monotonic()
    driver_node.driver.inject_arm_fault(fault)
    wait_until(lambda: any(not v.any() for t, v in client.received(injected)), 1.0, what="a zero command")
    zero = next(t for t, v in client.received(injected) if not v.any())
    print(f"\n[sim arm {fault.value}] zero command {(zero - injected) * 1e3:.0f} ms after the fault "
          "(control: 2 s at 50 mm/s)")
    assert zero - injected < 1.0  # within one control of the MPC (1 s)
    wait_until(lambda: client.status.get("stop_latched") == "True", 2.0, what="the latched stop in diagnostics")
    assert client.status["latch_reason"].startswith("motion_check: pusher does not follow the commanded motion")
    assert world.pusher_held  # the gripper holds it: only the motion check can tell


def test_a_second_modbus_client_cannot_open_the_gripper_of_a_running_executor(robot):
    """Another stack's executor (a second client of the same simulated gripper) can neither open
    nor reset it: the pusher stays held and this executor sees no gripper problem."""
    driver_node, client, process = robot
    host, port = driver_node.driver.endpoints().gripper_tcp_address
    intruder = ModbusTcpClient(host, port=port, timeout=0.5, retries=0)
    assert intruder.connect()
    try:
        for registers in ([0x0900, 0, 0xFF00], [0, 0, 0]):  # open; reset
            response = intruder.write_registers(1000, registers, device_id=9)
            assert response.isError() and response.exception_code == 0x06, response
    finally:
        intruder.close()
    time.sleep(0.5)
    assert driver_node.driver.status().pusher_held and driver_node.driver.gripper.requests_refused == 2
    status = client.fresh_status()
    assert status["stop_latched"] == "False", status
