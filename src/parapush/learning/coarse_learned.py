"""The learned coarse model C: a trained network wrapped as a batched numpy Propagator.

Prediction for one row (state x, control u, duration T):

1. gate (authors' rule, :mod:`parapush.learning.gating`): if the pusher's straight path
   does not overlap any slider by more than 0.5 mm, every slider keeps its pose and gets a
   zero twist; otherwise the sliders *involved* in the push (reached by the path, or within
   reach of an involved slider) are encoded in the pusher-centred network frame
   (:mod:`parapush.learning.encoding`) and the network predicts their displacement, yaw
   change and final twist; sliders not involved stay put with zero twist;
2. the pusher moves kinematically: position + u T, velocity u (the fine model's pusher
   servo tracks its command within 0.5 mm over the training data);
3. (``resolve_overlaps``, default on, as in the analytical model) the predicted rows that
   went through the network are passed through the feasibility projection (ISRR Eq 9,
   :class:`~parapush.physics.projection.FeasibilityProjector`): the network's residual
   penetrations (the Eq 5 penalty makes them small on average, not zero: a few mm in
   4-slider clusters) are removed by minimum translations.

Inference is numpy only (:mod:`parapush.learning.numpy_network`); torch is not needed.
The model refuses scenes it was not trained for (boxes, more sliders than trained,
other radii, masses or friction coefficients) and, unless ``ignore_obstacles`` is set,
scenes with obstacles (the network has never seen one; Parareal's fine corrections would
have to account for them). Controls faster than the trained speed and durations outside
the trained range are refused too, rather than extrapolated.

The network imitates one fine model: the :class:`FineSettings` its training pushes were
simulated with (``dataset.fine_settings`` in the weights' metadata). Built for other fine
settings (``fine_settings``: those of the fine model it is paired with), it emits a
:class:`FineSettingsMismatchWarning` naming every differing field. A warning, not an error
as for the scene's bodies: with other fine settings the model is still a valid coarse
model, only a less accurate one (Parareal converges to the fine model it is given whatever
the coarse model; fewer iterations are exact), and studies of the fine settings need
exactly that pairing. Callers that must not run mismatched turn it into an error with
``warnings.simplefilter("error", FineSettingsMismatchWarning)``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import fields
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from parapush.learning.encoding import EncodingSpec, PusherFrameEncoder
from parapush.learning.geometry import ModelMismatchError, TrainedGeometry
from parapush.learning.numpy_network import ExportedNetwork, load_network
from parapush.physics.fine_settings import FineSettings
from parapush.physics.projection import FeasibilityProjector
from parapush.physics.propagator import check_batch
from parapush.scene import Scene, StateLayout
from parapush.validation import check_instance

SHIPPED_WEIGHTS = "learned_coarse_model.npz"
"""File name of the shipped weights in the ``parapush/data`` package directory."""

SPEED_TOLERANCE = 1.0e-3
"""Relative excess over the trained maximum speed that is still accepted."""

DURATION_TOLERANCE = 1.0e-9
"""Absolute margin, s, around the trained duration range."""

UNCHECKED_FINE_SETTINGS = ("speed_limit",)
"""FineSettings fields that do not change the simulated pushes (only which rows are marked
unstable), so a difference in them is not a mismatch."""

FINE_SETTINGS_BEFORE_RECORDED = {"object_tilt": False, "support": "collider", "support_points": 8, "native_ccd": True}
"""FineSettings fields added after weights recorded their training settings, with the value
every such training used (the field did not exist: the model had no such option)."""


class FineSettingsMismatchWarning(UserWarning):
    """The fine settings a learned coarse model is used with are not those of its training data."""


def fine_settings_mismatches(trained: Any, settings: FineSettings) -> list[str]:
    """Descriptions ``"<field>: <value> (trained: <value>)"`` of every field of ``settings``
    that differs from ``trained`` (the ``dataset.fine_settings`` mapping of the weights'
    metadata); fields absent from ``trained`` differ. Empty when they match.

    Raises:
        TypeError naming ``settings`` when it is not a FineSettings.
    """
    if not isinstance(settings, FineSettings):
        raise TypeError(f"fine_settings: expected FineSettings, got {type(settings).__name__}")
    if not isinstance(trained, dict):
        return ["fine_settings: the weights' metadata records no dataset.fine_settings"]
    mismatches = []
    for name in (item.name for item in fields(FineSettings) if item.name not in UNCHECKED_FINE_SETTINGS):
        value = getattr(settings, name)
        if name not in trained and name in FINE_SETTINGS_BEFORE_RECORDED:
            trained = {**trained, name: FINE_SETTINGS_BEFORE_RECORDED[name]}
        if name not in trained:
            mismatches.append(f"fine_settings.{name}: {value!r} (trained: not recorded)")
            continue
        recorded = trained[name]
        same = (math.isclose(float(value), float(recorded), rel_tol=1e-9, abs_tol=0.0)
                if isinstance(value, float) and isinstance(recorded, (int, float)) else value == recorded)
        if not same:
            mismatches.append(f"fine_settings.{name}: {value!r} (trained: {recorded!r})")
    return mismatches


def predict_finite_rows(states: np.ndarray, controls: np.ndarray, durations: np.ndarray,
                        predict: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """``predict`` (states (m, D), controls (m, 2), durations (m,) -> (m, D)) on the rows of
    ``states`` (M, D) that are finite; NaN rows for the others."""
    result = np.full_like(states, np.nan)
    finite = np.all(np.isfinite(states), axis=1)
    if np.any(finite):
        result[finite] = predict(states[finite], controls[finite], durations[finite])
    return result


def pushed_states(layout: StateLayout, pusher: np.ndarray, controls: np.ndarray, durations: np.ndarray,
                  next_poses: np.ndarray, next_twists: np.ndarray, gated: np.ndarray,
                  projector: FeasibilityProjector | None) -> np.ndarray:
    """(M, D) states after M pushes: the pusher (M, 2) moved kinematically (position + u T,
    velocity u), the objects at ``next_poses`` / ``next_twists`` (M, n, 3); the ``gated`` (M,)
    rows (the ones a network predicted) projected out of overlap when ``projector`` is given."""
    count = pusher.shape[0]
    next_states = np.empty((count, layout.dimension))
    next_states[:, layout.pusher_position] = pusher + controls * durations[:, None]
    next_states[:, layout.object_poses] = next_poses.reshape(count, -1)
    next_states[:, layout.pusher_velocity] = controls
    next_states[:, layout.object_twists] = next_twists.reshape(count, -1)
    if projector is not None and np.any(gated):
        next_states[gated] = projector.project(next_states[gated])
    return next_states


def check_trained_controls(controls: np.ndarray, durations: np.ndarray, max_speed: float,
                           duration_range: tuple[float, float], model: str) -> None:
    """Refuse controls (M, 2) m/s faster than ``max_speed`` and durations (M,) s outside
    ``duration_range`` (the trained ranges of the learned coarse model called ``model``), naming
    the argument and the first such row (ValueError): a learned model does not extrapolate."""
    speeds = np.linalg.norm(controls, axis=1)
    too_fast = np.flatnonzero(speeds > max_speed * (1.0 + SPEED_TOLERANCE))
    if too_fast.size:
        row = int(too_fast[0])
        raise ValueError(f"controls[{row}]: speed {speeds[row]:.4f} m/s exceeds the {model}'s trained maximum "
                         f"{max_speed} m/s")
    low, high = duration_range
    outside = np.flatnonzero((durations < low - DURATION_TOLERANCE) | (durations > high + DURATION_TOLERANCE))
    if outside.size:
        row = int(outside[0])
        raise ValueError(f"durations[{row}]: {durations[row]} s lies outside the {model}'s trained range "
                         f"[{low}, {high}] s")


def warn_fine_settings_mismatch(path: Path, mismatches: list[str], model: str, card: str) -> None:
    """Warn (:class:`FineSettingsMismatchWarning`, at the model's caller) that the ``model`` whose
    weights are ``path`` was trained against another fine model (``mismatches``: the differing
    fields); ``card``: its model card, which says how to retrain."""
    if mismatches:
        warnings.warn(
            f"{path}: the {model} was trained against another fine model: {'; '.join(mismatches)}. Its predictions "
            "approximate the trained fine model, not this one (Parareal needs more iterations); retrain it for these "
            f"settings ({card}) or use the trained ones",
            FineSettingsMismatchWarning,
            stacklevel=3,
        )


def shipped_weights_path() -> Path:
    """Path of the weights shipped with the package (``parapush/data/learned_coarse_model.npz``)."""
    return Path(str(resources.files("parapush") / "data" / SHIPPED_WEIGHTS))


class LearnedCoarseModel:
    """Learned coarse pushing model; a :class:`~parapush.physics.propagator.Propagator`.

    Args:
        scene: a scene of 1..S identical cylinders matching the trained geometry.
        weights_path: an exported network (``python -m parapush.learning.train``); the
            shipped weights when None.
        ignore_obstacles: accept a scene with obstacles and predict as if they were absent
            (with ``resolve_overlaps`` objects predicted inside an obstacle are moved out).
        resolve_overlaps: project the network's predictions to states without penetration.
        fine_settings: the :class:`FineSettings` of the fine model this coarse model is
            paired with (None: the defaults, as for ``FineModel``); compared with those the
            training data was simulated with.

    Attributes:
        layout: the scene's state layout.
        fine_settings: the fine settings it was built for.
        network: the loaded network.
        max_speed: trained largest pusher speed, m/s.
        duration_range: trained (shortest, longest) control duration, s.

    Raises:
        ModelMismatchError (a ValueError) naming the field when the scene or the weights do not fit.

    Warns:
        FineSettingsMismatchWarning naming every field of ``fine_settings`` that differs from
        the training data's (see the module docstring for why this is a warning).
    """

    def __init__(
        self,
        scene: Scene,
        weights_path: str | Path | None = None,
        *,
        ignore_obstacles: bool = False,
        resolve_overlaps: bool = True,
        fine_settings: FineSettings | None = None,
    ) -> None:
        check_instance("scene", scene, Scene, "a parapush.scene.Scene")
        fine_settings = FineSettings() if fine_settings is None else fine_settings
        path = shipped_weights_path() if weights_path is None else Path(weights_path)
        if not path.is_file():
            raise FileNotFoundError(f"weights_path: no weights file at {path}")
        self.network: ExportedNetwork = load_network(path)
        metadata = self.network.metadata
        encoding = EncodingSpec.from_dict(metadata["encoding"])
        geometry = TrainedGeometry.from_dict(metadata["geometry"])
        geometry.check_scene(scene)
        mismatches = fine_settings_mismatches(metadata.get("dataset", {}).get("fine_settings"), fine_settings)
        if scene.obstacles and not ignore_obstacles:
            raise ModelMismatchError(
                f"obstacles: the scene has {len(scene.obstacles)} obstacle(s) "
                f"({[obstacle.name for obstacle in scene.obstacles]}) and the learned model was trained without "
                "any; pass ignore_obstacles=True to predict as if they were absent"
            )
        ranges = metadata.get("trained_ranges", {})
        self.max_speed = float(ranges.get("max_speed", np.nan))
        self.duration_range = tuple(float(value) for value in ranges.get("duration_range", (np.nan, np.nan)))
        if not (np.isfinite(self.max_speed) and all(np.isfinite(self.duration_range))):
            raise ModelMismatchError(f"{path}: metadata has no finite trained_ranges (max_speed, duration_range)")
        self.scene = scene
        self.fine_settings = fine_settings
        self.weights_path = path
        self.geometry = geometry
        self.layout: StateLayout = scene.layout
        self.encoder = PusherFrameEncoder(encoding, geometry)
        self.projector = FeasibilityProjector(scene) if resolve_overlaps else None
        warn_fine_settings_mismatch(path, mismatches, "learned coarse model",
                                    "src/parapush/data/learned_coarse_model.md")

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """Predict the states after holding each control for its duration.

        Args:
            states: (M, D) states in the papers' layout; non-finite rows give NaN rows.
            controls: (M, 2) pusher velocities, m/s, |u| <= the trained maximum speed.
            durations: (M,) s, within the trained duration range.
        Returns:
            (M, D) predicted states.
        Raises:
            ValueError naming the argument and row for a speed or duration outside the
            trained ranges, or a wrong shape.
        """
        states, controls, durations = check_batch(self.layout, states, controls, durations)
        check_trained_controls(controls, durations, self.max_speed, self.duration_range, "learned model")
        return predict_finite_rows(states, controls, durations, self._predict)

    def _predict(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        layout = self.layout
        poses = layout.poses(states)
        count, sliders = poses.shape[0], poses.shape[1]
        pusher = states[:, layout.pusher_position]
        encoded = self.encoder.encode(pusher, poses, np.ones((count, sliders), dtype=bool), controls, durations)
        outputs = np.zeros((count, self.encoder.spec.output_size))
        gated = encoded.gated
        if np.any(gated):
            outputs[gated] = self.network.forward(encoded.features[gated])
        next_poses, next_twists = self.encoder.decode(encoded, outputs, poses)
        return pushed_states(layout, pusher, controls, durations, next_poses, next_twists, gated, self.projector)
