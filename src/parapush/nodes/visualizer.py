"""Visualizer node: what RViz and Foxglove draw of the stack, in standard messages.

Subscribes ``scene_state`` (the estimator's) and ``planned_trajectory`` (the MPC's) and
publishes, in the table frame (``frame_id``):

* ``visualization/scene`` (``visualization_msgs/MarkerArray``): the table, the goal region,
  the obstacles, the objects at their estimated poses (stale ones grey) and the pusher (an
  ellipse as a CYLINDER scaled to its diameters, a polygon as a TRIANGLE_LIST prism);
* ``visualization/plan`` (MarkerArray): the chosen plan's target and pusher paths;
* ``visualization/executed_target_path``, ``visualization/executed_pusher_path``
  (``nav_msgs/Path``): where the target and the pusher have been, thinned;
* ``visualization/distance_to_goal`` (m), ``visualization/pusher_speed`` (m/s) and
  ``visualization/replan_time`` (s, :func:`parapush.reporting.run_signals.replan_time`),
  ``std_msgs/Float64``, for plots.

Scene markers, paths and the two state signals go out at most once per ``publish_period`` of
the states' stamps (at once when a stamp goes back, e.g. a restarted estimator). Scene states
are received as CDR bytes and read (deserialized, converted) at most once per ``state_period``
of their arrival: the estimator publishes on every mocap frame (120 Hz), more than the executed
paths (thinned to ``path_spacing``) and the displays need, and each conversion takes CPU from
the planner on a 2-core machine.
The goal region and the target are the scene file's. The markers are built by the ROS-free
:mod:`parapush.reporting.scene_markers`; this node only converts them.
"""

from __future__ import annotations

import math
import threading
import time

from geometry_msgs.msg import Point, PoseStamped
from nav_msgs.msg import Path
from parareal_pushing.msg import PredictedTrajectory, SceneState
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from std_msgs.msg import ColorRGBA, Float64, Header
from visualization_msgs.msg import Marker, MarkerArray

from parapush.estimation.rotations import yaw_quaternion
from parapush.nodes.conversions import (
    MessageError,
    msg_to_snapshot,
    seconds_to_time,
    time_to_seconds,
    trajectory_from_msg,
)
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import ParameterSpec, declare_scene_parameters
from parapush.planning.termination import TerminationCheck
from parapush.reporting.executed_path import ExecutedPath
from parapush.reporting.run_signals import pusher_speed, replan_time
from parapush.reporting.scene_markers import MarkerDescription, plan_markers, scene_markers

PARAMETERS = (
    ParameterSpec("frame_id", "table", "frame of the markers and paths (the table frame)", allow_empty=False),
    ParameterSpec("publish_period", 0.1, "s between scene markers, executed paths and state signals",
                  minimum=0.0, maximum=10.0),
    ParameterSpec("state_period", 0.0, "s after reading a scene state during which arriving ones are dropped unread "
                  "(0: every state is read)", minimum=0.0, maximum=10.0),
    ParameterSpec("path_spacing", 0.005, "m a body moves before its executed path gets a new pose",
                  minimum=0.0, maximum=1.0),
    ParameterSpec("max_path_poses", 2000, "poses kept per executed path (the oldest go first)",
                  minimum=2, maximum=100000),
)

_SHAPES = {"cube": Marker.CUBE, "cylinder": Marker.CYLINDER, "line_strip": Marker.LINE_STRIP,
           "triangle_list": Marker.TRIANGLE_LIST}


def marker_to_msg(description: MarkerDescription, header: Header) -> Marker:
    """A core :class:`MarkerDescription` as a ``visualization_msgs/Marker`` (action ADD)."""
    marker = Marker(header=header, ns=description.namespace, id=description.marker_id,
                    type=_SHAPES[description.shape], action=Marker.ADD)
    marker.pose.position.x, marker.pose.position.y, marker.pose.position.z = description.position
    orientation = marker.pose.orientation
    orientation.x, orientation.y, orientation.z, orientation.w = (float(v) for v in yaw_quaternion(description.yaw))
    marker.scale.x, marker.scale.y, marker.scale.z = description.scale
    marker.color = ColorRGBA(r=description.colour[0], g=description.colour[1], b=description.colour[2],
                             a=description.colour[3])
    marker.points = [Point(x=x, y=y, z=z) for x, y, z in description.points]
    return marker


def path_to_msg(path: ExecutedPath, frame_id: str) -> Path:
    """An :class:`ExecutedPath` as a ``nav_msgs/Path``, each pose stamped when it was observed."""
    message = Path()
    message.header.frame_id = frame_id
    for stamp, x, y, yaw in path.poses:
        pose = PoseStamped()
        pose.header.frame_id = frame_id
        pose.header.stamp = seconds_to_time(stamp)
        pose.pose.position.x, pose.pose.position.y = x, y
        orientation = pose.pose.orientation
        orientation.x, orientation.y, orientation.z, orientation.w = (float(v) for v in yaw_quaternion(yaw))
        message.poses.append(pose)
    if message.poses:
        message.header.stamp = message.poses[-1].header.stamp
    return message


class VisualizerNode(Node):
    """Converts the scene state and the plans into markers, paths and plot signals."""

    def __init__(self, **node_options) -> None:
        super().__init__("visualizer", **node_options)
        values, self.scene = declare_scene_parameters(self, PARAMETERS)
        self.frame_id = values["frame_id"]
        self.publish_period = values["publish_period"]
        self.termination = TerminationCheck(scene=self.scene) if self.scene.goal is not None else None
        self.target_path = ExecutedPath(values["path_spacing"], values["max_path_poses"])
        self.pusher_path = ExecutedPath(values["path_spacing"], values["max_path_poses"])
        self._lock = threading.Lock()
        self._last_published = None
        self._previous_plan_stamps = None
        self.scene_publisher = self.create_publisher(MarkerArray, "visualization/scene", 10)
        self.plan_publisher = self.create_publisher(MarkerArray, "visualization/plan", 10)
        self.target_path_publisher = self.create_publisher(Path, "visualization/executed_target_path", 10)
        self.pusher_path_publisher = self.create_publisher(Path, "visualization/executed_pusher_path", 10)
        self.distance_publisher = self.create_publisher(Float64, "visualization/distance_to_goal", 10)
        self.speed_publisher = self.create_publisher(Float64, "visualization/pusher_speed", 10)
        self.replan_publisher = self.create_publisher(Float64, "visualization/replan_time", 10)
        self.state_period = values["state_period"]
        self._last_read = -math.inf  # time.monotonic() the last scene state was read
        self.create_subscription(SceneState, "scene_state", self._on_state_data, 10, raw=True)
        self.create_subscription(PredictedTrajectory, "planned_trajectory", self._on_plan, 10)
        self.get_logger().info(f"ready: scene '{self.scene.name}', markers in frame '{self.frame_id}'")

    def _header(self, stamp) -> Header:
        return Header(stamp=stamp, frame_id=self.frame_id)

    def _on_state_data(self, data: bytes) -> None:
        """The subscription's callback: a state's CDR bytes, read unless one was read within ``state_period``."""
        now = time.monotonic()
        if now - self._last_read < self.state_period:
            return
        self._last_read = now
        self._on_state(deserialize_message(data, SceneState))

    def _on_state(self, message: SceneState) -> None:
        try:
            snapshot = msg_to_snapshot(message, self.scene)
        except MessageError as error:
            self.get_logger().warning(f"scene_state ignored: {error}", throttle_duration_sec=5.0)
            return
        layout = self.scene.layout
        target_x, target_y, target_yaw = snapshot.state[layout.object_pose(self.scene.target_index)]
        with self._lock:
            if snapshot.object_valid[self.scene.target_index]:
                self.target_path.add(snapshot.stamp, target_x, target_y, target_yaw)
            if snapshot.pusher_valid:
                self.pusher_path.add(snapshot.stamp, *snapshot.state[layout.pusher_position])
            if self._last_published is not None and 0.0 <= snapshot.stamp - self._last_published < self.publish_period:
                return
            self._last_published = snapshot.stamp
            target_path = path_to_msg(self.target_path, self.frame_id)
            pusher_path = path_to_msg(self.pusher_path, self.frame_id)
        header = self._header(message.header.stamp)
        self.scene_publisher.publish(
            MarkerArray(markers=[marker_to_msg(marker, header) for marker in scene_markers(self.scene, snapshot)])
        )
        self.target_path_publisher.publish(target_path)
        self.pusher_path_publisher.publish(pusher_path)
        if self.termination is not None:
            distance = self.termination.check(snapshot.state).distance_to_goal
            self.distance_publisher.publish(Float64(data=distance))
        self.speed_publisher.publish(Float64(data=pusher_speed(self.scene, snapshot.state)))

    def _on_plan(self, message: PredictedTrajectory) -> None:
        try:
            trajectory = trajectory_from_msg(message, self.scene)
            markers = plan_markers(self.scene, trajectory)
        except (MessageError, ValueError) as error:
            self.get_logger().warning(f"planned_trajectory ignored: {error}", throttle_duration_sec=5.0)
            return
        stamps = [time_to_seconds(state.header.stamp) for state in message.states]
        header = self._header(message.states[0].header.stamp)
        self.plan_publisher.publish(MarkerArray(markers=[marker_to_msg(marker, header) for marker in markers]))
        with self._lock:
            previous, self._previous_plan_stamps = self._previous_plan_stamps, stamps
        if previous is not None:
            self.replan_publisher.publish(Float64(data=replan_time(previous, stamps)))


def main(args=None) -> int:
    return run_node(VisualizerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
