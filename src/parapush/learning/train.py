"""Train the learned coarse model on a push dataset (CPU, torch) and export its weights.

The network only sees the pushes whose path reaches a slider (the gate's domain, see
:mod:`parapush.learning.gating`); pushes that miss every slider are predicted exactly by
the gate's rule (objects stay, velocities zero) and are left out of the fit. Each
training push is also used mirrored about the network frame's x-axis (cylinders pushed
on a plane are mirror symmetric), which doubles the data at no simulation cost.

Optimiser NAdam (as the authors), learning rate halved when the validation loss stalls,
early stopping on the validation loss with the best epoch's weights restored.

Command line::

    python -m parapush.learning.train --data data.npz --out model.pt [--export model.npz]
        [--epochs 100] [--batch-size 1024] [--lr 5e-4] [--seed 0]

writes the checkpoint (``--out``), the numpy weights file (``--export``, default: the
checkpoint's path with suffix ``.npz``) and the per-epoch metrics (``<out>.metrics.json``).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from parapush.learning.checkpoint import export_network, save_checkpoint
from parapush.learning.dataset import PushDataset, load_dataset
from parapush.learning.encoding import EncodingSpec, PusherFrameEncoder
from parapush.learning.loss import LossTerms, coarse_model_loss
from parapush.learning.model import HIDDEN_SIZES, CoarseNetwork, NetworkConfig, standardisation
from parapush.learning.training_data import EncodedDataset, encode_dataset, split_rows
from parapush.settings import check_settings, setting

METADATA_DATASET_KEYS = (
    "format", "created", "mujoco_version", "fine_settings", "sampling", "seed", "samples", "samples_requested",
    "unstable_dropped", "slider_counts", "planned_contact_fraction", "fine_contact_fraction",
    "uninvolved_sliders_moved", "backend", "workers", "sampling_seconds", "simulation_seconds", "scene_template",
)
"""Dataset metadata copied into the checkpoint and the weights file."""


@dataclass(frozen=True)
class TrainingConfig:
    """Hyper-parameters of one training run (each field's meaning, unit and range: its :func:`setting`).

    Attributes:
        hidden_sizes: widths of the hidden layers, each >= 1.
    """

    epochs: int = setting(100, "largest number of epochs", minimum=1)
    batch_size: int = setting(1024, "pushes per gradient step", minimum=1)
    learning_rate: float = setting(5e-4, "initial NAdam learning rate", above=0.0)
    seed: int = setting(0, "seeds the split, the shuffling and the initial weights", minimum=0)
    validation_fraction: float = setting(0.2, "share of pushes held out for validation", above=0.0, below=1.0)
    patience: int = setting(12, "stop after this many epochs without a better validation loss", minimum=1)
    penetration_weight: float = setting(1.0e3, "W_F of Eq 5", unit="1/m^2", minimum=0.0)
    mirror: bool = setting(True, "add the mirrored training pushes")
    threads: int = setting(2, "torch CPU threads", minimum=1)
    # Not a setting: a list of integers (a tuple setting holds real numbers); checked below.
    hidden_sizes: tuple[int, ...] = HIDDEN_SIZES

    def __post_init__(self) -> None:
        check_settings(self)
        object.__setattr__(self, "hidden_sizes", NetworkConfig.check_hidden_sizes(self.hidden_sizes))


@dataclass(frozen=True)
class TrainingResult:
    """Outcome of :func:`train_network`.

    Attributes:
        network: the network with the best validation loss (eval mode).
        metadata: geometry, encoding, trained ranges, dataset summary, training config,
            history and validation summary; what the checkpoint and weights file carry.
        history: per-epoch metrics.
    """

    network: CoarseNetwork
    metadata: dict[str, Any]
    history: list[dict[str, float]]


class _Tensors:
    """An :class:`EncodedDataset` as float32 tensors plus the loss's geometric views."""

    def __init__(self, data: EncodedDataset, spec: EncodingSpec) -> None:
        self.features = torch.from_numpy(data.features.astype(np.float32))
        self.targets = torch.from_numpy(data.targets.astype(np.float32))
        self.slot_active = torch.from_numpy(data.slot_active)
        self.spec = spec

    def __len__(self) -> int:
        return int(self.features.shape[0])


def _loss(network: CoarseNetwork, features: torch.Tensor, targets: torch.Tensor, slot_active: torch.Tensor,
          spec: EncodingSpec, pusher_radius: float, slider_radius: float, weight: float) -> tuple[LossTerms,
                                                                                                 torch.Tensor]:
    predicted_normalised = network.forward_normalised(features)
    predicted = network.denormalise(predicted_normalised)
    slot_positions = features[:, torch.from_numpy(spec.slot_position_columns)]
    displacement = predicted[:, torch.from_numpy(spec.displacement_columns)]
    pusher = features[:, torch.from_numpy(spec.travel_columns)]
    terms = coarse_model_loss(
        predicted_normalised, network.normalise_targets(targets), slot_positions + displacement, pusher,
        slot_active, pusher_radius, slider_radius, weight,
    )
    return terms, predicted


def _evaluate(network: CoarseNetwork, data: _Tensors, pusher_radius: float, slider_radius: float,
              weight: float, chunk: int = 8192) -> dict[str, float]:
    """Validation metrics: loss terms, RMS penetrations (mm), slot position error (mm), yaw error (deg)."""
    spec = data.spec
    totals = {"loss": 0.0, "mse": 0.0, "pusher_slider": 0.0, "slider_slider": 0.0}
    position_errors, yaw_errors = [], []
    network.eval()
    with torch.no_grad():
        for start in range(0, len(data), chunk):
            rows = slice(start, start + chunk)
            terms, predicted = _loss(network, data.features[rows], data.targets[rows], data.slot_active[rows], spec,
                                     pusher_radius, slider_radius, weight)
            size = predicted.shape[0]
            totals["loss"] += float(terms.total) * size
            totals["mse"] += float(terms.mse) * size
            totals["pusher_slider"] += float(terms.pusher_slider) * size
            totals["slider_slider"] += float(terms.slider_slider) * size
            columns = torch.from_numpy(spec.displacement_columns)
            error = torch.linalg.vector_norm(predicted[:, columns] - data.targets[rows][:, columns], dim=-1)
            yaw_columns = torch.from_numpy(spec.yaw_change_columns)
            yaw = torch.abs(predicted[:, yaw_columns] - data.targets[rows][:, yaw_columns])
            active = data.slot_active[rows]
            position_errors.append(error[active])
            yaw_errors.append(yaw[active])
    count = max(len(data), 1)
    positions = torch.cat(position_errors)
    yaws = torch.cat(yaw_errors)
    return {
        "loss": totals["loss"] / count,
        "mse": totals["mse"] / count,
        "pusher_slider_penetration_rms_mm": 1e3 * math.sqrt(totals["pusher_slider"] / count),
        "slider_slider_penetration_rms_mm": 1e3 * math.sqrt(totals["slider_slider"] / count),
        "position_error_mean_mm": 1e3 * float(positions.mean()) if positions.numel() else math.nan,
        "position_error_median_mm": 1e3 * float(positions.median()) if positions.numel() else math.nan,
        "yaw_error_mean_deg": math.degrees(float(yaws.mean())) if yaws.numel() else math.nan,
    }


def train_network(
    dataset: PushDataset, config: TrainingConfig, *, log: Callable[[str], None] = print
) -> TrainingResult:
    """Fit the network to the gated pushes of ``dataset``; see the module docstring."""
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    started = time.perf_counter()
    geometry = dataset.geometry
    spec = EncodingSpec(geometry.max_sliders)
    encoder = PusherFrameEncoder(spec, geometry)
    encoded = encode_dataset(dataset, encoder)
    rng = np.random.default_rng(config.seed)
    training_rows, validation_rows = split_rows(len(encoded), config.validation_fraction, rng)
    training = encoded.subset(training_rows[encoded.gated[training_rows]])
    validation = encoded.subset(validation_rows[encoded.gated[validation_rows]])
    if len(training) == 0 or len(validation) == 0:
        raise ValueError(
            f"data: {len(training)} training and {len(validation)} validation pushes reach a slider; need both > 0"
        )
    if config.mirror:
        training = training.concatenate(training.mirrored(spec))

    network = CoarseNetwork(NetworkConfig(spec.input_size, spec.output_size, config.hidden_sizes))
    network.set_normalisation(*standardisation(training.features), *standardisation(training.targets))
    training_tensors, validation_tensors = _Tensors(training, spec), _Tensors(validation, spec)
    optimiser = torch.optim.NAdam(network.parameters(), lr=config.learning_rate)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimiser, factor=0.5, patience=4)
    generator = torch.Generator().manual_seed(config.seed)
    radii = (geometry.pusher_radius, geometry.slider_radius)
    log(f"training on {len(training)} pushes ({'with' if config.mirror else 'without'} mirrored copies), "
        f"validating on {len(validation)}; {sum(p.numel() for p in network.parameters())} parameters")

    history: list[dict[str, float]] = []
    best_loss, best_epoch, best_state = math.inf, 0, copy.deepcopy(network.state_dict())
    for epoch in range(1, config.epochs + 1):
        epoch_started = time.perf_counter()
        network.train()
        order = torch.randperm(len(training_tensors), generator=generator)
        running = {"loss": 0.0, "mse": 0.0}
        for start in range(0, len(order), config.batch_size):
            rows = order[start : start + config.batch_size]
            terms, _ = _loss(network, training_tensors.features[rows], training_tensors.targets[rows],
                             training_tensors.slot_active[rows], spec, *radii, config.penetration_weight)
            optimiser.zero_grad(set_to_none=True)
            terms.total.backward()
            optimiser.step()
            running["loss"] += float(terms.total.detach()) * rows.numel()
            running["mse"] += float(terms.mse.detach()) * rows.numel()
        metrics = {f"validation_{name}": value for name, value in
                   _evaluate(network, validation_tensors, *radii, config.penetration_weight).items()}
        record = {
            "epoch": epoch,
            "train_loss": running["loss"] / len(order),
            "train_mse": running["mse"] / len(order),
            **metrics,
            "learning_rate": optimiser.param_groups[0]["lr"],
            "seconds": time.perf_counter() - epoch_started,
        }
        history.append(record)
        scheduler.step(record["validation_loss"])
        improved = record["validation_loss"] < best_loss
        if improved:
            best_loss, best_epoch, best_state = record["validation_loss"], epoch, copy.deepcopy(network.state_dict())
        log(f"epoch {epoch:3d}  train {record['train_loss']:.5f}  val {record['validation_loss']:.5f}  "
            f"pos {record['validation_position_error_mean_mm']:.2f} mm  "
            f"yaw {record['validation_yaw_error_mean_deg']:.2f} deg  "
            f"pen {record['validation_pusher_slider_penetration_rms_mm']:.2f}/"
            f"{record['validation_slider_slider_penetration_rms_mm']:.2f} mm  "
            f"lr {record['learning_rate']:.1e}  {record['seconds']:.1f} s{'  *' if improved else ''}")
        if epoch - best_epoch >= config.patience:
            log(f"early stop: no better validation loss since epoch {best_epoch}")
            break
    network.load_state_dict(best_state)
    network.eval()
    best = history[best_epoch - 1]
    sampling = dataset.metadata.get("sampling", {})
    metadata = {
        "geometry": geometry.to_dict(),
        "encoding": spec.to_dict(),
        "trained_ranges": {
            "max_speed": float(sampling.get("max_speed", math.nan)),
            "duration_range": list(sampling.get("duration_range", [math.nan, math.nan])),
        },
        "dataset": {key: dataset.metadata[key] for key in METADATA_DATASET_KEYS if key in dataset.metadata},
        "training": {
            "config": asdict(config),
            "training_pushes": len(training),
            "validation_pushes": len(validation),
            "epochs_run": len(history),
            "best_epoch": best_epoch,
            "seconds": round(time.perf_counter() - started, 1),
            "torch_version": str(torch.__version__),
        },
        "validation": {key: value for key, value in best.items() if key.startswith("validation_")},
        "history": history,
    }
    return TrainingResult(network=network, metadata=metadata, history=history)


def _parse(arguments: Sequence[str] | None) -> argparse.Namespace:
    defaults = TrainingConfig()
    parser = argparse.ArgumentParser(prog="python -m parapush.learning.train", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="dataset .npz (python -m parapush.learning.dataset)")
    parser.add_argument("--out", type=Path, required=True, help="checkpoint to write (.pt)")
    parser.add_argument("--export", type=Path, default=None, help="numpy weights file (default: --out with .npz)")
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--lr", type=float, default=defaults.learning_rate)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--patience", type=int, default=defaults.patience)
    parser.add_argument("--penetration-weight", type=float, default=defaults.penetration_weight, help="W_F, 1/m^2")
    parser.add_argument("--validation-fraction", type=float, default=defaults.validation_fraction)
    parser.add_argument("--threads", type=int, default=defaults.threads)
    parser.add_argument("--no-mirror", action="store_true", help="do not add mirrored pushes")
    return parser.parse_args(arguments)


def main(arguments: Sequence[str] | None = None) -> int:
    options = _parse(arguments)
    config = TrainingConfig(
        epochs=options.epochs, batch_size=options.batch_size, learning_rate=options.lr, seed=options.seed,
        validation_fraction=options.validation_fraction, patience=options.patience,
        penetration_weight=options.penetration_weight, mirror=not options.no_mirror, threads=options.threads,
    )
    dataset = load_dataset(options.data)
    result = train_network(dataset, config)
    result.metadata["dataset"]["path"] = str(options.data)
    checkpoint = save_checkpoint(options.out, result.network, result.metadata)
    export_path = options.export or options.out.with_suffix(".npz")
    export_metadata = {key: value for key, value in result.metadata.items() if key != "history"}
    export_network(result.network, export_metadata).save(export_path)
    metrics_path = options.out.with_suffix(".metrics.json")
    metrics_path.write_text(json.dumps({"history": result.history, "validation": result.metadata["validation"],
                                        "training": result.metadata["training"]}, indent=1))
    validation = result.metadata["validation"]
    print(f"wrote {checkpoint}, {export_path}, {metrics_path}; best epoch {result.metadata['training']['best_epoch']}: "
          f"position error {validation['validation_position_error_mean_mm']:.2f} mm, "
          f"yaw error {validation['validation_yaw_error_mean_deg']:.2f} deg")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
