"""How well the physics matches reality: recorded real pushes replayed through the models.

Every push of ``../shared/real_pushes`` (the MIT pushing data set, five steel plates on ABS,
converted by ``bench/mit_pushes.py``) is replayed open loop from its first state (the pusher
at contact, the object at rest) along its recorded path, in 10 mm controls, through:

- ``fine_default_before``: the fine model with the defaults it had before this bench
  (:data:`DEFAULTS_BEFORE`: the support's own collider, no tilt);
- ``fine``: the fine model as the stack configures it (``config/model.yaml``: today's defaults);
- ``fine_world``: the simulated world's physics (:data:`parapush.sim.world.REALITY_PROXY_PHYSICS`);
- ``analytical``: the analytical coarse model as the prediction service builds it;
- ``identified_k1|3|5``: the fine model with the object's parameters identified
  (:class:`parapush.identification.ObjectIdentifier`, cross-entropy search of the support and
  pusher friction and the centre of mass) from k of its pushes, predicting its other pushes
  (``--draws`` random training sets per object and k, seeded); ``identified_grid_k1|3|5`` the
  same training sets with the grid method (cell maps of the differentiable sliding model, rendered
  into the fine model as :func:`parapush.identification.map_rendering.render_map` chooses);
- ``no_motion``: the object does not move (the scale of the errors).

Errors: the object centre's position (mm) and yaw (deg) against the recorded pose, at every
10 mm of pusher travel and at the end; median and p90 per object and over all pushes.

``--choose`` also runs the leave-one-object-out choice of the fine model's support settings
(:data:`CANDIDATES`): for each object, the candidate with the best score on the other four
(:func:`score`: the mean of median/3 mm, median/3 deg, p90/8 mm, p90/8 deg) is reported on the
held-out one. The defaults of ``FineSettings`` are the choice of this protocol (README).

Usage::

    python bench/real_pushes.py [--draws 3] [--choose] [--reference]

Writes ``bench/results/real_pushes.json`` (``summary`` rows ``{model, object, pushes,
position_error_median_mm, position_error_p90_mm, yaw_error_median_deg, yaw_error_p90_deg}``,
``by_travel``, ``loo``) and ``bench/results/real_pushes.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

import mit_pushes
import reference as bench_reference
from parapush.graph import config_dir
from parapush.identification import (
    IdentificationSettings,
    ObjectIdentifier,
    ObjectModelVariants,
    ParameterBounds,
    PushRecord,
    scene_with_object,
)
from parapush.identification.grid_identifier import GridIdentificationSettings, GridIdentifier
from parapush.identification.map_rendering import render_map
from parapush.identification.recorded_pushes import RecordedPushes
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.physics.planar_geometry import rotate
from parapush.prediction import load_model_config
from parapush.prediction.coarse_models import build_coarse_model
from parapush.scene import Scene, wrap_angle
from parapush.sim.world import REALITY_PROXY_PHYSICS

RESULTS = Path(__file__).resolve().parent / "results"

DEFAULTS_BEFORE = {"support": "collider", "object_tilt": False, "native_ccd": True}
"""The fine model's contact settings before this bench chose them (commit 34eabd1)."""

MODELS = ("fine_default_before", "fine", "fine_world", "analytical", "identified_k1", "identified_k3", "identified_k5",
          "identified_grid_k1", "identified_grid_k3", "identified_grid_k5", "no_motion")

TRAINING_PUSHES = (1, 3, 5)
"""k: pushes an object is identified from."""

FIT = ("support_friction", "pusher_friction", "com_x", "com_y")
"""Parameters identified (the mass is known: the plates were weighed)."""

BOUNDS = ParameterBounds(mass=(0.1, 2.0), support_friction=(0.05, 0.5), pusher_friction=(0.05, 0.8), com_offset=0.01)
"""The search box for these plates (steel on ABS: friction near 0.14; pusher near 0.25)."""

CANDIDATES = tuple(
    {"support": support, "support_points": points, "object_tilt": tilt, "native_ccd": native}
    for native in (True, False)
    for support, points, tilt in (
        ("collider", 8, False), ("collider", 8, True),
        ("torsion", 8, False),
        ("points", 8, False),
        ("points", 4, True), ("points", 8, True), ("points", 12, True), ("points", 16, True),
    )
)
"""Physically motivated contact settings the leave-one-object-out protocol chooses among: how the
weight rests on the table (the support geometry's own collider: rim or corners; one centre
contact with the torsional friction of an even pressure, an ellipsoidal limit surface; K points
spread evenly over the outline), with or without the objects' roll and pitch, and MuJoCo's
native or libccd convex collision (the pusher's normal at corners). The measured frictions (ABS
0.14, pusher 0.25) are the scene's and are not chosen."""


def replay(step: Callable[[np.ndarray, np.ndarray, float], np.ndarray], record: PushRecord) -> np.ndarray:
    """(T + 1, D) states predicted open loop from ``record.states[0]`` with ``step(state (1, D),
    control (1, 2), duration)``."""
    states = [record.states[0]]
    for control, duration in zip(record.controls, record.durations, strict=True):
        states.append(step(states[-1][None], control[None], float(duration))[0])
    return np.array(states)


def pose_errors(predicted: np.ndarray, record: PushRecord, index: int) -> tuple[np.ndarray, np.ndarray]:
    """(T + 1,) mm and (T + 1,) deg: object ``index``'s position and yaw error at each boundary."""
    pose = slice(2 + 3 * index, 5 + 3 * index)
    difference = predicted[:, pose] - record.states[:, pose]
    return (np.linalg.norm(difference[:, :2], axis=1) * 1000.0,
            np.abs(np.degrees(wrap_angle(difference[:, 2]))))


def configured_fine() -> FineSettings:
    """The fine model's settings as the stack configures them (``config/model.yaml``)."""
    return load_model_config(config_dir() / "model.yaml").fine


def fine_step(model: FineModel) -> Callable:
    return lambda state, control, duration: model.propagate(state, control, np.array([duration]))


def fine_model(scene: Scene, **overrides) -> FineModel:
    """The fine model as the stack configures it (``config/model.yaml``), with ``overrides``."""
    return FineModel(scene, dataclasses.replace(configured_fine(), **overrides))


def analytical_step(scene: Scene) -> Callable:
    """The analytical coarse model as the prediction service builds it (``config/model.yaml``)."""
    config = dataclasses.replace(load_model_config(config_dir() / "model.yaml"), coarse_model="analytical")
    coarse = build_coarse_model(scene, config, resolve_overlaps=True).model
    return lambda state, control, duration: coarse.propagate(state, control, np.array([duration]))


def evaluate(step: Callable, records: Iterable[PushRecord], index: int
             ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per record: (pusher travel (T + 1,) m, position errors (T + 1,) mm, yaw errors (T + 1,) deg)."""
    results = []
    for record in records:
        travel = np.concatenate([[0.0], np.cumsum(np.linalg.norm(record.controls, axis=1) * record.durations)])
        results.append((travel, *pose_errors(replay(step, record), record, index)))
    return results


def statistics(errors: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict[str, float]:
    """Final-pose error statistics of a list of :func:`evaluate` results."""
    position = np.array([result[1][-1] for result in errors])
    yaw = np.array([result[2][-1] for result in errors])
    return {
        "pushes": len(errors),
        "position_error_median_mm": round(float(np.median(position)), 2),
        "position_error_p90_mm": round(float(np.percentile(position, 90)), 2),
        "yaw_error_median_deg": round(float(np.median(yaw)), 2),
        "yaw_error_p90_deg": round(float(np.percentile(yaw, 90)), 2),
    }


def by_travel(errors: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict[str, list[float]]:
    """Median errors at every 10 mm of pusher travel (each push's errors interpolated there), over the
    pushes that travel that far."""
    marks = np.arange(0.0, max(result[0][-1] for result in errors) + 1e-9, 0.01)
    position, yaw = [], []
    for mark in marks:
        reach = [result for result in errors if result[0][-1] >= mark - 1e-9]
        position.append(float(np.median([np.interp(mark, r[0], r[1]) for r in reach])))
        yaw.append(float(np.median([np.interp(mark, r[0], r[2]) for r in reach])))
    return {"travel_mm": [round(1000.0 * mark) for mark in marks],
            "position_error_median_mm": [round(v, 2) for v in position],
            "yaw_error_median_deg": [round(v, 2) for v in yaw]}


def score(stats: dict[str, float]) -> float:
    """The targets' mean ratio: median/3 mm, median/3 deg, p90/8 mm, p90/8 deg (1: at the targets)."""
    return float(np.mean([stats["position_error_median_mm"] / 3.0, stats["yaw_error_median_deg"] / 3.0,
                          stats["position_error_p90_mm"] / 8.0, stats["yaw_error_p90_deg"] / 8.0]))


def training_sets(count: int, k: int, draws: int, seed: int) -> list[np.ndarray]:
    """``draws`` sets of ``k`` push indices out of ``count`` (seeded: both methods get the same sets)."""
    rng = np.random.default_rng([seed, k])
    return [np.sort(rng.choice(count, size=k, replace=False)) for _ in range(draws)]


def identified_errors(recorded: RecordedPushes, method: str, k: int, draws: int, seed: int, settings: FineSettings
                      ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Errors of the pushes held out when the object is identified from ``k`` of its pushes by ``method``
    (``cem``: the cross-entropy search of the fine model's parameters; ``grid``: the cell maps of the
    differentiable sliding model, rendered into the fine model), for each of ``draws`` training sets."""
    scene, index = recorded.scene, recorded.scene.object_index(recorded.object_name)
    records = recorded.records
    errors = []
    for draw, training in enumerate(training_sets(len(records), k, draws, seed)):
        fitted = [records[i] for i in training]
        if method == "cem":
            model = FineModel(scene, settings)
            with ObjectIdentifier(model, index, bounds=BOUNDS) as identifier:
                result = identifier.identify(fitted, settings=IdentificationSettings(fit=FIT, seed=seed + draw))
            parameters = result.parameters
        else:
            identifier = GridIdentifier.for_scene(scene, index)
            result = identifier.identify(fitted, GridIdentificationSettings())
            parameters = render_map(identifier, result, fitted, scene, settings).parameters
            model = FineModel(scene_with_object(scene, index, parameters), settings)
        ObjectModelVariants(model, index).apply(model.mj_model, parameters)
        model.parameters_changed()
        errors += evaluate(fine_step(model), [r for i, r in enumerate(records) if i not in set(training)], index)
    return errors


def no_motion_step(state: np.ndarray, control: np.ndarray, duration: float) -> np.ndarray:
    moved = state.copy()
    moved[:, :2] += control * duration
    return moved


def model_errors(name: str, recorded: RecordedPushes, args: argparse.Namespace
                 ) -> list[tuple[np.ndarray, np.ndarray]]:
    scene, index = recorded.scene, recorded.scene.object_index(recorded.object_name)
    if name == "fine_default_before":
        return evaluate(fine_step(fine_model(scene, **DEFAULTS_BEFORE)), recorded.records, index)
    if name == "fine":
        return evaluate(fine_step(fine_model(scene)), recorded.records, index)
    if name == "fine_world":
        return evaluate(fine_step(FineModel(scene, REALITY_PROXY_PHYSICS)), recorded.records, index)
    if name == "analytical":
        return evaluate(analytical_step(scene), recorded.records, index)
    if name == "no_motion":
        return evaluate(no_motion_step, recorded.records, index)
    method = "grid" if name.startswith("identified_grid_k") else "cem"
    k = int(name.rsplit("_k", 1)[1])
    return identified_errors(recorded, method, k, args.draws, args.seed, configured_fine())


def choose_support(objects: dict[str, RecordedPushes]) -> list[dict]:
    """Leave-one-object-out choice among :data:`CANDIDATES` (see the module docstring)."""
    table = {}
    for number, candidate in enumerate(CANDIDATES):
        for name, recorded in objects.items():
            index = recorded.scene.object_index(name)
            stats = statistics(evaluate(fine_step(fine_model(recorded.scene, **candidate)), recorded.records, index))
            table[number, name] = stats
        print(f"candidate {candidate}: " + ", ".join(
            f"{name} {score(table[number, name]):.2f}" for name in objects), flush=True)
    rows = []
    for held_out in objects:
        training = [name for name in objects if name != held_out]
        scores = [np.mean([score(table[number, name]) for name in training]) for number in range(len(CANDIDATES))]
        best = int(np.argmin(scores))
        rows.append({"held_out": held_out, "chosen": CANDIDATES[best], "training_score": round(float(scores[best]), 3),
                     "held_out_score": round(score(table[best, held_out]), 3), **table[best, held_out]})
    every = [np.mean([score(table[number, name]) for name in objects]) for number in range(len(CANDIDATES))]
    rows.append({"held_out": "none", "chosen": CANDIDATES[int(np.argmin(every))],
                 "training_score": round(float(min(every)), 3)})
    return rows


def plot(objects: dict[str, RecordedPushes], path: Path) -> None:
    """Recorded and predicted object paths and final outlines of each object's push that turned it most."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    figure, axes = plt.subplots(1, len(objects), figsize=(4.0 * len(objects), 4.2))
    styles = {"recorded": ("k", "-"), "fine_default_before": ("tab:red", "--"), "fine": ("tab:blue", "-"),
              "fine_world": ("tab:purple", "-."), "analytical": ("tab:green", ":")}
    for axis, (name, recorded) in zip(np.atleast_1d(axes), objects.items(), strict=True):
        scene, index = recorded.scene, recorded.scene.object_index(name)
        record = max(recorded.records, key=lambda r: abs(r.states[-1, 4] - r.states[0, 4]))
        paths = {"recorded": record.states,
                 "fine_default_before": replay(fine_step(fine_model(scene, **DEFAULTS_BEFORE)), record),
                 "fine": replay(fine_step(fine_model(scene)), record),
                 "fine_world": replay(fine_step(FineModel(scene, REALITY_PROXY_PHYSICS)), record),
                 "analytical": replay(analytical_step(scene), record)}
        outline = scene.objects[index].outline.boundary()
        for label, states in paths.items():
            colour, line = styles[label]
            x, y, yaw = states[-1, 2:5]
            corners = rotate(outline, yaw) + [x, y]
            axis.add_patch(Polygon(corners * 1000.0, closed=True, fill=False, edgecolor=colour, linestyle=line))
            axis.plot(states[:, 2] * 1000.0, states[:, 3] * 1000.0, color=colour, linestyle=line, label=label)
        axis.plot(record.states[:, 0] * 1000.0, record.states[:, 1] * 1000.0, color="0.5", marker=".", label="pusher")
        x, y, yaw = record.states[0, 2:5]
        start = (rotate(outline, yaw) + [x, y]) * 1000.0
        axis.add_patch(Polygon(start, closed=True, fill=False, edgecolor="0.7", label="start"))
        axis.set_aspect("equal")
        axis.set_title(f"{name}: turn {np.degrees(record.states[-1, 4] - record.states[0, 4]):.0f} deg")
        axis.set_xlabel("x (mm)")
        axis.autoscale_view()
    np.atleast_1d(axes)[0].legend(fontsize=7, loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=mit_pushes.DATA, help="the recorded data's folder")
    parser.add_argument("--draws", type=int, default=3, help="random training sets per object and k")
    parser.add_argument("--seed", type=int, default=0, help="seed of the training sets and the searches")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    parser.add_argument("--objects", default=",".join(mit_pushes.OBJECTS), help="comma-separated subset of the objects")
    parser.add_argument("--choose", action="store_true", help="also run the leave-one-object-out support choice")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args(argv)
    models = [name for name in args.models.split(",") if name]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        parser.error(f"--models: unknown {unknown}; known {list(MODELS)}")
    load_before = bench_reference.load_average()
    print(f"load average {load_before}", flush=True)
    started = time.perf_counter()
    raw = mit_pushes.read_raw_pushes(args.data)
    names = [name for name in args.objects.split(",") if name]
    if sorted(set(names) - set(mit_pushes.OBJECTS)):
        parser.error(f"--objects: unknown {sorted(set(names) - set(mit_pushes.OBJECTS))}; known {mit_pushes.OBJECTS}")
    objects = {name: mit_pushes.convert_object(name, args.data, raw) for name in names}
    summary, travel = [], []
    for model in models:
        pooled = []
        for name, recorded in objects.items():
            errors = model_errors(model, recorded, args)
            pooled += errors
            row = {"model": model, "object": name, **statistics(errors)}
            summary.append(row)
            travel.append({"model": model, "object": name, **by_travel(errors)})
            print(f"{model:20s} {name:7s} position {row['position_error_median_mm']:5.1f} mm "
                  f"(p90 {row['position_error_p90_mm']:5.1f})  yaw {row['yaw_error_median_deg']:5.1f} deg "
                  f"(p90 {row['yaw_error_p90_deg']:5.1f})  n={row['pushes']}", flush=True)
        summary.append({"model": model, "object": "all", **statistics(pooled)})
        travel.append({"model": model, "object": "all", **by_travel(pooled)})
    loo = choose_support(objects) if args.choose else []
    args.output_dir.mkdir(parents=True, exist_ok=True)
    plot(objects, args.output_dir / "real_pushes.png")
    result = {"bench": "real_pushes", "load_average": {"before": load_before, "after": bench_reference.load_average()},
              "seconds": round(time.perf_counter() - started, 1), "draws": args.draws, "seed": args.seed,
              "summary": summary, "by_travel": travel, "loo": loo}
    path = args.output_dir / "real_pushes.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path} and real_pushes.png in {result['seconds']} s")
    figures = {f"{row['model']}_{row['object']}_{key}": row[key] for row in summary
               for key in ("pushes", "position_error_median_mm", "position_error_p90_mm", "yaw_error_median_deg",
                           "yaw_error_p90_deg")}
    bench_reference.write_figures("real_pushes", figures, reference=args.reference, load_before=load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
