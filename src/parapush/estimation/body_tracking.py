"""The state estimator's tracking state (ROS-free): which rigid-body ids the tracker follows
(resolved from the server's model definitions), the frame gate in front of the tracker, the
counters, and the diagnostics built from them as plain data
(:class:`~parapush.reporting.diagnostic_report.DiagnosticReport`).

Rigid-body ids: a mapping whose entries all have ids tracks from the first frame; one given by
Motive names only waits for the model definitions (frames are counted as ``frames_unresolved``
meanwhile). Definitions that contradict the mapping (a name Motive does not stream, an id that
differs) stop tracking until a later definition fits again; when the ids change the tracker
is rebuilt (its filters and counters restart).

Thread safety: frames come from the NatNet receive thread, definitions from a resolver
thread, reports from a timer; the tracker swap and the counters are guarded by one lock.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from parapush.estimation.body_map import BodyMap, BodyMapError
from parapush.estimation.estimator_settings import EstimatorSettings
from parapush.estimation.frame_gate import FrameGate
from parapush.estimation.natnet_client import NatNetClientStats
from parapush.estimation.published_snapshots import call_now
from parapush.estimation.table_frame import TableTransform
from parapush.estimation.tracker import SceneTracker, TrackerDiagnostics
from parapush.natnet import MocapFrame
from parapush.reporting.diagnostic_report import DiagnosticLevel, DiagnosticReport
from parapush.scene import Scene


@dataclass(frozen=True)
class StreamStatus:
    """What the NatNet client and the node report, for :meth:`BodyTracking.reports`.

    Attributes:
        endpoint: ``host:port`` of the server's command port.
        multicast: frames by multicast (else unicast).
        connected: a server answers.
        server: ``"<application> (NatNet <version>)"``, or None before the server's info came.
        stats: the client's counters.
        silence_s: time since the last frame was received, s (inf: none yet).
        published_states: scene states published so far.
    """

    endpoint: str
    multicast: bool
    connected: bool
    server: str | None
    stats: NatNetClientStats
    silence_s: float
    published_states: int = 0


class BodyTracking:
    """Args:
    scene: the scene whose bodies are tracked.
    body_map: rigid body -> scene body mapping; ``body_map_source`` says where it came from.
    transform: mocap -> table.
    settings: the tracker's settings, the frame gate's limits (``max_latency``,
        ``clock_tolerance``) and the ``extra_latency`` added to every frame's latency.
    """

    def __init__(
        self, scene: Scene, body_map: BodyMap, body_map_source: str, transform: TableTransform,
        settings: EstimatorSettings,
    ) -> None:
        self.scene, self.body_map, self.body_map_source, self.transform = scene, body_map, body_map_source, transform
        self.tracker_settings = settings.tracker_settings()
        self._gate = FrameGate(settings.max_latency, settings.clock_tolerance)
        self._extra_latency = settings.extra_latency
        self._lock = threading.Lock()
        self.tracker: SceneTracker | None = (
            SceneTracker(scene, body_map, transform, self.tracker_settings) if body_map.is_resolved else None
        )
        self._resolved_ids: dict[str, int] | None = None  # from the model definitions; None until received
        self._resolution_error = ""
        self._model_definitions_received = 0
        self._tracker_rebuilds = 0
        self._frames_unresolved = 0
        self._frames_rejected = dict.fromkeys(FrameGate.REASONS, 0)
        self._reported_malformed = 0
        self._reported_rejected = 0

    def on_frame(self, frame: MocapFrame, receive_time: float, clock_frequency: int) -> bool:
        """Gate a frame and give it to the tracker; True when the tracker used it.

        Args:
            clock_frequency: the server's high-resolution clock, ticks/s (0: unknown).
        """
        reason, latency = self._gate.check(frame, clock_frequency)
        if reason is not None:
            with self._lock:
                self._frames_rejected[reason] += 1
            return False
        tracker = self.tracker
        if tracker is None:
            with self._lock:
                self._frames_unresolved += 1
            return False
        if latency is not None:
            latency += self._extra_latency
        elif self._extra_latency > 0.0:
            latency = self._extra_latency
        return tracker.update(frame, receive_time, latency)

    def apply_model_definitions(self, names_by_id: Mapping[int, str]) -> tuple[bool, str] | None:
        """Resolve the mapping's Motive names with ``names_by_id`` (streaming id -> Motive name);
        rebuild the tracker if the ids changed, stop tracking if the definitions contradict it.

        Returns:
            (is_error, line) to log when something changed (an error is logged once while it
            repeats), else None.
        """
        try:
            resolved = self.body_map.resolve_ids(names_by_id)
        except BodyMapError as error:
            with self._lock:
                self._model_definitions_received += 1
                repeated = self._resolution_error == str(error)
                self._resolution_error = str(error)
                self._resolved_ids = None
                self.tracker = None
            if repeated:
                return None
            return True, f"the server's model definitions do not fit the mapping, tracking stopped: {error}"
        ids = {entry.body: int(entry.rigid_body_id) for entry in resolved.entries}
        with self._lock:
            self._model_definitions_received += 1
            recovered = bool(self._resolution_error)
            self._resolution_error = ""
            changed = self._resolved_ids != ids
            self._resolved_ids = ids
            current = self.tracker
            if current is None or {e.body: e.rigid_body_id for e in current.body_map.entries} != ids:
                self.tracker = SceneTracker(self.scene, resolved, self.transform, self.tracker_settings)
                if current is not None:
                    self._tracker_rebuilds += 1
        if changed or recovered:
            return False, "rigid-body ids from the model definitions: " + ", ".join(
                f"{body}={number}" for body, number in ids.items()
            )
        return None

    def reports(
        self, node_name: str, stream: StreamStatus, now: float, *, advance: bool = False
    ) -> list[DiagnosticReport]:
        """The stream status, then one status per body (pusher first, objects in scene order).

        The stream is at WARN when packets were malformed or frames rejected since the last
        reported status (``advance``: this one is published, count from here on).
        """
        with self._lock:
            tracker = self.tracker
            resolution_error = self._resolution_error
            resolved_ids = self._resolved_ids
            received = self._model_definitions_received
            rebuilds = self._tracker_rebuilds
            unresolved = self._frames_unresolved
            rejected = dict(self._frames_rejected)
        stats = stream.stats
        values: dict[str, object] = {
            "connected": stream.connected,
            "server": "none" if stream.server is None else stream.server,
            "mode": "multicast" if stream.multicast else "unicast",
        }
        diagnostics = call_now(tracker.diagnostics, now)[0] if tracker is not None else None
        if diagnostics is not None:
            values.update(_tracker_values(diagnostics))
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
            published_states=stream.published_states,
        )
        new_malformed = stats.malformed_packets - self._reported_malformed
        new_rejected = sum(rejected.values()) - self._reported_rejected
        if advance:
            self._reported_malformed = stats.malformed_packets
            self._reported_rejected = sum(rejected.values())
        if not stream.connected:
            level, message = DiagnosticLevel.ERROR, f"no NatNet server answering at {stream.endpoint}"
        elif diagnostics is None:
            level = DiagnosticLevel.ERROR
            message = f"not tracking: {resolution_error}" if resolution_error else "waiting for model definitions"
        elif stream.silence_s > self.tracker_settings.stale_timeout:
            level = DiagnosticLevel.ERROR
            message = "no mocap frames" + (f" for {stream.silence_s:.2f} s" if math.isfinite(stream.silence_s) else "")
        else:
            message = diagnostics.summary()
            warn = bool(diagnostics.stale_bodies or diagnostics.unknown_ids or new_malformed or new_rejected)
            level = DiagnosticLevel.WARN if warn else DiagnosticLevel.OK
            if new_malformed:
                message += f"; {new_malformed} malformed packet(s) dropped"
            if new_rejected:
                message += f"; {new_rejected} frame(s) with implausible stamps dropped"
        reports = [
            DiagnosticReport.of(f"{node_name}: mocap stream", level, message, f"natnet://{stream.endpoint}", values)
        ]
        if diagnostics is not None:
            reports.extend(_body_report(node_name, body) for body in diagnostics.bodies)
        return reports


def _tracker_values(diagnostics: TrackerDiagnostics) -> dict[str, object]:
    def milliseconds(seconds: float | None) -> str:
        return "unknown" if seconds is None else f"{1e3 * seconds:.3f}"

    return {
        "update_rate_hz": f"{diagnostics.update_rate:.2f}",
        "latency_mean_ms": milliseconds(diagnostics.latency_mean),
        "latency_last_ms": milliseconds(diagnostics.latency_last),
        "stale_bodies": ",".join(diagnostics.stale_bodies),
        "never_seen_bodies": ",".join(diagnostics.never_seen_bodies),
        "unknown_ids": ",".join(str(number) for number in diagnostics.unknown_ids),
        "frames_with_unknown_ids": diagnostics.frames_with_unknown_ids,
        "duplicate_ids": diagnostics.duplicate_ids,
        "frames_used": diagnostics.frames_used,
        "frames_out_of_order": diagnostics.frames_out_of_order,
        "frames_stamp_not_increasing": diagnostics.frames_stamp_not_increasing,
        "frames_dropped": diagnostics.frames_dropped,
        "stream_restarts": diagnostics.stream_restarts,
    }


def _body_report(node_name: str, body) -> DiagnosticReport:
    """OK when tracked, WARN when stale, ERROR when never seen."""
    if body.valid:
        level, message = DiagnosticLevel.OK, "tracked"
    elif math.isinf(body.age):
        level, message = DiagnosticLevel.ERROR, "never seen"
    else:
        level, message = DiagnosticLevel.WARN, f"stale for {body.age:.3f} s"
    values = {
        "valid": body.valid,
        "age": f"{body.age:.4f}",
        "observations": body.observations,
        "missed_frames": body.missed_frames,
        "invalid_poses": body.invalid_poses,
        "reinitializations": body.reinitializations,
        "jump_resets": body.jump_resets,
        "mean_error_m": f"{body.mean_error:.6f}",
    }
    return DiagnosticReport.of(
        f"{node_name}: body {body.name}", level, message, f"rigid body {body.rigid_body_id}", values
    )


__all__ = ["BodyTracking", "StreamStatus"]
