"""Train the general learned coarse model (an interaction network) on general push datasets.

Loss: per object, the sum over its standardised outputs (displacement, yaw change, final
twist, :mod:`parapush.learning.graph_encoding`) of the squared error (``--loss squared``) or of
the Huber loss (``--loss huber``: squared up to ``--huber-delta`` standard deviations, linear
beyond, so that the chaotic tail of chain pushes weighs less against the typical push), the
final-twist terms weighted by ``twist_weight`` (stick-slip makes final velocities noisy
targets); only objects (not obstacles) count. Every batch holds graphs of one node count
(:mod:`parapush.learning.graph_training_data`); half its graphs, drawn at random, are
mirrored about the frame's x-axis (a valid push too). Split by scene (continuation pushes
of a scene stay on the same side). Adam with a cosine learning-rate decay to 2 % over the
budget (``--epochs`` or ``--max-minutes`` of wall time, whichever runs out first, so a
slower CPU still ends on a small rate); the epoch with the best validation loss is restored.
Writes the numpy weights (``--out``,
loaded by :class:`~parapush.learning.coarse_general.GeneralLearnedCoarseModel`) and
per-epoch metrics (``<out stem>.metrics.json``).

    python -m parapush.learning.general_train --data general.npz --out general_model.npz
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from parapush.learning.general_dataset import load_general_dataset
from parapush.learning.graph_encoding import OUTPUT_SIZE, GraphEncodingSpec
from parapush.learning.graph_network_torch import InteractionNetwork
from parapush.learning.graph_training_data import EncodedDataset, GraphGroup, encode_dataset
from parapush.learning.scene_ranges import SceneRanges

MOVED_THRESHOLD = 1.0e-3
"""Validation errors are reported for objects whose centroid moved more than this, m."""


def _statistics(groups: list[GraphGroup]) -> dict[str, np.ndarray]:
    nodes = np.concatenate([group.nodes.reshape(-1, group.nodes.shape[-1]) for group in groups])
    edges = np.concatenate([group.edges[group.edge_mask] for group in groups])
    outputs = np.concatenate([group.targets[group.movable] for group in groups])

    def scale(values: np.ndarray) -> np.ndarray:
        spread = values.std(axis=0).astype(np.float64)
        return np.where(spread > 1e-9, spread, 1.0)

    return {"node_mean": nodes.mean(axis=0).astype(np.float64), "node_scale": scale(nodes),
            "edge_mean": edges.mean(axis=0).astype(np.float64) if len(edges) else np.zeros(edges.shape[-1]),
            "edge_scale": scale(edges) if len(edges) else np.ones(edges.shape[-1]),
            "output_mean": outputs.mean(axis=0).astype(np.float64), "output_scale": scale(outputs)}


class _Batches:
    """Standardised torch tensors of groups, cut into shuffled equal-width batches."""

    def __init__(self, groups: list[GraphGroup], statistics: dict[str, np.ndarray], mirror: tuple[np.ndarray, ...]
                 ) -> None:
        def standard(values: np.ndarray, name: str) -> torch.Tensor:
            return torch.from_numpy(((values - statistics[f"{name}_mean"]) / statistics[f"{name}_scale"])
                                    .astype(np.float32))

        self.groups = [
            (standard(group.nodes, "node"), standard(group.edges, "edge"), torch.from_numpy(group.edge_mask),
             torch.from_numpy(group.movable), standard(group.targets, "output"), group)
            for group in groups if len(group.rows)
        ]
        permutation, node_signs, edge_signs, output_signs = mirror
        node_mean, node_scale = statistics["node_mean"], statistics["node_scale"]
        # mirroring acts on raw values; on standardised ones: x' = (s * x_raw[perm] - m) / c
        self.permutation = torch.from_numpy(permutation)
        self.node_mean = torch.from_numpy(node_mean.astype(np.float32))
        self.node_scale = torch.from_numpy(node_scale.astype(np.float32))
        self.node_signs = torch.from_numpy(node_signs.astype(np.float32))
        self.edge_mean = torch.from_numpy(statistics["edge_mean"].astype(np.float32))
        self.edge_scale = torch.from_numpy(statistics["edge_scale"].astype(np.float32))
        self.edge_signs = torch.from_numpy(edge_signs.astype(np.float32))
        self.output_mean = torch.from_numpy(statistics["output_mean"].astype(np.float32))
        self.output_scale = torch.from_numpy(statistics["output_scale"].astype(np.float32))
        self.output_signs = torch.from_numpy(output_signs.astype(np.float32))

    def mirrored(self, nodes: torch.Tensor, edges: torch.Tensor, targets: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        raw = nodes * self.node_scale + self.node_mean
        raw = raw[..., self.permutation] * self.node_signs
        raw_edges = (edges * self.edge_scale + self.edge_mean) * self.edge_signs
        raw_targets = (targets * self.output_scale + self.output_mean) * self.output_signs
        return ((raw - self.node_mean) / self.node_scale, (raw_edges - self.edge_mean) / self.edge_scale,
                (raw_targets - self.output_mean) / self.output_scale)

    def epoch(self, batch_size: int, generator: np.random.Generator | None, mirror: bool):
        plan = []
        for index, (nodes, *_rest) in enumerate(self.groups):
            count = nodes.shape[0]
            order = generator.permutation(count) if generator is not None else np.arange(count)
            width = nodes.shape[1]
            size = max(1, batch_size // max(1, width))  # about batch_size nodes per batch
            plan += [(index, order[start:start + size]) for start in range(0, count, size)]
        if generator is not None:
            plan = [plan[i] for i in generator.permutation(len(plan))]
        for index, rows in plan:
            nodes, edges, edge_mask, movable, targets, _ = self.groups[index]
            selection = torch.from_numpy(rows)
            batch = (nodes[selection], edges[selection], edge_mask[selection], movable[selection],
                     targets[selection])
            if mirror and generator is not None:
                flip = torch.from_numpy(generator.random(len(rows)) < 0.5)
                if bool(flip.any()):
                    flipped = self.mirrored(batch[0][flip], batch[1][flip], batch[4][flip])
                    batch[0][flip], batch[1][flip], batch[4][flip] = flipped
            yield batch


LOSSES = ("squared", "huber")


def output_losses(predicted: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor, loss: str,
                  huber_delta: float) -> torch.Tensor:
    """Per-node training loss (..., ) of standardised outputs (..., 6): the ``weights``-weighted sum
    over the outputs of the squared error or, ``loss`` "huber", of the Huber loss with threshold
    ``huber_delta`` (standard deviations; 0.5 e^2 below it, ``huber_delta`` (|e| - 0.5 ``huber_delta``)
    beyond)."""
    if loss == "squared":
        elementwise = (predicted - targets) ** 2
    elif loss == "huber":
        elementwise = torch.nn.functional.huber_loss(predicted, targets, reduction="none", delta=huber_delta)
    else:
        raise ValueError(f"loss: {loss!r} is not one of {LOSSES}")
    return (elementwise * weights).sum(dim=-1)


LossFunction = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""(predicted, targets) -> per-node loss: :func:`output_losses` with the run's weights and loss bound."""


def _evaluate(model: InteractionNetwork, batches: _Batches, node_losses: LossFunction) -> dict[str, float]:
    """Validation loss (``node_losses``, the training's) and errors of moved objects (position mm,
    yaw deg) in the network's frame."""
    model.eval()
    losses, position_errors, yaw_errors = [], [], []
    scale = batches.output_scale
    mean = batches.output_mean
    with torch.no_grad():
        for nodes, edges, edge_mask, movable, targets in batches.epoch(4096, None, False):
            predicted = model(nodes, edges, edge_mask)
            losses.append(node_losses(predicted, targets)[movable])
            raw_predicted = predicted * scale + mean
            raw_targets = targets * scale + mean
            moved = movable & (torch.linalg.norm(raw_targets[..., :2], dim=-1) > MOVED_THRESHOLD)
            position_errors.append(torch.linalg.norm((raw_predicted - raw_targets)[..., :2], dim=-1)[moved])
            yaw_errors.append(torch.abs(raw_predicted[..., 2] - raw_targets[..., 2])[moved])
    loss = float(torch.cat(losses).mean()) if losses else math.nan
    positions = torch.cat(position_errors).numpy() * 1e3 if position_errors else np.array([np.nan])
    yaws = np.degrees(torch.cat(yaw_errors).numpy()) if yaw_errors else np.array([np.nan])
    return {"loss": loss, "moved_position_mean_mm": float(positions.mean()),
            "moved_position_median_mm": float(np.median(positions)),
            "moved_position_p95_mm": float(np.percentile(positions, 95)), "moved_yaw_mean_deg": float(yaws.mean()),
            "moved_objects": int(positions.size)}


def train(options: argparse.Namespace) -> dict[str, Any]:
    torch.manual_seed(options.seed)
    torch.set_num_threads(options.threads)
    generator = np.random.default_rng(options.seed)
    started = time.perf_counter()
    datasets = [load_general_dataset(path) for path in options.data]
    spec = GraphEncodingSpec()
    ranges = SceneRanges.from_dict(datasets[0].metadata["sampling"]["ranges"])
    fine_settings = datasets[0].metadata["fine_settings"]
    for path, dataset in zip(options.data[1:], datasets[1:], strict=True):
        if dataset.metadata["fine_settings"] != fine_settings:
            raise ValueError(f"--data {path}: simulated with other fine settings than {options.data[0]}")
        if SceneRanges.from_dict(dataset.metadata["sampling"]["ranges"]) != ranges:
            raise ValueError(f"--data {path}: drawn over other scene ranges than {options.data[0]}")
    encoded: list[EncodedDataset] = [encode_dataset(dataset, spec, ranges.max_obstacles) for dataset in datasets]
    encoding_seconds = time.perf_counter() - started
    train_groups, validation_groups = [], []
    for number, part in enumerate(encoded):
        scenes = len(datasets[number].scenes)
        validation_scenes = np.random.default_rng([options.seed, number]).random(scenes) < options.validation_fraction
        for group in part.groups.values():
            held = validation_scenes[group.scenes]
            train_groups.append(group.take(~held))
            validation_groups.append(group.take(held))
    statistics = _statistics(train_groups)
    mirror = spec.mirror_signs()
    training = _Batches(train_groups, statistics, mirror)
    validation = _Batches(validation_groups, statistics, mirror)
    model = InteractionNetwork(spec.node_size, len(statistics["edge_mean"]), OUTPUT_SIZE, options.hidden,
                               options.rounds)
    optimiser = torch.optim.Adam(model.parameters(), lr=options.lr)
    weights = torch.tensor([1.0, 1.0, 1.0, options.twist_weight, options.twist_weight, options.twist_weight])
    node_losses = partial(output_losses, weights=weights, loss=options.loss, huber_delta=options.huber_delta)
    history = []
    best = (math.inf, None, -1)
    training_started = time.perf_counter()
    for epoch in range(options.epochs):
        model.train()
        epoch_started = time.perf_counter()
        total, count = 0.0, 0
        for nodes, edges, edge_mask, movable, targets in training.epoch(options.batch_nodes, generator, True):
            predicted = model(nodes, edges, edge_mask)
            loss = node_losses(predicted, targets)[movable].mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * int(movable.sum())
            count += int(movable.sum())
        # cosine decay over the budget: the epochs' share or the wall time's, whichever is further
        progress = max((epoch + 1) / options.epochs,
                       (time.perf_counter() - training_started) / (60.0 * options.max_minutes))
        for group in optimiser.param_groups:
            group["lr"] = options.lr * (0.02 + 0.98 * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))))
        metrics = _evaluate(model, validation, node_losses)
        record = {"epoch": epoch, "train_loss": total / max(count, 1), "seconds": time.perf_counter() - epoch_started,
                  **{f"validation_{key}": value for key, value in metrics.items()}}
        history.append(record)
        print(json.dumps({key: round(value, 4) if isinstance(value, float) else value for key, value in
                          record.items()}), flush=True)
        if metrics["loss"] < best[0]:
            best = (metrics["loss"], {key: value.detach().clone() for key, value in model.state_dict().items()}, epoch)
        if time.perf_counter() - training_started > options.max_minutes * 60.0:
            print(f"stopping after epoch {epoch}: --max-minutes {options.max_minutes} reached", flush=True)
            break
    model.load_state_dict(best[1])
    final = _evaluate(model, validation, node_losses)
    training_seconds = time.perf_counter() - training_started
    dataset_summary = {
        "fine_settings": fine_settings,
        "files": [str(path) for path in options.data],
        "seeds": [dataset.metadata["seed"] for dataset in datasets],
        "samples": [len(dataset) for dataset in datasets],
        "scenes": [len(dataset.scenes) for dataset in datasets],
        "object_count_bands": [dataset.metadata["object_count_bands"] for dataset in datasets],
        "with_obstacles": [dataset.metadata["with_obstacles"] for dataset in datasets],
        "wall_seconds": [dataset.metadata["wall_seconds"] for dataset in datasets],
        "gated_fraction": [part.gated_fraction for part in encoded],
        "uninvolved_objects_moved": [part.uninvolved_moved for part in encoded],
        "objects": [part.objects for part in encoded],
    }
    training_summary = {
        "epochs_run": len(history), "best_epoch": best[2], "hidden": options.hidden, "rounds": options.rounds,
        "lr": options.lr, "batch_nodes": options.batch_nodes, "twist_weight": options.twist_weight,
        "loss": options.loss, "huber_delta": options.huber_delta,
        "seed": options.seed, "threads": options.threads, "validation_fraction": options.validation_fraction,
        "training_graphs": int(sum(len(group.rows) for group in train_groups)),
        "validation_graphs": int(sum(len(group.rows) for group in validation_groups)),
        "encoding_seconds": round(encoding_seconds, 1), "training_seconds": round(training_seconds, 1),
    }
    metadata = {"encoding": spec.to_dict(), "trained_ranges": ranges.to_dict(), "dataset": dataset_summary,
                "training": training_summary, "validation": final}
    exported = model.export(statistics, metadata)
    path = exported.save(options.out)
    metrics_path = path.with_suffix(".metrics.json")
    metrics_path.write_text(json.dumps({"history": history, "validation": final, "training": training_summary,
                                        "dataset": dataset_summary}, indent=1))
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB, {exported.parameter_count()} parameters) and "
          f"{metrics_path}; best epoch {best[2]}: {json.dumps(final)}", flush=True)
    return final


def _parse(arguments: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m parapush.learning.general_train",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True, help="general push datasets (.npz)")
    parser.add_argument("--out", type=Path, required=True, help="exported numpy weights (.npz)")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--max-minutes", type=float, default=15.0, help="stop after the epoch that passes this")
    parser.add_argument("--hidden", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--batch-nodes", type=int, default=2048, help="about this many nodes per batch")
    parser.add_argument("--twist-weight", type=float, default=0.3)
    parser.add_argument("--loss", choices=LOSSES, default="huber",
                        help="per-output loss of the standardised outputs (huber: linear beyond --huber-delta)")
    parser.add_argument("--huber-delta", type=float, default=0.1,
                        help="Huber threshold, standard deviations of each output (> 0)")
    parser.add_argument("--validation-fraction", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(arguments)
    if not options.huber_delta > 0.0:
        parser.error(f"--huber-delta: {options.huber_delta} is not > 0")
    return options


def main(arguments: Sequence[str] | None = None) -> int:
    train(_parse(arguments))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
