"""Checkpoints and exported weights: numpy forward = torch forward, mismatches refused by name."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from parapush.learning.checkpoint import export_network, load_checkpoint, save_checkpoint  # noqa: E402
from parapush.learning.dataset import default_geometry  # noqa: E402
from parapush.learning.encoding import EncodingSpec  # noqa: E402
from parapush.learning.geometry import ModelMismatchError  # noqa: E402
from parapush.learning.model import CoarseNetwork, NetworkConfig  # noqa: E402
from parapush.learning.numpy_network import load_network  # noqa: E402

GEOMETRY = default_geometry(4)
SPEC = EncodingSpec(4)


def metadata(geometry=GEOMETRY, spec=SPEC):
    return {"geometry": geometry.to_dict(), "encoding": spec.to_dict(),
            "trained_ranges": {"max_speed": 0.1, "duration_range": [0.5, 2.0]}}


@pytest.fixture
def network():
    torch.manual_seed(3)
    net = CoarseNetwork(NetworkConfig(SPEC.input_size, SPEC.output_size, (32, 16)))
    rng = np.random.default_rng(0)
    net.set_normalisation(rng.normal(size=SPEC.input_size), rng.uniform(0.5, 2.0, SPEC.input_size),
                          rng.normal(size=SPEC.output_size), rng.uniform(0.01, 0.1, SPEC.output_size))
    return net.eval()


def test_numpy_forward_equals_torch_forward(network, tmp_path):
    features = np.random.default_rng(1).normal(size=(200, SPEC.input_size))
    with torch.no_grad():
        expected = network(torch.from_numpy(features.astype(np.float32))).numpy()
    exported = export_network(network, metadata())
    np.testing.assert_allclose(exported.forward(features), expected, rtol=1e-4, atol=1e-6)
    loaded = load_network(exported.save(tmp_path / "weights.npz"), GEOMETRY, SPEC)
    np.testing.assert_allclose(loaded.forward(features), exported.forward(features), rtol=1e-6, atol=1e-9)


def test_default_network_has_the_journal_layers():
    net = CoarseNetwork(NetworkConfig(SPEC.input_size, SPEC.output_size))
    widths = [layer.out_features for layer in net.layers if isinstance(layer, torch.nn.Linear)]
    assert widths == [512, 256, 128, 64, SPEC.output_size]


def test_checkpoint_round_trip_keeps_normalisation(network, tmp_path):
    path = save_checkpoint(tmp_path / "model.pt", network, metadata())
    loaded, meta = load_checkpoint(path, GEOMETRY, SPEC)
    features = torch.randn(10, SPEC.input_size)
    with torch.no_grad():
        torch.testing.assert_close(loaded(features), network(features))
    assert meta["geometry"] == GEOMETRY.to_dict()


def test_checkpoint_for_another_object_count_is_refused(network, tmp_path):
    path = save_checkpoint(tmp_path / "model.pt", network, metadata())
    with pytest.raises(ModelMismatchError, match="max_sliders is 4, expected 3"):
        load_checkpoint(path, default_geometry(3))
    with pytest.raises(ModelMismatchError, match="4 slider slots, expected 2"):
        load_checkpoint(path, expected_encoding=EncodingSpec(2))


def test_checkpoint_for_another_geometry_is_refused(network, tmp_path):
    path = save_checkpoint(tmp_path / "model.pt", network, metadata())
    wider = dataclasses.replace(GEOMETRY, slider_radius=0.06)
    with pytest.raises(ModelMismatchError, match="slider_radius"):
        load_checkpoint(path, wider)
    heavier = dataclasses.replace(GEOMETRY, slider_mass=1.0)
    with pytest.raises(ModelMismatchError, match="slider_mass"):
        load_network(export_network(network, metadata()).save(tmp_path / "w.npz"), heavier)


def test_checkpoint_of_another_encoding_version_is_refused(network, tmp_path):
    old = dict(metadata(), encoding=dict(SPEC.to_dict(), version=SPEC.version + 1))
    path = save_checkpoint(tmp_path / "model.pt", network, old)
    with pytest.raises(ModelMismatchError, match="encoding version"):
        load_checkpoint(path, GEOMETRY, SPEC)


def test_files_that_are_not_ours_are_refused(tmp_path):
    torch.save({"weights": torch.zeros(3)}, tmp_path / "other.pt")
    with pytest.raises(ModelMismatchError, match="format"):
        load_checkpoint(tmp_path / "other.pt")
    np.savez(tmp_path / "other.npz", weights=np.zeros(3))
    with pytest.raises(ModelMismatchError, match="no metadata"):
        load_network(tmp_path / "other.npz")
