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
from parapush.prediction import ModelConfig
from parapush.prediction.coarse_models import build_coarse_model
from parapush.scene import Scene
from parareal_common import format_table, write_results


def coarse_model(name: str, weights: Path, fine_settings: FineSettings, scene: Scene, *,
                 resolve_overlaps: bool = True) -> Any:
    """The coarse model ``name`` for ``scene`` from the project's one factory: ``learned`` with
    ``weights`` checked against ``fine_settings``, ``analytical`` with the ISRR paper's rotation."""
    config = ModelConfig(coarse_model=name, learned_weights=str(weights), fine=fine_settings,
                         analytical_rotation="isrr")
    return build_coarse_model(scene, config, resolve_overlaps=resolve_overlaps, ignore_obstacles=False).model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="held-out dataset (.npz)")
    parser.add_argument("--samples", type=int, default=2000, help="pushes to generate when --data is not given")
    parser.add_argument("--seed", type=int, default=20261122, help="seed when generating")
    parser.add_argument("--weights", type=Path, default=None, help="learned weights (default: shipped)")
    args = parser.parse_args(argv)
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
