"""A push dataset turned into network inputs and targets, with its split and augmentation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parapush.learning.dataset import PushDataset
from parapush.learning.encoding import EncodingSpec, PusherFrameEncoder


@dataclass(frozen=True)
class EncodedDataset:
    """Network view of M pushes.

    Attributes:
        features: (M, F) inputs, SI units.
        targets: (M, O) fine-model outputs, SI units.
        slot_active: (M, S) bool, slots holding a slider.
        gated: (M,) bool, pushes whose path reaches a slider (the network's domain).
    """

    features: np.ndarray
    targets: np.ndarray
    slot_active: np.ndarray
    gated: np.ndarray

    def __len__(self) -> int:
        return int(self.features.shape[0])

    def subset(self, rows: np.ndarray) -> EncodedDataset:
        return EncodedDataset(self.features[rows], self.targets[rows], self.slot_active[rows], self.gated[rows])

    def mirrored(self, spec: EncodingSpec) -> EncodedDataset:
        """The pushes mirrored about the network frame's x-axis (see :meth:`EncodingSpec.mirror_signs`)."""
        input_signs, output_signs = spec.mirror_signs()
        return EncodedDataset(self.features * input_signs, self.targets * output_signs, self.slot_active, self.gated)

    def concatenate(self, other: EncodedDataset) -> EncodedDataset:
        return EncodedDataset(
            np.concatenate([self.features, other.features]),
            np.concatenate([self.targets, other.targets]),
            np.concatenate([self.slot_active, other.slot_active]),
            np.concatenate([self.gated, other.gated]),
        )


def encode_dataset(dataset: PushDataset, encoder: PusherFrameEncoder) -> EncodedDataset:
    """Features and targets of every push of ``dataset``."""
    pushes = dataset.pushes
    encoded = encoder.encode(pushes.pusher_positions, pushes.slider_poses, pushes.slider_active, pushes.controls,
                             pushes.durations)
    targets = encoder.targets(encoded, pushes.slider_poses, dataset.next_slider_poses, dataset.next_slider_twists)
    return EncodedDataset(features=encoded.features, targets=targets, slot_active=encoded.slot_active,
                          gated=encoded.gated)


def split_rows(count: int, validation_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random (training, validation) row indices; the validation part has
    round(count * validation_fraction) rows (at least 1 when the fraction is > 0 and count > 1)."""
    if not 0.0 <= validation_fraction < 1.0:
        raise ValueError(f"validation_fraction: expected a value in [0, 1), got {validation_fraction!r}")
    order = rng.permutation(count)
    validation = int(round(count * validation_fraction))
    if validation_fraction > 0 and count > 1:
        validation = min(max(validation, 1), count - 1)
    return np.sort(order[validation:]), np.sort(order[:validation])
