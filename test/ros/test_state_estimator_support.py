"""Shared pieces of the state estimator node tests (no tests here).

* :class:`MovingScene`: a known table-frame trajectory of every body of ``clutter_fig1``
  (ground truth as a function of ``time.monotonic()``), streamed as Motive would stream it:
  pivots and orientations in the mocap frame of a given transform, with the mapping's
  centre offsets, plus the simulated driver's white mocap noise
  (:class:`parapush.sim.noise.MocapNoise`). It is the ``frame_source`` of a real
  :class:`parapush.sim.mocap_server.MocapServer`.
* :class:`Topics`: a subscriber node recording ``scene_state`` and ``/diagnostics`` over DDS.
* :func:`pose_errors`: published states against the ground truth at their stamps.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from parareal_pushing.msg import SceneState
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile

from parapush.estimation.body_map import BodyMap, resolve_body_map
from parapush.estimation.rotations import quaternion_conjugate, quaternion_multiply, quaternion_to_matrix
from parapush.estimation.table_frame import TableTransform
from parapush.graph import config_dir
from parapush.nodes.conversions import time_to_seconds
from parapush.nodes.state_estimator import StateEstimatorNode
from parapush.scene import load_scene
from parapush.sim.mocap_server import BodySample
from parapush.sim.noise import MocapNoise, MocapNoiseSettings

CONFIG = config_dir()
SCENE = load_scene(CONFIG / "scenes" / "clutter_fig1.yaml")
BODY_MAP, _ = resolve_body_map(SCENE, "auto", CONFIG)  # config/mocap/clutter_fig1.yaml, the node's default
RATE_HZ = 120.0
NOISE = MocapNoiseSettings(position_std=0.0005, orientation_std=0.003)
#: A calibrated-looking transform (Y-up Motive, turned and shifted against the table).
TRANSFORM_TEXT = """mocap_to_table:
  translation: [0.35, -0.2, 0.05]
  rotation: {rpy_degrees: [90.0, 0.0, 25.0]}
"""


def yaw_quaternion(yaw: float) -> np.ndarray:
    return np.array([0.0, 0.0, math.sin(0.5 * yaw), math.cos(0.5 * yaw)])


@dataclass(frozen=True)
class Motion:
    """x = x0 + vx t, y = y0 + vy t + A sin(w t), yaw = yaw0 + r t (t in s)."""

    start: tuple[float, float, float]
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    wiggle: tuple[float, float] = (0.0, 0.0)
    height: float = 0.0125

    def pose(self, t: float) -> np.ndarray:
        (x0, y0, yaw0), (vx, vy, rate), (amplitude, omega) = self.start, self.velocity, self.wiggle
        return np.array([x0 + vx * t, y0 + vy * t + amplitude * math.sin(omega * t), yaw0 + rate * t])

    def twist(self, t: float) -> np.ndarray:
        (vx, vy, rate), (amplitude, omega) = self.velocity, self.wiggle
        return np.array([vx, vy + amplitude * omega * math.cos(omega * t), rate])


#: Pushing-like motions (20-30 mm/s, accelerations below 7 mm/s^2), two bodies at rest.
MOTIONS = {
    "pusher": Motion((-0.22, 0.0, 0.0), (0.03, 0.0, 0.0), (0.01, 0.8), height=0.0),
    "target": Motion((-0.12, 0.0, 0.0), (0.02, 0.0, 0.3), (0.015, 0.6)),
    "clutter_a": Motion((0.0, 0.06, 0.0)),
    "clutter_b": Motion((0.02, -0.09, 1.0), (0.02, -0.01, -0.2)),
    "clutter_c": Motion((0.12, 0.13, -2.5)),
}


class MovingScene:
    """Frame source of a MocapServer: the bodies of :data:`MOTIONS`, sampled when called.

    ``ids`` / ``names`` (scene body -> streaming id / Motive name) may be changed while
    streaming (the server then flags "models changed").
    """

    def __init__(self, transform: TableTransform, body_map: BodyMap = BODY_MAP, *, seed: int = 0,
                 noise: MocapNoiseSettings = NOISE) -> None:
        self.transform = transform
        self.body_map = body_map
        self.ids = {entry.body: entry.rigid_body_id for entry in body_map.entries}
        self.names = {entry.body: entry.motive_name or entry.body for entry in body_map.entries}
        self.noise = MocapNoise(noise, seed=seed)
        self.origin = time.monotonic()
        self._inverse = transform.inverse()
        self._rotation = np.asarray(transform.rotation)
        self.lock = threading.Lock()

    def truth(self, monotonic: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """{body: (pose (x, y, yaw), twist (vx, vy, yaw rate))} in the table frame at ``monotonic``."""
        t = monotonic - self.origin
        return {body: (motion.pose(t), motion.twist(t)) for body, motion in MOTIONS.items()}

    def mocap_pose(self, body: str, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What Motive streams for a body whose centre is at the planar ``pose``: its pivot and
        orientation in the mocap frame (inverse of TableTransform.body_pose)."""
        entry = self.body_map.entry(body)
        object_rotation = yaw_quaternion(pose[2])
        centre = np.array([pose[0], pose[1], MOTIONS[body].height])
        pivot = centre - quaternion_to_matrix(object_rotation) @ np.asarray(entry.centre_offset)
        reference = quaternion_multiply(object_rotation, yaw_quaternion(-entry.yaw_offset))
        orientation = quaternion_multiply(
            quaternion_multiply(quaternion_conjugate(self._rotation), reference), self._rotation
        )
        return self._inverse.points_to_table(pivot), orientation

    def __call__(self) -> list[BodySample]:
        truth = self.truth(time.monotonic())
        with self.lock:
            ids, names = dict(self.ids), dict(self.names)
        samples = []
        for body, (pose, _) in truth.items():
            position, orientation = self.noise.perturb(*self.mocap_pose(body, pose))
            samples.append(BodySample(ids[body], names[body], tuple(map(float, position)),
                                      tuple(map(float, orientation)), True, 0.0002))
        return samples


class Topics:
    """Records the estimator's ``scene_state`` and ``/diagnostics`` on its own node.

    The topics are remapped under a prefix unique to this object (see :func:`start_estimator`),
    so that other processes on the same DDS domain (concurrent test runs, a demo) cannot
    mix their states in.
    """

    _count = itertools.count()

    def __init__(self, context, spinning, name: str = "state_estimator_test_subscriber") -> None:
        self.prefix = f"/se_test_{os.getpid()}_{next(self._count)}"
        self.state_topic = f"{self.prefix}/scene_state"
        self.node = rclpy.create_node(name, context=context)
        self.lock = threading.Lock()
        self.states: list[SceneState] = []
        self.diagnostics: list[DiagnosticArray] = []
        self.node.create_subscription(SceneState, self.state_topic, self._on_state, QoSProfile(depth=500))
        self.node.create_subscription(DiagnosticArray, f"{self.prefix}/diagnostics", self._on_diagnostics, 50)
        spinning.add(self.node)

    @property
    def remapping(self) -> list[str]:
        """The node's command-line remapping of its two topics onto this recorder's."""
        return ["--ros-args", "-r", f"scene_state:={self.state_topic}",
                "-r", f"/diagnostics:={self.prefix}/diagnostics"]

    def _on_state(self, message: SceneState) -> None:
        with self.lock:
            self.states.append(message)

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        with self.lock:
            self.diagnostics.append(message)

    def snapshot(self) -> list[SceneState]:
        with self.lock:
            return list(self.states)

    def wait_for(self, predicate, timeout: float = 10.0, what: str = "a scene_state") -> SceneState:
        """Wait for a state matching ``predicate`` (received from now on, or earlier)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in reversed(self.snapshot()):
                if predicate(message):
                    return message
            time.sleep(0.01)
        raise AssertionError(f"no {what} within {timeout} s ({len(self.snapshot())} scene_state received)")

    def latest_stream_status(self, timeout: float = 5.0, after: int = 0, where=None) -> dict[str, str]:
        """Values (and 'level', 'message') of the newest mocap-stream diagnostic status (received
        after the first ``after`` arrays, and satisfying ``where`` if given)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                arrays = list(self.diagnostics[after:])
            for array in reversed(arrays):
                for status in array.status:
                    if status.name.endswith("mocap stream"):
                        values = {pair.key: pair.value for pair in status.values}
                        values["level"] = int.from_bytes(status.level, "little") if isinstance(
                            status.level, bytes) else int(status.level)
                        values["message"] = status.message
                        if where is None or where(values):
                            return values
            time.sleep(0.02)
        raise AssertionError("no /diagnostics from the state estimator")


def all_valid(message: SceneState) -> bool:
    return message.pusher.valid and all(body.valid for body in message.objects)


def frame_states(messages: list[SceneState]) -> list[SceneState]:
    """The states published on a new frame (a newer stamp than the one before), without the
    heartbeat states published during a stall of the stream."""
    kept, previous = [], -math.inf
    for message in messages:
        if time_to_seconds(message.header.stamp) > previous:
            kept.append(message)
        previous = max(previous, time_to_seconds(message.header.stamp))
    return kept


def settled_states(messages: list[SceneState], *, settle: float = 0.5, stall: float = 0.5) -> list[SceneState]:
    """States published on a frame with every body valid, without those within ``settle`` s of
    the first one or of a stall of the stream longer than ``stall`` s (a loaded machine can
    starve the simulated Motive's thread; after a stall longer than the tracker's
    ``reinitialize_after``, 0.5 s, the filters restart and converge again, as at start)."""
    frames = frame_states(messages)
    kept, since = [], -math.inf
    previous = None
    for message in frames:
        t = time_to_seconds(message.header.stamp)
        if previous is None or t - previous > stall:
            since = t
        previous = t
        if t - since >= settle and all_valid(message):
            kept.append(message)
    return kept


def largest_gap(messages: list[SceneState]) -> float:
    stamps = [time_to_seconds(m.header.stamp) for m in frame_states(messages)]
    return max(np.diff(stamps), default=0.0)


def wait_for_frames(node, count: int, *, at_least: float, at_most: float) -> None:
    """Let ``count`` more frames reach the node's client (at ~120 Hz: count / 120 s), waiting
    ``at_least`` s and at most ``at_most`` s (a loaded machine slows the simulated stream)."""
    start = time.monotonic()
    target = node.client.stats().frames_delivered + count
    while time.monotonic() - start < at_most:
        if node.client.stats().frames_delivered >= target and time.monotonic() - start >= at_least:
            return
        time.sleep(0.02)


def start_estimator(context, spinning, port: int, topics: Topics, **parameters) -> StateEstimatorNode:
    """The node, in-process, publishing to ``topics`` (remapped), with ``parameters``."""
    values = {"command_port": port, "diagnostics_period": 0.2}
    values.update(parameters)
    node = StateEstimatorNode(
        context=context,
        parameter_overrides=[Parameter(name, value=value) for name, value in values.items()],
        cli_args=topics.remapping,
    )
    spinning.add(node)
    return node


def write_transform(directory: Path, text: str = TRANSFORM_TEXT) -> Path:
    path = directory / "table_transform.yaml"
    path.write_text(text)
    return path


def ros_minus_monotonic() -> float:
    """Offset of the nodes' ROS (system) clock from time.monotonic(), s."""
    samples = []
    for _ in range(20):
        before = time.monotonic()
        wall = time.time()
        after = time.monotonic()
        samples.append((after - before, wall - 0.5 * (before + after)))
    return min(samples)[1]  # the shortest bracket


@dataclass(frozen=True)
class Errors:
    """Estimation errors of published states, per sample and body."""

    position: np.ndarray  # (N, bodies) m
    speed: np.ndarray  # (N, bodies) m/s, norm of the velocity error
    yaw: np.ndarray  # (N, objects) rad
    names: tuple[str, ...]

    @property
    def position_rms(self) -> float:
        return float(np.sqrt(np.mean(self.position**2)))

    @property
    def speed_rms(self) -> float:
        return float(np.sqrt(np.mean(self.speed**2)))

    @property
    def yaw_rms(self) -> float:
        return float(np.sqrt(np.mean(self.yaw**2)))

    def describe(self) -> str:
        if len(self.position) == 0:
            return "no states"
        per_body = ", ".join(
            f"{name} {1e3 * np.sqrt(np.mean(self.position[:, i] ** 2)):.3f} mm "
            f"{1e3 * np.sqrt(np.mean(self.speed[:, i] ** 2)):.2f} mm/s"
            for i, name in enumerate(self.names)
        )
        return (
            f"{len(self.position)} states: position RMS {1e3 * self.position_rms:.3f} mm "
            f"(max {1e3 * self.position.max():.3f}), speed RMS {1e3 * self.speed_rms:.2f} mm/s "
            f"(max {1e3 * self.speed.max():.2f}), yaw RMS {1e3 * self.yaw_rms:.2f} mrad; {per_body}"
        )


def pose_errors(messages: list[SceneState], scene: MovingScene, offset: float) -> Errors:
    """Errors of ``messages`` against the truth at their stamps (ROS time - ``offset`` = monotonic)."""
    positions, speeds, yaws = [], [], []
    for message in messages:
        truth = scene.truth(time_to_seconds(message.header.stamp) - offset)
        row_p, row_s, row_y = [], [], []
        for body in (message.pusher, *message.objects):
            pose, twist = truth[body.name]
            row_p.append(math.hypot(body.x - pose[0], body.y - pose[1]))
            row_s.append(math.hypot(body.vx - twist[0], body.vy - twist[1]))
            if body.name != "pusher":
                row_y.append(abs((body.yaw - pose[2] + math.pi) % (2 * math.pi) - math.pi))
        positions.append(row_p)
        speeds.append(row_s)
        yaws.append(row_y)
    names = ("pusher", *SCENE.object_names)
    shape = (len(messages), len(names))
    return Errors(np.array(positions).reshape(shape), np.array(speeds).reshape(shape),
                  np.array(yaws).reshape(shape[0], shape[1] - 1), names)
