"""The general learned model's view of a push: a graph of the bodies the push can move.

For one row (state, control u, duration T) of a scene with any bodies
(:class:`~parapush.learning.body_descriptors.BodyDescriptors`):

1. **Frame** (makes the model invariant to a rigid motion of the scene): origin at the
   pusher's start, x-axis along u (when |u| = 0: towards the nearest object's centroid).
2. **Gate**, the authors' rule generalised to outlines: an object is *contacted* when the
   pusher's straight path p -> p + uT enters the object's outline (its convex hull, from
   the support table) grown by r_p - 0.5 mm (the authors' 0.5 mm penetration threshold).
   The path-outline test is Cyrus-Beck clipping of the segment against the SUPPORT_SAMPLES
   half-planes of the support table; it also gives the path fraction of first contact.
   Only bodies whose centroid is within the polygon's circumradius of the path are clipped
   (the others cannot be reached: same contacts, a fraction of the work in crowded scenes).
3. **Involved objects**: the contacted objects, the objects moving faster than
   ``moving_speed`` / ``moving_yaw_rate`` (a state inside a Parareal sequence), closed over
   reach: an object whose centroid is within rho_i + rho_j + |u| T + ``reach_margin`` of an
   involved one is involved too (rho: bounding radius about the centroid). Objects not
   involved keep their pose and get a zero twist; a row with no involved object (the gate
   is off) is predicted without the network.
4. **Nodes**: the involved objects and the obstacles within reach of one of them (static
   nodes). **Edges**: ordered pairs of nodes within reach of each other (no
   obstacle/obstacle edges).

Node features (in the frame; K = ``directions``):

    centroid (x, y) m | support at the frame's K directions theta_k = 2 pi k / K, m |
    centroid velocity (vx, vy) m/s | yaw rate rad/s | mass kg | support friction |
    radius of gyration m | bounding radius m | static flag | path contact flag |
    path fraction of first contact (1 without contact) | |u| m/s | T s | |u| T m |
    pusher radius m | pusher friction | object/object friction

Edge features (message from sender i to receiver j): c_i - c_j (2) m, |c_i - c_j| m, the
support of both along the centre line h_j(d) + h_i(-d) m, the gap |c_i - c_j| minus that
(exact for discs, a separating-axis bound otherwise) m, v_i - v_j (2) m/s.

Outputs per object node (frame): centroid displacement (dx, dy) m, yaw change rad, final
centroid velocity (vx, vy) m/s, final yaw rate rad/s. :meth:`GraphEncoder.decode` turns
them back into poses of the body frames (a polygon's origin is not its centroid) and
twists of the body-frame origins.

Mirroring the frame about its x-axis maps a valid sample to a valid sample
(:meth:`GraphEncodingSpec.mirror_signs`), which training uses to double the data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from parapush.learning.body_descriptors import SUPPORT_SAMPLES, BodyDescriptors, support_along
from parapush.learning.gating import GATE_PENETRATION
from parapush.learning.geometry import ModelMismatchError
from parapush.scene.state import wrap_angle
from parapush.settings import check_settings, setting

OUTPUT_SIZE = 6
"""Per-node outputs: dx, dy, dyaw, vx, vy, omega (frame)."""

EDGE_SIZE = 7
"""Edge features (see the module docstring)."""

_NODE_SCALARS = 16
"""Node features besides the centroid (2) and the K support values."""


@dataclass(frozen=True)
class GraphEncodingSpec:
    """How pushes are turned into graphs (stored in the weights' metadata)."""

    directions: int = setting(16, "frame directions at which each body's support is given to the network",
                              minimum=4, maximum=SUPPORT_SAMPLES)
    reach_margin: float = setting(0.02, "added to the pusher's travel when closing the gate over reach", unit="m",
                                  minimum=0.0)
    moving_speed: float = setting(0.01, "an object faster than this is involved even if not pushed", unit="m/s",
                                  above=0.0)
    moving_yaw_rate: float = setting(0.1, "an object turning faster than this is involved even if not pushed",
                                     unit="rad/s", above=0.0)

    def __post_init__(self) -> None:
        check_settings(self)
        if SUPPORT_SAMPLES % self.directions:
            raise ValueError(f"directions: expected a divisor of {SUPPORT_SAMPLES}, got {self.directions}")

    @property
    def node_size(self) -> int:
        return 2 + self.directions + _NODE_SCALARS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GraphEncodingSpec:
        names = {item.name for item in fields(cls)}
        missing = sorted(names - set(data))
        if missing:
            raise ModelMismatchError(f"encoding: missing field(s) {missing}")
        return cls(**{name: data[name] for name in names})

    def mirror_signs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Mirroring about the frame's x-axis: (node permutation (F,), node signs (F,), edge
        signs (EDGE_SIZE,), output signs (OUTPUT_SIZE,)); mirrored = original[..., perm] * signs."""
        k = self.directions
        permutation = np.arange(self.node_size)
        permutation[2:2 + k] = 2 + (k - np.arange(k)) % k
        node_signs = np.ones(self.node_size)
        node_signs[1] = -1.0  # y
        node_signs[2 + k + 1] = -1.0  # vy
        node_signs[2 + k + 2] = -1.0  # yaw rate
        edge_signs = np.array([1.0, -1.0, 1.0, 1.0, 1.0, 1.0, -1.0])
        output_signs = np.array([1.0, -1.0, -1.0, 1.0, -1.0, -1.0])
        return permutation, node_signs, edge_signs, output_signs


@dataclass(frozen=True)
class PushGraphs:
    """Graphs of the gated rows of a batch.

    Attributes:
        gated: (M,) bool, rows with at least one involved object.
        involved: (M, B) bool, involved objects (always False for obstacles).
        frame_angles: (M,) frame x-axis angle in the table frame, rad.
        node_bodies: (G, N) body index of each node (G = gated rows), -1 for padding.
        node_mask: (G, N) bool.
        node_static: (G, N) bool.
        nodes: (G, N, F) node features.
        edge_mask: (G, N, N) bool, [g, i, j]: a message from node i to node j.
        edges: (G, N, N, EDGE_SIZE) edge features.
    """

    gated: np.ndarray
    involved: np.ndarray
    frame_angles: np.ndarray
    node_bodies: np.ndarray
    node_mask: np.ndarray
    node_static: np.ndarray
    nodes: np.ndarray
    edge_mask: np.ndarray
    edges: np.ndarray


def _rotate(vectors: np.ndarray, angles: np.ndarray) -> np.ndarray:
    cos, sin = np.cos(angles)[..., None], np.sin(angles)[..., None]
    return np.concatenate([cos * vectors[..., :1] - sin * vectors[..., 1:],
                           sin * vectors[..., :1] + cos * vectors[..., 1:]], axis=-1)


def _cross_z(rate: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """omega x r for planar r: (-omega r_y, omega r_x)."""
    return np.stack([-rate * vectors[..., 1], rate * vectors[..., 0]], axis=-1)


class GraphEncoder:
    """Builds :class:`PushGraphs` and decodes network outputs (see the module docstring).

    Args:
        spec: the encoding.
    """

    def __init__(self, spec: GraphEncodingSpec) -> None:
        self.spec = spec
        angles = 2.0 * math.pi * np.arange(SUPPORT_SAMPLES) / SUPPORT_SAMPLES
        self._normals = np.stack([np.cos(angles), np.sin(angles)], axis=-1)  # (S, 2)
        self._frame_angles = 2.0 * math.pi * np.arange(spec.directions) / spec.directions

    def path_contacts(self, pusher: np.ndarray, travel: np.ndarray, centroids: np.ndarray, yaws: np.ndarray,
                      supports: np.ndarray, pusher_radius: np.ndarray, present: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Generalised gate (Cyrus-Beck against the inflated support polygon).

        Args:
            pusher: (M, 2) start, m. travel: (M, 2) u T, m.
            centroids: (M, B, 2) world centroids, m. yaws: (M, B) rad.
            supports: (M, B, S) or (B, S) support tables, m. pusher_radius: (M,) m.
            present: (M, B) or (B,) bool: bodies that count.
        Returns:
            (contact (M, B) bool, entry fraction (M, B) in [0, 1], 1 without contact).
        """
        count, bodies = centroids.shape[:2]
        present = np.broadcast_to(present, (count, bodies))
        # only the bodies whose inflated support polygon can reach the path are clipped: the polygon of the
        # S half-planes lies inside the regular S-gon of the largest offset, whose circumradius bounds it
        offsets = np.max(supports, axis=-1) + (pusher_radius[:, None] - GATE_PENETRATION)  # (M, B)
        supports = np.broadcast_to(supports, (count, bodies, SUPPORT_SAMPLES))
        reach = offsets / math.cos(math.pi / SUPPORT_SAMPLES) * (1.0 + 1e-9) + 1e-12
        relative = centroids - pusher[:, None, :]
        length_squared = np.einsum("mi,mi->m", travel, travel)
        with np.errstate(divide="ignore", invalid="ignore"):
            closest = np.clip(np.einsum("mbi,mi->mb", relative, travel) / length_squared[:, None], 0.0, 1.0)
        closest = np.where(length_squared[:, None] > 0.0, closest, 0.0)
        miss = relative - closest[..., None] * travel[:, None, :]
        candidate = present & (np.einsum("mbi,mbi->mb", miss, miss) <= np.where(reach > 0.0, reach, 0.0) ** 2)
        row, body = np.nonzero(candidate)
        contact = np.zeros((count, bodies), dtype=bool)
        entry = np.ones((count, bodies))
        if row.size == 0:
            return contact, entry
        hit, enter = self.clip(-relative[row, body], travel[row], yaws[row, body], supports[row, body],
                               pusher_radius[row])
        contact[row, body] = hit
        entry[row, body] = np.where(hit, enter, 1.0)
        return contact, entry

    def clip(self, start: np.ndarray, travel: np.ndarray, yaws: np.ndarray, supports: np.ndarray,
             pusher_radius: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cyrus-Beck clipping of K paths, each against one body's inflated support polygon.

        Args:
            start: (K, 2) the pusher's start relative to the body's centroid, m (table frame).
            travel: (K, 2) u T, m. yaws: (K,) the body's yaw, rad. supports: (K, S) its support
            table, m. pusher_radius: (K,) m.
        Returns:
            (contact (K,) bool, path fraction of first contact (K,), meaningful where contact).
        """
        local_start = _rotate(start, -yaws)  # body-local
        along = _rotate(travel, -yaws) @ self._normals.T  # (K, S)
        gap = supports + (pusher_radius[:, None] - GATE_PENETRATION) - local_start @ self._normals.T
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = gap / along
        entering = np.where(along < 0.0, bound, np.where((along == 0.0) & (gap < 0.0), np.inf, -np.inf))
        leaving = np.where(along > 0.0, bound, np.where((along == 0.0) & (gap < 0.0), -np.inf, np.inf))
        enter = np.maximum(np.max(entering, axis=-1), 0.0)
        leave = np.minimum(np.min(leaving, axis=-1), 1.0)
        return enter <= leave, enter

    def encode(
        self,
        descriptors: BodyDescriptors,
        pusher: np.ndarray,
        object_poses: np.ndarray,
        object_twists: np.ndarray,
        obstacle_poses: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
        scalars: np.ndarray,
    ) -> PushGraphs:
        """Graphs of a batch.

        Args:
            descriptors: bodies (B = n objects + o obstacles), unbatched or (M, B, ...).
            pusher: (M, 2) m.
            object_poses: (M, n, 3). object_twists: (M, n, 3) (body-origin velocity, yaw rate).
            obstacle_poses: (M, o, 3) (static).
            controls: (M, 2) m/s. durations: (M,) s.
            scalars: (M, 3): pusher radius m, pusher friction, object/object friction.
        """
        count, objects = object_poses.shape[:2]
        poses = np.concatenate([object_poses, obstacle_poses], axis=1)  # (M, B, 3)
        bodies = poses.shape[1]
        twists = np.concatenate([object_twists, np.zeros((count, bodies - objects, 3))], axis=1)
        present = np.broadcast_to(descriptors.present, (count, bodies))
        static = np.broadcast_to(descriptors.static, (count, bodies))
        is_object = present & ~static
        yaws = poses[..., 2]
        offsets = _rotate(np.broadcast_to(descriptors.centroids, (count, bodies, 2)), yaws)
        centroids = poses[..., :2] + offsets
        velocities = twists[..., :2] + _cross_z(twists[..., 2], offsets)
        travel = controls * durations[:, None]
        length = np.linalg.norm(travel, axis=1)
        bounding = np.broadcast_to(descriptors.bounding_radii, (count, bodies))

        distance_to_pusher = np.where(is_object, np.linalg.norm(centroids - pusher[:, None], axis=-1), np.inf)
        nearest = np.argmin(distance_to_pusher, axis=1)
        towards = centroids[np.arange(count), nearest] - pusher
        speed = np.linalg.norm(controls, axis=1)
        frame = np.where(speed > 1e-12, np.arctan2(controls[:, 1], controls[:, 0]),
                         np.arctan2(towards[:, 1], towards[:, 0]))

        contact, entry = self.path_contacts(pusher, travel, centroids, yaws, descriptors.supports, scalars[:, 0],
                                             is_object)
        moving = is_object & ((np.linalg.norm(velocities, axis=-1) > self.spec.moving_speed)
                              | (np.abs(twists[..., 2]) > self.spec.moving_yaw_rate))
        between = centroids[:, :, None] - centroids[:, None]
        reach = bounding[:, :, None] + bounding[:, None, :] + (length + self.spec.reach_margin)[:, None, None]
        near = ((np.einsum("mijk,mijk->mij", between, between) < reach * reach)
                & present[:, :, None] & present[:, None, :])
        object_near = near & is_object[:, :, None] & is_object[:, None, :]
        involved = contact | moving
        for _ in range(objects):
            grown = involved | np.any(object_near & involved[:, :, None], axis=1)
            if np.array_equal(grown, involved):
                break
            involved = grown
        gated = np.any(involved, axis=1)
        obstacle_near = static & present & np.any(near & involved[:, :, None], axis=1)
        is_node = involved | obstacle_near

        rows = np.flatnonzero(gated)
        node_counts = np.sum(is_node[rows], axis=1)
        width = int(node_counts.max()) if rows.size else 0
        order = np.argsort(~is_node[rows], axis=1, kind="stable")[:, :width]  # nodes first, body order kept
        node_mask = np.arange(width)[None, :] < node_counts[:, None]
        node_bodies = np.where(node_mask, order, -1)
        take = np.where(node_mask, order, 0)

        def gather(values: np.ndarray) -> np.ndarray:
            return values[rows[:, None], take]

        angle = frame[rows][:, None]
        node_centroids = _rotate(gather(centroids) - pusher[rows][:, None], -angle)
        node_velocities = _rotate(gather(velocities), -angle)
        node_yaws = gather(yaws)
        node_static = gather(static) & node_mask
        # each node's support table, as a row of the descriptors' (unbatched or per-row) tables
        tables = descriptors.supports.reshape(-1, SUPPORT_SAMPLES)
        table_rows = take if descriptors.supports.ndim == 2 else rows[:, None] * bodies + take  # (G, N)
        frame_supports = support_along(tables, self._frame_angles + (angle - node_yaws)[..., None], rows=table_rows)
        globals_ = np.stack([speed[rows], durations[rows], length[rows], scalars[rows, 0], scalars[rows, 1],
                             scalars[rows, 2]], axis=-1)
        nodes = np.concatenate([
            node_centroids,
            frame_supports,
            node_velocities,
            gather(twists[..., 2])[..., None],
            gather(np.broadcast_to(descriptors.masses, (count, bodies)))[..., None],
            gather(np.broadcast_to(descriptors.support_frictions, (count, bodies)))[..., None],
            gather(np.broadcast_to(descriptors.gyration_radii, (count, bodies)))[..., None],
            gather(bounding)[..., None],
            node_static[..., None].astype(float),
            gather(contact)[..., None].astype(float),
            gather(entry)[..., None],
            np.broadcast_to(globals_[:, None, :], (rows.size, width, globals_.shape[1])),
        ], axis=-1)
        nodes = np.where(node_mask[..., None], nodes, 0.0)

        pair_near = np.take_along_axis(np.take_along_axis(near[rows], take[:, :, None], axis=1),
                                       take[:, None, :], axis=2)
        both_static = node_static[:, :, None] & node_static[:, None, :]
        edge_mask = (pair_near & node_mask[:, :, None] & node_mask[:, None, :] & ~both_static
                     & ~np.eye(width, dtype=bool)[None])
        # features of the edges that exist only (about 1 in 8 of the N x N pairs on 16 objects); zero elsewhere
        graph, sender, receiver = np.nonzero(edge_mask)  # edge [g, i, j]: i -> j
        difference = node_centroids[graph, sender] - node_centroids[graph, receiver]  # c_i - c_j
        span = np.linalg.norm(difference, axis=-1)
        direction_angle = np.arctan2(difference[:, 1], difference[:, 0]) + angle[graph, 0]  # table frame
        receiver_support = support_along(tables, (direction_angle - node_yaws[graph, receiver])[:, None],
                                         rows=table_rows[graph, receiver])[:, 0]
        sender_support = support_along(tables, (direction_angle + math.pi - node_yaws[graph, sender])[:, None],
                                       rows=table_rows[graph, sender])[:, 0]
        along_line = receiver_support + sender_support
        relative_velocity = node_velocities[graph, sender] - node_velocities[graph, receiver]
        edges = np.zeros((rows.size, width, width, EDGE_SIZE))
        edges[graph, sender, receiver] = np.concatenate(
            [difference, span[:, None], along_line[:, None], (span - along_line)[:, None], relative_velocity], axis=-1)
        return PushGraphs(gated=gated, involved=involved, frame_angles=frame, node_bodies=node_bodies,
                          node_mask=node_mask, node_static=node_static, nodes=nodes, edge_mask=edge_mask, edges=edges)

    @staticmethod
    def targets(graphs: PushGraphs, descriptors: BodyDescriptors, object_poses: np.ndarray,
                next_object_poses: np.ndarray, next_object_twists: np.ndarray) -> np.ndarray:
        """(G, N, OUTPUT_SIZE) training targets of the gated rows (zeros at static/padding nodes)."""
        rows = np.flatnonzero(graphs.gated)
        objects = object_poses.shape[1]
        take = np.clip(graphs.node_bodies, 0, objects - 1)
        moving = graphs.node_mask & ~graphs.node_static
        centroids = np.broadcast_to(descriptors.centroids[..., :objects, :], (len(graphs.gated), objects, 2))

        def world_centroid(poses: np.ndarray) -> np.ndarray:
            return poses[..., :2] + _rotate(centroids, poses[..., 2])

        start = world_centroid(object_poses)[rows]
        end = world_centroid(next_object_poses)[rows]
        end_offsets = _rotate(centroids, next_object_poses[..., 2])[rows]
        end_velocity = next_object_twists[rows, :, :2] + _cross_z(next_object_twists[rows, :, 2], end_offsets)
        angle = graphs.frame_angles[rows][:, None]

        def gather(values: np.ndarray) -> np.ndarray:
            return np.take_along_axis(values, take.reshape(take.shape + (1,) * (values.ndim - 2)), axis=1)

        displacement = _rotate(gather(end - start), -angle)
        yaw_change = wrap_angle(gather(next_object_poses[rows, :, 2] - object_poses[rows, :, 2]))
        velocity = _rotate(gather(end_velocity), -angle)
        rate = gather(next_object_twists[rows, :, 2])
        outputs = np.concatenate([displacement, yaw_change[..., None], velocity, rate[..., None]], axis=-1)
        return np.where(moving[..., None], outputs, 0.0)

    @staticmethod
    def decode(graphs: PushGraphs, descriptors: BodyDescriptors, object_poses: np.ndarray, outputs: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Next object poses and twists (M, n, 3) from per-node outputs (G, N, OUTPUT_SIZE):
        involved objects move as predicted, the others stay with a zero twist."""
        count, objects = object_poses.shape[:2]
        next_poses = object_poses.copy()
        next_twists = np.zeros_like(object_poses)
        rows = np.flatnonzero(graphs.gated)
        if rows.size == 0:
            return next_poses, next_twists
        moving = graphs.node_mask & ~graphs.node_static
        row_index = np.broadcast_to(rows[:, None], moving.shape)[moving]
        body_index = graphs.node_bodies[moving]
        angle = graphs.frame_angles[row_index]
        predicted = outputs[moving]
        centroids = np.broadcast_to(descriptors.centroids[..., :objects, :], (count, objects, 2))[row_index, body_index]
        pose = object_poses[row_index, body_index]
        start = pose[:, :2] + _rotate(centroids, pose[:, 2])
        yaw = pose[:, 2] + predicted[:, 2]
        end_offset = _rotate(centroids, yaw)
        end = start + _rotate(predicted[:, :2], angle)
        rate = predicted[:, 5]
        velocity = _rotate(predicted[:, 3:5], angle) - _cross_z(rate, end_offset)
        next_poses[row_index, body_index] = np.concatenate([end - end_offset, yaw[:, None]], axis=-1)
        next_twists[row_index, body_index] = np.concatenate([velocity, rate[:, None]], axis=-1)
        return next_poses, next_twists
