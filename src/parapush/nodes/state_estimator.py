"""OptiTrack state estimator node: NatNet rigid bodies -> ``scene_state`` (and TF, ``/diagnostics``).

A :class:`~parapush.estimation.natnet_client.NatNetClient` receives Motive's (or the simulated
driver's) frames, unicast or multicast; a :class:`~parapush.estimation.tracker.SceneTracker`
maps the rigid bodies to the scene's pusher and objects (``body_map_file``), transforms them
into the table frame (``table_transform_file``) and filters pose and velocity.

Topics
------
``scene_state`` (parareal_pushing/msg/SceneState, reliable, depth 10)
    Published on **every accepted mocap frame** (``publish_rate: 0``, the default), from the
    NatNet receive thread. Each frame is a new measurement, so this adds no latency and no
    aliasing (a 100 Hz timer over a 120 Hz stream would repeat and skip frames in a beat
    pattern). When no frame arrives for ``idle_publish_period`` (stream lost, ids unresolved)
    a timer publishes the current state anyway, so consumers see the bodies go stale instead
    of silence. ``publish_rate > 0`` publishes on a timer at that rate instead (to decimate
    for a slow link).

    * ``header.stamp``: the latency-corrected measurement time of the latest frame (its
      mid-exposure time, from the server's latency stamps plus ``extra_latency``), on the
      node's ROS clock.
    * ``header.frame_id``: ``frame_id`` (the table frame).
    * Objects in the scene file's order, with the scene's names and geometry.
    * ``valid``: observed within ``stale_timeout``. ``age``: s since the body's last valid
      observation, measured at publication time. A stale body keeps its last pose with zero
      velocity. **A body never observed** (or any body while the rigid-body ids are not
      resolved) is published with ``valid = false``, ``age = inf`` and its pose and
      velocity set to 0: the tracker's NaN is never put on the wire, and every field stays
      finite except that age (``msg_to_snapshot`` reads it back as ``inf``).

``/diagnostics`` (diagnostic_msgs/DiagnosticArray, every ``diagnostics_period``)
    One status for the stream (connection, update rate, latency, frame counters, malformed /
    lost / out-of-order packets, unknown rigid-body ids, stale bodies, id resolution) and
    one per body (valid, age, observations, missed frames, rejected poses, filter resets).

TF (when ``publish_tf`` and ``tf2_ros`` is importable)
    ``frame_id -> tf_prefix + <body>`` for every valid body (its latest measured 3D pose,
    centre offset applied, unfiltered; stamped as ``scene_state``) and the static
    ``frame_id -> mocap_frame_id`` (the calibrated mocap frame). Without tf2_ros one log line
    says TF is skipped; :func:`body_transforms` builds the messages either way.

Rigid-body ids
--------------
The mapping follows the stack's one rule (:func:`parapush.estimation.body_map.resolve_body_map`,
shared with the simulated driver): ``body_map_file: auto`` takes ``config/mocap/<scene
name>.yaml`` when it exists, else the generated mapping (pusher id 1, objects 2, 3, ...).
On start and whenever a frame carries Motive's "models changed" flag, a background thread
requests the model definitions, and :class:`~parapush.estimation.body_tracking.BodyTracking`
resolves the mapping's ``motive_name`` entries to streaming ids (it documents what happens
when they are missing, contradict the mapping or change). While the definitions contradict
the mapping every body is published stale and ``/diagnostics`` reports the error at ERROR.

Robustness
----------
Datagrams that do not decode (truncated, garbage) are counted by the client
(``malformed_packets``) and dropped. NatNet has no checksum, so a damaged datagram can also
decode into wrong numbers: :class:`~parapush.estimation.frame_gate.FrameGate` drops frames whose time stamps are
inconsistent (``frames_rejected_latency`` / ``frames_rejected_clock``) before they can
corrupt the tracker's clock map; damaged poses are left to the tracker's jump detection.
The receive thread never dies (the client catches and counts callback errors). It is the
client's own thread, not one of the executor's: a frame is read, tracked and published there, so
the socket is never read behind a callback of this node (the executor's timers only publish
heartbeats and diagnostics), and the process runs at the default priority while planning runs
lower (config/graph.yaml ``nice``), so a busy planner does not delay it.
:meth:`StateEstimatorNode.close` stops the client (DISCONNECT, thread joined, sockets
closed) and the resolver thread; ``main`` (:func:`run_node`) calls it on shutdown.
Parameters (generated from :class:`~parapush.estimation.estimator_settings.EstimatorSettings`,
plus ``scene_file``) are validated at start; a bad one raises :class:`ParameterError` naming it
(``main`` exits 2), including a body mapping that does not fit the scene, an unreadable
transform file, bad ports or addresses, and an interface this host does not have.

Times: the tracker runs on ``time.monotonic()`` (the client's receive times); a state's
monotonic measurement time ``t`` is put on the ROS clock as ``t + offset``, the offset
sampled at each publication by :class:`~parapush.estimation.clock_map.ClockMap` (a short
monotonic/ROS/monotonic bracket: a preempted thread does not shift the stamp). Heartbeats of
the same measurement carry the same stamp. Per-frame cost in the receive thread: ~1 ms (Python).
"""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Mapping

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import TransformStamped
from parareal_pushing.msg import SceneState
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from parapush.estimation.body_map import BodyMap, BodyMapError, resolve_body_map
from parapush.estimation.body_tracking import BodyTracking, StreamStatus
from parapush.estimation.clock_map import ClockMap
from parapush.estimation.estimator_settings import EstimatorSettings
from parapush.estimation.natnet_client import NatNetClient
from parapush.estimation.published_snapshots import call_now, publishable_snapshot, unknown_snapshot
from parapush.estimation.table_frame import TableFrameError, TablePose, TableTransform, load_table_transform
from parapush.graph import config_dir
from parapush.natnet import MocapFrame, NatNetTimeoutError
from parapush.nodes.conversions import report_to_status, snapshot_to_msg
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import (
    ParameterError,
    declare_scene_parameters,
    parameter_specs,
    settings_from_parameters,
)
from parapush.scene import SceneSnapshot
from parapush.settings import SettingsError
from parapush.yaml_file import config_file

try:  # tf2_ros is not part of every installation (e.g. the rclpy wheels)
    from tf2_ros import StaticTransformBroadcaster, TransformBroadcaster
except ImportError:  # pragma: no cover - depends on the machine
    StaticTransformBroadcaster = TransformBroadcaster = None

PARAMETERS = (
    *parameter_specs(EstimatorSettings),
)

#: How long one model-definitions request waits before it is retried, s.
MODELDEF_TIMEOUT_S = 1.0


def _transform_message(pose: TablePose, stamp: Time, parent: str, child: str) -> TransformStamped:
    message = TransformStamped()
    message.header.stamp = stamp
    message.header.frame_id = parent
    message.child_frame_id = child
    translation = message.transform.translation
    translation.x, translation.y, translation.z = (float(v) for v in pose.translation)
    rotation = message.transform.rotation
    rotation.x, rotation.y, rotation.z, rotation.w = (float(v) for v in pose.rotation)
    return message


def body_transforms(
    poses: Mapping[str, TablePose], stamp: Time, frame_id: str = "table", prefix: str = ""
) -> list[TransformStamped]:
    """TF ``frame_id -> prefix + body`` for each pose of :meth:`SceneTracker.body_poses`."""
    return [_transform_message(pose, stamp, frame_id, prefix + name) for name, pose in poses.items()]


def mocap_frame_transform(transform: TableTransform, stamp: Time, frame_id: str, mocap_frame_id: str):
    """The static TF ``frame_id -> mocap_frame_id`` (the mocap frame's pose in the table frame)."""
    return _transform_message(transform.mocap_frame_pose(), stamp, frame_id, mocap_frame_id)


def _parameter_error(error: SettingsError) -> ParameterError:
    return ParameterError(f"parameter '{error.path}': {error.problem}" if error.path else str(error))


class StateEstimatorNode(Node):
    """Publishes ``scene_state``, ``/diagnostics`` and TF from OptiTrack NatNet frames."""

    def __init__(self, **node_options) -> None:
        super().__init__("state_estimator", **node_options)
        values, self.scene = declare_scene_parameters(self, PARAMETERS)
        self.settings = settings = settings_from_parameters(EstimatorSettings, values)
        try:
            body_map, body_map_source = resolve_body_map(self.scene, settings.body_map_file, config_dir())
        except BodyMapError as error:
            raise ParameterError(f"parameter 'body_map_file': {error}") from None
        try:
            transform = load_table_transform(config_file(settings.table_transform_file))
        except (FileNotFoundError, TableFrameError) as error:
            raise ParameterError(f"parameter 'table_transform_file': {error}") from None
        try:
            self.client_settings = settings.client_settings()
        except SettingsError as error:
            raise _parameter_error(error) from None
        self.tracking = BodyTracking(self.scene, body_map, body_map_source, transform, settings)
        self.frame_id = settings.frame_id
        self.stale_timeout = settings.stale_timeout
        self._last_frame_time = -math.inf  # time.monotonic() the last frame was received
        self._publish_lock = threading.Lock()  # publications from the receive thread and the timers
        self._stamp_lock = threading.Lock()
        self._last_stamp = (math.nan, -math.inf)  # (monotonic, ROS) stamp of the last snapshot
        self._clock_map = ClockMap(lambda: self.get_clock().now().nanoseconds * 1e-9)
        self._published = 0
        self._last_publish = -math.inf  # time.monotonic() of the last scene_state
        self._closed = False

        self._state_publisher = self.create_publisher(SceneState, "scene_state", 10)
        self._diagnostics_publisher = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._tf_broadcaster = None
        if settings.publish_tf:
            if TransformBroadcaster is None:
                self.get_logger().info("tf2_ros is not installed: TF (bodies, mocap frame) is not published")
            else:
                self._tf_broadcaster = TransformBroadcaster(self)
                self._static_broadcaster = StaticTransformBroadcaster(self)
                self._static_broadcaster.sendTransform(
                    mocap_frame_transform(transform, self.get_clock().now().to_msg(), self.frame_id,
                                          settings.mocap_frame_id)
                )
        if settings.publish_rate > 0.0:
            self._publish_timer = self.create_timer(
                1.0 / settings.publish_rate, self._publish_state, callback_group=MutuallyExclusiveCallbackGroup()
            )
        else:
            self._publish_timer = self.create_timer(
                0.5 * settings.idle_publish_period, self._publish_if_idle,
                callback_group=MutuallyExclusiveCallbackGroup()
            )
        self._diagnostics_timer = self.create_timer(
            settings.diagnostics_period, self._publish_diagnostics, callback_group=MutuallyExclusiveCallbackGroup()
        )

        # The client last: everything it calls back into exists.
        self._resolve_request = threading.Event()
        self._resolve_request.set()  # on start
        self._stop = threading.Event()
        self.client = NatNetClient(self.client_settings, on_frame=self._on_frame)
        try:
            self.client.start()
        except OSError as error:
            self.destroy_timer(self._publish_timer)
            self.destroy_timer(self._diagnostics_timer)
            if isinstance(error, socket.gaierror):
                raise ParameterError(
                    f"parameter 'server_address': cannot resolve {settings.server_address!r} ({error})"
                ) from None
            raise ParameterError(
                f"parameter 'local_interface': cannot bind a UDP socket to {settings.local_interface!r} ({error})"
            ) from None
        self._resolver = threading.Thread(target=self._resolve_loop, name="state-estimator-modeldef", daemon=True)
        self._resolver.start()
        mode = "multicast" if self.client_settings.multicast else "unicast"
        self.get_logger().info(
            f"ready: scene '{self.scene.name}' ({len(self.scene.objects)} objects), NatNet {mode} from "
            f"{settings.server_address}:{settings.command_port}, publishing scene_state "
            + ("on every frame" if settings.publish_rate == 0.0 else f"at {settings.publish_rate:g} Hz")
            + f"; body map: {body_map_source}"
            + ("" if body_map.is_resolved else "; waiting for model definitions to resolve Motive names")
        )

    @property
    def body_map(self) -> BodyMap:
        return self.tracking.body_map

    @property
    def body_map_source(self) -> str:
        return self.tracking.body_map_source

    # -- frames (NatNet receive thread) ----------------------------------------------------------
    def _on_frame(self, frame: MocapFrame, receive_time: float) -> None:
        self._last_frame_time = receive_time
        if frame.models_changed:
            self._resolve_request.set()
        info = self.client.server_info
        frequency = info.high_resolution_clock_frequency if info is not None else 0
        if self.tracking.on_frame(frame, receive_time, frequency) and self.settings.publish_rate == 0.0:
            self._publish_state()

    # -- model definitions (resolver thread) ------------------------------------------------------
    def _resolve_loop(self) -> None:
        while not self._stop.is_set():
            if not self._resolve_request.wait(0.1):
                continue
            if self._stop.is_set():
                return
            self._resolve_request.clear()
            try:
                definitions = self.client.request_model_definitions(timeout_s=MODELDEF_TIMEOUT_S)
            except NatNetTimeoutError:
                self._resolve_request.set()  # retry: the server may not be up yet
                self._stop.wait(0.1)
                continue
            except Exception as error:  # noqa: BLE001 - keep the thread alive, report
                if self._stop.is_set():  # the client was stopped under the request: closing
                    return
                self.get_logger().error(f"model definitions request failed: {type(error).__name__}: {error}")
                self._resolve_request.set()
                self._stop.wait(0.5)
                continue
            self.apply_model_definitions(dict(definitions.names_by_id))

    def apply_model_definitions(self, names_by_id: Mapping[int, str]) -> None:
        """Resolve the mapping's Motive names with ``names_by_id`` (streaming id -> Motive name)."""
        outcome = self.tracking.apply_model_definitions(names_by_id)
        if outcome is None:
            return
        is_error, line = outcome
        if is_error:
            self.get_logger().error(f"parameter 'body_map_file': {line}")
        else:
            self.get_logger().info(line)

    # -- publication -------------------------------------------------------------------------------
    def current_snapshot(self) -> tuple[SceneSnapshot, float]:
        """(the snapshot to publish, restamped on the ROS clock; time.monotonic() it was taken at)."""
        tracker = self.tracking.tracker
        offset = self._clock_map.offset()
        now = time.monotonic()
        if tracker is None:
            return unknown_snapshot(self.scene, now + offset), now
        snapshot, now = call_now(tracker.snapshot, now)
        with self._stamp_lock:
            if snapshot.stamp == self._last_stamp[0]:  # same measurement (heartbeat): the same stamp
                ros_stamp = self._last_stamp[1]
            else:
                ros_stamp = snapshot.stamp + offset
                self._last_stamp = (snapshot.stamp, ros_stamp)
        return publishable_snapshot(snapshot, ros_stamp), now

    def _publish_state(self) -> None:
        with self._publish_lock:
            if self._closed or not self.context.ok():
                return
            snapshot, now = self.current_snapshot()
            message = snapshot_to_msg(snapshot, self.scene, frame_id=self.frame_id)
            try:
                self._state_publisher.publish(message)
            except Exception:
                if self.context.ok():
                    raise
                return  # shut down (Ctrl-C) between the check and the publication
            self._published += 1
            self._last_publish = now
            tracker = self.tracking.tracker
            if self._tf_broadcaster is not None and tracker is not None:
                poses, _ = call_now(tracker.body_poses, now)
                transforms = body_transforms(poses, message.header.stamp, self.frame_id, self.settings.tf_prefix)
                if transforms:
                    self._tf_broadcaster.sendTransform(transforms)

    def _publish_if_idle(self) -> None:
        if time.monotonic() - self._last_publish >= self.settings.idle_publish_period:
            self._publish_state()

    # -- diagnostics ---------------------------------------------------------------------------------
    def diagnostics(self, *, advance: bool = False) -> list[DiagnosticStatus]:
        """The stream status, then one status per body (:meth:`BodyTracking.reports`; ``advance``:
        this one is published)."""
        now = time.monotonic()
        info = self.client.server_info
        stream = StreamStatus(
            endpoint=f"{self.client_settings.server_address}:{self.client_settings.command_port}",
            multicast=self.client_settings.multicast,
            connected=self.client.connected,
            server=None if info is None else f"{info.application_name} (NatNet {info.natnet_version})",
            stats=self.client.stats(),
            silence_s=now - self._last_frame_time,
            published_states=self._published,
        )
        reports = self.tracking.reports(self.get_name(), stream, now, advance=advance)
        return [report_to_status(report) for report in reports]

    def _publish_diagnostics(self) -> None:
        array = DiagnosticArray(status=self.diagnostics(advance=True))
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics_publisher.publish(array)

    # -- shutdown ------------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the NatNet client (DISCONNECT, receive thread joined, sockets closed) and the
        resolver thread. Idempotent."""
        with self._publish_lock:
            self._closed = True
        self._stop.set()
        self._resolve_request.set()
        self.client.stop()
        if self._resolver.is_alive():
            self._resolver.join(timeout=2.0 * MODELDEF_TIMEOUT_S + 1.0)


def main(args=None) -> int:
    return run_node(StateEstimatorNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
