"""The exported network: weights in a ``.npz`` file and a numpy forward pass (no torch).

File format (``np.savez``; float32 arrays)::

    layer0_weight (F, H0), layer0_bias (H0,), ..., layerL_weight (H_{L-1}, O), layerL_bias (O,)
    input_mean (F,), input_scale (F,), output_mean (O,), output_scale (O,)
    metadata: JSON string with "format", "geometry" (TrainedGeometry), "encoding"
              (EncodingSpec), "trained_ranges" (max_speed m/s, duration_range s) and
              free-form "dataset", "training" and "validation" summaries.

The forward pass is y = L_L(relu(... relu(L_0((x - input_mean) / input_scale)))) *
output_scale + output_mean. The standardisation is done in float64 and the layers in
float32, the precision the network was trained in (relative rounding ~1e-7, i.e. a few
nanometres on the outputs; float32 matrix products are twice as fast as float64 ones).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parapush.learning.encoding import EncodingSpec
from parapush.learning.geometry import ModelMismatchError, TrainedGeometry

NETWORK_FORMAT = "parapush.learning.network/1"


def check_model_metadata(
    metadata: Mapping[str, Any],
    what: str,
    expected_geometry: TrainedGeometry | None = None,
    expected_encoding: EncodingSpec | None = None,
) -> tuple[TrainedGeometry, EncodingSpec]:
    """Parse the geometry and encoding of a checkpoint or weights file and compare them.

    Args:
        metadata: the file's metadata.
        what: the file, for the error messages.
        expected_geometry: refuse the file unless it was trained for this geometry.
        expected_encoding: refuse the file unless its features have this layout.
    Returns:
        (geometry, encoding) of the file.
    Raises:
        ModelMismatchError naming the file and the mismatching field.
    """
    for key in ("geometry", "encoding"):
        if key not in metadata:
            raise ModelMismatchError(f"{what}: metadata has no {key!r}")
    try:
        geometry = TrainedGeometry.from_dict(metadata["geometry"])
    except ModelMismatchError as error:
        raise ModelMismatchError(f"{what}: {error}") from None
    encoding = EncodingSpec.from_dict(metadata["encoding"])
    if expected_encoding is not None:
        expected_encoding.check_same(encoding, what)
    if expected_geometry is not None:
        expected_geometry.check_same(geometry, what)
    if encoding.slots != geometry.max_sliders:
        raise ModelMismatchError(
            f"{what}: encoding has {encoding.slots} slots but geometry.max_sliders is {geometry.max_sliders}"
        )
    return geometry, encoding


@dataclass(frozen=True)
class ExportedNetwork:
    """An MLP evaluated with numpy.

    Attributes:
        weights: per layer (in, out) float32 matrices.
        biases: per layer (out,) float32 vectors.
        input_mean: (F,) feature means.
        input_scale: (F,) feature scales.
        output_mean: (O,) output means.
        output_scale: (O,) output scales.
        metadata: geometry, encoding, trained ranges and summaries (JSON-serialisable).
    """

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    input_mean: np.ndarray
    input_scale: np.ndarray
    output_mean: np.ndarray
    output_scale: np.ndarray
    metadata: dict[str, Any]

    def __post_init__(self) -> None:
        if len(self.weights) != len(self.biases) or not self.weights:
            raise ValueError(f"weights, biases: expected equally many (>= 1), got {len(self.weights)}, "
                             f"{len(self.biases)}")
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            if weight.ndim != 2 or bias.shape != (weight.shape[1],):
                raise ValueError(f"layer{index}: weight {weight.shape} and bias {bias.shape} do not fit")
            if index and weight.shape[0] != self.weights[index - 1].shape[1]:
                raise ValueError(f"layer{index}: expects {weight.shape[0]} inputs, the previous layer gives "
                                 f"{self.weights[index - 1].shape[1]}")
        if self.input_mean.shape != (self.input_size,) or self.input_scale.shape != (self.input_size,):
            raise ValueError(f"input_mean, input_scale: expected shape ({self.input_size},)")
        if self.output_mean.shape != (self.output_size,) or self.output_scale.shape != (self.output_size,):
            raise ValueError(f"output_mean, output_scale: expected shape ({self.output_size},)")

    @property
    def input_size(self) -> int:
        return int(self.weights[0].shape[0])

    @property
    def output_size(self) -> int:
        return int(self.weights[-1].shape[1])

    def forward(self, features: np.ndarray) -> np.ndarray:
        """(M, F) features -> (M, O) outputs (SI units), float64."""
        features = np.asarray(features, dtype=np.float64)
        if features.ndim != 2 or features.shape[1] != self.input_size:
            raise ValueError(f"features: expected shape (M, {self.input_size}), got {features.shape}")
        hidden = ((features - self.input_mean) / self.input_scale).astype(np.float32)
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            hidden = hidden @ weight + bias
            if index < last:
                np.maximum(hidden, 0.0, out=hidden)
        return hidden.astype(np.float64) * self.output_scale + self.output_mean

    def save(self, path: str | Path) -> Path:
        """Write float32 weights and the metadata to ``path`` (.npz, uncompressed)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {}
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            arrays[f"layer{index}_weight"] = weight.astype(np.float32)
            arrays[f"layer{index}_bias"] = bias.astype(np.float32)
        for name in ("input_mean", "input_scale", "output_mean", "output_scale"):
            arrays[name] = getattr(self, name).astype(np.float32)
        metadata = dict(self.metadata, format=NETWORK_FORMAT)
        with path.open("wb") as handle:
            np.savez(handle, metadata=np.array(json.dumps(metadata, sort_keys=True)), **arrays)
        return path


def load_network(
    path: str | Path,
    expected_geometry: TrainedGeometry | None = None,
    expected_encoding: EncodingSpec | None = None,
) -> ExportedNetwork:
    """Read an exported network; refuses files of another format, geometry or encoding.

    Raises:
        ModelMismatchError naming the file and the mismatch; FileNotFoundError.
    """
    path = Path(path)
    with np.load(path, allow_pickle=False) as archive:
        if "metadata" not in archive:
            raise ModelMismatchError(f"{path}: not an exported parapush network (no metadata)")
        metadata = json.loads(str(archive["metadata"]))
        if metadata.get("format") != NETWORK_FORMAT:
            raise ModelMismatchError(f"{path}: format {metadata.get('format')!r}, expected {NETWORK_FORMAT!r}")
        check_model_metadata(metadata, str(path), expected_geometry, expected_encoding)
        layers = sorted(
            int(name[len("layer"):-len("_weight")]) for name in archive.files if name.endswith("_weight")
        )
        if layers != list(range(len(layers))):
            raise ModelMismatchError(f"{path}: layers {layers} are not numbered 0..L")
        network = ExportedNetwork(
            weights=tuple(archive[f"layer{index}_weight"].astype(np.float32) for index in layers),
            biases=tuple(archive[f"layer{index}_bias"].astype(np.float32) for index in layers),
            input_mean=archive["input_mean"].astype(np.float64),
            input_scale=archive["input_scale"].astype(np.float64),
            output_mean=archive["output_mean"].astype(np.float64),
            output_scale=archive["output_scale"].astype(np.float64),
            metadata=metadata,
        )
    encoding = EncodingSpec.from_dict(metadata["encoding"])
    if (network.input_size, network.output_size) != (encoding.input_size, encoding.output_size):
        raise ModelMismatchError(
            f"{path}: the network maps {network.input_size} -> {network.output_size} values but its encoding needs "
            f"{encoding.input_size} -> {encoding.output_size}"
        )
    return network
