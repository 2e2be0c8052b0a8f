"""The visualizer node over real Fast DDS: scene states and plans in, markers, paths and signals out."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import rclpy
import yaml
from nav_msgs.msg import Path
from parareal_pushing.msg import PredictedTrajectory, SceneState
from rclpy.parameter import Parameter
from std_msgs.msg import Float64, Header
from visualization_msgs.msg import Marker, MarkerArray

from parapush.estimation.rotations import yaw_about_z
from parapush.nodes.conversions import state_to_msg, trajectory_to_msg
from parapush.nodes.visualizer import VisualizerNode, marker_to_msg
from parapush.reporting.scene_markers import STALE_COLOUR, TARGET_COLOUR, scene_markers
from parapush.scene import SceneSnapshot, load_scene, scene_from_dict

SCENE_DATA = {
    "name": "visualized",
    "pusher": {"position": [-0.1, 0.0]},
    "objects": [{"name": "puck", "pose": [0.0, 0.0, 0.0]},
                {"name": "crate", "shape": "box", "half_extents": [0.03, 0.05], "pose": [0.1, 0.2, 0.3]}],
    "obstacles": [{"name": "post", "pose": [-0.2, 0.2, 0.0]}],
    "goal": {"center": [0.2, 0.0], "radius": 0.04},
    "target": "puck",
}
OUTPUTS = {
    "visualization/scene": MarkerArray,
    "visualization/plan": MarkerArray,
    "visualization/executed_target_path": Path,
    "visualization/executed_pusher_path": Path,
    "visualization/distance_to_goal": Float64,
    "visualization/pusher_speed": Float64,
    "visualization/replan_time": Float64,
}


@pytest.fixture
def scene_path(tmp_path):
    path = tmp_path / "scene.yaml"
    path.write_text(yaml.safe_dump(SCENE_DATA))
    return path


class Probe:
    """Publishes scene_state and planned_trajectory; keeps everything the visualizer publishes."""

    def __init__(self, context):
        self.node = rclpy.create_node("probe", context=context)
        self.states = self.node.create_publisher(SceneState, "scene_state", 10)
        self.plans = self.node.create_publisher(PredictedTrajectory, "planned_trajectory", 10)
        self.lock = threading.Lock()
        self.received: dict[str, list] = {topic: [] for topic in OUTPUTS}
        for topic, message_type in OUTPUTS.items():
            self.node.create_subscription(message_type, topic, self.received[topic].append, 50)

    def wait_for(self, topic: str, count: int, timeout: float = 10.0) -> list:
        deadline = time.monotonic() + timeout
        while len(self.received[topic]) < count:
            assert time.monotonic() < deadline, f"{topic}: {len(self.received[topic])} of {count} messages"
            time.sleep(0.01)
        return self.received[topic]


def state_at(scene, step: int) -> np.ndarray:
    poses = np.array([spec.pose for spec in scene.objects], dtype=float)
    poses[0, 0] += 0.01 * step  # the target moves 1 cm per step
    return scene.layout.compose(np.array([-0.1 + 0.01 * step, 0.0]), poses, pusher_velocity=np.array([0.03, 0.04]))


def start(context, spinning, scene_path, publish_period: float = 0.0):
    node = VisualizerNode(context=context, parameter_overrides=[
        Parameter("scene_file", value=str(scene_path)), Parameter("publish_period", value=publish_period),
        Parameter("path_spacing", value=0.005)])
    probe = Probe(context)
    spinning.add(node, probe.node)
    deadline = time.monotonic() + 10.0
    publishers = [probe.states, probe.plans, node.scene_publisher, node.plan_publisher, node.target_path_publisher,
                  node.pusher_path_publisher, node.distance_publisher, node.speed_publisher, node.replan_publisher]
    while any(publisher.get_subscription_count() == 0 for publisher in publishers):
        assert time.monotonic() < deadline, "the visualizer and the probe did not match"
        time.sleep(0.02)
    return node, probe


def markers_by_key(array: MarkerArray) -> dict:
    return {(marker.ns, marker.id): marker for marker in array.markers}


def test_scene_markers_paths_and_signals_follow_the_states(ros_context, spinning, scene_path):
    scene = load_scene(scene_path)
    node, probe = start(ros_context, spinning, scene_path)
    for step in range(5):
        valid = [True, step < 4]  # the crate goes stale in the last state
        probe.states.publish(state_to_msg(state_at(scene, step), scene, stamp=100.0 + step, object_valid=valid))
        time.sleep(0.05)
    arrays = probe.wait_for("visualization/scene", 5)
    last = markers_by_key(arrays[-1])
    assert arrays[-1].markers[0].header.frame_id == "table"
    assert arrays[-1].markers[0].header.stamp.sec == 104
    state = state_at(scene, 4)
    puck = last[("objects", 0)]
    assert (puck.type, puck.pose.position.x, puck.pose.position.y) == (Marker.CYLINDER, state[2], state[3])
    crate = last[("objects", 1)]
    assert crate.type == Marker.CUBE
    assert yaw_about_z(np.array([crate.pose.orientation.x, crate.pose.orientation.y, crate.pose.orientation.z,
                                 crate.pose.orientation.w])) == pytest.approx(0.3)
    assert (crate.scale.x, crate.scale.y) == pytest.approx((0.06, 0.1))
    assert (crate.color.r, crate.color.g, crate.color.b, crate.color.a) == pytest.approx(STALE_COLOUR)
    assert (puck.color.r, puck.color.g, puck.color.b, puck.color.a) == pytest.approx(TARGET_COLOUR)
    assert {key[0] for key in last} == {"table", "goal", "obstacles", "objects", "pusher"}
    target_path = probe.wait_for("visualization/executed_target_path", 5)[-1]
    assert target_path.header.frame_id == "table"
    assert [pose.pose.position.x for pose in target_path.poses] == pytest.approx([0.0, 0.01, 0.02, 0.03, 0.04])
    pusher_path = probe.wait_for("visualization/executed_pusher_path", 5)[-1]
    assert [pose.pose.position.x for pose in pusher_path.poses] == pytest.approx([-0.1, -0.09, -0.08, -0.07, -0.06])
    distances = [message.data for message in probe.wait_for("visualization/distance_to_goal", 5)]
    assert distances == pytest.approx([0.2 - 0.01 * step for step in range(5)])
    assert probe.wait_for("visualization/pusher_speed", 5)[-1].data == pytest.approx(0.05)


def test_plan_markers_and_replan_time(ros_context, spinning, scene_path):
    scene = load_scene(scene_path)
    node, probe = start(ros_context, spinning, scene_path)
    trajectory = np.stack([state_at(scene, step) for step in range(4)])
    probe.plans.publish(trajectory_to_msg(trajectory, scene, start_stamp=50.0, durations=[0.5, 0.5, 0.5]))
    arrays = probe.wait_for("visualization/plan", 1)
    target, pusher = (markers_by_key(arrays[0])[("plan", index)] for index in (0, 1))
    assert target.type == Marker.LINE_STRIP and target.header.frame_id == "table"
    assert [point.x for point in target.points] == pytest.approx(trajectory[:, 2])
    assert [point.x for point in pusher.points] == pytest.approx(trajectory[:, 0])
    # The next plan 0.8 s after the first one's first control ended (50.5 s).
    probe.plans.publish(trajectory_to_msg(trajectory, scene, start_stamp=51.3, durations=[0.5, 0.5, 0.5]))
    assert probe.wait_for("visualization/replan_time", 1)[0].data == pytest.approx(0.8)
    assert len(probe.wait_for("visualization/plan", 2)) == 2


def test_scene_markers_are_throttled_by_the_state_stamps(ros_context, spinning, scene_path):
    scene = load_scene(scene_path)
    node, probe = start(ros_context, spinning, scene_path, publish_period=0.25)
    for stamp in (100.0, 100.1, 100.2, 100.3, 100.4, 50.0):  # the last: a restarted estimator's clock
        probe.states.publish(state_to_msg(state_at(scene, 0), scene, stamp=stamp))
        time.sleep(0.05)
    arrays = probe.wait_for("visualization/scene", 3)
    time.sleep(0.3)
    stamps = [array.markers[0].header.stamp.sec + 1e-9 * array.markers[0].header.stamp.nanosec for array in arrays]
    assert stamps == pytest.approx([100.0, 100.3, 50.0])


def test_a_polygon_becomes_a_triangle_list_marker_in_its_body_frame():
    scene = scene_from_dict({**SCENE_DATA, "objects": [
        {"name": "puck", "pose": [0.0, 0.0, 0.0]},
        {"name": "wedge", "shape": "polygon", "vertices": [[0, 0], [0.05, 0], [0, 0.03]], "pose": [0.1, 0.2, 0.3]}]})
    state = np.array([spec.pose for spec in scene.objects], dtype=float)
    snapshot = SceneSnapshot(0.0, scene.object_names, scene.layout.compose(np.array([-0.1, 0.0]), state))
    wedge = next(m for m in scene_markers(scene, snapshot) if (m.namespace, m.marker_id) == ("objects", 1))
    marker = marker_to_msg(wedge, Header(frame_id="table"))
    assert marker.type == Marker.TRIANGLE_LIST and len(marker.points) == len(wedge.points) == 3 * (2 + 2 * 3)
    assert (marker.scale.x, marker.scale.y, marker.scale.z) == (1.0, 1.0, 1.0)
    assert (marker.pose.position.x, marker.pose.position.y) == (0.1, 0.2)
    orientation = marker.pose.orientation
    assert yaw_about_z(np.array([orientation.x, orientation.y, orientation.z, orientation.w])) == pytest.approx(0.3)
    assert {(p.x, p.y) for p in marker.points} == {(0.0, 0.0), (0.05, 0.0), (0.0, 0.03)}
