"""Training checkpoints (torch) and their export to the numpy weights file.

A checkpoint is a ``torch.save`` dictionary with the network's shape and parameters (the
standardisation buffers included), and the metadata that makes it usable on its own:
the trained geometry, the feature encoding, the trained action ranges, a summary of the
dataset's metadata and the training configuration and metrics. Loading compares the
geometry and the encoding with what the caller expects and refuses a mismatch by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from parapush.learning.encoding import EncodingSpec
from parapush.learning.geometry import ModelMismatchError, TrainedGeometry
from parapush.learning.model import CoarseNetwork, NetworkConfig
from parapush.learning.numpy_network import ExportedNetwork, check_model_metadata

CHECKPOINT_FORMAT = "parapush.learning.checkpoint/1"


def save_checkpoint(path: str | Path, network: CoarseNetwork, metadata: Mapping[str, Any]) -> Path:
    """Write ``network`` and ``metadata`` (must hold "geometry" and "encoding") to ``path``."""
    check_model_metadata(metadata, "metadata")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "network_config": asdict(network.config),
        "state_dict": {name: tensor.detach().cpu() for name, tensor in network.state_dict().items()},
        "metadata": dict(metadata),
    }
    torch.save(payload, path)
    return path


def load_checkpoint(
    path: str | Path,
    expected_geometry: TrainedGeometry | None = None,
    expected_encoding: EncodingSpec | None = None,
) -> tuple[CoarseNetwork, dict[str, Any]]:
    """Read a checkpoint; returns (network in eval mode, metadata).

    Raises:
        ModelMismatchError naming the file and the field when the checkpoint is not a
        parapush checkpoint, or was made for another geometry (object count, radii, ...) or
        feature layout than expected.
    """
    path = Path(path)
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise ModelMismatchError(f"{path}: format {found!r}, expected {CHECKPOINT_FORMAT!r}")
    metadata = payload["metadata"]
    _, encoding = check_model_metadata(metadata, str(path), expected_geometry, expected_encoding)
    config = NetworkConfig(**payload["network_config"])
    if (config.input_size, config.output_size) != (encoding.input_size, encoding.output_size):
        raise ModelMismatchError(
            f"{path}: network_config maps {config.input_size} -> {config.output_size} values but the encoding needs "
            f"{encoding.input_size} -> {encoding.output_size}"
        )
    network = CoarseNetwork(config)
    network.load_state_dict(payload["state_dict"])
    network.eval()
    return network, metadata


def export_network(network: CoarseNetwork, metadata: Mapping[str, Any]) -> ExportedNetwork:
    """The numpy twin of ``network`` (same float32 parameters; normalisation widened to float64)."""
    check_model_metadata(metadata, "metadata")
    linear_layers = [layer for layer in network.layers if isinstance(layer, torch.nn.Linear)]

    def as_numpy(tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().cpu().numpy().astype(np.float64)

    def as_float32(tensor: torch.Tensor) -> np.ndarray:
        return np.ascontiguousarray(tensor.detach().cpu().numpy().astype(np.float32))

    return ExportedNetwork(
        weights=tuple(np.ascontiguousarray(as_float32(layer.weight).T) for layer in linear_layers),
        biases=tuple(as_float32(layer.bias) for layer in linear_layers),
        input_mean=as_numpy(network.input_mean),
        input_scale=as_numpy(network.input_scale),
        output_mean=as_numpy(network.output_mean),
        output_scale=as_numpy(network.output_scale),
        metadata=dict(metadata),
    )
