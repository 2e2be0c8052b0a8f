"""Random scenes and pushes over the scene format's ranges, for the general learned model.

One draw (:meth:`GeneralPushSampler.sample_scene`) is a whole scene (its bodies and
coefficients, as a scene description for :func:`parapush.scene.scene_from_dict`), an
initial state and a first push; :meth:`GeneralPushSampler.sample_push` draws a further push
from any state of that scene (the dataset continues every scene with one push from the
fine model's result, a state in contact and moving as inside a control sequence).

Scene (all ranges from :class:`~parapush.learning.scene_ranges.SceneRanges`):

- object count from the bands 1 / 2-4 / 5-8 / 9-16 (``count_band_weights``), uniform
  inside a band; each object's shape from ``shape_weights`` (cylinder, box, ellipse,
  polygon): cylinder radius, box half sizes and ellipse semi-axes uniform in their ranges
  (each axis on its own); a polygon has 3-8 vertices at sorted random angles (gaps of at
  least 0.35 rad) and distances U(0.55, 1) R from its frame origin (star-shaped, convex or
  not, its centroid off the origin), R uniform in ``polygon_radius``;
- mass, height uniform; table friction uniform in ``support_friction``; each object's
  friction equal to the table's (probability ``same_friction_fraction``) or uniform in the
  same range (its support is the larger, the fine model's rule); pusher radius, mass,
  friction and object/object friction uniform in their ranges;
- with probability ``obstacle_fraction`` 1-3 obstacles (any shape, bounding radius in
  range) placed near random objects.

Placement (table frame): the pusher near the table centre (+-5 cm); the first object
ahead of it along a random bearing at a surface gap U(0, ``first_gap_max``); each further
object beside a random placed one, at a gap U(0, ``neighbour_gap_max``) along a random
bearing, so chains and clusters form. Gaps are measured with the support functions along
the bearing (exact for discs, a lower bound of the true gap otherwise); with probability
``touching_fraction`` a gap is drawn from ``touching_gap_range`` (in contact, up to a
0.3 mm soft-contact overlap). Placements that overlap another body by more than 0.5 mm,
or leave ``table_margin`` of the table, are redrawn.

Push: speed U(0, ``max_speed``); direction relative to the bearing of the nearest object,
40 % in [0, 90] deg, 20 % in [90, 270], 40 % in [270, 360] (``direction_weights``);
duration 1 s with probability ``nominal_duration_fraction``, otherwise uniform in the
trained range (whole milliseconds); the push makes contact (the general gate of
:mod:`parapush.learning.graph_encoding`) with probability ``contact_fraction``, actions
being redrawn until it is of the wanted kind; pushes whose path passes within 2 mm of an
obstacle are redrawn too (the fine pusher would be stopped by it, the coarse models move
the pusher kinematically). With probability ``moving_fraction`` the initial state has a
random pusher velocity and each object a random twist with probability 1/2 (|v| <= 0.1
m/s, |omega| <= 2 rad/s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parapush.learning.body_descriptors import BodyDescriptors, support_along, support_table
from parapush.learning.graph_encoding import GraphEncoder, GraphEncodingSpec
from parapush.learning.scene_ranges import SceneRanges
from parapush.physics.planar_geometry import NO_HIT, outline_penetration, segment_outline_entry
from parapush.scene import Scene, scene_from_dict
from parapush.scene.outline import Outline
from parapush.settings import check_settings, setting

COUNT_BANDS = ((1, 1), (2, 4), (5, 8), (9, 16))
"""Object-count bands of ``count_band_weights`` (clipped to the ranges' object_count)."""

OVERLAP_TOLERANCE = 5.0e-4
"""Largest overlap of two placed bodies, m (the touching gaps go down to -0.3 mm)."""

OBSTACLE_CLEARANCE = 2.0e-3
"""The pusher's path keeps this far from obstacles, m."""

ACTION_CANDIDATES = 32
"""Actions drawn at once when looking for one of the wanted kind (contact or not)."""


@dataclass(frozen=True)
class GeneralSamplingConfig:
    """Distribution of the general model's training pushes (see the module docstring)."""

    ranges: SceneRanges = field(default_factory=SceneRanges)
    count_band_weights: tuple[float, ...] = setting((0.15, 0.3, 0.3, 0.25), "probability of 1 / 2-4 / 5-8 / 9-16 "
                                                    "objects", kind=tuple, lengths=(4,))
    shape_weights: tuple[float, ...] = setting((0.3, 0.3, 0.2, 0.2), "probability of cylinder / box / ellipse / "
                                               "polygon (shapes outside ranges.shapes get 0)", kind=tuple,
                                               lengths=(4,))
    same_friction_fraction: float = setting(0.5, "probability that an object's friction equals the table's",
                                            minimum=0.0, maximum=1.0)
    obstacle_fraction: float = setting(0.25, "probability that a scene has obstacles", minimum=0.0, maximum=1.0)
    contact_fraction: float = setting(0.8, "probability that a push's path reaches an object", minimum=0.0,
                                      maximum=1.0)
    direction_weights: tuple[float, ...] = setting((0.4, 0.2, 0.4), "probability of the direction sectors [0, 90], "
                                                   "[90, 270], [270, 360] deg from the nearest object's bearing",
                                                   kind=tuple, lengths=(3,))
    nominal_duration: float = setting(1.0, "the usual control duration", unit="s", above=0.0)
    nominal_duration_fraction: float = setting(0.5, "probability of nominal_duration", minimum=0.0, maximum=1.0)
    first_gap_max: float = setting(0.1, "largest gap from the pusher to the first object", unit="m", above=0.0)
    neighbour_gap_max: float = setting(0.06, "largest gap from a further object to its anchor", unit="m", above=0.0)
    touching_fraction: float = setting(0.3, "probability of a touching gap", minimum=0.0, maximum=1.0)
    touching_gap_range: tuple[float, float] = setting((-3.0e-4, 2.0e-3), "(low, high) of touching gaps", kind=tuple,
                                                      unit="m", lengths=(2,))
    moving_fraction: float = setting(0.5, "fraction of initial states with random velocities", minimum=0.0,
                                     maximum=1.0)
    table_margin: float = setting(0.1, "every body's centre keeps this far from the table edges", unit="m",
                                  minimum=0.0)

    def __post_init__(self) -> None:
        check_settings(self)
        for name in ("count_band_weights", "shape_weights", "direction_weights"):
            weights = getattr(self, name)
            if any(weight < 0 for weight in weights) or sum(weights) <= 0:
                raise ValueError(f"{name}: expected non-negative weights, not all zero, got {weights!r}")
        if not any(weight > 0 for weight, shape in zip(self.shape_weights, ("cylinder", "box", "ellipse", "polygon"),
                                                       strict=True) if shape in self.ranges.shapes):
            raise ValueError(f"shape_weights: no weight on the ranges' shapes {self.ranges.shapes}")
        low, high = self.touching_gap_range
        if not -1e-3 < low <= high:
            raise ValueError(f"touching_gap_range: expected -1e-3 < low <= high, got {self.touching_gap_range!r}")


@dataclass(frozen=True)
class SampledPush:
    """One push: a state of a scene and an action.

    Attributes:
        state: (D,) the papers' state of the scene (pusher, object poses, velocities).
        control: (2,) m/s. duration: s.
        planned_contact: whether the path reaches an object (the general gate).
    """

    state: np.ndarray
    control: np.ndarray
    duration: float
    planned_contact: bool


def _unit(angle: float) -> np.ndarray:
    return np.array([math.cos(angle), math.sin(angle)])


class GeneralPushSampler:
    """Draws scenes and pushes (see the module docstring).

    Args:
        config: the distribution.
    """

    def __init__(self, config: GeneralSamplingConfig) -> None:
        self.config = config
        self.ranges = config.ranges
        self.encoder = GraphEncoder(GraphEncodingSpec())

    # -- bodies ------------------------------------------------------------------------------
    def _uniform(self, rng: np.random.Generator, bounds: tuple[float, float]) -> float:
        return float(rng.uniform(bounds[0], bounds[1]))

    def _body(self, rng: np.random.Generator, shape: str, obstacle: bool) -> dict[str, Any]:
        ranges = self.ranges
        if shape == "cylinder":
            bounds = ranges.obstacle_radius if obstacle else ranges.cylinder_radius
            return {"shape": "cylinder", "radius": round(self._uniform(rng, bounds), 5)}
        if shape in ("box", "ellipse"):
            while True:
                extents = [round(self._uniform(rng, ranges.half_extent), 5) for _ in range(2)]
                radius = math.hypot(*extents) if shape == "box" else max(extents)
                if not obstacle or ranges.obstacle_radius[0] <= radius <= ranges.obstacle_radius[1]:
                    return {"shape": shape, "half_extents": extents}
        bounds = ranges.obstacle_radius if obstacle else ranges.polygon_radius
        low_count, high_count = int(ranges.polygon_vertices[0]), int(ranges.polygon_vertices[1])
        while True:
            count = int(rng.integers(low_count, high_count + 1))
            angles = np.sort(rng.uniform(0.0, 2.0 * math.pi, count))
            gaps = np.diff(np.concatenate([angles, angles[:1] + 2.0 * math.pi]))
            if np.min(gaps) < 0.35 or np.max(gaps) > math.pi - 0.1:
                continue
            size = self._uniform(rng, bounds)
            distances = size * rng.uniform(0.55, 1.0, count)
            distances[int(np.argmax(distances))] = size
            vertices = np.round(np.stack([distances * np.cos(angles), distances * np.sin(angles)], axis=-1), 5)
            try:
                Outline.polygon(vertices)
            except ValueError:
                continue
            return {"shape": "polygon", "vertices": vertices.tolist()}

    def _shape(self, rng: np.random.Generator) -> str:
        shapes = ("cylinder", "box", "ellipse", "polygon")
        weights = np.array([weight if shape in self.ranges.shapes else 0.0
                            for weight, shape in zip(self.config.shape_weights, shapes, strict=True)])
        return shapes[int(rng.choice(4, p=weights / weights.sum()))]

    def _object_count(self, rng: np.random.Generator) -> int:
        low, high = int(self.ranges.object_count[0]), int(self.ranges.object_count[1])
        bands = [(max(a, low), min(b, high)) for a, b in COUNT_BANDS]
        weights = np.array([w if a <= b else 0.0 for w, (a, b) in zip(self.config.count_band_weights, bands,
                                                                       strict=True)])
        if weights.sum() <= 0:
            return int(rng.integers(low, high + 1))
        band = bands[int(rng.choice(len(bands), p=weights / weights.sum()))]
        return int(rng.integers(band[0], band[1] + 1))

    # -- placement ---------------------------------------------------------------------------
    def _gap(self, rng: np.random.Generator, largest: float) -> float:
        if rng.random() < self.config.touching_fraction:
            return self._uniform(rng, self.config.touching_gap_range)
        return float(rng.uniform(0.0, largest))

    def _on_table(self, point: np.ndarray, table: tuple[float, float]) -> bool:
        margin = self.config.table_margin
        return abs(point[0]) <= 0.5 * table[0] - margin and abs(point[1]) <= 0.5 * table[1] - margin

    def _place(self, rng: np.random.Generator, outline: Outline, anchor_point: np.ndarray, anchor_support: float,
               bearing: float, gap: float) -> np.ndarray:
        """Pose (x, y, yaw) of a body whose centroid lies along ``bearing`` from ``anchor_point``
        (an anchor of support ``anchor_support`` along the bearing) at surface gap ``gap``."""
        yaw = float(rng.uniform(-math.pi, math.pi))
        centroid = np.asarray(outline.centroid, dtype=float)
        back = support_along(_support_row(outline), np.array([bearing + math.pi - yaw]))[0]
        centre = anchor_point + (anchor_support + back + gap) * _unit(bearing)
        cos, sin = math.cos(yaw), math.sin(yaw)
        origin = centre - np.array([cos * centroid[0] - sin * centroid[1], sin * centroid[0] + cos * centroid[1]])
        return np.array([origin[0], origin[1], yaw])

    @staticmethod
    def _overlap(first: Outline, first_pose: np.ndarray, second: Outline, second_pose: np.ndarray) -> bool:
        depth, _ = outline_penetration(first, first_pose[:2], np.asarray(first_pose[2]), second, second_pose[:2],
                                       np.asarray(second_pose[2]))
        return bool(depth > OVERLAP_TOLERANCE)

    def _free(self, outline: Outline, pose: np.ndarray, placed: list[tuple[Outline, np.ndarray]],
              pusher: np.ndarray, pusher_radius: float, table: tuple[float, float]) -> bool:
        if not self._on_table(pose[:2], table):
            return False
        local = pusher - pose[:2]
        cos, sin = math.cos(pose[2]), math.sin(pose[2])
        local = np.array([cos * local[0] + sin * local[1], -sin * local[0] + cos * local[1]])
        if float(outline.signed_distance(local)) < pusher_radius - OVERLAP_TOLERANCE:
            return False
        reach = outline.bounding_radius
        for other, other_pose in placed:
            if np.linalg.norm(other_pose[:2] - pose[:2]) > reach + other.bounding_radius + OVERLAP_TOLERANCE:
                continue
            if self._overlap(other, other_pose, outline, pose):
                return False
        return True

    # -- scenes ------------------------------------------------------------------------------
    def sample_scene(self, rng: np.random.Generator, name: str = "general_training"
                     ) -> tuple[dict[str, Any], SampledPush]:
        """A random scene description and its first push."""
        ranges, config = self.ranges, self.config
        table_friction = round(self._uniform(rng, ranges.support_friction), 4)
        pusher_radius = round(self._uniform(rng, ranges.pusher_radius), 5)
        scene: dict[str, Any] = {
            "name": name,
            "table": {"length": 0.8, "width": 1.0, "friction": table_friction},
            "pusher": {"radius": pusher_radius, "mass": round(self._uniform(rng, ranges.pusher_mass), 4),
                       "friction": round(self._uniform(rng, ranges.pusher_friction), 4)},
            "object_friction": round(self._uniform(rng, ranges.object_friction), 4),
        }
        table = (0.8, 1.0)
        pusher = rng.uniform(-0.05, 0.05, 2)
        wanted = self._object_count(rng)
        bodies = []
        for index in range(wanted):
            body = self._body(rng, self._shape(rng), obstacle=False)
            friction = table_friction if rng.random() < config.same_friction_fraction else round(
                self._uniform(rng, ranges.support_friction), 4)
            body.update(name=f"object{index}", mass=round(self._uniform(rng, ranges.mass), 4),
                        height=round(self._uniform(rng, ranges.height), 4), friction=friction)
            bodies.append(body)
        outlines = [_outline(body) for body in bodies]
        placed: list[tuple[Outline, np.ndarray]] = []
        bearing = float(rng.uniform(-math.pi, math.pi))
        for outline in outlines:
            pose = None
            for _ in range(40):
                if not placed:
                    candidate = self._place(rng, outline, pusher, pusher_radius, bearing,
                                            self._gap(rng, config.first_gap_max))
                else:
                    anchor_outline, anchor_pose = placed[int(rng.integers(len(placed)))]
                    direction = float(rng.uniform(-math.pi, math.pi))
                    anchor_centroid = _centroid_world(anchor_outline, anchor_pose)
                    anchor_support = float(support_along(_support_row(anchor_outline),
                                                         np.array([direction - anchor_pose[2]]))[0])
                    candidate = self._place(rng, outline, anchor_centroid, anchor_support, direction,
                                            self._gap(rng, config.neighbour_gap_max))
                if self._free(outline, candidate, placed, pusher, pusher_radius, table):
                    pose = candidate
                    break
            if pose is None:
                break  # the cluster is full: the scene gets fewer objects
            placed.append((outline, pose))
        bodies = bodies[:len(placed)]
        for body, (_, pose) in zip(bodies, placed, strict=True):
            body["pose"] = [float(value) for value in np.round(pose, 6)]
        scene["objects"] = bodies
        obstacles = []
        if rng.random() < config.obstacle_fraction and ranges.max_obstacles > 0:
            count = int(rng.integers(max(1, int(ranges.obstacle_count[0])), ranges.max_obstacles + 1))
            for index in range(count):
                body = self._body(rng, self._shape(rng), obstacle=True)
                outline = _outline(body)
                for _ in range(40):
                    anchor_outline, anchor_pose = placed[int(rng.integers(len(placed)))]
                    direction = float(rng.uniform(-math.pi, math.pi))
                    anchor_support = float(support_along(_support_row(anchor_outline),
                                                         np.array([direction - anchor_pose[2]]))[0])
                    candidate = self._place(rng, outline, _centroid_world(anchor_outline, anchor_pose),
                                            anchor_support, direction, self._gap(rng, 0.05))
                    if self._free(outline, candidate, placed, pusher, pusher_radius + OBSTACLE_CLEARANCE, table):
                        placed.append((outline, candidate))
                        body.update(name=f"obstacle{index}", pose=[float(v) for v in np.round(candidate, 6)])
                        obstacles.append(body)
                        break
        if obstacles:
            scene["obstacles"] = obstacles
        built = scene_from_dict(scene)
        layout = built.layout
        poses = np.array([spec.pose for spec in built.objects])
        twists = np.zeros_like(poses)
        pusher_velocity = np.zeros(2)
        if rng.random() < config.moving_fraction:
            pusher_velocity = _random_planar(rng, ranges.max_speed)
            for index in range(len(bodies)):
                if rng.random() < 0.5:
                    twists[index, :2] = _random_planar(rng, 0.1)
                    twists[index, 2] = rng.uniform(-2.0, 2.0)
        state = layout.compose(pusher, poses, pusher_velocity, twists)
        return scene, self.sample_push(rng, built, state)

    def sample_push(self, rng: np.random.Generator, scene: Scene, state: np.ndarray,
                    descriptors: BodyDescriptors | None = None) -> SampledPush:
        """A push from ``state`` of ``scene`` (see the module docstring)."""
        config = self.config
        descriptors = BodyDescriptors.from_scene(scene) if descriptors is None else descriptors
        layout = scene.layout
        pusher = state[layout.pusher_position]
        poses = layout.poses(state[None])[0]
        objects = len(scene.objects)
        centroids = _centroids(poses, descriptors.centroids[:objects])
        nearest = centroids[int(np.argmin(np.linalg.norm(centroids - pusher, axis=1)))] - pusher
        bearing = math.atan2(nearest[1], nearest[0])
        want_contact = rng.random() < config.contact_fraction
        sector_weights = np.asarray(config.direction_weights) / np.sum(config.direction_weights)
        sectors = ((0.0, 0.5 * math.pi), (0.5 * math.pi, 1.5 * math.pi), (1.5 * math.pi, 2.0 * math.pi))
        low_duration, high_duration = self.ranges.duration_range
        fallback = None  # the first action clear of obstacles, used when none is of the wanted kind
        for _ in range(20):
            sector = rng.choice(3, size=ACTION_CANDIDATES, p=sector_weights)
            offsets = rng.uniform(np.array([sectors[s][0] for s in sector]), np.array([sectors[s][1] for s in sector]))
            speeds = rng.uniform(0.0, self.ranges.max_speed, ACTION_CANDIDATES)
            controls = speeds[:, None] * np.stack([np.cos(bearing + offsets), np.sin(bearing + offsets)], axis=-1)
            nominal = rng.random(ACTION_CANDIDATES) < config.nominal_duration_fraction
            durations = np.where(nominal, config.nominal_duration,
                                 np.round(rng.uniform(low_duration, high_duration, ACTION_CANDIDATES), 3))
            contact = self._contacts(scene, descriptors, pusher, poses, controls * durations[:, None])
            valid = self._clear_of_obstacles(scene, pusher, controls * durations[:, None])
            matching = np.flatnonzero(valid & (contact == want_contact))
            if matching.size:
                row = int(matching[0])
                return SampledPush(state.copy(), controls[row], float(durations[row]), bool(contact[row]))
            if fallback is None and np.any(valid):
                row = int(np.flatnonzero(valid)[0])
                fallback = SampledPush(state.copy(), controls[row], float(durations[row]), bool(contact[row]))
        if fallback is None:
            return SampledPush(state.copy(), np.zeros(2), float(config.nominal_duration), False)
        return fallback

    def _contacts(self, scene: Scene, descriptors: BodyDescriptors, pusher: np.ndarray, poses: np.ndarray,
                  travel: np.ndarray) -> np.ndarray:
        objects = len(scene.objects)
        count = travel.shape[0]
        yaws = np.broadcast_to(poses[:, 2], (count, objects))
        centroids = np.broadcast_to(_centroids(poses, descriptors.centroids[:objects]), (count, objects, 2))
        contact, _ = self.encoder.path_contacts(
            np.broadcast_to(pusher, (count, 2)), travel, centroids, yaws, descriptors.supports[:objects],
            np.full(count, scene.pusher.radius), np.ones(objects, dtype=bool))
        return np.any(contact, axis=1)

    @staticmethod
    def _clear_of_obstacles(scene: Scene, pusher: np.ndarray, travel: np.ndarray) -> np.ndarray:
        clear = np.ones(travel.shape[0], dtype=bool)
        starts = np.broadcast_to(pusher, travel.shape)
        for obstacle in scene.obstacles:
            pose = np.asarray(obstacle.pose)
            entry = segment_outline_entry(starts, travel, np.broadcast_to(pose[:2], travel.shape),
                                          np.full(travel.shape[0], pose[2]), obstacle.outline,
                                          scene.pusher.radius + OBSTACLE_CLEARANCE)
            clear &= entry == NO_HIT
        return clear


def _outline(body: dict[str, Any]) -> Outline:
    if body["shape"] == "cylinder":
        return Outline.disc(body["radius"])
    if body["shape"] == "box":
        return Outline.rectangle(*body["half_extents"])
    if body["shape"] == "ellipse":
        return Outline.ellipse(*body["half_extents"])
    return Outline.polygon(body["vertices"])


def _support_row(outline: Outline) -> np.ndarray:
    return support_table(outline)[1]


def _centroid_world(outline: Outline, pose: np.ndarray) -> np.ndarray:
    centroid = np.asarray(outline.centroid, dtype=float)
    cos, sin = math.cos(pose[2]), math.sin(pose[2])
    return pose[:2] + np.array([cos * centroid[0] - sin * centroid[1], sin * centroid[0] + cos * centroid[1]])


def _centroids(poses: np.ndarray, local: np.ndarray) -> np.ndarray:
    """(n, 2) world centroids of bodies at ``poses`` (n, 3) with body-frame centroids ``local`` (n, 2)."""
    cos, sin = np.cos(poses[:, 2]), np.sin(poses[:, 2])
    return poses[:, :2] + np.stack([cos * local[:, 0] - sin * local[:, 1], sin * local[:, 0] + cos * local[:, 1]],
                                   axis=-1)


def _random_planar(rng: np.random.Generator, largest: float) -> np.ndarray:
    angle = rng.uniform(-math.pi, math.pi)
    return float(rng.uniform(0.0, largest)) * _unit(angle)
