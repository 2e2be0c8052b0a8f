"""One-step errors of coarse models against the fine model, per scene family.

Every held-out push (a scene, a state, one control, the fine model's next state) is
predicted by each coarse model of its scene; the errors are kept per object with the
object's and the scene's attributes, so that a *family* is a filter over objects:
cylinders of other radii than the papers' 51.2 mm, boxes, polygons and ellipses, heavy
objects (1-2 kg), low support friction (<= 0.4), scenes of 1 / 2-4 / 5-8 / 9-16 objects,
scenes with obstacles. Errors are reported for the objects the fine model moved by more
than 1 mm (``moved``): median and 95th percentile of the position error of the pose
(the body frame's origin, as in the state), mm, and the mean absolute yaw error, deg.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from parapush.scene import Scene
from parapush.scene.state import wrap_angle

MOVED_THRESHOLD = 1.0e-3
"""An object moved when the fine model moved its pose origin by more than this, m."""

PAPERS_RADIUS = 0.0512
"""The papers' cylinder radius, m."""


@dataclass(frozen=True)
class ObjectErrors:
    """Per object of every evaluated push (all arrays (K,)).

    Attributes:
        position_mm: |predicted - fine| pose position, mm.
        yaw_deg: |wrapped predicted - fine yaw|, deg.
        moved: the fine model moved the object > 1 mm.
        shape: the object's shape. radius: cylinder radius, m (NaN otherwise). mass: kg.
        support_friction: max(table, object friction). object_count: objects in the scene.
        obstacles: the scene has obstacles.
        seconds: prediction wall time of the model over all pushes, s.
    """

    position_mm: np.ndarray
    yaw_deg: np.ndarray
    moved: np.ndarray
    shape: np.ndarray
    radius: np.ndarray
    mass: np.ndarray
    support_friction: np.ndarray
    object_count: np.ndarray
    obstacles: np.ndarray
    seconds: float


Problem = tuple[Scene, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(scene, states (m, D), controls (m, 2), durations (m,), fine next states (m, D))."""


def object_errors(factory: Callable[[Scene], object], problems: Iterable[Problem]) -> ObjectErrors:
    """Errors of the model ``factory(scene)`` on every push of ``problems``."""
    columns: dict[str, list] = {name: [] for name in ObjectErrors.__dataclass_fields__ if name != "seconds"}
    seconds = 0.0
    for scene, states, controls, durations, following in problems:
        model = factory(scene)
        started = time.perf_counter()
        predicted = model.propagate(states, controls, durations)
        seconds += time.perf_counter() - started
        layout = scene.layout
        predicted_poses, fine_poses = layout.poses(predicted), layout.poses(following)
        start = layout.poses(states)
        columns["position_mm"].append(1e3 * np.linalg.norm(predicted_poses[..., :2] - fine_poses[..., :2], axis=-1))
        columns["yaw_deg"].append(np.degrees(np.abs(wrap_angle(predicted_poses[..., 2] - fine_poses[..., 2]))))
        columns["moved"].append(np.linalg.norm(fine_poses[..., :2] - start[..., :2], axis=-1) > MOVED_THRESHOLD)
        rows = states.shape[0]
        specs = scene.objects
        columns["shape"].append(np.tile(np.array([spec.shape for spec in specs]), (rows, 1)))
        columns["radius"].append(np.tile(np.array([spec.radius if spec.shape == "cylinder" else math.nan
                                                   for spec in specs]), (rows, 1)))
        columns["mass"].append(np.tile(np.array([spec.mass for spec in specs]), (rows, 1)))
        columns["support_friction"].append(np.tile(np.array([max(scene.table.friction, spec.friction)
                                                             for spec in specs]), (rows, 1)))
        columns["object_count"].append(np.full((rows, len(specs)), len(specs)))
        columns["obstacles"].append(np.full((rows, len(specs)), bool(scene.obstacles)))
    return ObjectErrors(**{name: np.concatenate([value.reshape(-1) for value in values])
                           for name, values in columns.items()}, seconds=seconds)


FAMILIES: dict[str, Callable[[ObjectErrors], np.ndarray]] = {
    "all": lambda errors: np.ones(errors.moved.shape, dtype=bool),
    "cylinders, other radii": lambda errors: (errors.shape == "cylinder")
    & (np.abs(np.nan_to_num(errors.radius) - PAPERS_RADIUS) > 2e-4),
    "boxes": lambda errors: errors.shape == "box",
    "polygons and ellipses": lambda errors: (errors.shape == "polygon") | (errors.shape == "ellipse"),
    "heavy (1-2 kg)": lambda errors: errors.mass >= 1.0,
    "low support friction (<= 0.4)": lambda errors: errors.support_friction <= 0.4,
    "1 object": lambda errors: errors.object_count == 1,
    "2-4 objects": lambda errors: (errors.object_count >= 2) & (errors.object_count <= 4),
    "5-8 objects": lambda errors: (errors.object_count >= 5) & (errors.object_count <= 8),
    "9-16 objects": lambda errors: (errors.object_count >= 9) & (errors.object_count <= 16),
    "with obstacles": lambda errors: errors.obstacles,
}
"""Family name -> object filter."""


def family_row(family: str, model: str, errors: ObjectErrors, chosen: np.ndarray) -> dict[str, object]:
    """One summary row: moved objects of the family, median / p95 position error mm, mean yaw error deg."""
    moved = chosen & errors.moved
    positions = errors.position_mm[moved]
    yaws = errors.yaw_deg[moved]
    empty = positions.size == 0
    return {
        "family": family,
        "model": model,
        "bodies_moved": int(moved.sum()),
        "bodies": int(chosen.sum()),
        "median_position_mm": math.nan if empty else round(float(np.median(positions)), 3),
        "p95_position_mm": math.nan if empty else round(float(np.percentile(positions, 95)), 3),
        "mean_position_mm": math.nan if empty else round(float(np.mean(positions)), 3),
        "mean_yaw_deg": math.nan if empty else round(float(np.mean(yaws)), 3),
        "all_bodies_rms_mm": math.nan if not chosen.any() else round(
            float(np.sqrt(np.mean(errors.position_mm[chosen] ** 2))), 3),
    }
