"""The general learned coarse model: one interaction network for every scene the format allows.

A :class:`~parapush.physics.propagator.Propagator` for scenes of 1-16 objects of any shape
(cylinder, box, ellipse, polygon), mass, support/pusher/object friction and with
obstacles, inside the ranges its training covered
(:class:`~parapush.learning.scene_ranges.SceneRanges`, stored in the weights' metadata).
A scene outside them is refused with a :class:`ModelMismatchError` naming the field;
controls faster than the trained speed or durations outside the trained range raise
``ValueError`` naming the row.

Prediction for one row (state x, control u, duration T):

1. the general gate and graph (:mod:`parapush.learning.graph_encoding`): objects the
   pusher's path reaches (closed over reach) or that are moving are *involved*; they and the
   obstacles near them are the graph's nodes; a row with no involved object leaves every
   object in place with a zero twist;
2. the interaction network (:mod:`parapush.learning.graph_network_numpy`, numpy only)
   predicts each involved object's centroid displacement, yaw change and final twist in the
   pusher frame; objects not involved stay put with a zero twist;
3. the pusher moves kinematically: position + u T, velocity u;
4. (``resolve_overlaps``, default on) rows that went through the network are projected to
   states without penetration (:class:`~parapush.physics.projection.FeasibilityProjector`,
   ISRR Eq 9), as the analytical and the first learned model do.

The network imitates the fine model whose :class:`FineSettings` labelled its data
(``dataset.fine_settings``); other ``fine_settings`` give a
:class:`~parapush.learning.coarse_learned.FineSettingsMismatchWarning` naming every
differing field (see :mod:`parapush.learning.coarse_learned` for why it is a warning).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np

from parapush.learning.body_descriptors import BodyDescriptors
from parapush.learning.coarse_learned import (
    check_trained_controls,
    fine_settings_mismatches,
    predict_finite_rows,
    pushed_states,
    warn_fine_settings_mismatch,
)
from parapush.learning.geometry import ModelMismatchError
from parapush.learning.graph_encoding import GraphEncoder, GraphEncodingSpec
from parapush.learning.graph_network_numpy import GraphNetworkWeights, load_graph_network
from parapush.learning.scene_ranges import SceneRanges
from parapush.physics.fine_settings import FineSettings
from parapush.physics.projection import FeasibilityProjector
from parapush.physics.propagator import check_batch
from parapush.scene import Scene, StateLayout
from parapush.validation import check_instance

SHIPPED_GENERAL_WEIGHTS = "learned_general_coarse_model.npz"
"""File name of the shipped weights in the ``parapush/data`` package directory."""


def shipped_general_weights_path() -> Path:
    """Path of the shipped general weights (``parapush/data/learned_general_coarse_model.npz``)."""
    return Path(str(resources.files("parapush") / "data" / SHIPPED_GENERAL_WEIGHTS))


class GeneralLearnedCoarseModel:
    """General learned coarse pushing model; a :class:`~parapush.physics.propagator.Propagator`.

    Args:
        scene: any scene inside the trained ranges.
        weights_path: exported weights (``python -m parapush.learning.general_train``); the
            shipped weights when None.
        resolve_overlaps: project the predictions to states without penetration.
        fine_settings: the :class:`FineSettings` of the fine model this coarse model is
            paired with (None: the defaults); compared with the training data's.

    Attributes:
        layout: the scene's state layout.
        network: the loaded network.
        ranges: the trained ranges.
        max_speed: trained largest pusher speed, m/s.
        duration_range: trained (shortest, longest) control duration, s.

    Raises:
        ModelMismatchError (a ValueError) naming the field when the scene lies outside the
        trained ranges or the weights are not a general model's.

    Warns:
        FineSettingsMismatchWarning naming every field of ``fine_settings`` that differs from
        the training data's.
    """

    def __init__(
        self,
        scene: Scene,
        weights_path: str | Path | None = None,
        *,
        resolve_overlaps: bool = True,
        fine_settings: FineSettings | None = None,
    ) -> None:
        check_instance("scene", scene, Scene, "a parapush.scene.Scene")
        fine_settings = FineSettings() if fine_settings is None else fine_settings
        path = shipped_general_weights_path() if weights_path is None else Path(weights_path)
        if not path.is_file():
            raise FileNotFoundError(f"weights_path: no weights file at {path}")
        self.network: GraphNetworkWeights = load_graph_network(path)
        metadata = self.network.metadata
        for key in ("encoding", "trained_ranges"):
            if key not in metadata:
                raise ModelMismatchError(f"{path}: metadata has no {key!r}")
        self.ranges = SceneRanges.from_dict(metadata["trained_ranges"])
        self.ranges.check_scene(scene)
        spec = GraphEncodingSpec.from_dict(metadata["encoding"])
        if self.network.node_size != spec.node_size:
            raise ModelMismatchError(f"{path}: the network takes {self.network.node_size} node features, its "
                                     f"encoding gives {spec.node_size}")
        mismatches = fine_settings_mismatches(metadata.get("dataset", {}).get("fine_settings"), fine_settings)
        self.scene = scene
        self.weights_path = path
        self.fine_settings = fine_settings
        self.layout: StateLayout = scene.layout
        self.max_speed = float(self.ranges.max_speed)
        self.duration_range = tuple(float(value) for value in self.ranges.duration_range)
        self.encoder = GraphEncoder(spec)
        self.descriptors = BodyDescriptors.from_scene(scene)
        self.obstacle_poses = np.array([obstacle.pose for obstacle in scene.obstacles], dtype=float).reshape(-1, 3)
        self.scalars = np.array([scene.pusher.radius, scene.pusher.friction, scene.object_friction])
        self.projector = FeasibilityProjector(scene) if resolve_overlaps else None
        warn_fine_settings_mismatch(path, mismatches, "general learned coarse model",
                                    "src/parapush/data/learned_general_coarse_model.md")

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """The states (M, D) after holding each control (M, 2) m/s for its duration (M,) s, as
        :meth:`~parapush.learning.coarse_learned.LearnedCoarseModel.propagate` (NaN rows for
        non-finite states; ValueError naming the argument and row for a control outside the
        trained speed or duration, or a wrong shape)."""
        states, controls, durations = check_batch(self.layout, states, controls, durations)
        check_trained_controls(controls, durations, self.max_speed, self.duration_range, "general learned model")
        return predict_finite_rows(states, controls, durations, self._predict)

    def _predict(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        layout = self.layout
        count = states.shape[0]
        poses = layout.poses(states)
        twists = layout.twists(states)
        pusher = states[:, layout.pusher_position]
        obstacle_poses = np.broadcast_to(self.obstacle_poses, (count, *self.obstacle_poses.shape))
        graphs = self.encoder.encode(self.descriptors, pusher, poses, twists, obstacle_poses, controls, durations,
                                     np.broadcast_to(self.scalars, (count, 3)))
        outputs = np.zeros((*graphs.node_mask.shape, 6))
        if graphs.node_mask.size:
            outputs = self.network.forward(graphs.nodes, graphs.node_mask, graphs.edges, graphs.edge_mask)
        next_poses, next_twists = self.encoder.decode(graphs, self.descriptors, poses, outputs)
        return pushed_states(layout, pusher, controls, durations, next_poses, next_twists, graphs.gated,
                             self.projector)
