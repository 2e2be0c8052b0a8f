"""From NatNet mocap frames to the planner's scene state: the OptiTrack scene tracker.

:class:`SceneTracker` sits between the NatNet client and the state-estimator node. For
every frame it

1. drops duplicates and out-of-order frames (UDP), counts dropped frame numbers, and
   recognises a restarted stream (frame numbers jumping back);
2. stamps the frame on the local clock: ``receive_time - latency`` (latency when known),
   de-jittered with the server's frame timestamp (:mod:`parapush.estimation.frame_clock`);
3. maps each rigid body id to its scene body (:mod:`parapush.estimation.body_map`), counts
   ids it does not know, ignores bodies whose ``tracking_valid`` is false or whose pose is
   not a pose (NaN, non-unit quaternion);
4. transforms the pose into the table frame and projects it to (x, y, yaw)
   (:mod:`parapush.estimation.table_frame`), and feeds it to the body's velocity filter
   (:mod:`parapush.estimation.velocity_filter`), re-initialising the filter when the body
   comes back after more than ``reinitialize_after`` s.

:meth:`SceneTracker.snapshot` reports the scene at the time of the latest frame with every
body's validity and age. A body not seen for more than ``stale_timeout`` is *stale*: its
flag is False, its age keeps growing with ``now``, its pose is its last estimate and its
velocity is reported as 0 (never extrapolated). A body never seen has NaN pose and velocity
and an infinite age. If the whole stream stops, every body goes stale as ``now`` advances.

All times are in s on one local clock (e.g. ``time.monotonic()``): ``receive_time``,
``now`` and the snapshot stamps. The public methods are thread-safe (the client thread may
call :meth:`update` while a timer calls :meth:`snapshot`).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from parapush.estimation.body_map import PUSHER_BODY, BodyMap, BodyMapEntry
from parapush.estimation.frame_clock import FrameClock
from parapush.estimation.table_frame import TablePose, TableTransform
from parapush.estimation.velocity_filter import FilterEvent, PoseFilterSettings, PoseVelocityFilter
from parapush.scene import Scene, SceneSnapshot, wrap_angle
from parapush.settings import check_settings, setting

if TYPE_CHECKING:
    from parapush.natnet import MocapFrame


@dataclass(frozen=True)
class TrackerSettings:
    """Settings of :class:`SceneTracker`.

    Attributes:
        stale_timeout: a body not tracked for longer than this (s) is reported stale.
        reinitialize_after: a body tracked again after a gap longer than this (s) restarts
            its velocity filter at the new pose; after a shorter gap the filter predicts
            across it.
        pose_filter: the velocity filter's noise model.
        use_server_clock: de-jitter stamps with the server frame timestamps.
        clock_window: window of the server-to-local clock offset estimate, s.
        stream_restart_jump: a server timestamp this much (s) earlier than the previous one
            means the server restarted (the clock map starts again).
        stream_restart_frames: a frame number this many frames below the previous one means
            the stream restarted (the frame is used); a smaller step back is an out-of-order
            frame (dropped).
        rate_window: window of the update-rate and mean-latency diagnostics, s.
    """

    stale_timeout: float = setting(0.1, "time without a valid observation after which a body is stale", unit="s",
                                   minimum=0.001, maximum=10.0)
    reinitialize_after: float = setting(0.5, "gap after which a body's velocity filter restarts", unit="s",
                                        minimum=0.001, maximum=60.0)
    pose_filter: PoseFilterSettings = field(default_factory=PoseFilterSettings)
    use_server_clock: bool = setting(True, "de-jitter stamps with the server's frame timestamps")
    clock_window: float = setting(2.0, "window of the server-to-local clock offset estimate", unit="s", above=0.0)
    stream_restart_jump: float = setting(1.0, "a server timestamp this much earlier than the previous one means "
                                         "the server restarted", unit="s", above=0.0)
    stream_restart_frames: int = setting(120, "a frame number this many frames below the previous one means the "
                                         "stream restarted", minimum=1)
    rate_window: float = setting(1.0, "window of the update-rate and mean-latency diagnostics", unit="s", above=0.0)

    def __post_init__(self) -> None:
        check_settings(self)
        if not isinstance(self.pose_filter, PoseFilterSettings):
            raise ValueError(
                f"pose_filter: expected PoseFilterSettings, got {type(self.pose_filter).__name__}"
            )


@dataclass(frozen=True)
class BodyDiagnostics:
    """Counters of one scene body.

    Attributes:
        name: scene body name.
        rigid_body_id: its Motive streaming id.
        valid: tracked within the stale timeout.
        age: s since its last valid observation (inf if never seen).
        observations: valid observations used.
        missed_frames: accepted frames without a valid observation of the body (absent,
            tracking_valid false or invalid pose).
        invalid_poses: observations rejected as not a pose (non-finite, non-unit quaternion,
            upside down).
        reinitializations: filter restarts after a gap longer than reinitialize_after.
        jump_resets: filter restarts because a measurement jumped (marker swap, body moved).
        mean_error: the last mean marker error Motive reported, m (NaN if never).
    """

    name: str
    rigid_body_id: int
    valid: bool
    age: float
    observations: int
    missed_frames: int
    invalid_poses: int
    reinitializations: int
    jump_resets: int
    mean_error: float


@dataclass(frozen=True)
class TrackerDiagnostics:
    """Stream-level counters and per-body diagnostics at one instant.

    Attributes:
        frames_received: frames passed to update (all of them).
        frames_used: frames accepted (in order).
        frames_out_of_order: frames dropped as duplicate or older than the previous one.
        frames_stamp_not_increasing: newer frames dropped because their measurement time
            (receive time - latency) did not follow the previous frame's.
        frames_dropped: frame numbers skipped by the stream (lost UDP packets, server drops).
        stream_restarts: frame numbers jumping back (server restarted).
        frames_with_unknown_ids: frames carrying a rigid-body id the mapping does not know.
        unknown_ids: those ids, sorted.
        duplicate_ids: rigid bodies dropped because their id appeared twice in one frame.
        update_rate: accepted frames per second over the rate window, Hz (0 if < 2 frames).
        latency_last: latency passed with the last accepted frame, s (None if unknown).
        latency_mean: mean of the known latencies over the rate window, s (None if none).
        stale_bodies: scene bodies currently not valid (including never seen).
        never_seen_bodies: scene bodies never observed.
        bodies: per-body diagnostics, pusher first, then the objects in scene order.
    """

    frames_received: int
    frames_used: int
    frames_out_of_order: int
    frames_stamp_not_increasing: int
    frames_dropped: int
    stream_restarts: int
    frames_with_unknown_ids: int
    unknown_ids: tuple[int, ...]
    duplicate_ids: int
    update_rate: float
    latency_last: float | None
    latency_mean: float | None
    stale_bodies: tuple[str, ...]
    never_seen_bodies: tuple[str, ...]
    bodies: tuple[BodyDiagnostics, ...]

    def summary(self) -> str:
        """One line for a log."""
        latency = "unknown" if self.latency_mean is None else f"{1e3 * self.latency_mean:.1f} ms"
        stale = ", ".join(self.stale_bodies) if self.stale_bodies else "none"
        return (
            f"{self.update_rate:.1f} Hz, latency {latency}, stale: {stale}, "
            f"frames used {self.frames_used}/{self.frames_received} "
            f"(out of order {self.frames_out_of_order}, stamp not increasing "
            f"{self.frames_stamp_not_increasing}, dropped {self.frames_dropped}, "
            f"with unknown ids {self.frames_with_unknown_ids}: {list(self.unknown_ids)})"
        )


class _BodyTrack:
    """Filter and counters of one scene body."""

    def __init__(self, entry: BodyMapEntry, filter_settings: PoseFilterSettings) -> None:
        self.entry = entry
        self.pose_filter = PoseVelocityFilter(filter_settings)
        self.last_valid_time: float | None = None
        self.last_pose: TablePose | None = None
        self.observations = 0
        self.missed_frames = 0
        self.invalid_poses = 0
        self.reinitializations = 0
        self.jump_resets = 0
        self.mean_error = math.nan

    def observe(self, time: float, pose: TablePose, planar: np.ndarray, reinitialize_after: float) -> None:
        if self.last_valid_time is None:
            self.pose_filter.reset(time, planar)
        elif time - self.last_valid_time > reinitialize_after:
            self.pose_filter.reset(time, planar)
            self.reinitializations += 1
        elif self.pose_filter.update(time, planar) is FilterEvent.JUMP_RESET:
            self.jump_resets += 1
        self.last_valid_time = time
        self.last_pose = pose
        self.observations += 1

    def age(self, now: float) -> float:
        return math.inf if self.last_valid_time is None else now - self.last_valid_time


class SceneTracker:
    """Tracks the pusher and the objects of ``scene`` from mocap frames.

    Args:
        scene: the scene (object order = state order).
        body_map: mocap body mapping; validated against the scene, every entry needs an id
            (resolve Motive names first with :meth:`BodyMap.resolve_ids`).
        table_transform: mocap -> table transform.
        settings: tracker settings (defaults if None).
    Raises:
        BodyMapError: if the mapping does not fit the scene or lacks ids.
    """

    def __init__(
        self,
        scene: Scene,
        body_map: BodyMap,
        table_transform: TableTransform,
        settings: TrackerSettings | None = None,
    ) -> None:
        self.scene = scene
        self.settings = settings if settings is not None else TrackerSettings()
        self.table_transform = table_transform
        body_map.validate_for(scene)
        by_id = body_map.entries_by_id()
        self.body_map = body_map
        self._tracks = [_BodyTrack(body_map.entry(PUSHER_BODY), self.settings.pose_filter)] + [
            _BodyTrack(body_map.entry(name), self.settings.pose_filter) for name in scene.object_names
        ]
        self._tracks_by_id = {body_id: self._track_of(entry.body) for body_id, entry in by_id.items()}
        self._clock = FrameClock(self.settings.clock_window, self.settings.stream_restart_jump)
        self._lock = threading.Lock()
        self._last_frame_number: int | None = None
        self._last_measurement_time: float | None = None
        self._frames_received = 0
        self._frames_used = 0
        self._frames_out_of_order = 0
        self._frames_stamp_not_increasing = 0
        self._frames_dropped = 0
        self._stream_restarts = 0
        self._frames_with_unknown_ids = 0
        self._unknown_ids: set[int] = set()
        self._duplicate_ids = 0
        self._receive_times: deque[float] = deque()
        self._latencies: deque[tuple[float, float]] = deque()
        self._latency_last: float | None = None

    def _track_of(self, body: str) -> _BodyTrack:
        return next(track for track in self._tracks if track.entry.body == body)

    @property
    def body_names(self) -> tuple[str, ...]:
        """Scene bodies in report order: pusher, then the objects in state order."""
        return tuple(track.entry.body for track in self._tracks)

    # -- input ---------------------------------------------------------------------------------
    def update(self, frame: MocapFrame, receive_time: float, latency: float | None = None) -> bool:
        """Incorporate one mocap frame.

        Args:
            frame: the decoded NatNet frame.
            receive_time: local time the frame was received, s.
            latency: exposure -> receipt latency of the frame, s, when known (e.g.
                :func:`parapush.natnet.frame_latency_s`); the frame is stamped
                ``receive_time - latency``.
        Returns:
            True if the frame was used, False if it was dropped: a duplicate or out-of-order
            frame number, or a measurement time not after the previous frame's (see
            :class:`TrackerDiagnostics` for the counters).
        Raises:
            ValueError: if receive_time is not finite or latency is negative or not finite.
        """
        if not math.isfinite(receive_time):
            raise ValueError(f"receive_time: must be finite, got {receive_time!r}")
        if latency is not None and (not math.isfinite(latency) or latency < 0.0):
            raise ValueError(f"latency: must be finite and >= 0 s (or None), got {latency!r}")
        with self._lock:
            self._frames_received += 1
            frame_number = int(frame.frame_number)
            last_number = self._last_frame_number
            if last_number is not None and frame_number <= last_number:
                if last_number - frame_number < self.settings.stream_restart_frames:
                    self._frames_out_of_order += 1
                    return False
                self._stream_restarts += 1
            elif last_number is not None and frame_number > last_number + 1:
                self._frames_dropped += frame_number - last_number - 1
            self._last_frame_number = frame_number
            local_stamp = receive_time - (latency if latency is not None else 0.0)
            if self.settings.use_server_clock:
                measurement_time = self._clock.measurement_time(float(frame.timestamp), local_stamp)
            else:
                measurement_time = local_stamp
            if self._last_measurement_time is not None and measurement_time <= self._last_measurement_time:
                # A newer frame stamped no later than the previous one: its latency grew by more
                # than the time between the two receipts (or the clock offset estimate stepped
                # down). Which stamp is wrong is unknown; the frame is counted and dropped.
                self._frames_stamp_not_increasing += 1
                return False
            self._last_measurement_time = measurement_time
            self._frames_used += 1
            self._record_timing(receive_time, latency)
            self._observe_bodies(frame, measurement_time)
            return True

    def _record_timing(self, receive_time: float, latency: float | None) -> None:
        horizon = receive_time - self.settings.rate_window
        self._receive_times.append(receive_time)
        while self._receive_times[0] < horizon:
            self._receive_times.popleft()
        self._latency_last = latency
        if latency is not None:
            self._latencies.append((receive_time, latency))
        while self._latencies and self._latencies[0][0] < horizon:
            self._latencies.popleft()

    def _observe_bodies(self, frame: MocapFrame, time: float) -> None:
        seen_ids: set[int] = set()
        observed: set[int] = set()
        unknown = False
        for body in frame.rigid_bodies:
            if body.id in seen_ids:
                self._duplicate_ids += 1
                continue
            seen_ids.add(body.id)
            track = self._tracks_by_id.get(body.id)
            if track is None:
                self._unknown_ids.add(int(body.id))
                unknown = True
                continue
            track.mean_error = float(body.mean_error)
            if not body.tracking_valid:
                continue
            entry = track.entry
            try:
                pose = self.table_transform.body_pose(
                    body.position, body.orientation, entry.centre_offset, entry.yaw_offset
                )
                # The state has no pusher yaw: its orientation (the arm's tool, possibly far
                # from upright) must neither reject the pose nor trigger a yaw jump reset.
                planar = np.array([*pose.translation[:2], 0.0]) if entry.is_pusher else pose.planar
            except ValueError:
                track.invalid_poses += 1
                continue
            track.observe(time, pose, planar, self.settings.reinitialize_after)
            observed.add(id(track))
        for track in self._tracks:
            if id(track) not in observed:
                track.missed_frames += 1
        if unknown:
            self._frames_with_unknown_ids += 1

    # -- output --------------------------------------------------------------------------------
    def snapshot(self, now: float) -> SceneSnapshot:
        """The scene state at the latest frame's measurement time, with validity and ages.

        Args:
            now: current local time, s (the clock of ``receive_time``).
        Returns:
            a SceneSnapshot with ``stamp`` = latest frame's measurement time (``now`` before
            the first frame); valid bodies are extrapolated to the stamp from their last
            observation (at most ``stale_timeout`` before it); stale bodies keep their last
            pose with zero velocity; never-seen bodies are NaN. Yaw is wrapped to [-pi, pi).
        Raises:
            ValueError: if ``now`` precedes the latest frame's measurement time (a different
                clock than receive_time's).
        """
        with self._lock:
            stamp = self._check_now(now)
            layout = self.scene.layout
            poses = np.empty((len(self._tracks), 3))
            velocities = np.empty((len(self._tracks), 3))
            valid = np.empty(len(self._tracks), dtype=bool)
            ages = np.empty(len(self._tracks))
            for index, track in enumerate(self._tracks):
                ages[index] = track.age(now)
                valid[index] = ages[index] <= self.settings.stale_timeout
                if track.last_valid_time is None:
                    poses[index] = velocities[index] = math.nan
                elif valid[index]:
                    poses[index], velocities[index] = track.pose_filter.predict(
                        max(stamp, track.last_valid_time)
                    )
                else:
                    poses[index], velocities[index] = track.pose_filter.pose, 0.0
            poses[:, 2] = wrap_angle(poses[:, 2])
            state = layout.compose(poses[0, :2], poses[1:], velocities[0, :2], velocities[1:])
            return SceneSnapshot(
                stamp=stamp,
                object_names=self.scene.object_names,
                state=state,
                pusher_valid=bool(valid[0]),
                object_valid=valid[1:],
                pusher_age=float(ages[0]),
                object_age=ages[1:],
            )

    def body_poses(self, now: float) -> dict[str, TablePose]:
        """Latest measured table-frame pose (3D, centre offset applied, unfiltered) of every
        body valid at ``now``: what the node publishes as TF table -> <body name>."""
        with self._lock:
            self._check_now(now)
            return {
                track.entry.body: track.last_pose
                for track in self._tracks
                if track.last_pose is not None and track.age(now) <= self.settings.stale_timeout
            }

    def diagnostics(self, now: float) -> TrackerDiagnostics:
        """Counters and per-body state at local time ``now`` (s)."""
        with self._lock:
            self._check_now(now)
            receive_times = [time for time in self._receive_times if time > now - self.settings.rate_window]
            if len(receive_times) >= 2 and now > receive_times[0]:
                rate = (len(receive_times) - 1) / (now - receive_times[0])
            else:
                rate = 0.0
            latencies = [value for time, value in self._latencies if time > now - self.settings.rate_window]
            bodies = tuple(
                BodyDiagnostics(
                    name=track.entry.body,
                    rigid_body_id=int(track.entry.rigid_body_id),
                    valid=track.age(now) <= self.settings.stale_timeout,
                    age=track.age(now),
                    observations=track.observations,
                    missed_frames=track.missed_frames,
                    invalid_poses=track.invalid_poses,
                    reinitializations=track.reinitializations,
                    jump_resets=track.jump_resets,
                    mean_error=track.mean_error,
                )
                for track in self._tracks
            )
            return TrackerDiagnostics(
                frames_received=self._frames_received,
                frames_used=self._frames_used,
                frames_out_of_order=self._frames_out_of_order,
                frames_stamp_not_increasing=self._frames_stamp_not_increasing,
                frames_dropped=self._frames_dropped,
                stream_restarts=self._stream_restarts,
                frames_with_unknown_ids=self._frames_with_unknown_ids,
                unknown_ids=tuple(sorted(self._unknown_ids)),
                duplicate_ids=self._duplicate_ids,
                update_rate=rate,
                latency_last=self._latency_last,
                latency_mean=float(np.mean(latencies)) if latencies else None,
                stale_bodies=tuple(body.name for body in bodies if not body.valid),
                never_seen_bodies=tuple(t.entry.body for t in self._tracks if t.last_valid_time is None),
                bodies=bodies,
            )

    def _check_now(self, now: float) -> float:
        if not math.isfinite(now):
            raise ValueError(f"now: must be finite, got {now!r}")
        last = self._last_measurement_time
        if last is None:
            return float(now)
        if now < last - 1e-9:
            raise ValueError(
                f"now = {now!r} s precedes the latest frame's measurement time {last!r} s; "
                "pass now and receive_time on the same clock"
            )
        return last
