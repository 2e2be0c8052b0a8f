"""One-step errors of the learned vs the analytical coarse model on held-out fine-model pushes.

The held-out pushes come from ``python -m parapush.learning.dataset`` with a seed other
than the training seed (``--data``), or are generated here (``--samples``, ``--seed``).
For each slider count k = 1..4 both models predict every push; errors are pooled over
sliders (all sliders, and the sliders the fine model moved > 1 mm); see
:mod:`parapush.learning.evaluation`. The learned model is evaluated as shipped (its
predictions projected to non-penetrating states) and without that projection. The
largest remaining pusher/slider and slider/slider penetration of each model's
predictions is reported too. This is the table of the model card.

    python bench/learned_one_step.py --data heldout.npz [--weights model.npz]

Writes bench/results/learned_one_step.{json,png}.

``--general`` evaluates the general learned model (any shape, size, mass, friction, 1-16
objects, obstacles; :class:`~parapush.learning.coarse_general.GeneralLearnedCoarseModel`)
per scene family (:mod:`parapush.learning.general_evaluation`) on held-out general pushes
(``--general-data``, from ``python -m parapush.learning.general_dataset`` with a seed other
than the training seeds) against the analytical model, and, on the papers' scenes that the
first learned model accepts (``--data``: 1-4 cylinders of 51.2 mm, 0.5 kg), against it too:

    python bench/learned_one_step.py --general --general-data heldout_general.npz --data heldout.npz

Writes bench/results/learned_one_step_general.{json,png} (``summary``: rows of family,
model, bodies moved, median / p95 position error mm, mean yaw error deg).
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from parapush.learning.coarse_learned import shipped_weights_path
from parapush.learning.dataset import DatasetConfig, generate_dataset, load_dataset
from parapush.learning.evaluation import evaluate_one_step
from parapush.physics.fine_settings import FineSettings
from parapush.scene import Scene
from parareal_common import format_table, load_coarse, write_results


def coarse_model(name: str, weights: Path | None, fine_settings: FineSettings, scene: Scene, *,
                 resolve_overlaps: bool = True) -> Any:
    """The coarse model ``name`` for ``scene`` from the project's one factory
    (:func:`parareal_common.load_coarse`): ``learned`` or ``general`` with ``weights`` (None: the
    shipped ones) checked against ``fine_settings``, ``analytical`` with the ISRR paper's rotation."""
    return load_coarse(name, scene, learned_weights=None if weights is None else str(weights),
                       fine_settings=fine_settings, resolve_overlaps=resolve_overlaps)


def _general_problems(dataset):
    """Held-out general pushes grouped by scene: (scene, states, controls, durations, next states)."""
    scene_rows = {}
    for row, scene_index in enumerate(dataset.arrays["scene_index"]):
        scene_rows.setdefault(int(scene_index), []).append(row)
    for rows in scene_rows.values():
        parts = [dataset.scene_problem(row) for row in rows]
        yield (parts[0][0], np.stack([part[1] for part in parts]), np.stack([part[2] for part in parts]),
               np.array([part[3] for part in parts]), np.stack([part[4] for part in parts]))


def _papers_problems(dataset):
    """The first model's held-out pushes by slider count, as (scene, states, controls, durations, next)."""
    from parapush.learning.dataset import training_scene

    for slider_count in range(1, dataset.geometry.max_sliders + 1):
        if dataset.scene_rows(slider_count).size:
            states, controls, durations, following = dataset.scene_problem(slider_count)
            yield training_scene(dataset.geometry, slider_count), states, controls, durations, following


def general_main(args: argparse.Namespace, general=None) -> int:
    """The per-family table. ``general``: a factory scene -> general model (default: the
    project's coarse-model factory's ``general`` choice, with ``--general-weights``)."""
    from parapush.learning.coarse_general import shipped_general_weights_path
    from parapush.learning.general_dataset import load_general_dataset
    from parapush.learning.general_evaluation import FAMILIES, family_row, object_errors

    general_weights = args.general_weights or shipped_general_weights_path()
    dataset = load_general_dataset(args.general_data)
    fine_settings = FineSettings(**dataset.metadata["fine_settings"])
    general = general or partial(coarse_model, "general", args.general_weights, fine_settings)
    analytical = partial(coarse_model, "analytical", shipped_weights_path(), fine_settings)
    models = {"general learned": general, "analytical": analytical}
    errors = {name: object_errors(factory, _general_problems(dataset)) for name, factory in models.items()}
    summary = []
    for family, chooser in FAMILIES.items():
        for name, result in errors.items():
            summary.append(family_row(family, name, result, chooser(result)))
    papers = {}
    if args.data is not None:
        old = load_dataset(args.data)
        old_settings = FineSettings(**old.metadata["fine_settings"])
        old_models = {
            "general learned": general,
            "first learned (4 cylinders)": partial(coarse_model, "learned", args.weights or shipped_weights_path(),
                                                   old_settings),
            "analytical": partial(coarse_model, "analytical", shipped_weights_path(), old_settings),
        }
        papers = {name: object_errors(factory, _papers_problems(old)) for name, factory in old_models.items()}
        for name, result in papers.items():
            summary.append(family_row("papers' cylinders (51.2 mm, 0.5 kg, 1-4)", name, result,
                                      np.ones(result.moved.shape, dtype=bool)))
    headers = ["family", "model", "moved", "median mm", "p95 mm", "mean mm", "yaw deg", "all rms mm"]
    print(f"held-out general pushes: {len(dataset)} (seed {dataset.metadata['seed']}), weights {general_weights}")
    print(format_table(headers, [[row["family"], row["model"], row["bodies_moved"], row["median_position_mm"],
                                  row["p95_position_mm"], row["mean_position_mm"], row["mean_yaw_deg"],
                                  row["all_bodies_rms_mm"]] for row in summary]))
    figure = Figure(figsize=(12, 4.5), layout="constrained")
    axis = figure.subplots()
    families = list(dict.fromkeys(row["family"] for row in summary))
    model_names = list(dict.fromkeys(row["model"] for row in summary))
    width = 0.8 / len(model_names)
    for offset, name in enumerate(model_names):
        values = [next((row["median_position_mm"] for row in summary if row["family"] == family
                        and row["model"] == name), np.nan) for family in families]
        axis.bar(np.arange(len(families)) + (offset - 0.5 * (len(model_names) - 1)) * width, values, width=width,
                 label=name)
    axis.set_xticks(np.arange(len(families)), families, rotation=30, ha="right")
    axis.set_yscale("log")
    axis.set_ylabel("median position error of moved bodies, mm")
    axis.axhline(1.5, color="k", linestyle=":", label="issue target 1.5 mm")
    axis.legend()
    figure.suptitle(f"One-step errors against MuJoCo on {len(dataset)} held-out general pushes")
    json_path, png_path = write_results(
        "learned_one_step_general",
        {"general_weights": str(general_weights), "first_weights": str(args.weights or shipped_weights_path()),
         "general_dataset": {key: dataset.metadata.get(key) for key in
                             ("seed", "samples", "scenes", "object_count_bands", "with_obstacles",
                              "planned_contact_fraction", "fine_contact_fraction", "continuation_fraction")},
         "papers_dataset": None if args.data is None else str(args.data),
         "prediction_seconds": {name: result.seconds for name, result in errors.items()},
         "summary": summary},
        figure,
    )
    print(f"wrote {json_path} and {png_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="held-out dataset (.npz)")
    parser.add_argument("--samples", type=int, default=2000, help="pushes to generate when --data is not given")
    parser.add_argument("--seed", type=int, default=20261122, help="seed when generating")
    parser.add_argument("--weights", type=Path, default=None, help="learned weights (default: shipped)")
    parser.add_argument("--general", action="store_true", help="evaluate the general learned model per family")
    parser.add_argument("--general-data", type=Path, default=None, help="held-out general dataset (.npz)")
    parser.add_argument("--general-weights", type=Path, default=None,
                        help="general learned weights (default: shipped)")
    args = parser.parse_args(argv)
    if args.general:
        if args.general_data is None:
            parser.error("--general needs --general-data")
        return general_main(args)
    if args.data is not None:
        dataset = load_dataset(args.data)
    else:
        dataset = generate_dataset(DatasetConfig(samples=args.samples, seed=args.seed))
    weights = args.weights or shipped_weights_path()
    meta = dataset.metadata
    # the learned model is checked against the fine model that labelled the held-out pushes
    fine_settings = FineSettings(**meta["fine_settings"])
    learned = partial(coarse_model, "learned", weights, fine_settings)

    results = []
    for slider_count in range(1, dataset.geometry.max_sliders + 1):
        if dataset.scene_rows(slider_count).size == 0:
            continue
        results.append(evaluate_one_step(learned, "learned", dataset, slider_count))
        results.append(evaluate_one_step(partial(learned, resolve_overlaps=False), "learned, no projection", dataset,
                                         slider_count))
        results.append(evaluate_one_step(partial(coarse_model, "analytical", weights, fine_settings), "analytical",
                                         dataset, slider_count))

    print(f"held-out pushes: {len(dataset)} (seed {meta['seed']}), planned contact "
          f"{meta['planned_contact_fraction']:.2f}, weights {weights}")
    headers = ["sliders", "model", "pushes", "moved", "all: mean mm", "all: rms mm", "all: yaw deg",
               "moved: mean mm", "moved: median mm", "moved: p90 mm", "moved: yaw deg", "pen p95 mm", "pen max mm",
               "us/push"]
    rows = [[r.slider_count, r.model, r.pushes, r.moved_sliders, r.position_mean_mm, r.position_rms_mm,
             r.yaw_mean_deg, r.moved_position_mean_mm, r.moved_position_median_mm, r.moved_position_p90_mm,
             r.moved_yaw_mean_deg, r.penetration_p95_mm, r.penetration_max_mm, 1e6 * r.seconds_per_push]
            for r in results]
    print(format_table(headers, rows))

    figure = Figure(figsize=(11, 4), layout="constrained")
    axes = figure.subplots(1, 2)
    counts = sorted({r.slider_count for r in results})
    for offset, model in ((-0.27, "learned"), (0.0, "learned, no projection"), (0.27, "analytical")):
        chosen = [r for r in results if r.model == model]
        axes[0].bar(np.array(counts) + offset, [r.moved_position_mean_mm for r in chosen], width=0.27, label=model)
        axes[1].bar(np.array(counts) + offset, [r.moved_yaw_mean_deg for r in chosen], width=0.27, label=model)
    axes[0].set_ylabel("mean position error of moved sliders, mm")
    axes[1].set_ylabel("mean yaw error of moved sliders, deg")
    for axis in axes:
        axis.set_xlabel("sliders in the scene")
        axis.set_xticks(counts)
        axis.legend()
    figure.suptitle(f"One-step (single control) errors against MuJoCo on {len(dataset)} held-out pushes")
    json_path, png_path = write_results(
        "learned_one_step",
        {"weights": str(weights), "dataset": {key: meta[key] for key in
                                              ("seed", "samples", "slider_counts", "planned_contact_fraction",
                                               "fine_contact_fraction") if key in meta},
         "results": [r.to_dict() for r in results]},
        figure,
    )
    print(f"wrote {json_path} and {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
