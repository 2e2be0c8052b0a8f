"""The learned coarse model's network (torch): an MLP from push features to slider motions.

Architecture of the journal (Sec 4.1.1): fully connected layers of 512, 256, 128 and 64
ReLU units and a linear output layer. Inputs and outputs are standardised inside the
module with statistics of the training set, stored as buffers so that they travel with
the checkpoint and the exported weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from parapush.validation import check_integer

HIDDEN_SIZES = (512, 256, 128, 64)
"""Hidden layer widths of the journal's network."""

SCALE_FLOOR = 1e-8
"""Columns whose training standard deviation is below this get scale 1 (constant columns)."""


@dataclass(frozen=True)
class NetworkConfig:
    """Shape of the network.

    Attributes:
        input_size: number of features F, >= 1.
        output_size: number of outputs O, >= 1.
        hidden_sizes: widths of the ReLU layers, each >= 1.
    """

    # Not settings: the input and output sizes come from the encoding (no default; a setting has one), and
    # hidden_sizes is a list of integers (a tuple setting holds real numbers); all checked below.
    input_size: int
    output_size: int
    hidden_sizes: tuple[int, ...] = HIDDEN_SIZES

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_sizes", self.check_hidden_sizes(self.hidden_sizes))
        for name in ("input_size", "output_size"):
            check_integer(name, getattr(self, name), minimum=1)

    @staticmethod
    def check_hidden_sizes(hidden_sizes: Any) -> tuple[int, ...]:
        """``hidden_sizes`` as a tuple of layer widths, each an integer >= 1."""
        return tuple(check_integer(f"hidden_sizes[{index}]", width, minimum=1)
                     for index, width in enumerate(hidden_sizes))


def standardisation(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale of each column of (M, C) data; constant columns get scale 1."""
    mean = columns.mean(axis=0)
    scale = columns.std(axis=0)
    scale = np.where(scale > SCALE_FLOOR, scale, 1.0)
    return mean, scale


class CoarseNetwork(nn.Module):
    """MLP with built-in input/output standardisation.

    Args:
        config: the shape.

    Buffers (set with :meth:`set_normalisation`): ``input_mean``, ``input_scale`` (F,),
    ``output_mean``, ``output_scale`` (O,), in the features' and outputs' SI units.
    """

    def __init__(self, config: NetworkConfig) -> None:
        super().__init__()
        self.config = config
        layers: list[nn.Module] = []
        width = config.input_size
        for hidden in config.hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, config.output_size))
        self.layers = nn.Sequential(*layers)
        self.register_buffer("input_mean", torch.zeros(config.input_size))
        self.register_buffer("input_scale", torch.ones(config.input_size))
        self.register_buffer("output_mean", torch.zeros(config.output_size))
        self.register_buffer("output_scale", torch.ones(config.output_size))

    def set_normalisation(
        self, input_mean: np.ndarray, input_scale: np.ndarray, output_mean: np.ndarray, output_scale: np.ndarray
    ) -> None:
        """Store standardisation statistics (arrays of shapes (F,), (F,), (O,), (O,))."""
        for name, values, size in (
            ("input_mean", input_mean, self.config.input_size),
            ("input_scale", input_scale, self.config.input_size),
            ("output_mean", output_mean, self.config.output_size),
            ("output_scale", output_scale, self.config.output_size),
        ):
            values = np.asarray(values, dtype=np.float32)
            if values.shape != (size,):
                raise ValueError(f"{name}: expected shape ({size},), got {values.shape}")
            if name.endswith("scale") and not np.all(values > 0):
                raise ValueError(f"{name}: expected positive values")
            getattr(self, name).copy_(torch.from_numpy(values))

    def forward_normalised(self, features: torch.Tensor) -> torch.Tensor:
        """(B, F) features in SI units -> (B, O) standardised outputs."""
        return self.layers((features - self.input_mean) / self.input_scale)

    def denormalise(self, normalised: torch.Tensor) -> torch.Tensor:
        """(B, O) standardised outputs -> SI units."""
        return normalised * self.output_scale + self.output_mean

    def normalise_targets(self, targets: torch.Tensor) -> torch.Tensor:
        """(B, O) targets in SI units -> standardised."""
        return (targets - self.output_mean) / self.output_scale

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """(B, F) features -> (B, O) outputs, both in SI units."""
        return self.denormalise(self.forward_normalised(features))
