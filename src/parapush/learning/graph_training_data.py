"""General push datasets turned into graphs for training, grouped by node count.

Every gated push (one the general gate sends to the network) becomes a graph of its
involved objects and nearby obstacles (:class:`~parapush.learning.graph_encoding.GraphEncoder`).
Graphs are grouped by their node count k, so a training batch holds graphs of equal size and
needs no padding; each group holds float32 arrays:

    nodes (R, k, F), edges (R, k, k, E), edge_mask (R, k, k), movable (R, k) (objects, not
    obstacles), targets (R, k, O), rows (R,) dataset row of each graph, scenes (R,) its scene.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parapush.learning.body_descriptors import BodyDescriptors
from parapush.learning.general_dataset import GeneralPushDataset, padded_descriptors, scene_obstacle_poses
from parapush.learning.graph_encoding import GraphEncoder, GraphEncodingSpec

CHUNK_ROWS = 2048
"""Pushes encoded at once (bounds the memory of the padded intermediate arrays)."""


@dataclass(frozen=True)
class GraphGroup:
    """Graphs with ``width`` nodes each (arrays: the module docstring)."""

    width: int
    nodes: np.ndarray
    edges: np.ndarray
    edge_mask: np.ndarray
    movable: np.ndarray
    targets: np.ndarray
    rows: np.ndarray
    scenes: np.ndarray

    def take(self, selection: np.ndarray) -> GraphGroup:
        return GraphGroup(self.width, *(getattr(self, name)[selection] for name in
                                        ("nodes", "edges", "edge_mask", "movable", "targets", "rows", "scenes")))


@dataclass(frozen=True)
class EncodedDataset:
    """Graph groups by width, and the gate's statistics over the dataset.

    Attributes:
        groups: width -> group.
        gated_fraction: share of pushes the gate sends to the network.
        uninvolved_moved: objects the gate left out that the fine model moved > 1 mm.
        objects: objects in all pushes.
    """

    groups: dict[int, GraphGroup]
    gated_fraction: float
    uninvolved_moved: int
    objects: int


def scene_tables(dataset: GeneralPushDataset, max_obstacles: int
                 ) -> tuple[BodyDescriptors, np.ndarray, np.ndarray]:
    """Per scene of the dataset: padded descriptors (Sc, B, ...), obstacle poses (Sc, O, 3)
    and scalars (Sc, 3): pusher radius, pusher friction, object/object friction."""
    scenes = dataset.built_scenes
    descriptors = BodyDescriptors.stack([padded_descriptors(scene, dataset.max_objects, max_obstacles)
                                         for scene in scenes])
    obstacles = np.stack([scene_obstacle_poses(scene, max_obstacles) for scene in scenes])
    scalars = np.array([[scene.pusher.radius, scene.pusher.friction, scene.object_friction] for scene in scenes])
    return descriptors, obstacles, scalars


def encode_dataset(dataset: GeneralPushDataset, spec: GraphEncodingSpec, max_obstacles: int) -> EncodedDataset:
    """Encode every push of ``dataset`` (see the module docstring)."""
    encoder = GraphEncoder(spec)
    descriptors, obstacles, scalars = scene_tables(dataset, max_obstacles)
    arrays = dataset.arrays
    pieces: dict[int, list[GraphGroup]] = {}
    gated_count = 0
    uninvolved_moved = 0
    moved = dataset.moved()
    objects = dataset.max_objects
    for start in range(0, len(dataset), CHUNK_ROWS):
        rows = np.arange(start, min(start + CHUNK_ROWS, len(dataset)))
        scene_rows = arrays["scene_index"][rows]
        row_descriptors = descriptors.take(scene_rows)
        graphs = encoder.encode(row_descriptors, arrays["pusher_positions"][rows], arrays["object_poses"][rows],
                                arrays["object_twists"][rows], obstacles[scene_rows], arrays["controls"][rows],
                                arrays["durations"][rows], scalars[scene_rows])
        targets = encoder.targets(graphs, row_descriptors, arrays["object_poses"][rows],
                                  arrays["next_object_poses"][rows], arrays["next_object_twists"][rows])
        gated_count += int(graphs.gated.sum())
        uninvolved_moved += int(np.sum(moved[rows] & ~graphs.involved[:, :objects]))
        gated_rows = rows[graphs.gated]
        widths = graphs.node_mask.sum(axis=1)
        for width in np.unique(widths):
            chosen = widths == width
            k = int(width)
            pieces.setdefault(k, []).append(GraphGroup(
                k,
                graphs.nodes[chosen, :k].astype(np.float32),
                graphs.edges[chosen, :k, :k].astype(np.float32),
                graphs.edge_mask[chosen, :k, :k],
                (graphs.node_mask & ~graphs.node_static)[chosen, :k],
                targets[chosen, :k].astype(np.float32),
                gated_rows[chosen],
                arrays["scene_index"][gated_rows[chosen]],
            ))
    groups = {}
    for width, parts in sorted(pieces.items()):
        groups[width] = GraphGroup(width, *(np.concatenate([getattr(part, name) for part in parts]) for name in
                                            ("nodes", "edges", "edge_mask", "movable", "targets", "rows", "scenes")))
    total_objects = int(dataset.object_present().sum())
    return EncodedDataset(groups, gated_count / max(len(dataset), 1), uninvolved_moved, total_objects)
