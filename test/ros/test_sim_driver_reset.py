"""The sim_driver node's ``~/reset_world`` service (std_srvs/Trigger), as a benchmark calls it
between goals: after a push over DDS (arm twists on the twist topic), the world's true state on
``/sim/true_state`` returns to the scene file's initial state, at rest, and the world runs on."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import rclpy
import yaml
from geometry_msgs.msg import TwistStamped
from parareal_pushing.msg import SceneState
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

from parapush.graph import config_dir
from parapush.nodes.conversions import msg_to_snapshot
from parapush.nodes.sim_driver import SimDriverNode


@pytest.fixture
def driver_node(tmp_path, ros_context, spinning):
    """The sim_driver node on an ephemeral NatNet port, the pusher held rigidly (no gripper)."""
    settings = yaml.safe_load((config_dir() / "sim_world.yaml").read_text())
    settings["mocap"]["server"]["command_port"] = 0
    settings["gripper"]["coupling"] = "rigid"
    path = tmp_path / "sim_world.yaml"
    path.write_text(yaml.safe_dump(settings))
    node = SimDriverNode(context=ros_context, parameter_overrides=[
        Parameter("settings_file", value=str(path)), Parameter("true_state_rate", value=50.0)])
    spinning.add(node)
    try:
        yield node
    finally:
        node.close()


class TrueStates:
    """The latest ``/sim/true_state`` as a state vector (the scene's layout), received over DDS."""

    def __init__(self, node, scene) -> None:
        self.scene = scene
        self.lock = threading.Lock()
        self.latest: np.ndarray | None = None
        self.count = 0
        node.create_subscription(SceneState, "/sim/true_state", self._on_state, 10)

    def _on_state(self, message: SceneState) -> None:
        state = msg_to_snapshot(message, self.scene).state
        with self.lock:
            self.latest, self.count = state, self.count + 1

    def after(self, count: int, timeout: float = 10.0) -> np.ndarray:
        """The first state received after the ``count``-th one."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                if self.count > count:
                    return self.latest.copy()
            assert time.monotonic() < deadline, "no /sim/true_state in time"
            time.sleep(0.01)

    def next(self, timeout: float = 10.0) -> np.ndarray:
        with self.lock:
            count = self.count
        return self.after(count, timeout)


def push(tester, publisher, velocity: tuple[float, float], duration: float) -> None:
    """Stream table-frame twists at 50 Hz for ``duration`` s (as the executor does), then stop."""
    end = time.monotonic() + duration
    while time.monotonic() < end:
        message = TwistStamped()
        message.header.stamp = tester.get_clock().now().to_msg()
        message.header.frame_id = "table"
        message.twist.linear.x, message.twist.linear.y = velocity
        publisher.publish(message)
        time.sleep(0.02)


def test_reset_world_returns_the_pushed_world_to_the_scene_state(driver_node, ros_context, spinning):
    scene = driver_node.scene
    tester = spinning.add(rclpy.create_node("reset_tester", context=ros_context))
    states = TrueStates(tester, scene)
    publisher = tester.create_publisher(TwistStamped, "/servo_node/delta_twist_cmds", 10)
    client = tester.create_client(Trigger, "/sim_driver/reset_world")
    assert client.wait_for_service(timeout_sec=10.0)
    deadline = time.monotonic() + 10.0
    while publisher.get_subscription_count() < 1:
        assert time.monotonic() < deadline, "the driver's arm did not match the twist publisher"
        time.sleep(0.05)
    initial = states.next()
    layout = scene.layout
    expected = layout.compose(np.asarray(scene.pusher.position), np.array([spec.pose for spec in scene.objects]))
    np.testing.assert_allclose(initial, expected, atol=1e-3)

    # push towards the target: the pusher (and the target) move away from the initial state
    target = np.asarray(scene.objects[scene.target_index].pose[:2])
    direction = target - np.asarray(scene.pusher.position)
    direction /= np.linalg.norm(direction)
    push(tester, publisher, tuple(0.08 * direction), 1.5)
    time.sleep(0.3)  # the arm halts (command timeout) and the world settles
    pushed = states.next()
    moved = float(np.linalg.norm(pushed[:2] - initial[:2]))
    # 120 mm commanded over 1.5 s of wall clock; a quarter of it is a generous bound for a loaded
    # machine (late twists let the arm's command timeout halt it); a dead arm moves 0 mm
    assert moved > 0.03, f"generous bound for a loaded machine: the pusher moved only {moved * 1000:.1f} mm of 120"

    future = client.call_async(Trigger.Request())
    deadline = time.monotonic() + 10.0
    while not future.done():
        assert time.monotonic() < deadline, "reset_world did not answer"
        time.sleep(0.01)
    response = future.result()
    assert response.success, response.message
    assert "reset" in response.message

    with states.lock:
        count = states.count
    after = states.after(count + 1)  # a state certainly published after the reset
    np.testing.assert_allclose(after, expected, atol=1e-3)
    world_time = driver_node.driver.world.time
    time.sleep(0.5)
    np.testing.assert_allclose(states.next(), expected, atol=1e-3)  # at rest
    assert driver_node.driver.world.time > world_time, "the world does not run after the reset"
    assert driver_node.driver.world.pusher_held  # rigid coupling: held again

    # the arm still follows twists after the reset
    push(tester, publisher, tuple(0.08 * direction), 0.5)
    time.sleep(0.2)
    moved = float(np.linalg.norm(states.next()[:2] - expected[:2]))
    assert moved > 0.01, f"generous bound for a loaded machine: the pusher moved {moved * 1000:.1f} mm of 40 commanded"
