"""One-step prediction errors of a coarse model against the fine model's labels.

For each push of a dataset the model predicts the state after the control; the error of a
slider is the distance between predicted and fine final centres (m) and the absolute
wrapped difference of final yaws (rad). Errors are pooled over sliders: over *all*
sliders of the pushes (most of which do not move in a cluttered push) and over the
*moved* sliders only (fine-model travel > :data:`parapush.learning.dataset.MOVED_THRESHOLD`),
the sharper measure of how well contact is predicted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from parapush.learning.dataset import PushDataset, training_scene
from parapush.physics.propagator import Propagator
from parapush.scene import Scene, StateLayout, wrap_angle


def slider_errors(
    predicted: np.ndarray, reference: np.ndarray, layout: StateLayout
) -> tuple[np.ndarray, np.ndarray]:
    """Per-slider final errors.

    Args:
        predicted: (M, D) predicted states.
        reference: (M, D) fine-model states.
        layout: their layout.
    Returns:
        (position (M, n) m, yaw (M, n) rad, absolute and wrapped).
    """
    predicted_poses = layout.poses(predicted)
    reference_poses = layout.poses(reference)
    position = np.linalg.norm(predicted_poses[..., :2] - reference_poses[..., :2], axis=-1)
    yaw = np.abs(wrap_angle(predicted_poses[..., 2] - reference_poses[..., 2]))
    return position, yaw


def deepest_penetrations(states: np.ndarray, layout: StateLayout, pusher_radius: float,
                         slider_radius: float) -> np.ndarray:
    """(M,) deepest pusher/slider or slider/slider overlap of each state, m (0 when none)."""
    centres = layout.poses(states)[..., :2]
    pusher = states[:, layout.pusher_position]
    deepest = np.max(pusher_radius + slider_radius - np.linalg.norm(centres - pusher[:, None], axis=-1), axis=1)
    count = centres.shape[1]
    for first in range(count):
        for second in range(first + 1, count):
            overlap = 2.0 * slider_radius - np.linalg.norm(centres[:, first] - centres[:, second], axis=-1)
            deepest = np.maximum(deepest, overlap)
    return np.maximum(deepest, 0.0)


@dataclass(frozen=True)
class OneStepErrors:
    """Pooled one-step errors of a model on a set of pushes (mm and degrees).

    Attributes:
        model: the model's name.
        slider_count: sliders per push.
        pushes: number of pushes.
        moved_sliders: number of sliders the fine model moved.
        position_mean_mm: mean over all sliders.
        position_rms_mm: RMS over all sliders.
        yaw_mean_deg: mean over all sliders.
        moved_position_mean_mm: mean over moved sliders.
        moved_position_median_mm: median over moved sliders.
        moved_position_p90_mm: 90th percentile over moved sliders.
        moved_yaw_mean_deg: mean over moved sliders.
        penetration_p95_mm: 95th percentile over pushes of the deepest overlap in the prediction.
        penetration_max_mm: deepest overlap in any prediction.
        seconds_per_push: the model's wall time per push in this evaluation, s.
    """

    model: str
    slider_count: int
    pushes: int
    moved_sliders: int
    position_mean_mm: float
    position_rms_mm: float
    yaw_mean_deg: float
    moved_position_mean_mm: float
    moved_position_median_mm: float
    moved_position_p90_mm: float
    moved_yaw_mean_deg: float
    penetration_p95_mm: float
    penetration_max_mm: float
    seconds_per_push: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _statistic(values: np.ndarray, function: Callable[[np.ndarray], float]) -> float:
    return float(function(values)) if values.size else float("nan")


def evaluate_one_step(
    model_factory: Callable[[Scene], Propagator], name: str, dataset: PushDataset, slider_count: int
) -> OneStepErrors:
    """Errors of the model built by ``model_factory(scene)`` on the ``slider_count``-slider pushes.

    Args:
        model_factory: builds the propagator for the dataset's k-slider training scene.
        name: the model's name in the result.
        dataset: pushes labelled by the fine model.
        slider_count: k.
    """
    scene = training_scene(dataset.geometry, slider_count)
    model = model_factory(scene)
    states, controls, durations, reference = dataset.scene_problem(slider_count)
    started = time.perf_counter()
    predicted = model.propagate(states, controls, durations)
    seconds = time.perf_counter() - started
    position, yaw = slider_errors(predicted, reference, scene.layout)
    moved = dataset.slider_moved()[dataset.scene_rows(slider_count), :slider_count]
    moved_position, moved_yaw = position[moved], yaw[moved]
    geometry = dataset.geometry
    penetration = deepest_penetrations(predicted, scene.layout, geometry.pusher_radius, geometry.slider_radius)
    return OneStepErrors(
        model=name,
        slider_count=slider_count,
        pushes=int(states.shape[0]),
        moved_sliders=int(moved.sum()),
        position_mean_mm=1e3 * _statistic(position, np.mean),
        position_rms_mm=1e3 * _statistic(position, lambda values: np.sqrt(np.mean(values**2))),
        yaw_mean_deg=_statistic(np.degrees(yaw), np.mean),
        moved_position_mean_mm=1e3 * _statistic(moved_position, np.mean),
        moved_position_median_mm=1e3 * _statistic(moved_position, np.median),
        moved_position_p90_mm=1e3 * _statistic(moved_position, lambda values: np.percentile(values, 90)),
        moved_yaw_mean_deg=_statistic(np.degrees(moved_yaw), np.mean),
        penetration_p95_mm=1e3 * _statistic(penetration, lambda values: np.percentile(values, 95)),
        penetration_max_mm=1e3 * _statistic(penetration, np.max),
        seconds_per_push=seconds / max(int(states.shape[0]), 1),
    )
