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
requests the model definitions and resolves the mapping's ``motive_name`` entries to
streaming ids (:meth:`BodyMap.resolve_ids`). A mapping whose entries all have ids tracks from
the first frame; one given by names only waits for the definitions (frames are counted as
``frames_unresolved`` meanwhile). If the definitions contradict the mapping (a name Motive
does not stream, or an id that differs), tracking stops - poses of the wrong body are worse
than none - every body is published stale and ``/diagnostics`` reports the error at ERROR
level until a later definition (after "models changed") fits again. When the ids change the
tracker is rebuilt (filters restart; its counters restart too).

Robustness
----------
Datagrams that do not decode (truncated, garbage) are counted by the client
(``malformed_packets``) and dropped. NatNet has no checksum, so a damaged datagram can also
decode into wrong numbers: :class:`FrameGate` drops frames whose time stamps are
inconsistent (``frames_rejected_latency`` / ``frames_rejected_clock``) before they can
corrupt the tracker's clock map; damaged poses are left to the tracker's jump detection.
The receive thread never dies (the client catches and counts callback errors).
:meth:`StateEstimatorNode.close` stops the client (DISCONNECT, thread joined, sockets
closed) and the resolver thread; ``main`` (:func:`run_node`) calls it on shutdown.
Parameters are validated at start; a bad one raises :class:`ParameterError` naming it
(``main`` exits 2), including a body mapping that does not fit the scene, an unreadable
transform file, bad ports or addresses, and an interface this host does not have.

Times: the tracker runs on ``time.monotonic()`` (the client's receive times); a state's
monotonic measurement time ``t`` is put on the ROS clock as ``t + offset``, the offset
sampled at each publication by :class:`ClockMap` (a short monotonic/ROS/monotonic bracket,
so that a preempted thread does not shift the stamp). Heartbeats of the same measurement
carry the same stamp. Per-frame cost in the receive thread: ~1 ms (Python).
"""

from __future__ import annotations

import ipaddress
import math
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TransformStamped
from parareal_pushing.msg import SceneState
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.exceptions import InvalidParameterTypeException
from rclpy.node import Node

from parapush.estimation.body_map import AUTO_BODY_MAP, BodyMapError, resolve_body_map
from parapush.estimation.natnet_client import NatNetClient, NatNetClientSettings
from parapush.estimation.table_frame import TableFrameError, TablePose, TableTransform, load_table_transform
from parapush.estimation.tracker import SceneTracker, TrackerSettings
from parapush.estimation.velocity_filter import PoseFilterSettings
from parapush.graph import config_dir, resolve_scene_path
from parapush.natnet import MocapFrame, NatNetTimeoutError, NatNetVersion
from parapush.nodes.conversions import snapshot_to_msg
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import ParameterError, ParameterSpec, declare_parameters
from parapush.scene import Scene, SceneError, SceneSnapshot, load_scene

try:  # tf2_ros is not part of every installation (e.g. the rclpy wheels)
    from tf2_ros import StaticTransformBroadcaster, TransformBroadcaster
except ImportError:  # pragma: no cover - depends on the machine
    StaticTransformBroadcaster = TransformBroadcaster = None

PARAMETERS = (
    ParameterSpec("scene_file", "clutter_fig1.yaml", "scene YAML: a path or a name in config/scenes/"),
    ParameterSpec("body_map_file", AUTO_BODY_MAP,
                  "Motive rigid body -> scene body mapping: 'auto' (config/mocap/<scene name>.yaml if it exists, "
                  "else generated), '' (generated: pusher id 1, objects 2, 3, ... in scene order, Motive names = "
                  "scene names, pivots at the centres), or a file: a path or a name in config/"),
    ParameterSpec("table_transform_file", "table_transform.yaml",
                  "mocap -> table transform (mocap_to_table section): a path or a name in config/",
                  allow_empty=False),
    ParameterSpec("server_address", "127.0.0.1", "Motive host: IPv4 address or host name", allow_empty=False),
    ParameterSpec("command_port", 1510, "Motive command port (UDP)", minimum=1, maximum=65535),
    ParameterSpec("data_port", 0, "multicast data port (UDP); 0: the one the server announces (1511)",
                  minimum=0, maximum=65535),
    ParameterSpec("multicast", False, "receive frames by multicast (else unicast, on the command socket)"),
    ParameterSpec("multicast_group", "", "multicast group; empty: the one the server announces"),
    ParameterSpec("local_interface", "127.0.0.1",
                  "IPv4 address of the local interface facing the server (0.0.0.0: any)", allow_empty=False),
    ParameterSpec("natnet_version", "", "bitstream version to ask for, e.g. '4.1'; empty: the server's choice"),
    ParameterSpec("extra_latency", 0.0,
                  "s added to the server-reported latency (network transit); stamps are backdated by the sum",
                  minimum=0.0, maximum=0.1),
    ParameterSpec("max_latency", 0.1, "s; a frame whose server-reported latency is longer is dropped as corrupt",
                  minimum=0.001, maximum=10.0),
    ParameterSpec("clock_tolerance", 0.002,
                  "s; a frame whose timestamp and mid-exposure clock advance by more than this differently "
                  "from the previous frame's is dropped as corrupt (0: no check)", minimum=0.0, maximum=1.0),
    ParameterSpec("stale_timeout", 0.1, "s without a valid observation after which a body is stale",
                  minimum=0.001, maximum=10.0),
    ParameterSpec("reinitialize_after", 0.5, "s of gap after which a body's velocity filter restarts",
                  minimum=0.001, maximum=60.0),
    ParameterSpec("use_server_clock", True, "de-jitter stamps with the server's frame timestamps"),
    ParameterSpec("filter.position_noise", 0.0005, "m, std of one mocap position sample", minimum=1e-6, maximum=0.1),
    ParameterSpec("filter.yaw_noise", 0.005, "rad, std of one mocap yaw sample", minimum=1e-6, maximum=1.0),
    ParameterSpec("filter.acceleration_density", 1e-4, "m^2/s^3, random-acceleration density (more: less lag, "
                  "more velocity noise)", minimum=1e-9, maximum=100.0),
    ParameterSpec("filter.angular_acceleration_density", 1e-2, "rad^2/s^3, the same for yaw",
                  minimum=1e-9, maximum=1e4),
    ParameterSpec("filter.initial_speed_std", 0.2, "m/s, velocity std at (re)initialisation",
                  minimum=1e-6, maximum=100.0),
    ParameterSpec("filter.initial_yaw_rate_std", 2.0, "rad/s, yaw-rate std at (re)initialisation",
                  minimum=1e-6, maximum=1000.0),
    ParameterSpec("filter.jump_distance", 0.03, "m; a measurement this far from the prediction restarts the "
                  "filter (0: never)", minimum=0.0, maximum=10.0),
    ParameterSpec("filter.jump_angle", 0.5, "rad; the same for yaw (0: never)", minimum=0.0, maximum=10.0),
    ParameterSpec("publish_rate", 0.0, "Hz; 0: publish scene_state on every mocap frame, > 0: on a timer",
                  minimum=0.0, maximum=1000.0),
    ParameterSpec("idle_publish_period", 0.1, "s; with publish_rate 0, publish anyway after this long "
                  "without a frame (stale states instead of silence)", minimum=0.001, maximum=10.0),
    ParameterSpec("frame_id", "table", "frame of scene_state and parent of the TF frames", allow_empty=False),
    ParameterSpec("publish_tf", True, "broadcast TF frame_id -> bodies and -> mocap frame (needs tf2_ros)"),
    ParameterSpec("tf_prefix", "", "prefix of the bodies' TF frame names"),
    ParameterSpec("mocap_frame_id", "mocap", "TF name of the mocap (Motive) frame", allow_empty=False),
    ParameterSpec("diagnostics_period", 1.0, "s between diagnostics messages", minimum=0.05, maximum=60.0),
)

#: How long one model-definitions request waits before it is retried, s.
MODELDEF_TIMEOUT_S = 1.0


def resolve_config_path(value: str, parameter: str) -> Path:
    """A file given as a path, or as a file name in the package's ``config/``.

    Raises:
        ParameterError: naming ``parameter`` and where the file was looked for.
    """
    path = Path(value).expanduser()
    if path.is_file():
        return path
    candidate = config_dir() / value
    if not path.is_absolute() and candidate.is_file():
        return candidate
    raise ParameterError(f"parameter '{parameter}': {value!r} is neither a file nor a file in {candidate.parent}")


def seconds_to_stamp(seconds: float) -> Time:
    """ROS time of ``seconds`` (may be negative only in theory; clamped at 0)."""
    nanoseconds = max(int(round(seconds * 1e9)), 0)
    return Time(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)


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


class FrameGate:
    """Plausibility checks of a frame's time stamps before the tracker sees it.

    NatNet has no checksum: a damaged datagram may decode into wrong numbers. Wrong stamps
    are the most harmful (the tracker's clock map keeps a bad offset for its whole window,
    dropping or misdating every frame meanwhile), and they can be checked, since a frame
    carries the server's time twice (``timestamp`` in s and ``mid_exposure_ticks``) plus
    the receive and transmit ticks. A frame is rejected (reason, see :attr:`REASONS`) when

    * ``"latency"``: its stamps are out of order (mid-exposure <= data received <= transmit)
      or its latency (transmit - mid-exposure) exceeds ``max_latency`` s;
    * ``"clock"``: its timestamp and its mid-exposure ticks advanced by amounts differing by
      more than ``clock_tolerance`` s since the previous frame (0 disables). The previous
      frame is the last one checked, accepted or not, so a damaged frame costs itself and
      the one after it, and the check recovers by itself (e.g. after a server restart).

    Frames without high-resolution stamps (NatNet < 3, or no clock frequency) pass.
    """

    REASONS = ("latency", "clock")

    def __init__(self, max_latency: float, clock_tolerance: float) -> None:
        self.max_latency = float(max_latency)
        self.clock_tolerance = float(clock_tolerance)
        self._previous: MocapFrame | None = None

    def check(self, frame: MocapFrame, frequency: int) -> tuple[str | None, float | None]:
        """(reason to reject or None, the server-reported latency in s or None if unknown)."""
        previous, self._previous = self._previous, frame
        if frequency <= 0 or (frame.mid_exposure_ticks == 0 and frame.transmit_ticks == 0):
            return None, None
        received = frame.data_received_ticks or frame.mid_exposure_ticks
        if not frame.mid_exposure_ticks <= received <= frame.transmit_ticks:
            return "latency", None
        latency = (frame.transmit_ticks - frame.mid_exposure_ticks) / frequency
        if latency > self.max_latency:
            return "latency", None
        if (
            self.clock_tolerance > 0.0
            and previous is not None
            and previous.mid_exposure_ticks != 0
            and frame.timestamp > 0.0
            and previous.timestamp > 0.0
        ):
            ticks_step = (frame.mid_exposure_ticks - previous.mid_exposure_ticks) / frequency
            if not abs((frame.timestamp - previous.timestamp) - ticks_step) <= self.clock_tolerance:
                return "clock", None
        return None, latency


class ClockMap:
    """Offset of a clock (the node's ROS clock) from ``time.monotonic()``, s.

    Each call samples the pair monotonic / clock / monotonic and keeps the offset only when
    the bracket is short (``max_bracket`` s): a thread preempted between two reads (the GIL,
    a loaded machine) would otherwise shift a stamp by the whole preemption. When no try is
    short enough, the previous offset is kept (the best try's before any is short).
    """

    def __init__(self, clock, *, max_bracket: float = 0.0005, tries: int = 3) -> None:
        self._clock = clock
        self.max_bracket = max_bracket
        self.tries = tries
        self._offset: float | None = None

    def offset(self) -> float:
        best = (math.inf, 0.0)
        for _ in range(self.tries):
            before = time.monotonic()
            reading = self._clock()
            after = time.monotonic()
            if after - before < best[0]:
                best = (after - before, reading - 0.5 * (before + after))
            if after - before <= self.max_bracket:
                break
        if best[0] <= self.max_bracket or self._offset is None:
            self._offset = best[1]
        return self._offset


def publishable_snapshot(snapshot: SceneSnapshot, stamp: float) -> SceneSnapshot:
    """``snapshot`` restamped, never-seen bodies' NaN replaced by 0 (they are already invalid, age inf)."""
    state = np.nan_to_num(snapshot.state, nan=0.0, posinf=0.0, neginf=0.0)
    return replace(snapshot, state=state, stamp=stamp)


def unknown_snapshot(scene: Scene, stamp: float) -> SceneSnapshot:
    """Every body invalid, never seen: what is published while the rigid-body ids are unresolved."""
    count = len(scene.objects)
    return SceneSnapshot(
        stamp=stamp,
        object_names=scene.object_names,
        state=np.zeros(scene.layout.dimension),
        pusher_valid=False,
        object_valid=np.zeros(count, bool),
        pusher_age=math.inf,
        object_age=np.full(count, math.inf),
    )


def _call_now(method, now: float):
    """``(method(now), now)``; if a frame received after ``now`` was incorporated meanwhile (the
    tracker refuses a ``now`` before its latest measurement), again with a fresh time."""
    try:
        return method(now), now
    except ValueError:
        now = time.monotonic()
        return method(now), now


def _check_ipv4(value: str, parameter: str, *, multicast: bool = False) -> None:
    try:
        address = ipaddress.IPv4Address(value)
    except ValueError:
        raise ParameterError(f"parameter '{parameter}': expected an IPv4 address, got {value!r}") from None
    if multicast and not address.is_multicast:
        raise ParameterError(f"parameter '{parameter}': {value} is not a multicast address (224.0.0.0/4)")


def _resolve_host(value: str, parameter: str) -> str:
    if all(part.isdigit() for part in value.split(".")):  # looks numeric: must be a valid address
        _check_ipv4(value, parameter)
    try:
        return socket.gethostbyname(value)
    except OSError as error:
        raise ParameterError(f"parameter '{parameter}': cannot resolve {value!r} ({error})") from None


class StateEstimatorNode(Node):
    """Publishes ``scene_state``, ``/diagnostics`` and TF from OptiTrack NatNet frames."""

    def __init__(self, **node_options) -> None:
        super().__init__("state_estimator", **node_options)
        try:
            values = declare_parameters(self, PARAMETERS)
        except InvalidParameterTypeException as error:  # an override of the wrong type (not caught there)
            name = next((spec.name for spec in PARAMETERS if f"'{spec.name}'" in str(error)), "?")
            raise ParameterError(f"parameter '{name}': {error}") from None
        self.values = values
        try:
            self.scene = load_scene(resolve_scene_path(values["scene_file"]))
        except (SceneError, FileNotFoundError) as error:
            raise ParameterError(f"parameter 'scene_file': {error}") from None
        try:
            self.body_map, self.body_map_source = resolve_body_map(self.scene, values["body_map_file"], config_dir())
        except BodyMapError as error:
            raise ParameterError(f"parameter 'body_map_file': {error}") from None
        path = resolve_config_path(values["table_transform_file"], "table_transform_file")
        try:
            self.transform = load_table_transform(path)
        except TableFrameError as error:
            raise ParameterError(f"parameter 'table_transform_file': {error}") from None
        self.tracker_settings = self._tracker_settings(values)
        self.client_settings = self._client_settings(values)
        self.frame_id = values["frame_id"]
        self.stale_timeout = values["stale_timeout"]
        self._extra_latency = values["extra_latency"]
        self._gate = FrameGate(values["max_latency"], values["clock_tolerance"])
        self._frames_rejected = dict.fromkeys(FrameGate.REASONS, 0)
        self._last_rejected = 0
        self._last_frame_time = -math.inf  # time.monotonic() the last frame was received

        self._lock = threading.Lock()  # tracker swaps, resolution state
        self._publish_lock = threading.Lock()  # publications from the receive thread and the timers
        self._stamp_lock = threading.Lock()
        self._last_stamp = (math.nan, -math.inf)  # (monotonic, ROS) stamp of the last snapshot
        self._clock_map = ClockMap(lambda: self.get_clock().now().nanoseconds * 1e-9)
        self._tracker: SceneTracker | None = (
            SceneTracker(self.scene, self.body_map, self.transform, self.tracker_settings)
            if self.body_map.is_resolved
            else None
        )
        self._resolved_ids: dict[str, int] | None = None  # from MODELDEF; None until received
        self._resolution_error = ""
        self._model_definitions_received = 0
        self._tracker_rebuilds = 0
        self._frames_unresolved = 0
        self._published = 0
        self._last_publish = -math.inf  # time.monotonic() of the last scene_state
        self._last_malformed = 0
        self._closed = False

        self._state_publisher = self.create_publisher(SceneState, "scene_state", 10)
        self._diagnostics_publisher = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._tf_broadcaster = None
        if values["publish_tf"]:
            if TransformBroadcaster is None:
                self.get_logger().info("tf2_ros is not installed: TF (bodies, mocap frame) is not published")
            else:
                self._tf_broadcaster = TransformBroadcaster(self)
                self._static_broadcaster = StaticTransformBroadcaster(self)
                self._static_broadcaster.sendTransform(
                    mocap_frame_transform(self.transform, self.get_clock().now().to_msg(), self.frame_id,
                                          values["mocap_frame_id"])
                )
        self._publish_rate = values["publish_rate"]
        if self._publish_rate > 0.0:
            self._publish_timer = self.create_timer(
                1.0 / self._publish_rate, self._publish_state, callback_group=MutuallyExclusiveCallbackGroup()
            )
        else:
            self._idle_period = values["idle_publish_period"]
            self._publish_timer = self.create_timer(
                0.5 * self._idle_period, self._publish_if_idle, callback_group=MutuallyExclusiveCallbackGroup()
            )
        self._diagnostics_timer = self.create_timer(
            values["diagnostics_period"], self._publish_diagnostics, callback_group=MutuallyExclusiveCallbackGroup()
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
                    f"parameter 'server_address': cannot resolve {values['server_address']!r} ({error})"
                ) from None
            raise ParameterError(
                f"parameter 'local_interface': cannot bind a UDP socket to {values['local_interface']!r} ({error})"
            ) from None
        self._resolver = threading.Thread(target=self._resolve_loop, name="state-estimator-modeldef", daemon=True)
        self._resolver.start()
        mode = "multicast" if self.client_settings.multicast else "unicast"
        self.get_logger().info(
            f"ready: scene '{self.scene.name}' ({len(self.scene.objects)} objects), NatNet {mode} from "
            f"{values['server_address']}:{values['command_port']}, publishing scene_state "
            + ("on every frame" if self._publish_rate == 0.0 else f"at {self._publish_rate:g} Hz")
            + f"; body map: {self.body_map_source}"
            + ("" if self.body_map.is_resolved else "; waiting for model definitions to resolve Motive names")
        )

    # -- parameters ------------------------------------------------------------------------------
    @staticmethod
    def _tracker_settings(values) -> TrackerSettings:
        def infinite_if_zero(value: float) -> float:
            return math.inf if value == 0.0 else value

        try:
            return TrackerSettings(
                stale_timeout=values["stale_timeout"],
                reinitialize_after=values["reinitialize_after"],
                use_server_clock=values["use_server_clock"],
                pose_filter=PoseFilterSettings(
                    position_noise=values["filter.position_noise"],
                    yaw_noise=values["filter.yaw_noise"],
                    acceleration_density=values["filter.acceleration_density"],
                    angular_acceleration_density=values["filter.angular_acceleration_density"],
                    initial_speed_std=values["filter.initial_speed_std"],
                    initial_yaw_rate_std=values["filter.initial_yaw_rate_std"],
                    jump_distance=infinite_if_zero(values["filter.jump_distance"]),
                    jump_angle=infinite_if_zero(values["filter.jump_angle"]),
                ),
            )
        except ValueError as error:  # "<field>: <reason>", the field named as the parameter (less its group)
            field, _, reason = str(error).partition(": ")
            name = field if field in values else f"filter.{field}"
            raise ParameterError(f"parameter '{name}': {reason}") from None

    @staticmethod
    def _client_settings(values) -> NatNetClientSettings:
        _resolve_host(values["server_address"], "server_address")
        _check_ipv4(values["local_interface"], "local_interface")
        if values["multicast_group"]:
            _check_ipv4(values["multicast_group"], "multicast_group", multicast=True)
        version = None
        if values["natnet_version"]:
            try:
                version = NatNetVersion.parse(values["natnet_version"])
            except ValueError as error:
                raise ParameterError(f"parameter 'natnet_version': {error}") from None
            if version.major not in (3, 4):
                raise ParameterError(
                    f"parameter 'natnet_version': {values['natnet_version']!r}; the client decodes NatNet 3.x and 4.x"
                )
        if values["local_interface"] != "0.0.0.0":
            probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                probe.bind((values["local_interface"], 0))
            except OSError as error:
                raise ParameterError(
                    f"parameter 'local_interface': {values['local_interface']} is not an address of this host "
                    f"({error.strerror})"
                ) from None
            finally:
                probe.close()
        try:
            return NatNetClientSettings(
                server_address=values["server_address"],
                command_port=values["command_port"],
                local_address=values["local_interface"],
                multicast=values["multicast"],
                multicast_group=values["multicast_group"] or None,
                data_port=values["data_port"] or None,
                requested_version=version,
            )
        except ValueError as error:
            raise ParameterError(f"NatNet client parameters: {error}") from None

    # -- frames (NatNet receive thread) ----------------------------------------------------------
    def _on_frame(self, frame: MocapFrame, receive_time: float) -> None:
        self._last_frame_time = receive_time
        if frame.models_changed:
            self._resolve_request.set()
        info = self.client.server_info
        reason, latency = self._gate.check(frame, info.high_resolution_clock_frequency if info is not None else 0)
        if reason is not None:
            with self._lock:
                self._frames_rejected[reason] += 1
            return
        tracker = self._tracker
        if tracker is None:
            with self._lock:
                self._frames_unresolved += 1
            return
        if latency is not None:
            latency += self._extra_latency
        elif self._extra_latency > 0.0:
            latency = self._extra_latency
        if tracker.update(frame, receive_time, latency) and self._publish_rate == 0.0:
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
        """Resolve the mapping's Motive names with ``names_by_id`` (streaming id -> Motive name);
        rebuild the tracker if the ids changed, stop tracking if the definitions contradict it."""
        try:
            resolved = self.body_map.resolve_ids(names_by_id)
        except BodyMapError as error:
            with self._lock:
                self._model_definitions_received += 1
                repeated = self._resolution_error == str(error)
                self._resolution_error = str(error)
                self._resolved_ids = None
                self._tracker = None
            if not repeated:
                self.get_logger().error(
                    f"parameter 'body_map_file': the server's model definitions do not fit the mapping, "
                    f"tracking stopped: {error}"
                )
            return
        ids = {entry.body: int(entry.rigid_body_id) for entry in resolved.entries}
        with self._lock:
            self._model_definitions_received += 1
            recovered = bool(self._resolution_error)
            self._resolution_error = ""
            changed = self._resolved_ids != ids
            self._resolved_ids = ids
            current = self._tracker
            if current is None or {e.body: e.rigid_body_id for e in current.body_map.entries} != ids:
                self._tracker = SceneTracker(self.scene, resolved, self.transform, self.tracker_settings)
                if current is not None:
                    self._tracker_rebuilds += 1
        if changed or recovered:
            self.get_logger().info(
                "rigid-body ids from the model definitions: " + ", ".join(f"{b}={i}" for b, i in ids.items())
            )

    # -- publication -------------------------------------------------------------------------------
    def current_snapshot(self) -> tuple[SceneSnapshot, float]:
        """(the snapshot to publish, restamped on the ROS clock; time.monotonic() it was taken at)."""
        tracker = self._tracker
        offset = self._clock_map.offset()
        now = time.monotonic()
        if tracker is None:
            return unknown_snapshot(self.scene, now + offset), now
        snapshot, now = _call_now(tracker.snapshot, now)
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
            tracker = self._tracker
            if self._tf_broadcaster is not None and tracker is not None:
                poses, _ = _call_now(tracker.body_poses, now)
                transforms = body_transforms(poses, message.header.stamp, self.frame_id, self.values["tf_prefix"])
                if transforms:
                    self._tf_broadcaster.sendTransform(transforms)

    def _publish_if_idle(self) -> None:
        if time.monotonic() - self._last_publish >= self._idle_period:
            self._publish_state()

    # -- diagnostics ---------------------------------------------------------------------------------
    def diagnostics(self, *, advance: bool = False) -> list[DiagnosticStatus]:
        """The stream status, then one status per body (pusher first, objects in scene order).

        The stream is at WARN when packets were malformed or frames rejected since the last
        published status (``advance``: this one is published)."""
        now = time.monotonic()
        name = self.get_name()
        stats = self.client.stats()
        info = self.client.server_info
        connected = self.client.connected
        with self._lock:
            tracker = self._tracker
            resolution_error = self._resolution_error
            resolved_ids = self._resolved_ids
            received = self._model_definitions_received
            rebuilds = self._tracker_rebuilds
            unresolved = self._frames_unresolved
            rejected = dict(self._frames_rejected)
        published = self._published
        endpoint = f"{self.client_settings.server_address}:{self.client_settings.command_port}"
        stream = DiagnosticStatus(name=f"{name}: mocap stream", hardware_id=f"natnet://{endpoint}")
        values: dict[str, object] = {
            "connected": connected,
            "server": "none" if info is None else f"{info.application_name} (NatNet {info.natnet_version})",
            "mode": "multicast" if self.client_settings.multicast else "unicast",
        }
        tracker_diagnostics = _call_now(tracker.diagnostics, now)[0] if tracker is not None else None
        if tracker_diagnostics is not None:
            d = tracker_diagnostics
            values.update(
                update_rate_hz=f"{d.update_rate:.2f}",
                latency_mean_ms="unknown" if d.latency_mean is None else f"{1e3 * d.latency_mean:.3f}",
                latency_last_ms="unknown" if d.latency_last is None else f"{1e3 * d.latency_last:.3f}",
                stale_bodies=",".join(d.stale_bodies),
                never_seen_bodies=",".join(d.never_seen_bodies),
                unknown_ids=",".join(str(i) for i in d.unknown_ids),
                frames_with_unknown_ids=d.frames_with_unknown_ids,
                duplicate_ids=d.duplicate_ids,
                frames_used=d.frames_used,
                frames_out_of_order=d.frames_out_of_order,
                frames_stamp_not_increasing=d.frames_stamp_not_increasing,
                frames_dropped=d.frames_dropped,
                stream_restarts=d.stream_restarts,
            )
        values.update(
            packets_received=stats.packets_received,
            frames_received=stats.frames_received,
            frames_delivered=stats.frames_delivered,
            frames_lost=stats.frames_lost,
            stale_frames=stats.stale_frames,
            stream_resets=stats.stream_resets,
            malformed_packets=stats.malformed_packets,
            last_decode_error=stats.last_decode_error,
            foreign_packets=stats.foreign_packets,
            frames_before_server_info=stats.frames_before_server_info,
            ignored_packets=stats.ignored_packets,
            reconnects=stats.reconnects,
            callback_errors=stats.callback_errors,
            model_definitions_received=received,
            rigid_body_ids=",".join(f"{b}={i}" for b, i in (resolved_ids or {}).items())
            or ",".join(f"{e.body}={e.rigid_body_id}" for e in self.body_map.entries),
            ids_from="model definitions" if resolved_ids is not None else "body_map_file",
            body_map=self.body_map_source,
            resolution_error=resolution_error,
            frames_unresolved=unresolved,
            frames_rejected_latency=rejected["latency"],
            frames_rejected_clock=rejected["clock"],
            tracker_rebuilds=rebuilds,
            published_states=published,
        )
        stream.values = [KeyValue(key=key, value=str(value)) for key, value in values.items()]
        new_malformed = stats.malformed_packets - self._last_malformed
        new_rejected = sum(rejected.values()) - self._last_rejected
        if advance:  # what the next published status counts as new
            self._last_malformed = stats.malformed_packets
            self._last_rejected = sum(rejected.values())
        if not connected:
            stream.level, stream.message = DiagnosticStatus.ERROR, f"no NatNet server answering at {endpoint}"
        elif tracker_diagnostics is None:
            stream.level = DiagnosticStatus.ERROR
            stream.message = (
                f"not tracking: {resolution_error}" if resolution_error else "waiting for model definitions"
            )
        elif now - self._last_frame_time > self.stale_timeout:
            silent = now - self._last_frame_time
            stream.level = DiagnosticStatus.ERROR
            stream.message = "no mocap frames" + (f" for {silent:.2f} s" if math.isfinite(silent) else "")
        else:
            stream.level = DiagnosticStatus.OK
            stream.message = tracker_diagnostics.summary()
            if tracker_diagnostics.stale_bodies or tracker_diagnostics.unknown_ids or new_malformed or new_rejected:
                stream.level = DiagnosticStatus.WARN
            if new_malformed:
                stream.message += f"; {new_malformed} malformed packet(s) dropped"
            if new_rejected:
                stream.message += f"; {new_rejected} frame(s) with implausible stamps dropped"
        statuses = [stream]
        if tracker_diagnostics is not None:
            for body in tracker_diagnostics.bodies:
                status = DiagnosticStatus(
                    name=f"{name}: body {body.name}", hardware_id=f"rigid body {body.rigid_body_id}"
                )
                if body.valid:
                    status.level, status.message = DiagnosticStatus.OK, "tracked"
                elif math.isinf(body.age):
                    status.level, status.message = DiagnosticStatus.ERROR, "never seen"
                else:
                    status.level, status.message = DiagnosticStatus.WARN, f"stale for {body.age:.3f} s"
                status.values = [
                    KeyValue(key=key, value=str(value))
                    for key, value in (
                        ("valid", body.valid),
                        ("age", f"{body.age:.4f}"),
                        ("observations", body.observations),
                        ("missed_frames", body.missed_frames),
                        ("invalid_poses", body.invalid_poses),
                        ("reinitializations", body.reinitializations),
                        ("jump_resets", body.jump_resets),
                        ("mean_error_m", f"{body.mean_error:.6f}"),
                    )
                ]
                statuses.append(status)
        return statuses

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
