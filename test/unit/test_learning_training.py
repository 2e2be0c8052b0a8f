"""Data generation from the fine model and a tiny training run whose loss must fall."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from parapush.learning.checkpoint import load_checkpoint  # noqa: E402
from parapush.learning.dataset import (  # noqa: E402
    DatasetConfig,
    default_geometry,
    generate_dataset,
    load_dataset,
)
from parapush.learning.dataset import main as dataset_main  # noqa: E402
from parapush.learning.geometry import ModelMismatchError  # noqa: E402
from parapush.learning.numpy_network import load_network  # noqa: E402
from parapush.learning.sampling import PushSamplingConfig  # noqa: E402
from parapush.learning.train import TrainingConfig, train_network  # noqa: E402
from parapush.learning.train import main as train_main  # noqa: E402

GEOMETRY = default_geometry(2)
SAMPLING = PushSamplingConfig(slider_count_weights=(1.0, 1.0), contact_fraction=0.75)


@pytest.fixture(scope="module")
def tiny_dataset():
    config = DatasetConfig(samples=160, seed=11, geometry=GEOMETRY, sampling=SAMPLING, backend="serial",
                           batch_size=64)
    return generate_dataset(config, progress=False)


def test_dataset_labels_come_from_the_fine_model(tiny_dataset):
    meta = tiny_dataset.metadata
    assert meta["samples"] == len(tiny_dataset) == 160 - meta["unstable_dropped"]
    assert meta["seed"] == 11 and meta["geometry"] == GEOMETRY.to_dict()
    assert meta["fine_settings"]["timestep"] == 0.001
    assert sum(meta["slider_counts"].values()) == len(tiny_dataset)
    # contact ratio is controlled: 75 % planned (binomial spread) and the fine model agrees closely
    assert 0.6 < meta["planned_contact_fraction"] < 0.9
    assert abs(meta["fine_contact_fraction"] - meta["planned_contact_fraction"]) < 0.1
    pushes = tiny_dataset.pushes
    # the pusher follows its command (velocity servo) and sliders it misses stay put
    travel = pushes.controls * pushes.durations[:, None]
    np.testing.assert_allclose(tiny_dataset.next_pusher_positions, pushes.pusher_positions + travel, atol=1e-3)
    missed = ~pushes.planned_contact
    moved = np.linalg.norm(tiny_dataset.next_slider_poses[missed, :, :2] - pushes.slider_poses[missed, :, :2], axis=-1)
    assert moved.max() < 1e-3
    hit = np.linalg.norm(tiny_dataset.next_slider_poses[~missed, :, :2] - pushes.slider_poses[~missed, :, :2], axis=-1)
    assert np.median(hit.max(axis=1)) > 5e-3


def test_dataset_round_trip(tiny_dataset, tmp_path):
    loaded = load_dataset(tiny_dataset.save(tmp_path / "data.npz"))
    np.testing.assert_array_equal(loaded.next_slider_poses, tiny_dataset.next_slider_poses)
    np.testing.assert_array_equal(loaded.pushes.slider_counts, tiny_dataset.pushes.slider_counts)
    assert loaded.metadata == json.loads(json.dumps(tiny_dataset.metadata))


def test_same_seed_same_pushes():
    config = DatasetConfig(samples=20, seed=5, geometry=GEOMETRY, sampling=SAMPLING, backend="serial")
    first, second = generate_dataset(config, progress=False), generate_dataset(config, progress=False)
    np.testing.assert_array_equal(first.pushes.controls, second.pushes.controls)
    np.testing.assert_array_equal(first.next_slider_poses, second.next_slider_poses)
    other = generate_dataset(dataclasses.replace(config, seed=6), progress=False)
    assert not np.array_equal(first.pushes.controls, other.pushes.controls)


def test_a_tiny_model_trains_in_seconds_and_its_loss_falls(tiny_dataset):
    config = TrainingConfig(epochs=15, batch_size=32, learning_rate=3e-3, seed=1, patience=50,
                            hidden_sizes=(64, 32))
    result = train_network(tiny_dataset, config, log=lambda line: None)
    history = result.history
    assert len(history) == 15
    assert history[-1]["train_loss"] < 0.7 * history[0]["train_loss"]
    assert min(record["validation_loss"] for record in history) < history[0]["validation_loss"]
    assert result.metadata["training"]["best_epoch"] >= 2
    assert result.metadata["trained_ranges"] == {"max_speed": 0.1, "duration_range": [0.5, 2.0]}


def test_command_lines_write_data_checkpoint_weights_and_metrics(tmp_path, capsys):
    data = tmp_path / "data.npz"
    assert dataset_main(["--objects", "1", "--samples", "40", "--seed", "3", "--out", str(data),
                         "--backend", "serial", "--no-progress"]) == 0
    checkpoint = tmp_path / "model.pt"
    assert train_main(["--data", str(data), "--out", str(checkpoint), "--epochs", "2", "--batch-size", "16"]) == 0
    metrics = json.loads((tmp_path / "model.metrics.json").read_text())
    assert len(metrics["history"]) == 2 and "validation_position_error_mean_mm" in metrics["history"][0]
    network, meta = load_checkpoint(checkpoint, default_geometry(1))
    assert meta["dataset"]["seed"] == 3
    assert load_network(tmp_path / "model.npz").input_size == network.config.input_size
    with pytest.raises(ModelMismatchError, match="max_sliders is 1, expected 4"):
        load_checkpoint(checkpoint, default_geometry(4))
