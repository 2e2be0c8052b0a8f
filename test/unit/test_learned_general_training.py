"""The general model's training loss and its command line (parapush.learning.general_train)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from parapush.learning import general_train, shipped_general_weights_path
from parapush.learning.general_dataset import main as make_dataset
from parapush.learning.graph_network_numpy import load_graph_network

WEIGHTS = torch.tensor([1.0, 1.0, 1.0, 0.3, 0.3, 0.3])


def test_the_squared_loss_is_the_weighted_sum_of_squared_errors():
    predicted = torch.tensor([[0.1, -0.2, 0.0, 1.0, 0.0, -2.0]])
    targets = torch.zeros(1, 6)
    expected = 0.01 + 0.04 + 0.3 * (1.0 + 4.0)
    loss = general_train.output_losses(predicted, targets, WEIGHTS, "squared", 0.1)
    assert loss.shape == (1,)
    assert float(loss[0]) == pytest.approx(expected, rel=1e-6)


def test_the_huber_loss_is_quadratic_below_its_threshold_and_linear_beyond():
    delta = 0.1
    targets = torch.zeros(2, 6)
    small = torch.tensor([[0.05, -0.05, 0.0, 0.0, 0.0, 0.0]])
    large = torch.tensor([[0.0, 2.1, 0.0, 0.0, 0.0, -1.1]])
    losses = general_train.output_losses(torch.cat([small, large]), targets, WEIGHTS, "huber", delta)
    assert float(losses[0]) == pytest.approx(0.5 * (0.05**2 + 0.05**2), rel=1e-6)
    assert float(losses[1]) == pytest.approx(delta * (2.1 - 0.5 * delta) + 0.3 * delta * (1.1 - 0.5 * delta),
                                             rel=1e-6)
    # a far outlier weighs linearly: ten times the error, about ten times the loss, not a hundred
    far = general_train.output_losses(10.0 * large, targets[:1], WEIGHTS, "huber", delta)
    assert 9.0 < float(far[0]) / float(losses[1]) < 11.0


def test_an_unknown_loss_is_refused_by_name():
    with pytest.raises(ValueError, match="loss: 'l1'"):
        general_train.output_losses(torch.zeros(1, 6), torch.zeros(1, 6), WEIGHTS, "l1", 0.1)


@pytest.mark.parametrize("delta", ["0", "-0.5"])
def test_a_huber_threshold_that_is_not_positive_is_refused(delta, capsys):
    with pytest.raises(SystemExit):
        general_train._parse(["--data", "a.npz", "--out", "b.npz", "--huber-delta", delta])
    assert "--huber-delta" in capsys.readouterr().err


def test_training_with_the_huber_loss_records_it_in_the_weights(tmp_path):
    data = tmp_path / "pushes.npz"
    make_dataset(["--samples", "16", "--seed", "5", "--out", str(data), "--workers", "1", "--no-progress"])
    out = tmp_path / "model.npz"
    general_train.main(["--data", str(data), "--out", str(out), "--epochs", "2", "--threads", "1",
                        "--loss", "huber", "--huber-delta", "0.2", "--hidden", "16", "--rounds", "1"])
    weights = load_graph_network(out)
    training = weights.metadata["training"]
    assert training["loss"] == "huber"
    assert training["huber_delta"] == 0.2
    metrics = json.loads(out.with_suffix(".metrics.json").read_text())
    assert len(metrics["history"]) == 2
    assert np.isfinite(metrics["validation"]["loss"])


def test_the_shipped_weights_were_trained_as_their_card_says():
    """The shipped weights record the Huber loss (general_train's default) and the epochs the card quotes."""
    path = shipped_general_weights_path()
    training = load_graph_network(path).metadata["training"]
    assert (training["loss"], training["huber_delta"]) == ("huber", 0.1)
    assert general_train._parse(["--data", "a.npz", "--out", "b.npz"]).loss == training["loss"]
    card = path.with_suffix(".md").read_text()
    assert f"{training['epochs_run']} epochs" in card
    assert f"best epoch {training['best_epoch']}" in card
